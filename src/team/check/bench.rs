//! Where the checks run and what they may do: the [`Bench`] (the workspace, the runner
//! every check program goes through, the consent a check that runs the task's code needs,
//! the rules switched off, the task's files as they were before it) and the results a
//! check makes from what it ran.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use tokio_util::sync::CancellationToken;

use super::{DETAIL_CHARS, tail_chars};
use crate::checks::intent::Intent;
use crate::exec::{RunError, RunSpec, Runner};
use crate::runtime::{CheckResult, CheckStatus, SubtaskId, TaskId};
use crate::team::Services;
use crate::team::files::files_named;

/// The files a task names, as they were when the task began, with the task's text and
/// what it asks for, read once. The contracts check reads the promises of Python
/// functions from here; the names check sees whether the files the task is about were
/// changed at all.
#[derive(Debug, Default)]
pub struct TaskFiles {
    pub task: String,
    /// Workspace-relative path and content.
    pub files: Vec<(String, String)>,
    /// [`TaskFiles::intent`], read on first use: not on the way to the task's first
    /// update.
    intent: OnceLock<Intent>,
}

impl TaskFiles {
    pub fn new(task: &str, files: Vec<(String, String)>) -> TaskFiles {
        TaskFiles {
            task: task.to_string(),
            files,
            intent: OnceLock::new(),
        }
    }

    /// The task as every check, the runner and the coders' prompts read it, read once: a
    /// name counts as the task's files' when they defined it before the task.
    pub fn intent(&self) -> &Intent {
        self.intent.get_or_init(|| {
            let defined = |name: &str| {
                self.files.iter().any(|(path, text)| {
                    crate::checks::defines::names_defined(path, text).contains(name)
                })
            };
            Intent::read(&self.task, &defined)
        })
    }
}

pub type Originals = Arc<TaskFiles>;

/// The longest original kept (it travels to the checker as an argument).
const ORIGINAL_MAX_BYTES: usize = 64 * 1024;

/// The files `text` (a task) names that exist in the workspace, with their content;
/// never one the editor withholds.
pub fn capture_originals(sandbox: &crate::tools::Sandbox, text: &str) -> Originals {
    let root = sandbox.root();
    let files = files_named(root, text)
        .into_iter()
        .filter(|path| !sandbox.is_withheld(Path::new(path)))
        .filter_map(|path| {
            let content = std::fs::read_to_string(root.join(&path)).ok()?;
            (content.len() <= ORIGINAL_MAX_BYTES).then_some((path, content))
        })
        .collect();
    Arc::new(TaskFiles::new(text, files))
}

/// Whether the checks may run code of the task: tests, build scripts, the project's own
/// tools (`approvals.commands`, asked once per task). Checks that only read the code
/// (syntax, the scans) need no one's consent.
#[async_trait]
pub trait CodeConsent: Send + Sync {
    /// `Err(why)` when running the task's code was refused; `what` is what would run.
    async fn may_run(&self, what: &str) -> Result<(), String>;

    /// Why running the task's code was refused, once it was.
    fn refusal(&self) -> Option<String> {
        None
    }
}

/// Consent given in advance (`approvals.commands = "auto"`, and tests).
pub struct Granted;

#[async_trait]
impl CodeConsent for Granted {
    async fn may_run(&self, _what: &str) -> Result<(), String> {
        Ok(())
    }
}

/// How a check result that was not run because running code was refused begins.
pub const NOT_RUN: &str = "not run: running code was refused";

/// Whether `result` was skipped because running the task's code was refused.
pub fn refused(result: &CheckResult) -> bool {
    result.status == CheckStatus::Skipped && result.detail.starts_with(NOT_RUN)
}

/// What a check does with the task's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    /// Reads it: a compiler's syntax check or a scan in an isolated interpreter.
    Reads,
    /// Runs it, or a program of the workspace's.
    TaskCode,
}

/// Why a check's program did not run.
pub(super) enum NotRun {
    NotInstalled,
    Refused(String),
}

/// Kept of a check's output (it is parsed, then cut to [`DETAIL_CHARS`] for the record).
const CHECK_OUTPUT_BYTES: usize = 256 * 1024;

