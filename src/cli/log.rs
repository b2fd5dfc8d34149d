//! `conclave log`: a task's history — transitions, messages, decisions, recovery steps,
//! files written — read back from the workspace's store.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use conclave::store::Store;

#[derive(Args)]
pub struct LogArgs {
    /// The workspace whose `.conclave/conclave.db` to read.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Only this task's history.
    #[arg(long, value_name = "ID")]
    task: Option<String>,
    /// Print JSON (one array of entries) instead of lines.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: LogArgs) -> anyhow::Result<ExitCode> {
    let store = super::existing_store(&args.workspace)?;
    let path = Store::default_path(&args.workspace);
    if let Some(task) = &args.task {
        let known = store
            .tasks()
            .await?
            .iter()
            .any(|t| t.id.to_string() == *task);
        if !known {
            anyhow::bail!("no task {task} in {}", path.display());
        }
    }
    let entries = store
        .history(args.task.clone())
        .await
        .context("reading the audit log")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
        return Ok(ExitCode::SUCCESS);
    }
    for entry in &entries {
        println!("{}", entry.line());
    }
    if entries.is_empty() {
        eprintln!("nothing recorded yet");
    }
    Ok(ExitCode::SUCCESS)
}
