//! `conclave serve --stdio`: the language server an editor starts. Stdout carries
//! protocol frames only; logs go to stderr (and `--log-file`) and to the editor's
//! `window/logMessage`.

use std::io::IsTerminal;
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
    if std::io::stdin().is_terminal() {
        // Typed by a person rather than started by an editor: say what it waits for.
        eprintln!(
            "conclave serve: waiting for an editor to speak the Language Server Protocol on stdin (VS Code and Neovim start it themselves). To run a task from a terminal, use `conclave run \"…\"`; Ctrl-D ends this."
        );
    }
    let code = conclave::lsp::serve(ServeOptions {
        workspace: args.workspace,
        logs,
    })
    .await;
    Ok(ExitCode::from(code as u8))
}
