//! `conclave intent`: how the checks read a task, as JSON: the files, names and flags it
//! gives, the renames and removals it asks for, what kind of change it is. Every check,
//! the acceptance test's runner and the coders' prompts read this one reading
//! (docs/checks.md); printing it shows why a rule did or did not apply.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use conclave::team::check::capture_originals;
use conclave::tools::Sandbox;

#[derive(Args)]
pub struct IntentArgs {
    /// The task, as it would be given to `conclave run`.
    task: String,
    /// The workspace as it is before the task: the files the task names are read from
    /// it, so that a name they already define counts as the project's.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
}

pub async fn run(args: IntentArgs) -> anyhow::Result<ExitCode> {
    if !args.workspace.is_dir() {
        anyhow::bail!("no workspace folder at {}", args.workspace.display());
    }
    let sandbox = Sandbox::new(&args.workspace)?;
    let originals = capture_originals(&sandbox, &args.task);
    println!("{}", serde_json::to_string_pretty(originals.intent())?);
    Ok(ExitCode::SUCCESS)
}
