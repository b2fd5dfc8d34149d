//! Done means checked: after code is written the team runs the check rules on it (on by
//! default). What each rule catches, and its id, is `crate::checks` and docs/checks.md;
//! this module runs them as one pipeline of [`Check`]s: every program through the
//! runner, under the approval policy, each result naming its rules and every rule
//! switched off by `verify.disabled`.
//!
//! The pipeline ([`PIPELINE`]), in the order the checks run:
//! - **syntax** for the languages touched (`syntax.rs`); a checker that is not installed
//!   is skipped, and the result says so;
//! - **stubs and contracts of Python** (`python.rs`): functions with no body, and what a
//!   change breaks against the files as they were when the task began ([`Originals`], so
//!   rewriting a function over its docstring does not erase what it was asked to do);
//! - **what the task names** (`names.rs`): its files, flags, functions and renames, in
//!   the work that is the whole task;
//! - **marked stubs** (`markers.rs`): the languages' own "not written" markers;
//! - **tests** (`project_tests.rs`): `verify.command` when set; else the tests the task
//!   wrote; else the project's own test command for the language touched.
//!
//! Stages: a bottom agent runs the code checks on its subtask's files right after the
//! executor finishes ([`Stage::AfterSubtask`], with one fix turn: `fix_turn.rs`); the
//! coordinator runs the code checks on all the task's files and, when they pass, the
//! tests before it calls the task done ([`Stage::EndOfTask`], `verify.rs` with the fix
//! loop; the team's own acceptance test, `acceptance.rs`, when no test ran).

mod bench;
mod fix_turn;
mod markers;
mod names;
mod project_tests;
mod python;
mod syntax;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;

use super::Services;
use crate::config::Config;
use crate::runtime::{CheckResult, CheckStatus, SubtaskId, TaskId};

pub use bench::{
    Bench, CodeConsent, Granted, NOT_RUN, Originals, Runs, TaskFiles, capture_originals, refused,
};
pub use fix_turn::{CheckedAttempt, after_subtask};
pub use markers::marked_stubs;
pub use python::put_back_dropped;

/// When the pipeline runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Right after a subtask's coder finishes: the code checks on the files it wrote.
    AfterSubtask,
    /// Before the task is called done: the code checks on every file of the task, then,
    /// when they pass, its tests (tests of code that does not even compile would only
    /// repeat the error).
    EndOfTask,
}

/// What a check looks at; the stages pick by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The code as written: it is read, or compiled, never run.
    Code,
    /// The code run by tests.
    Tests,
}

/// The work a check judges.
pub struct Work<'a> {
    /// Workspace-relative paths of the files written (for the code checks, each one
    /// there).
    pub files: &'a [String],
    /// `verify.command`.
    pub verify_command: Option<&'a str>,
    /// What the checks before this one found (a check may stand down when an earlier
    /// one did not pass: a scan of code that does not compile would only repeat the
    /// compiler).
    pub earlier: &'a [CheckResult],
}

impl Work<'_> {
    /// Whether an earlier check of `rule` ran and did not pass: it failed, or its
    /// program could not run.
    pub fn not_passed(&self, rule: &str) -> bool {
        self.earlier
            .iter()
            .any(|r| r.status != CheckStatus::Passed && r.rules.iter().any(|id| id == rule))
    }
}

/// One check of the pipeline: it runs some rules of `crate::checks::RULES` and makes a
/// result for each thing it ran (none when there was nothing for it to look at).
#[async_trait]
pub trait Check: Send + Sync {
    /// The ids of the rules it runs; it runs only when one of them is on.
    fn rules(&self) -> &'static [&'static str];
    fn phase(&self) -> Phase;
    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult>;
}

/// Every check, in the order it runs. The rules not here are the acceptance test's
/// (`tests.acceptance`, `tests.examples`, `acceptance.*`), which needs a model to write
/// the test and runs in `acceptance.rs` when no test of this pipeline ran.
pub const PIPELINE: &[&dyn Check] = &[
    &syntax::Python,
    &python::Stubs,
    &python::Contracts,
    &syntax::JavaScript,
    &syntax::TypeScript,
    &syntax::Shell,
    &syntax::Json,
    &syntax::Rust,
    &names::Names,
    &markers::Markers,
    &project_tests::ProjectTests,
];

/// Runs the pipeline's checks of `stage` on `files` (workspace-relative; the code checks
/// leave out files that no longer exist).
pub async fn run(
    bench: &Bench,
    stage: Stage,
    files: &[String],
    verify_command: Option<&str>,
) -> Checks {
    let there: Vec<String> = files
        .iter()
        .filter(|f| bench.root.join(f).is_file())
        .cloned()
        .collect();
    let mut checks = run_phase(bench, Phase::Code, &there, verify_command, Vec::new()).await;
    if stage == Stage::EndOfTask && checks.passed() {
        // Tests judge the change, a file the task removed included.
        checks = run_phase(bench, Phase::Tests, files, verify_command, checks.results).await;
    }
    checks
}

async fn run_phase(
    bench: &Bench,
    phase: Phase,
    files: &[String],
    verify_command: Option<&str>,
    mut results: Vec<CheckResult>,
) -> Checks {
    for check in PIPELINE.iter().filter(|c| c.phase() == phase) {
        if !check.rules().iter().any(|id| bench.on(id)) {
            continue;
        }
        let work = Work {
            files,
            verify_command,
            earlier: &results,
        };
        let found = check.run(bench, &work).await;
        results.extend(found);
    }
    Checks { results }
}

/// A check's output kept on the task record and shown to a model: its end, which is
/// where compilers and test runners put the verdict.
const DETAIL_CHARS: usize = 2_000;

