//! `conclave undo TASK`: takes a finished task back. It shows the diff of what will
//! change, asks on a terminal (`--yes` skips the question; without a terminal it must be
//! given), and will not overwrite a file changed after the task unless `--force` says
//! so (`--keep-edited` leaves such files and undoes the rest). It holds the workspace
//! like `conclave run`: a folder an editor's server holds is refused, naming the holder.
//!
//! Exit codes: 0 undone; 1 refused or declined (nothing changed); 2 the workspace could
//! not be opened.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use conclave::engine::{OpenedWorkspace, open_workspace};
use conclave::runtime::{RevertedBy, TaskRecord};
use conclave::store::Record;
use conclave::tools::{DiskWriter, Sandbox};
use conclave::undo::{EditedFiles, UndoAction};

use super::run::CANNOT_RUN;
use super::session::holder;

#[derive(Args)]
pub struct UndoArgs {
    /// The task: its id, or the start of it (the short id `conclave run` and the editors
    /// show).
    task: String,
    /// The workspace.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Do not ask: undo at once (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    yes: bool,
    /// Also put back files changed after the task, losing those changes.
    #[arg(long, conflicts_with = "keep_edited")]
    force: bool,
    /// Leave files changed after the task as they are and undo the rest.
    #[arg(long)]
    keep_edited: bool,
}

pub async fn run(args: UndoArgs) -> anyhow::Result<ExitCode> {
    let Some(workspace) = super::run::existing_workspace(&args.workspace) else {
        return Ok(ExitCode::from(CANNOT_RUN));
    };
    let OpenedWorkspace {
        lock: _held_while_undoing,
        store,
        ..
    } = match open_workspace(&workspace, holder("undo"), None).await {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("conclave: {e}");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    };
    let tasks = store.tasks().await?;
    let id = match conclave::undo::resolve_id(tasks.iter().map(|t| t.id), &args.task) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("conclave: {}: {e}", args.task);
            return Ok(ExitCode::FAILURE);
        }
    };
    let Some(mut record): Option<TaskRecord> = tasks.into_iter().find(|t| t.id == id) else {
        eprintln!("conclave: no task {id}");
        return Ok(ExitCode::FAILURE);
    };
    let sandbox = Sandbox::new(&workspace)?;
    let files = store.file_history(id).await?;
    let compacted = store.compacted_at(id).await?;
    let plan = match conclave::undo::prepare(&record, files, compacted, &sandbox) {
        Ok(plan) => plan,
        Err(refusal) => {
            eprintln!("conclave: {refusal}");
            return Ok(ExitCode::FAILURE);
        }
    };

    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Undo task {} \"{}\":",
        &id.to_string()[..8],
        record.title
    )?;
    for file in &plan.files {
        let what = match file.action {
            UndoAction::Restore => "put back as before the task",
            UndoAction::Remove => "removed (the task created it)",
            UndoAction::Recreate => "written again (the task removed it)",
            UndoAction::Unchanged => "already as before the task",
            UndoAction::NotKept => "left as it is (too large to have been kept)",
        };
        let edited = if file.edited_since && file.action != UndoAction::Unchanged {
            " — changed since the task"
        } else {
            ""
        };
        writeln!(out, "  {}: {what}{edited}", file.path)?;
    }
    let diff = plan.diff();
    if !diff.is_empty() {
        writeln!(out)?;
        write!(out, "{diff}")?;
    }
    drop(out);
    if plan.changing().next().is_none() {
        eprintln!("Nothing to change: every file is as it was before the task.");
    }

    let conflicts = plan.conflicts();
    let edited = if args.force {
        EditedFiles::Overwrite
    } else if args.keep_edited || conflicts.is_empty() {
        EditedFiles::Keep
    } else {
        eprintln!(
            "\nconclave: {} changed after the task changed {}; undoing would lose those changes. \
             Run again with --force to overwrite {}, or --keep-edited to leave {} as {} and undo the rest.",
            conflicts.join(", "),
            if conflicts.len() == 1 { "it" } else { "them" },
            if conflicts.len() == 1 { "it" } else { "them" },
            if conflicts.len() == 1 { "it" } else { "them" },
            if conflicts.len() == 1 {
                "it is"
            } else {
                "they are"
            },
        );
        return Ok(ExitCode::FAILURE);
    };
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            eprintln!(
                "conclave: not undone: confirm with --yes (stdin is not a terminal to ask on)"
            );
            return Ok(ExitCode::FAILURE);
        }
        eprint!("\nUndo these changes? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            eprintln!("Not undone.");
            return Ok(ExitCode::FAILURE);
        }
    }

    let writer = DiskWriter::new(sandbox.clone());
    let reverted = conclave::undo::apply(&plan, &writer, &sandbox, edited, RevertedBy::Undo).await;
    record.reverted = Some(reverted.clone());
    store.record(Record::TaskCheckpoint(std::sync::Arc::new(record)));
    store.flush().await?;
    if reverted.restored.is_empty() {
        eprintln!("Undone: no file needed putting back.");
    } else {
        eprintln!(
            "Undone: {} put back as before the task.",
            reverted.restored.join(", ")
        );
    }
    for kept in &reverted.kept {
        eprintln!("  {} left as it is: {}", kept.path, kept.reason);
    }
    Ok(ExitCode::SUCCESS)
}
