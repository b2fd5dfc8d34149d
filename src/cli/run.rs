//! `conclave run "<task>"`: the team at work without an editor.
//!
//! Configuration comes from the workspace's `conclave.toml`, the audit log goes to the
//! workspace's store, progress and the final summary go to stderr, and the task's result
//! goes to stdout. When anything failed, ERROR_REPORT.md is written into the session
//! directory. Exit codes: 0 when every subtask completed, 1 when any did not, 2 when the
//! task could not be run at all (no model configured, unreadable configuration), 3 when
//! it completed but only the team's own test ran its code (review it), 130 when
//! interrupted.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use conclave::config::{Config, OnFailure};
use conclave::engine::{Engine, EngineError, EngineSetup, OpenedWorkspace, open_workspace};
use conclave::runtime::{FinalReport, TaskOptions};
use conclave::store::Store;

use super::approve::ApprovePolicy;
use super::session::{Finished, Session, holder};

#[derive(Args)]
pub struct RunArgs {
    /// What the team should do.
    task: String,
    /// The workspace (its `conclave.toml` is read; the store goes to `.conclave/`).
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Keep going past failed subtasks (sets `recovery.continueOnError`): subtasks whose
    /// dependencies failed still run. The exit code is still 1 if anything failed. The
    /// partial work is kept if the task fails (as `--keep-failed`), unless
    /// `conclave.toml` sets `undo.onFailure`.
    #[arg(long)]
    continue_on_error: bool,
    /// How approvals (escalations, risky changes, commands) are answered.
    #[arg(long, value_enum, default_value_t = ApprovePolicy::Ask)]
    approve: ApprovePolicy,
    /// If the task fails, keep the changes it made instead of putting every file it
    /// touched back as it was (`undo.onFailure = "keep"` for this task). `conclave undo`
    /// can still take them back.
    #[arg(long)]
    keep_failed: bool,
}

/// Exit code when the task could not be run at all.
pub const CANNOT_RUN: u8 = 2;
/// Exit code after Ctrl-C.
pub const INTERRUPTED: u8 = 130;
/// Exit code of a task that completed when nothing but the test the team wrote itself
/// ran its code: the same model read the task for both, so a script should not take the
/// work as checked (`TaskSummary.checkedBy = "ownTestOnly"`).
pub const TO_REVIEW: u8 = 3;

/// `path` as a canonical folder; `None`, said on stderr, when it is not one.
pub(crate) fn existing_workspace(path: &std::path::Path) -> Option<std::path::PathBuf> {
    match path.canonicalize() {
        Ok(path) if path.is_dir() => Some(path),
        _ => {
            eprintln!(
                "conclave: the workspace {} is not a directory",
                path.display()
            );
            None
        }
    }
}

pub async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let Some(workspace) = existing_workspace(&args.workspace) else {
        return Ok(ExitCode::from(CANNOT_RUN));
    };
    let OpenedWorkspace {
        lock: _held_while_running,
        mut config,
        store,
    } = match open_workspace(&workspace, holder("run"), None).await {
        Ok(opened) => opened,
        Err(e) => {
            eprintln!("conclave: {e}");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    };
    let keep_failed = args.keep_failed
        || (args.continue_on_error && !sets_on_failure(&workspace.join("conclave.toml")));
    if args.continue_on_error {
        config.recovery.continue_on_error = true;
        eprintln!(
            "conclave: warning: --continue-on-error: failed subtasks will not stop the run; \
             subtasks that depend on them run anyway (the exit code is still 1 if anything fails){}",
            if keep_failed {
                ", and a failed task keeps its changes (`conclave undo` takes them back)"
            } else {
                ""
            }
        );
    }
    let engine = match start(&workspace, config, &store, "run", None).await {
        Ok(engine) => engine,
        Err(code) => return Ok(code),
    };
    if let Some(warning) = engine.sandbox_warning() {
        eprintln!("conclave: warning: {warning}");
    }
    let live = std::io::stderr().is_terminal();
    let options = TaskOptions {
        on_failure: keep_failed.then_some(OnFailure::Keep),
        ..TaskOptions::default()
    };
    let session =
        Session::new(engine.clone(), store.clone(), args.approve, live).with_options(options);
    let finished = match session.run(&args.task).await {
        Ok(finished) => finished,
        Err(e) => {
            engine.shutdown().await;
            return Ok(report_engine_error(&e));
        }
    };
    let code = conclude(&engine, finished, live, false).await;
    engine.shutdown().await;
    Ok(code)
}