/// The checks of one set of files, in the order they ran.
#[derive(Clone, Debug, Default)]
pub struct Checks {
    pub results: Vec<CheckResult>,
}

impl Checks {
    pub fn failed(&self) -> impl Iterator<Item = &CheckResult> {
        self.results
            .iter()
            .filter(|r| r.status == CheckStatus::Failed)
    }

    /// The results of the tests (the pipeline's tests phase).
    pub fn tests(&self) -> impl Iterator<Item = &CheckResult> {
        self.results
            .iter()
            .filter(|r| r.kind == crate::checks::Kind::Tests.as_str())
    }

    pub fn passed(&self) -> bool {
        self.failed().next().is_none()
    }

    /// What the first failure is, for the next step it calls for
    /// (`recovery::strategy::ErrorCategory::of_check`): the failed check's kind, or
    /// `never_ends` when its run was stopped at its time limit. Empty when none failed.
    pub fn failure_code(&self) -> String {
        match self.failed().next() {
            Some(r) if r.detail.contains(bench::STOPPED) => {
                crate::recovery::strategy::NEVER_ENDS.to_string()
            }
            Some(r) => r.kind.clone(),
            None => String::new(),
        }
    }

    /// What failed and its output, for a fix prompt; `None` when nothing failed.
    pub fn failure_text(&self) -> Option<String> {
        let text: Vec<String> = self
            .failed()
            .map(|r| format!("`{}` failed:\n{}", r.name, r.detail.trim_end()))
            .collect();
        (!text.is_empty()).then(|| text.join("\n\n"))
    }

    /// One line: what ran and how it went, e.g. "py_compile passed, stubs failed".
    pub fn summary(&self) -> String {
        describe(&self.results)
    }
}

/// "python3 -m py_compile a.py: passed; function contracts: failed [python.lost-main]",
/// for boards and reports: a failure names the rules that found it.
pub fn describe(results: &[CheckResult]) -> String {
    if results.is_empty() {
        return "nothing to check".into();
    }
    results
        .iter()
        .map(|r| match r.status {
            CheckStatus::Passed => format!("{}: passed", r.name),
            CheckStatus::Failed if r.rules.is_empty() => format!("{}: failed", r.name),
            CheckStatus::Failed => format!("{}: failed [{}]", r.name, r.rules.join(", ")),
            CheckStatus::Skipped => format!("{}: skipped ({})", r.name, r.detail),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let tail: String = text.chars().skip(count - max).collect();
    format!("…{tail}")
}

fn extension(path: &str) -> &str {
    Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
}

fn with_ext(files: &[String], exts: &[&str]) -> Vec<String> {
    files
        .iter()
        .filter(|f| exts.contains(&extension(f)))
        .cloned()
        .collect()
}

/// Whether `path` is a test (by the naming of its language's test runners).
pub fn is_test_file(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    match extension(path) {
        "py" => name.starts_with("test_") || name.ends_with("_test.py"),
        "js" | "mjs" | "cjs" => {
            name.contains(".test.") || name.contains(".spec.") || path.starts_with("test/")
        }
        "rs" => path.starts_with("tests/"),
        _ => false,
    }
}

/// Keeps `results` on the task record, in place of earlier ones for the same subtask
/// (or of the earlier task-level ones).
pub fn record(s: &Services, task_id: TaskId, subtask: Option<SubtaskId>, results: &[CheckResult]) {
    for failed in results.iter().filter(|r| r.status == CheckStatus::Failed) {
        tracing::info!(
            task = %task_id,
            rules = %failed.rules.join(","),
            "check failed: {}",
            failed.name
        );
    }
    s.tasks.update(task_id, |t| {
        for result in results {
            // A failure counts every rule behind it; any other result the rules that
            // found or mended something on the way (those after its own).
            let found = match result.status {
                CheckStatus::Failed => &result.rules[..],
                _ => result.rules.get(1..).unwrap_or_default(),
            };
            for rule in found {
                *t.rule_findings.entry(rule.clone()).or_default() += 1;
            }
        }
    });
    restate(s, task_id, subtask, results);
}

/// Makes `results` the latest checks (of the subtask, or of the task with `None`),
/// without counting their findings: [`record`] counts them once, and files put back to
/// a state checked before are restated.
pub fn restate(s: &Services, task_id: TaskId, subtask: Option<SubtaskId>, results: &[CheckResult]) {
    s.tasks.update(task_id, |t| {
        t.checks.retain(|c| c.subtask_id != subtask);
        t.checks.extend(results.iter().cloned());
    });
}

/// Counts on the task the repairs made to model output (ids of `checks::REPAIRS`), as
/// `ruleFindings` counts what the rules found.
pub fn record_repairs<S: AsRef<str>>(s: &Services, task_id: TaskId, repairs: &[S]) {
    if repairs.is_empty() {
        return;
    }
    tracing::info!(
        task = %task_id,
        repairs = %repairs.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(","),
        "repaired the model's output"
    );
    s.tasks.update(task_id, |t| {
        for repair in repairs {
            *t.rule_findings
                .entry(repair.as_ref().to_string())
                .or_default() += 1;
        }
    });
}

/// Each check command's time limit: a test suite may take a while, never forever.
pub fn check_timeout(config: &Config) -> Duration {
    Duration::from_millis(config.recovery.subtask_timeout_ms.clamp(1_000, 600_000))
}

/// One run of the team's acceptance test: `verify.acceptanceTimeoutMs`, within the
/// checks' own limit.
pub fn acceptance_timeout(config: &Config) -> Duration {
    Duration::from_millis(config.verify.acceptance_timeout_ms.max(1_000)).min(check_timeout(config))
}
