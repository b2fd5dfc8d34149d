//! `conclave serve --stdio`: the language server an editor starts. Stdout carries
//! protocol frames only; logs go to stderr (and `--log-file`) and to the editor's
//! `window/logMessage`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use conclave::lsp::{LogLines, ServeOptions};

#[derive(Args)]
pub struct ServeArgs {
    /// Speak LSP over stdin/stdout (the only transport; accepted for the editors that
    /// pass it).
    #[arg(long)]
    stdio: bool,
    /// Serve this workspace, whatever root the editor sends.
    #[arg(long)]
    workspace: Option<PathBuf>,
}

pub async fn run(args: ServeArgs, logs: Option<LogLines>) -> anyhow::Result<ExitCode> {
    let _ = args.stdio;
    let code = conclave::lsp::serve(ServeOptions {
        workspace: args.workspace,
        logs,
    })
    .await;
    Ok(ExitCode::from(code as u8))
}