/// Whether the configuration file says what a failed task leaves (`[undo] onFailure`):
/// that wins over what `--continue-on-error` implies. The file was read and checked
/// already when the workspace was opened.
fn sets_on_failure(config_file: &Path) -> bool {
    std::fs::read_to_string(config_file)
        .ok()
        .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
        .is_some_and(|table| {
            table
                .get("undo")
                .and_then(toml::Value::as_table)
                .is_some_and(|undo| undo.contains_key("onFailure"))
        })
}

/// Starts the engine; a problem is reported on stderr and becomes the exit code.
pub async fn start(
    workspace: &Path,
    config: Config,
    store: &Store,
    mode: &str,
    model: Option<Arc<dyn conclave::model::ModelProvider>>,
) -> Result<Arc<Engine>, ExitCode> {
    let mut setup = EngineSetup::new(workspace, config);
    setup.store = Some(store.clone());
    setup.mode = mode.to_string();
    setup.model = model;
    Engine::start(setup)
        .await
        .map_err(|e| report_engine_error(&e))
}

/// Says what went wrong; no model (or any other reason the task cannot start) is 2.
pub fn report_engine_error(error: &EngineError) -> ExitCode {
    match error {
        EngineError::LlmNotConfigured(message) => {
            eprintln!(
                "conclave: no model is configured: {message}.\n\
                 Configure one in conclave.toml in the workspace, for example:\n\n\
                 [llm]\n\
                 provider = \"anthropic\"   # with ANTHROPIC_API_KEY in the environment\n\n\
                 or try the whole team without a key: conclave demo"
            );
            ExitCode::from(CANNOT_RUN)
        }
        other => {
            eprintln!("conclave: {other}");
            ExitCode::from(CANNOT_RUN)
        }
    }
}

/// The top agent's report on the finished task, when one is written within two seconds.
async fn final_report(engine: &Engine, finished: &Finished) -> Option<FinalReport> {
    let id = finished.detail.summary.task_id.to_string();
    engine
        .finished_task(&id, std::time::Duration::from_secs(2))
        .await
        .ok()?
        .final_report
}

/// Prints the summary (and writes ERROR_REPORT.md when anything failed, or always under
/// `--continue-on-error`); the exit code.
pub async fn conclude(
    engine: &Engine,
    mut finished: Finished,
    live: bool,
    with_agents: bool,
) -> ExitCode {
    let style = super::progress::Style::new(live && std::env::var_os("NO_COLOR").is_none());
    let mut text = String::new();
    if with_agents || !finished.steps.is_empty() {
        text.push_str(&super::summary::agents(&mut finished, style));
    }
    text.push_str(&super::summary::steps(&finished, style));
    text.push_str(&super::summary::render(&mut finished, style));
    if let Some(report) = final_report(engine, &finished).await {
        text.push_str(&format!(
            "\n{}\n",
            style.bold(&format!("Final report by {}", report.by))
        ));
        for line in report.text.lines() {
            text.push_str(&format!("  {line}\n"));
        }
    }
    eprint!("{}", conclave::redact::text(&text));
    if let Some(result) = &finished.detail.result {
        println!("{}", conclave::redact::text(result));
    }
    let ok = finished.all_completed();
    if !ok || engine.config().recovery.continue_on_error {
        match engine
            .error_report(Some(&finished.detail.summary.task_id.to_string()))
            .await
        {
            Ok(report) => eprintln!("  Error report: {}", report.path.display()),
            Err(e) => eprintln!("  Error report not written: {e}"),
        }
    }
    if finished.interrupted {
        ExitCode::from(INTERRUPTED)
    } else if ok
        && finished
            .detail
            .summary
            .checked_by
            .is_some_and(|e| e.asks_for_review())
    {
        ExitCode::from(TO_REVIEW)
    } else if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
