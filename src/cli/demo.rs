//! `conclave demo [DIR]`: the whole team on a built-in scripted scenario, in under a
//! minute and without an API key.
//!
//! Everything is the real runtime — agents, bus, governance, recovery ladder, tools
//! writing real files, the SQLite audit log — and only the model's answers are canned:
//! the script (`demo/script.json`, embedded) is written into the demo directory next to
//! a generated `conclave.toml` that points the scripted provider at it.
//!
//! The scenario: a mid agent plans four subtasks, the top layer signs the plan (rules
//! review), and bottom agents write four files, while the script injects failures:
//! 1. `convert.py` — one HTTP 503: provider trouble, so the subtask waits for the
//!    provider (visibly, costing no attempt) and goes on;
//! 2. `cli.py` — two calls time out: the subtask waits for the provider again;
//! 3. `test_convert.py` — the subtask overflows the model's context for every agent: it
//!    is retried, handed to an idle peer (the agent that gave up is replaced), retried
//!    again, then escalated to the supervisor, whose model-proposed solution (`modify`)
//!    narrows it, and the narrowed subtask succeeds;
//! 4. `README.md` — no trouble.
//!
//! The demo checks it went as scripted (every subtask completed, each recovery path
//! taken, every scripted answer used) and exits 0 only then.
//!
//! `conclave demo --editor [DIR]` runs nothing itself: it prepares a workspace for
//! trying Conclave in an editor with no API key (`editor.rs`), whose scripted model
//! answers the tasks an editor submits.

mod editor;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use conclave::config::Config;
use conclave::engine::WorkspaceLock;
use conclave::model::{ModelProvider, ScriptedProvider};
use conclave::recovery::RecoveryAction;

use super::approve::ApprovePolicy;
use super::run::{CANNOT_RUN, conclude, start};
use super::session::{Session, holder, open_store};

/// The scripted conversation.
const SCRIPT: &str = include_str!("demo/script.json");
/// Marks a directory as holding a demo, so that running the demo there again is allowed.
const MARKER: &str = ".conclave-demo";
const SCRIPT_FILE: &str = "demo-script.json";
/// What the demo writes; removed before the demo runs again in the same directory.
const OUTPUTS: [&str; 4] = ["convert.py", "cli.py", "test_convert.py", "README.md"];
const TASK: &str = "Build a tiny temperature converter in Python: a conversion module, \
                    a command line, tests and a README.";

const CONFIG: &str = r#"# Written by `conclave demo`: the real runtime with a scripted model, whose answers
# (and injected failures) are in demo-script.json.
heartbeatMs = 1000

[llm]
provider = "scripted"
script = "demo-script.json"

[governance]
review = "rules"        # the top layer signs plans by fixed rules, without a model call

[recovery]
stepTimeoutMs = 5000

[recovery.call]
maxAttempts = 1         # no quiet call-level retries: every failure climbs the visible ladder

[recovery.severity.medium]
baseDelayMs = 100

[recovery.severity.high]
baseDelayMs = 150

[recovery.breaker]
minCalls = 10           # a handful of injected failures must not open the circuit breaker
"#;

#[derive(Args)]
pub struct DemoArgs {
    /// Where to run it: a new or empty directory, or one holding a previous demo.
    /// Default: a fresh temporary directory (kept, so you can look at the files).
    dir: Option<PathBuf>,
    /// Skip the pauses that make the demo watchable (for tests and CI).
    #[arg(long)]
    fast: bool,
    /// Prepare DIR for trying Conclave in your editor without an API key (a scripted
    /// model that answers the tasks you submit there), instead of running the demo.
    #[arg(long)]
    editor: bool,
}

pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if args.editor {
        return editor::run(args.dir.as_deref(), args.fast);
    }
    let dir = match prepare(args.dir.as_deref(), &OUTPUTS) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("conclave: {e:#}");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    };
    // Before anything is written there: the folder may be one a server works in.
    let _lock = match WorkspaceLock::acquire(&dir, &holder("demo")) {
        Ok(lock) => lock,
        Err(e) => {
            eprintln!("conclave: {e}");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    };
    let script = script_text(args.fast)?;
    std::fs::write(dir.join(SCRIPT_FILE), &script)
        .with_context(|| format!("cannot write the demo script into {}", dir.display()))?;
    std::fs::write(dir.join("conclave.toml"), CONFIG)
        .with_context(|| format!("cannot write conclave.toml into {}", dir.display()))?;
    let config = Config::load(&dir, None)?;
    let provider =
        Arc::new(ScriptedProvider::from_file(&dir.join(SCRIPT_FILE)).map_err(anyhow::Error::msg)?);
    let store = open_store(&dir)?;

    let live = std::io::stderr().is_terminal();
    let team = &config.team;
    eprintln!(
        "Conclave demo in {}\n\
         The real runtime — {} top, {} mid and {} bottom agents, the recovery ladder, real file \
         writes, the SQLite audit log —\non a scripted model: its answers are canned, and so are \
         the failures it injects on purpose.\n\
         Task: {TASK}\n",
        dir.display(),
        team.top,
        team.mid,
        team.mid * team.bottom_per_mid,
    );
    let started = Instant::now();
    let model = provider.clone() as Arc<dyn ModelProvider>;
    let engine = match start(&dir, config, &store, "demo", Some(model)).await {
        Ok(engine) => engine,
        Err(code) => return Ok(code),
    };
    let session = Session::new(engine.clone(), store.clone(), ApprovePolicy::Auto, live);
    let finished = match session.run(TASK).await {
        Ok(finished) => finished,
        Err(e) => {
            engine.shutdown().await;
            return Ok(super::run::report_engine_error(&e));
        }
    };
    let took = started.elapsed();

    let mut problems = Vec::new();
    if !finished.all_completed() {
        problems.push("not every subtask completed".to_string());
    }
    for (action, what) in [
        (RecoveryAction::WaitForProvider, "a wait for the provider"),
        (RecoveryAction::Retry, "a retry"),
        (RecoveryAction::PeerTakeover, "a peer takeover"),
        (RecoveryAction::EscalateToSupervisor, "an escalation"),
    ] {
        if !finished.steps.iter().any(|s| s.action == action) {
            problems.push(format!("there was no {what}"));
        }
    }
    let unused = provider.unused_steps();
    if !unused.is_empty() {
        problems.push(format!(
            "script steps {unused:?} were never asked for (see {SCRIPT_FILE})"
        ));
    }
    for file in OUTPUTS {
        if !dir.join(file).is_file() {
            problems.push(format!("{file} was not written"));
        }
    }
    let interrupted = finished.interrupted;
    let code = conclude(&engine, finished, live, true).await;
    engine.shutdown().await;
    if interrupted {
        return Ok(code);
    }
    if problems.is_empty() {
        eprintln!(
            "\nThe demo went as scripted in {:.1} s. The files are in {}; the audit log of every \
             message, decision and recovery step is {}.",
            took.as_secs_f64(),
            dir.display(),
            conclave::store::Store::default_path(&dir).display()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "\nThe demo did not go as scripted: {}.",
            problems.join("; ")
        );
        Ok(ExitCode::FAILURE)
    }
}

/// The script as written into the demo directory; `fast` drops the pauses.
fn script_text(fast: bool) -> anyhow::Result<String> {
    without_pauses(SCRIPT, fast)
}

/// `script` as written into a directory; `fast` drops the pauses.
fn without_pauses(script: &str, fast: bool) -> anyhow::Result<String> {
    if !fast {
        return Ok(script.to_string());
    }
    let mut script: serde_json::Value =
        serde_json::from_str(script).context("the built-in script is not JSON")?;
    if let Some(steps) = script["steps"].as_array_mut() {
        for step in steps {
            if let Some(step) = step.as_object_mut() {
                step.remove("delayMs");
            }
        }
    }
    Ok(serde_json::to_string_pretty(&script)?)
}

/// The directory to run in: created when missing, refused when it holds anything but
/// a previous demo (whose `outputs` are removed so the demo writes them afresh).
fn prepare(dir: Option<&Path>, outputs: &[&str]) -> anyhow::Result<PathBuf> {
    let dir = match dir {
        None => tempfile::Builder::new()
            .prefix("conclave-demo-")
            .tempdir()
            .context("cannot create a temporary directory")?
            .keep(),
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            dir.to_path_buf()
        }
    };
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let mut entries = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .peekable();
    if entries.peek().is_some() {
        if !dir.join(MARKER).is_file() {
            anyhow::bail!(
                "{} is not empty and holds no previous demo; give a new or empty directory \
                 (or none, for a temporary one)",
                dir.display()
            );
        }
        for file in outputs {
            let path = dir.join(file);
            if path.is_file() {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
    }
    std::fs::write(
        dir.join(MARKER),
        "This directory holds a `conclave demo` run; the demo may run here again.\n",
    )
    .with_context(|| format!("cannot write into {}", dir.display()))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_script_and_config_load() {
        let script = conclave::model::Script::parse(SCRIPT).expect("the demo script parses");
        assert!(script.steps.len() >= 10);
        let fast = script_text(true).unwrap();
        assert!(!fast.contains("delayMs"));
        conclave::model::Script::parse(&fast).expect("the fast script parses");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conclave.toml"), CONFIG).unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.recovery.call.max_attempts, 1);
        assert_eq!(
            config.governance.review,
            conclave::config::ReviewMode::Rules
        );
        assert_eq!(config.recovery.severity.high.max_retries, 1);
    }

    #[test]
    fn a_foreign_directory_is_refused_and_a_previous_demo_reused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
        let err = prepare(Some(dir.path()), &OUTPUTS).unwrap_err();
        assert!(err.to_string().contains("not empty"), "{err}");
        assert!(dir.path().join("notes.txt").is_file());

        let demo = tempfile::tempdir().unwrap();
        prepare(Some(demo.path()), &OUTPUTS).unwrap();
        std::fs::write(demo.path().join("convert.py"), "old").unwrap();
        prepare(Some(demo.path()), &OUTPUTS).unwrap();
        assert!(!demo.path().join("convert.py").exists());
    }
}
