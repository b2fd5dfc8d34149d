//! `conclave acp`: the Agent Client Protocol agent an editor starts (Zed, JetBrains,
//! CodeCompanion.nvim, agent-shell). Stdout carries protocol lines only; logs go to
//! stderr (and `--log-file`).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct AcpArgs {}

pub async fn run(_: AcpArgs) -> anyhow::Result<ExitCode> {
    if std::io::stdin().is_terminal() {
        // Typed by a person rather than started by an editor: say what it waits for.
        eprintln!(
            "conclave acp: waiting for an Agent Client Protocol client on stdin (Zed and other ACP editors start it themselves). To run a task from a terminal, use `conclave run \"…\"`; Ctrl-D ends this."
        );
    }
    let code = conclave::acp::serve().await;
    Ok(ExitCode::from(code as u8))
}