/// Kept of what a check printed before its time ran out.
const TIMED_OUT_OUTPUT_CHARS: usize = 2_000;

/// What a run stopped at its time limit says last, before the limit in seconds.
pub const STOPPED: &str = "stopped: it did not finish within";

/// Where and how long checks may run.
#[derive(Clone)]
pub struct Bench {
    pub root: PathBuf,
    /// Every check runs through it: scrubbed, confined, bounded.
    pub runner: Runner,
    /// Asked before a check runs the task's code.
    pub consent: Arc<dyn CodeConsent>,
    /// `verify.disabled`: the rules that do not run.
    pub disabled: Vec<String>,
    /// Each check command's limit (the project's suites among them).
    pub timeout: Duration,
    /// The limit of one run of the team's acceptance test ([`Bench::run_program`]).
    pub acceptance_timeout: Duration,
    pub cancel: CancellationToken,
    pub subtask: Option<SubtaskId>,
    /// The task's files as they were before it (see [`capture_originals`]).
    pub originals: Originals,
    /// Whether the work checked is the whole task (the task-level checks, or a subtask
    /// carrying the task verbatim): then the names the task asks for must be in the
    /// code and the files it names must have changed (see [`names_check`]).
    pub whole_task: bool,
}

impl Bench {
    /// The bench of a task's checks: its consent, its switches (`verify.checks = false`
    /// switches off every rule but the tests), its files as they were before it.
    pub fn of_task(
        s: &Services,
        task_id: TaskId,
        subtask: Option<SubtaskId>,
        cancel: CancellationToken,
        whole_task: bool,
    ) -> Bench {
        let mut disabled = s.config.verify.disabled.clone();
        if !s.config.verify.disputes {
            disabled.push("acceptance.disputed-assert".into());
        }
        if !s.config.verify.checks {
            disabled.extend(
                crate::checks::RULES
                    .iter()
                    .filter(|rule| rule.kind != crate::checks::Kind::Tests)
                    .map(|rule| rule.id.to_string()),
            );
        }
        Bench {
            root: s.sandbox.root().to_path_buf(),
            runner: s.runner.clone(),
            consent: s.code_consent(task_id, subtask),
            disabled,
            timeout: super::check_timeout(&s.config),
            acceptance_timeout: super::acceptance_timeout(&s.config),
            cancel,
            subtask,
            originals: s.originals(task_id),
            whole_task,
        }
    }

    /// Whether the rule `id` runs (`verify.disabled`).
    pub fn on(&self, id: &str) -> bool {
        crate::checks::enabled(id, &self.disabled)
    }

    /// The task as the checks read it ([`TaskFiles::intent`]).
    pub fn intent(&self) -> &Intent {
        self.originals.intent()
    }

    /// The result of the rule `rule`.
    pub(super) fn result(
        &self,
        rule: &str,
        name: impl Into<String>,
        status: CheckStatus,
        files: &[String],
        detail: impl Into<String>,
    ) -> CheckResult {
        CheckResult {
            kind: crate::checks::rule(rule)
                .map_or("checks", |r| r.kind.as_str())
                .into(),
            name: name.into(),
            status,
            files: files.to_vec(),
            detail: tail_chars(&detail.into(), DETAIL_CHARS),
            subtask_id: self.subtask,
            at: Utc::now(),
            rules: vec![rule.to_string()],
        }
    }

    /// The result of a check of many rules: failed with what they found, naming the
    /// rules that found it, or passed.
    pub(super) fn findings(
        &self,
        kind: crate::checks::Kind,
        name: &str,
        files: &[String],
        findings: Vec<crate::checks::Finding>,
    ) -> CheckResult {
        let mut rules: Vec<String> = Vec::new();
        for finding in &findings {
            if !rules.contains(&finding.rule) {
                rules.push(finding.rule.clone());
            }
        }
        let detail: Vec<String> = findings.into_iter().map(|f| f.message).collect();
        CheckResult {
            kind: kind.as_str().into(),
            name: name.into(),
            status: if detail.is_empty() {
                CheckStatus::Passed
            } else {
                CheckStatus::Failed
            },
            files: files.to_vec(),
            detail: tail_chars(&detail.join("\n"), DETAIL_CHARS),
            subtask_id: self.subtask,
            at: Utc::now(),
            rules,
        }
    }

