//! `conclave gc`: compacts the audit log now — the events of finished tasks older than
//! the given age are folded into one summary per task.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use conclave::config::Config;

#[derive(Args)]
pub struct GcArgs {
    /// The workspace whose `.conclave/conclave.db` to compact.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Compact tasks finished more than this many days ago (default: `store.compactAfterDays`).
    #[arg(long, value_name = "DAYS")]
    older_than_days: Option<u32>,
}

pub async fn run(args: GcArgs) -> anyhow::Result<ExitCode> {
    let store = super::existing_store(&args.workspace)?;
    let days = match args.older_than_days {
        Some(days) => days,
        None => {
            Config::load(&args.workspace, None)?
                .store
                .compact_after_days
        }
    };
    let before = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
    let done = store.compact(before).await?;
    println!(
        "compacted {} task(s) finished more than {days} day(s) ago: {} messages, {} recovery steps, {} whiteboard versions, {} transitions folded away; the file history of {} file(s) dropped (those tasks can no longer be undone)",
        done.tasks,
        done.messages,
        done.recovery_steps,
        done.whiteboard_versions,
        done.transitions,
        done.files
    );
    Ok(ExitCode::SUCCESS)
}
