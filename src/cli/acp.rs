//! `conclave acp`: the Agent Client Protocol agent an editor starts (Zed, JetBrains,
//! CodeCompanion.nvim, agent-shell). Stdout carries protocol lines only; logs go to
//! stderr (and `--log-file`).

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct AcpArgs {}

pub async fn run(_: AcpArgs) -> anyhow::Result<ExitCode> {
    let code = conclave::acp::serve().await;
    Ok(ExitCode::from(code as u8))
}