    /// Runs a program in the workspace through the runner, after the consent a check
    /// that runs the task's code needs.
    pub(super) async fn run(
        &self,
        program: &str,
        args: &[String],
        runs: Runs,
    ) -> Result<Ran, NotRun> {
        self.run_within(program, args, runs, self.timeout).await
    }

    async fn run_within(
        &self,
        program: &str,
        args: &[String],
        runs: Runs,
        timeout: Duration,
    ) -> Result<Ran, NotRun> {
        let spec = RunSpec::new(program, args)
            .timeout(timeout)
            .max_output(CHECK_OUTPUT_BYTES)
            .merged();
        if runs == Runs::TaskCode {
            self.consent
                .may_run(&spec.display())
                .await
                .map_err(NotRun::Refused)?;
        }
        let failed = |output: String| {
            Ok(Ran {
                success: false,
                code: None,
                output,
            })
        };
        match self.runner.run(spec, &self.cancel).await {
            Ok(done) => Ok(Ran {
                success: done.success(),
                code: done.code(),
                output: done.output(),
            }),
            Err(RunError::NotInstalled { .. }) => Err(NotRun::NotInstalled),
            Err(RunError::Unconfined { reason }) => Err(NotRun::Refused(format!(
                "it must run in the sandbox, and {reason}"
            ))),
            // What it printed before it was stopped can show where it hung.
            Err(RunError::TimedOut { timeout, output }) => failed(format!(
                "{}{}{STOPPED} {} s (does the code loop forever or wait for input?)",
                tail_chars(output.trim_end(), TIMED_OUT_OUTPUT_CHARS),
                if output.trim().is_empty() { "" } else { "\n" },
                timeout.as_secs()
            )),
            Err(e) => failed(e.to_string()),
        }
    }

    /// Runs the team's acceptance test, a program of the task's code, in the workspace
    /// within [`Bench::acceptance_timeout`]: its exit code and output; `Err` says why it
    /// did not run.
    pub async fn run_program(
        &self,
        program: &str,
        args: &[String],
    ) -> Result<(Option<i32>, String), String> {
        let within = self.acceptance_timeout;
        match self.run_within(program, args, Runs::TaskCode, within).await {
            Ok(ran) => Ok((ran.code, ran.output)),
            Err(NotRun::NotInstalled) => Err(format!("{program} is not installed")),
            Err(NotRun::Refused(why)) => Err(format!("{NOT_RUN}: {why}")),
        }
    }

    /// A command's verdict as a check result: skipped when it is not installed or may
    /// not run.
    pub(super) async fn command(
        &self,
        rule: &str,
        runs: Runs,
        program: &str,
        args: Vec<String>,
        files: &[String],
    ) -> CheckResult {
        let name = std::iter::once(program.to_string())
            .chain(args.iter().filter(|a| a.as_str() != "-I").cloned())
            .collect::<Vec<_>>()
            .join(" ");
        match self.run(program, &args, runs).await {
            Err(NotRun::NotInstalled) => self.result(
                rule,
                name,
                CheckStatus::Skipped,
                files,
                format!("{program} is not installed"),
            ),
            Err(NotRun::Refused(why)) => self.result(
                rule,
                name,
                CheckStatus::Skipped,
                files,
                format!("{NOT_RUN}: {why}"),
            ),
            Ok(ran) if ran.success => self.result(rule, name, CheckStatus::Passed, files, ""),
            Ok(ran) => self.result(rule, name, CheckStatus::Failed, files, ran.output),
        }
    }

    /// Passed, or failed with `problems`: the result of a single-rule scan.
    pub(super) fn verdict(
        &self,
        rule: &str,
        name: &str,
        files: &[String],
        problems: Vec<String>,
    ) -> CheckResult {
        if problems.is_empty() {
            self.result(rule, name, CheckStatus::Passed, files, "")
        } else {
            self.result(rule, name, CheckStatus::Failed, files, problems.join("\n"))
        }
    }
}

pub(super) struct Ran {
    pub success: bool,
    pub code: Option<i32>,
    pub output: String,
}
