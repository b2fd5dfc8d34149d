//! Done means checked: after code is written the team runs the check rules on it (on by
//! default). What each rule catches, and its id, is `crate::checks` and docs/checks.md;
//! this module runs them: every program through the runner, under the approval policy,
//! each result naming its rules and every rule switched off by `verify.disabled`.
//!
//! - **syntax** for the languages touched; a checker that is not installed is skipped,
//!   and the result says so.
//! - **stubs**: functions with no body (Python, by its own parser) and the languages'
//!   own "not written" markers.
//! - **contracts**: what a Python change breaks, against the files as they were when the
//!   task began ([`Originals`], so rewriting a function over its docstring does not erase
//!   what it was asked to do), and what the task names (its files, flags, functions and
//!   renames) in the work that is the whole task.
//! - **tests**: `verify.command` when set; else the tests the task wrote; else the
//!   project's own test command for the language touched.
//!
//! A bottom agent runs the first three on its subtask's files right after the executor
//! finishes ([`after_subtask`]); the coordinator runs them all on the task's files
//! before it calls the task done (`verify.rs`, with the fix loop).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use tokio_util::sync::CancellationToken;

use super::Services;
use super::files::{files_named, source_files_named};
use crate::exec::{RunError, RunSpec, Runner};
use crate::executor::{ExecutionOutcome, Executor, SubtaskSpec};
use crate::recovery::quality::{self, SubtaskStep, Verdict};
use crate::recovery::strategy::ErrorCategory;
use crate::recovery::{Failure, FailureKind};
use crate::runtime::{CheckResult, CheckStatus, SubtaskId, TaskId};

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

    pub fn passed(&self) -> bool {
        self.failed().next().is_none()
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

/// The files a task names, as they were when the task began, with the task's text. The
/// contracts check reads the promises of Python functions from here; the names check
/// sees whether the files the task is about were changed at all.
#[derive(Debug, Default)]
pub struct TaskFiles {
    pub task: String,
    /// Workspace-relative path and content.
    pub files: Vec<(String, String)>,
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
    Arc::new(TaskFiles {
        task: text.to_string(),
        files,
    })
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
enum NotRun {
    NotInstalled,
    Refused(String),
}

/// Kept of a check's output (it is parsed, then cut to [`DETAIL_CHARS`] for the record).
const CHECK_OUTPUT_BYTES: usize = 256 * 1024;

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
    pub timeout: Duration,
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
    /// Whether the rule `id` runs (`verify.disabled`).
    pub(super) fn on(&self, id: &str) -> bool {
        crate::checks::enabled(id, &self.disabled)
    }

    /// The task as the checks read it; a name counts as the task's files' when they
    /// defined it before the task.
    pub(super) fn intent(&self) -> crate::checks::intent::Intent {
        let defined = |name: &str| {
            self.originals
                .files
                .iter()
                .any(|(path, text)| super::files::names_defined(path, text).contains(name))
        };
        crate::checks::intent::Intent::read(&self.originals.task, &defined)
    }

    /// The result of the rule `rule`.
    fn result(
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
    fn findings(
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
    async fn run(&self, program: &str, args: &[String], runs: Runs) -> Result<Ran, NotRun> {
        let spec = RunSpec::new(program, args)
            .timeout(self.timeout)
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
            Err(e @ RunError::TimedOut { .. }) => failed(e.to_string()),
            Err(e) => failed(e.to_string()),
        }
    }

    /// Runs a program of the task's code (a test) in the workspace: its exit code and
    /// output; `Err` says why it did not run.
    pub async fn run_program(
        &self,
        program: &str,
        args: &[String],
    ) -> Result<(Option<i32>, String), String> {
        match self.run(program, args, Runs::TaskCode).await {
            Ok(ran) => Ok((ran.code, ran.output)),
            Err(NotRun::NotInstalled) => Err(format!("{program} is not installed")),
            Err(NotRun::Refused(why)) => Err(format!("{NOT_RUN}: {why}")),
        }
    }

    /// A command's verdict as a check result: skipped when it is not installed or may
    /// not run.
    async fn command(
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
}

struct Ran {
    success: bool,
    code: Option<i32>,
    output: String,
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

/// Syntax and stub checks of `files` (workspace-relative); files that no longer exist
/// are left out.
pub async fn code(bench: &Bench, files: &[String]) -> Checks {
    let files: Vec<String> = files
        .iter()
        .filter(|f| bench.root.join(f).is_file())
        .cloned()
        .collect();
    let mut results = Vec::new();

    let python = with_ext(&files, &["py"]);
    if !python.is_empty() {
        let mut compiled_ok = true;
        if bench.on("syntax.python") {
            // Isolated (`-I`): the workspace is not on the module path, so a
            // `py_compile.py` of the task's cannot stand in for the standard library's.
            let mut args = vec!["-I".to_string(), "-m".to_string(), "py_compile".to_string()];
            args.extend(python.iter().cloned());
            let compiled = bench
                .command("syntax.python", Runs::Reads, "python3", args, &python)
                .await;
            compiled_ok = compiled.status == CheckStatus::Passed;
            results.push(compiled);
        }
        // Code that does not compile would only repeat the compiler's error.
        if compiled_ok {
            results.extend(python_stubs(bench, &python).await);
            results.extend(python_contracts(bench, &python).await);
        }
    }
    if bench.on("syntax.javascript") {
        for js in with_ext(&files, &["js", "mjs", "cjs"]) {
            results.push(
                bench
                    .command(
                        "syntax.javascript",
                        Runs::Reads,
                        "node",
                        vec!["--check".into(), js.clone()],
                        std::slice::from_ref(&js),
                    )
                    .await,
            );
        }
    }
    let typescript = with_ext(&files, &["ts", "tsx", "mts", "cts"]);
    if !typescript.is_empty()
        && bench.root.join("tsconfig.json").is_file()
        && bench.on("syntax.typescript")
    {
        // The workspace's own compiler is the workspace's code to run.
        let local = bench.root.join("node_modules/.bin/tsc");
        let (program, runs) = if local.is_file() {
            (local.to_string_lossy().into_owned(), Runs::TaskCode)
        } else {
            ("tsc".to_string(), Runs::Reads)
        };
        let mut result = bench
            .command(
                "syntax.typescript",
                runs,
                &program,
                vec!["--noEmit".into(), "-p".into(), ".".into()],
                &typescript,
            )
            .await;
        result.name = "tsc --noEmit".into();
        results.push(result);
    }
    if bench.on("syntax.shell") {
        for script in with_ext(&files, &["sh", "bash"]) {
            results.push(
                bench
                    .command(
                        "syntax.shell",
                        Runs::Reads,
                        "bash",
                        vec!["-n".into(), script.clone()],
                        std::slice::from_ref(&script),
                    )
                    .await,
            );
        }
    }
    let json = with_ext(&files, &["json"]);
    if !json.is_empty() && bench.on("syntax.json") {
        let mut problems = Vec::new();
        for file in &json {
            let text = tokio::fs::read_to_string(bench.root.join(file))
                .await
                .unwrap_or_default();
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
                problems.push(format!("{file}: {e}"));
            }
        }
        results.push(verdict(bench, "syntax.json", "json parse", &json, problems));
    }
    let rust = with_ext(&files, &["rs"]);
    if !rust.is_empty() && bench.on("syntax.rust") {
        if bench.root.join("Cargo.toml").is_file() {
            results.push(
                bench
                    // Build scripts and procedural macros are the project's code.
                    .command(
                        "syntax.rust",
                        Runs::TaskCode,
                        "cargo",
                        vec![
                            "check".into(),
                            "--quiet".into(),
                            "--message-format=short".into(),
                        ],
                        &rust,
                    )
                    .await,
            );
        } else {
            results.push(bench.result(
                "syntax.rust",
                "cargo check",
                CheckStatus::Skipped,
                &rust,
                "no Cargo.toml at the workspace root",
            ));
        }
    }
    // Also with no file written: a task that asked for changes and got none is not done.
    if bench.whole_task {
        results.extend(names_check(bench, &files).await);
    }
    let scanned = with_ext(
        &files,
        &["rs", "js", "mjs", "cjs", "ts", "tsx", "mts", "cts"],
    );
    if !scanned.is_empty() && bench.on("stubs.marked") {
        let mut problems = Vec::new();
        for file in &scanned {
            let text = tokio::fs::read_to_string(bench.root.join(file))
                .await
                .unwrap_or_default();
            problems.extend(marked_stubs(file, &text));
        }
        results.push(verdict(
            bench,
            "stubs.marked",
            "stub scan",
            &scanned,
            problems,
        ));
    }
    Checks { results }
}

/// The command-line flags (`--shout`) and functions (`perimeter(width, height)`) a task
/// asks for by name, which the code must then have ([`crate::checks::intent`]).
pub fn names_to_find(task: &str) -> Vec<String> {
    crate::checks::intent::Intent::read(task, &|_| false).names
}

/// A rename the task asks for, of a function or class a file the task names defined
/// before the task, is done when no file of the work still defines the old name and
/// one defines the new (the rule `names.rename`). Other renames (a variable, a file)
/// are not judged here.
async fn rename_problems(
    bench: &Bench,
    intent: &crate::checks::intent::Intent,
    files: &[String],
) -> Vec<String> {
    if !bench.on("names.rename") {
        return Vec::new();
    }
    let defined_before = |name: &str| {
        bench
            .originals
            .files
            .iter()
            .any(|(path, text)| super::files::names_defined(path, text).contains(name))
    };
    let renames: Vec<&(String, String)> = intent
        .renames
        .iter()
        .filter(|(old, _)| defined_before(old))
        .collect();
    if renames.is_empty() {
        return Vec::new();
    }
    let mut paths: Vec<&str> = files.iter().map(String::as_str).collect();
    for (path, _) in &bench.originals.files {
        if !paths.contains(&path.as_str()) {
            paths.push(path);
        }
    }
    let mut defined = Vec::new();
    for path in paths.into_iter().filter(|p| !is_test_file(p)) {
        if let Ok(text) = tokio::fs::read_to_string(bench.root.join(path)).await {
            defined.push((path, super::files::names_defined(path, &text)));
        }
    }
    let mut problems = Vec::new();
    for (old, new) in renames {
        for (path, names) in &defined {
            if names.contains(old) {
                problems.push(format!(
                    "the task renames `{old}` to `{new}`, but {path} still defines `{old}`: rename that definition rather than adding a second one"
                ));
            }
        }
        if !defined.iter().any(|(_, names)| names.contains(new)) {
            problems.push(format!(
                "the task renames `{old}` to `{new}`, but no file of the task defines `{new}`"
            ));
        }
    }
    problems
}

/// What the task names is what the team worked on, the cheapest proofs that the work
/// is the task's (each a rule of its own):
/// - `names.missing-file`: every source file the task asks for is there when the work
///   is done, not written under another directory or not at all;
/// - `names.missing-name`: every flag or function the task asks for is in a file the
///   team wrote;
/// - `names.unchanged-file`: when the task asks for changes to files it names and none
///   of them changed, the team neither wrote nothing nor wrote a file of the same name
///   elsewhere;
/// - `names.rename`: see [`rename_problems`].
///
/// `None` when there is nothing to look for.
async fn names_check(bench: &Bench, files: &[String]) -> Option<CheckResult> {
    use crate::checks::Finding;
    let task = &bench.originals.task;
    let intent = bench.intent();
    let names: Vec<String> = if bench.on("names.missing-name") {
        intent.names.clone()
    } else {
        Vec::new()
    };
    let named = &bench.originals.files;
    let asks_for_changes = crate::executor::builtin::asks_for_changes(task);
    let named_must_change =
        asks_for_changes && !named.is_empty() && bench.on("names.unchanged-file");
    let absent: Vec<String> =
        if asks_for_changes && !intent.removes && bench.on("names.missing-file") {
            source_files_named(task)
                .into_iter()
                .filter(|path| !bench.root.join(path).is_file())
                .collect()
        } else {
            Vec::new()
        };
    let renames_asked = !intent.renames.is_empty() && bench.on("names.rename");
    if names.is_empty() && !named_must_change && absent.is_empty() && !renames_asked {
        return None;
    }
    let found = |rule: &str, message: String| Finding {
        rule: rule.to_string(),
        message,
    };
    let mut findings: Vec<Finding> = rename_problems(bench, &intent, files)
        .await
        .into_iter()
        .map(|m| found("names.rename", m))
        .collect();
    let name_of = |p: &str| Path::new(p).file_name().map(|n| n.to_os_string());
    for path in &absent {
        let instead: Vec<&str> = files
            .iter()
            .filter(|f| name_of(f) == name_of(path))
            .map(|f| f.as_str())
            .collect();
        let message = match (instead.is_empty(), files.is_empty()) {
            (false, _) => format!(
                "the task asks for {path}, but the team wrote {} instead",
                instead.join(", ")
            ),
            (true, true) => format!("the task asks for {path}, but the team wrote no file"),
            (true, false) => format!(
                "the task asks for {path}, but there is no such file (the team wrote {})",
                files.join(", ")
            ),
        };
        findings.push(found("names.missing-file", message));
    }
    if named_must_change {
        let mut changed = false;
        for (path, before) in named {
            let now = tokio::fs::read_to_string(bench.root.join(path)).await;
            changed |= now.map_or(true, |now| now != *before);
        }
        // Only two shapes are held against the work: nothing written at all, or a file
        // of the same name written elsewhere. A task may name files it does not change
        // (an ACP prompt carries the earlier turns, for one).
        let elsewhere: Vec<&String> = files
            .iter()
            .filter(|f| {
                named
                    .iter()
                    .any(|(p, _)| p != *f && name_of(p) == name_of(f))
            })
            .collect();
        if !changed && (files.is_empty() || !elsewhere.is_empty()) {
            let about = named
                .iter()
                .map(|(p, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let them = if named.len() == 1 { "it" } else { "them" };
            let message = if files.is_empty() {
                format!("the task asks to change {about}, but the team left {them} as it was")
            } else {
                format!(
                    "the task is about {about}, but the team left {them} as it was and wrote {} instead",
                    elsewhere
                        .iter()
                        .map(|f| f.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            findings.push(found("names.unchanged-file", message));
        }
    }
    let mut texts = Vec::new();
    for file in files {
        texts.push(
            tokio::fs::read_to_string(bench.root.join(file))
                .await
                .unwrap_or_default(),
        );
    }
    for name in names
        .iter()
        .filter(|name| !texts.iter().any(|text| has_name(text, name)))
    {
        let message = if files.is_empty() {
            format!("the task asks for `{name}`, but the team wrote no file")
        } else {
            format!(
                "the task asks for `{name}`, but no file the team wrote has it ({})",
                files.join(", ")
            )
        };
        findings.push(found("names.missing-name", message));
    }
    Some(bench.findings(
        crate::checks::Kind::Contracts,
        "names the task gives",
        files,
        findings,
    ))
}

/// `name` in `text` as a whole word (so `mean` is not found in `meaning`).
fn has_name(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

fn verdict(
    bench: &Bench,
    rule: &str,
    name: &str,
    files: &[String],
    problems: Vec<String>,
) -> CheckResult {
    if problems.is_empty() {
        bench.result(rule, name, CheckStatus::Passed, files, "")
    } else {
        bench.result(rule, name, CheckStatus::Failed, files, problems.join("\n"))
    }
}

/// Functions with no body (Python's own parser, `checks/python/checks.py stubs`).
async fn python_stubs(bench: &Bench, files: &[String]) -> Option<CheckResult> {
    if !bench.on("python.stub") {
        return None;
    }
    let mut args = vec!["stubs".to_string(), disabled_json(bench)];
    args.extend(files.iter().cloned());
    Some(python_rules(bench, crate::checks::Kind::Stubs, "stub scan", args, files).await)
}

/// The contracts of the change against the files as they were when the task began
/// (`checks/python/checks.py contracts`): `None` when every one of them is switched off.
async fn python_contracts(bench: &Bench, files: &[String]) -> Option<CheckResult> {
    let any_on = crate::checks::RULES.iter().any(|r| {
        r.kind == crate::checks::Kind::Contracts && r.id.starts_with("python.") && bench.on(r.id)
    });
    if !any_on {
        return None;
    }
    let pairs: Vec<(&String, Option<&String>)> = files
        .iter()
        .map(|file| {
            let original = bench
                .originals
                .files
                .iter()
                .find(|(path, _)| path == file)
                .map(|(_, content)| content);
            (file, original)
        })
        .collect();
    let args = vec![
        "contracts".to_string(),
        disabled_json(bench),
        serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()),
        bench.originals.task.clone(),
        if bench.whole_task { "whole" } else { "subtask" }.to_string(),
        if bench.intent().removes {
            "removes"
        } else {
            "keeps"
        }
        .to_string(),
    ];
    Some(
        python_rules(
            bench,
            crate::checks::Kind::Contracts,
            "function contracts",
            args,
            files,
        )
        .await,
    )
}

fn disabled_json(bench: &Bench) -> String {
    serde_json::to_string(&bench.disabled).unwrap_or_else(|_| "[]".into())
}

/// Runs the Python rules' program with `args`: what it finds, with the rules that found
/// it; a program that cannot run is a skip that says why.
async fn python_rules(
    bench: &Bench,
    kind: crate::checks::Kind,
    name: &str,
    args: Vec<String>,
    files: &[String],
) -> CheckResult {
    // Isolated (`-I`): the program reads the files with `ast`, and the workspace is not
    // on the module path, so no file of the task's is imported.
    let args: Vec<String> = ["-I", "-c", crate::checks::PYTHON_CHECKS]
        .into_iter()
        .map(String::from)
        .chain(args)
        .collect();
    let skipped = |detail: String| {
        let mut result = bench.findings(kind, name, files, Vec::new());
        result.status = CheckStatus::Skipped;
        result.detail = detail;
        result
    };
    match bench.run("python3", &args, Runs::Reads).await {
        Err(NotRun::NotInstalled) => skipped("python3 is not installed".into()),
        Err(NotRun::Refused(why)) => skipped(format!("{NOT_RUN}: {why}")),
        Ok(ran) if !ran.success => skipped(format!("the scan did not run: {}", ran.output.trim())),
        Ok(ran) => match crate::checks::parse_findings(&ran.output) {
            Ok(findings) => bench.findings(kind, name, files, findings),
            Err(e) => skipped(format!("the scan did not run: {e}")),
        },
    }
}

/// `todo!()` / `unimplemented!()` in Rust, a thrown "not implemented" in JS/TS.
pub fn marked_stubs(path: &str, text: &str) -> Vec<String> {
    let rust = extension(path) == "rs";
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or("");
            if rust {
                code.contains("todo!(") || code.contains("unimplemented!(")
            } else {
                let lower = code.to_lowercase();
                lower.contains("throw") && lower.contains("not implemented")
            }
        })
        .map(|(i, line)| format!("{path}:{}: left unimplemented: {}", i + 1, line.trim()))
        .collect()
}

pub(super) fn is_test_file(path: &str) -> bool {
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

/// The tests: `verify.command` when set; else the tests among `files`; else the
/// project's own command for a language `files` touch. Nothing to run is one skipped
/// result saying so.
pub async fn tests(bench: &Bench, verify_command: Option<&str>, files: &[String]) -> Checks {
    let mut results = Vec::new();
    if let Some(command) = verify_command {
        if !bench.on("tests.command") {
            return Checks { results };
        }
        let mut result = bench
            .command(
                "tests.command",
                Runs::TaskCode,
                "sh",
                vec!["-c".into(), command.to_string()],
                &[] as &[String],
            )
            .await;
        result.name = command.to_string();
        results.push(result);
        return Checks { results };
    }
    let exists = |f: &str| bench.root.join(f).is_file();
    let touched = |exts: &[&str]| files.iter().any(|f| exts.contains(&extension(f)));
    let written_tests: Vec<String> = files
        .iter()
        .filter(|f| is_test_file(f) && exists(f))
        .cloned()
        .collect();

    let python_tests = with_ext(&written_tests, &["py"]);
    let python_project = touched(&["py"])
        && (exists("pytest.ini")
            || exists("conftest.py")
            || exists("setup.cfg")
            || mentions(&bench.root.join("pyproject.toml"), "pytest")
            || has_python_tests(&bench.root));
    if (!python_tests.is_empty() || python_project) && bench.on("tests.python") {
        // The project's own suite when it has one: a test the task wrote, run alone,
        // says nothing about the tests that were there, and a copy of a project test
        // written elsewhere may run nothing. Discovery finds the written tests too.
        let alone: &[String] = if has_python_tests(&bench.root) {
            &[]
        } else {
            &python_tests
        };
        results.push(python_test_run(bench, alone).await);
    }
    let js_tests = with_ext(&written_tests, &["js", "mjs", "cjs"]);
    let javascript = bench.on("tests.javascript");
    if javascript && touched(&["js", "mjs", "cjs", "ts", "tsx"]) && has_npm_test(&bench.root) {
        results.push(
            bench
                .command(
                    "tests.javascript",
                    Runs::TaskCode,
                    "npm",
                    vec!["test".into(), "--silent".into()],
                    &[] as &[String],
                )
                .await,
        );
    } else if javascript && !js_tests.is_empty() {
        let mut args = vec!["--test".to_string()];
        args.extend(js_tests.iter().cloned());
        results.push(
            bench
                .command("tests.javascript", Runs::TaskCode, "node", args, &js_tests)
                .await,
        );
    }
    if touched(&["rs"]) && exists("Cargo.toml") && bench.on("tests.rust") {
        results.push(
            bench
                .command(
                    "tests.rust",
                    Runs::TaskCode,
                    "cargo",
                    vec!["test".into(), "--quiet".into()],
                    &[] as &[String],
                )
                .await,
        );
    }
    if results.is_empty() && !files.is_empty() {
        results.push(bench.result(
            "tests.command",
            "tests",
            CheckStatus::Skipped,
            &[],
            "no tests were written and no test command was found (set verify.command)",
        ));
    }
    Checks { results }
}

fn mentions(path: &Path, word: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(word))
}

fn has_python_tests(root: &Path) -> bool {
    let test_named = |dir: &Path| {
        std::fs::read_dir(dir).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                is_test_file(&name)
            })
        })
    };
    test_named(root) || test_named(&root.join("tests"))
}

fn has_npm_test(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join("package.json")) else {
        return false;
    };
    let Ok(package) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    package["scripts"]["test"]
        .as_str()
        .is_some_and(|t| !t.contains("no test specified"))
}

/// pytest when it is installed, else unittest; "no tests ran" is a skip, not a pass.
async fn python_test_run(bench: &Bench, tests: &[String]) -> CheckResult {
    let pytest = bench
        .run(
            "python3",
            &["-c".to_string(), "import pytest".to_string()],
            Runs::TaskCode,
        )
        .await
        .is_ok_and(|r| r.success);
    let mut args: Vec<String> = if pytest {
        vec!["-m".into(), "pytest".into(), "-q".into(), "-x".into()]
    } else if tests.is_empty() {
        vec!["-m".into(), "unittest".into(), "discover".into()]
    } else {
        vec!["-m".into(), "unittest".into()]
    };
    args.extend(tests.iter().cloned());
    let name = format!("python3 {}", args.join(" "));
    match bench.run("python3", &args, Runs::TaskCode).await {
        Err(NotRun::NotInstalled) => bench.result(
            "tests.python",
            name,
            CheckStatus::Skipped,
            tests,
            "python3 is not installed",
        ),
        Err(NotRun::Refused(why)) => bench.result(
            "tests.python",
            name,
            CheckStatus::Skipped,
            tests,
            format!("{NOT_RUN}: {why}"),
        ),
        Ok(ran) if ran.code == Some(5) || ran.output.contains("Ran 0 tests") => bench.result(
            "tests.python",
            name,
            CheckStatus::Skipped,
            tests,
            "no tests were found",
        ),
        Ok(ran) if ran.success => {
            bench.result("tests.python", name, CheckStatus::Passed, tests, "")
        }
        Ok(ran) => bench.result("tests.python", name, CheckStatus::Failed, tests, ran.output),
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

/// The attempt whose work [`after_subtask`] checks: which subtask, the executor that did
/// the work and was asked what, and how to stop it.
pub struct CheckedAttempt<'a> {
    pub task_id: TaskId,
    pub subtask_id: SubtaskId,
    pub executor: &'a dyn Executor,
    pub spec: &'a SubtaskSpec,
    pub cancel: CancellationToken,
}

/// Right after a subtask's executor succeeded: checks the files it wrote, and on a
/// failure gives the same executor one turn to fix its own work with the failure in
/// the prompt. `Err` carries the `check_failed` failure, its code the failed check's kind.
pub async fn after_subtask(
    s: &Services,
    attempt: CheckedAttempt<'_>,
    mut outcome: ExecutionOutcome,
    sink: &mut (dyn FnMut(&str) + Send),
) -> Result<ExecutionOutcome, (ExecutionOutcome, Failure)> {
    let CheckedAttempt {
        task_id,
        subtask_id,
        executor,
        spec,
        cancel,
    } = attempt;
    if !s.config.verify.checks {
        return Ok(outcome);
    }
    let originals = s.originals(task_id);
    let bench = Bench {
        root: s.sandbox.root().to_path_buf(),
        runner: s.runner.clone(),
        consent: s.code_consent(task_id, Some(subtask_id)),
        disabled: s.config.verify.disabled.clone(),
        timeout: check_timeout(s),
        cancel: cancel.clone(),
        subtask: Some(subtask_id),
        whole_task: spec.description.contains(originals.task.trim()),
        originals,
    };
    // What earlier attempts of this subtask wrote counts too: a retry that finds the
    // work "already done" must not pass a file a previous attempt left broken.
    let earlier: Vec<String> = s
        .tasks
        .get(task_id)
        .and_then(|t| t.subtask(subtask_id).map(|st| st.files.clone()))
        .unwrap_or_default();
    let files = |o: &ExecutionOutcome| -> Vec<String> {
        let mut files = earlier.clone();
        for path in &o.files_written {
            let path = path.to_string_lossy().into_owned();
            if !files.contains(&path) {
                files.push(path);
            }
        }
        files
    };
    // The quality ladder decides: a fix turn with the coder's tools, then the attempt
    // fails its checks and the subtask ladder takes over.
    let mut fix_turns = 0;
    loop {
        let checks = code(&bench, &files(&outcome)).await;
        record(s, task_id, Some(subtask_id), &checks.results);
        let failure = checks.failure_text();
        let verdict = if failure.is_some() {
            Verdict::Failed
        } else {
            Verdict::Passed
        };
        let failed_kind = checks
            .failed()
            .next()
            .map(|r| r.kind.clone())
            .unwrap_or_default();
        match quality::after_subtask_checks(verdict, fix_turns) {
            SubtaskStep::Accept => return Ok(outcome),
            SubtaskStep::Fail => {
                let failure = Failure::new(
                    FailureKind::CheckFailed,
                    format!(
                        "the code does not pass its checks:\n{}",
                        failure.unwrap_or_default()
                    ),
                )
                .with_code(failed_kind);
                return Err((outcome, failure));
            }
            SubtaskStep::FixTurn => {}
        }
        fix_turns += 1;
        let fix = SubtaskSpec {
            description: format!(
                "{}\n\nYou wrote the code, but it fails this check:\n{}\n\n{} Fix the files with your tools so the check passes.",
                spec.description,
                failure.unwrap_or_default(),
                ErrorCategory::of_check(&failed_kind).next_step()
            ),
            context: super::files::with_files_now(&spec.context, &s.sandbox, &bench.originals.task),
            target_files: super::files::target_files_now(&s.sandbox, &bench.originals.task),
            ..spec.clone()
        };
        sink(&format!("check failed, fixing: {}\n", checks.summary()));
        match executor.execute(&fix, cancel.clone(), sink).await {
            Ok(fixed) => {
                record_repairs(s, task_id, &fixed.repairs);
                super::files::keep_proposed(s, task_id, &fixed);
                for path in fixed.files_written {
                    if !outcome.files_written.contains(&path) {
                        outcome.files_written.push(path);
                    }
                }
                outcome.partial_results.extend(fixed.partial_results);
                if fixed.success {
                    outcome.summary = fixed.summary;
                }
            }
            Err(e) => tracing::info!("the fix turn after a failed check did not run: {e}"),
        }
    }
}

/// Each check command's time limit: a test suite may take a while, never forever.
pub fn check_timeout(s: &Services) -> Duration {
    Duration::from_millis(s.config.recovery.subtask_timeout_ms.clamp(1_000, 600_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(root: &Path) -> Bench {
        let mut settings = crate::exec::RunnerSettings::new(root.canonicalize().unwrap());
        settings.required = false;
        Bench {
            root: root.to_path_buf(),
            runner: Runner::new(settings).unwrap(),
            consent: Arc::new(Granted),
            disabled: Vec::new(),
            timeout: Duration::from_secs(60),
            cancel: CancellationToken::new(),
            subtask: None,
            originals: Arc::default(),
            whole_task: false,
        }
    }

    /// Whether python3 runs here. Without it a test says SKIPPED and returns; under CI
    /// (whose machines have it) its absence fails the test instead.
    fn python() -> bool {
        let found = std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok();
        if !found && std::env::var_os("CI").is_some() {
            panic!("python3 is needed by this test and is not installed");
        }
        if !found {
            eprintln!("SKIPPED: python3 is not installed");
        }
        found
    }

    #[tokio::test]
    async fn a_program_that_runs_itself_is_stopped_with_everything_it_started() {
        if !python() || !cfg!(target_os = "linux") {
            return;
        }
        // A program that runs itself, each copy waiting on the next: the check's time
        // limit must end them all.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("hello.py"),
            "import subprocess, sys\nsubprocess.run([sys.executable, 'hello.py'])\n",
        )
        .unwrap();
        let b = bench(dir.path());
        let (code, output) = b
            .run_program("python3", &["hello.py".to_string()])
            .await
            .unwrap();
        assert_eq!(code, None);
        assert!(output.contains("started more than"), "{output}");
        // None of the copies is left running.
        let root = dir.path().canonicalize().unwrap();
        let running = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .filter_map(Result::ok)
                .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == root))
                .count()
        };
        for _ in 0..50 {
            if running() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(running(), 0, "processes of the check are left");
    }

    #[tokio::test]
    async fn code_without_a_name_the_task_asks_for_fails_and_with_it_passes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("greet.sh"), "echo HELLO\n").unwrap();
        let mut b = bench(dir.path());
        b.whole_task = true;
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Add a --shout flag to greet.sh.",
        );
        let without = code(&b, &["greet.sh".into()]).await;
        let text = without.failure_text().expect("the missing flag is caught");
        assert!(text.contains("asks for `--shout`"), "{text}");
        std::fs::write(
            dir.path().join("greet.sh"),
            "if [ \"$1\" = --shout ]; then echo HELLO; else echo hello; fi\n",
        )
        .unwrap();
        assert!(code(&b, &["greet.sh".into()]).await.passed());
        assert!(has_name("x = perimeter(1, 2)", "perimeter"));
        assert!(!has_name("the meaning", "mean"));
        assert!(!has_name("--shouty", "--shout"));
    }

    #[tokio::test]
    async fn the_right_change_in_the_wrong_file_is_caught() {
        // The fix for stats.py written to a new src/stats.py.
        let dir = tempfile::tempdir().unwrap();
        let original = "def mean(values):\n    return sum(values) / len(values)\n";
        std::fs::write(dir.path().join("stats.py"), original).unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/stats.py"),
            "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n",
        )
        .unwrap();
        let mut b = bench(dir.path());
        b.whole_task = true;
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Change the function mean in stats.py so that it returns 0.0 for an empty list.",
        );
        let wrong = code(&b, &["src/stats.py".into()]).await;
        let text = wrong.failure_text().expect("stats.py untouched is caught");
        assert!(
            text.contains(
                "the task is about stats.py, but the team left it as it was and wrote src/stats.py"
            ),
            "{text}"
        );
        std::fs::write(
            dir.path().join("stats.py"),
            "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n",
        )
        .unwrap();
        let right = code(&b, &["stats.py".into()]).await;
        assert!(right.passed(), "{:?}", right.results);
        // Nothing written at all (the stub written back as it was) is caught too.
        std::fs::write(dir.path().join("stats.py"), original).unwrap();
        let nothing = code(&b, &[]).await;
        let text = nothing.failure_text().expect("no change is caught");
        assert!(
            text.contains("the task asks to change stats.py, but the team left it as it was"),
            "{text}"
        );
        // Another file written beside an unchanged named one is not held against it.
        std::fs::write(dir.path().join("notes.txt"), "n\n").unwrap();
        assert!(code(&b, &["notes.txt".into()]).await.passed());
        // A subtask that is only part of the task is not held to it.
        b.whole_task = false;
        std::fs::write(dir.path().join("stats.py"), original).unwrap();
        assert!(code(&b, &["src/stats.py".into()]).await.passed());
    }

    #[tokio::test]
    async fn a_file_the_task_asks_for_must_be_there() {
        // "write a script count_lines.py" done as some other file: without this check it
        // would be reported completed.
        let dir = tempfile::tempdir().unwrap();
        let task = "Write a script count_lines.py that prints the number of non-empty lines.";
        let mut b = bench(dir.path());
        b.whole_task = true;
        b.originals = capture_originals(&crate::tools::Sandbox::new(dir.path()).unwrap(), task);
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "Hello, world!\n").unwrap();
        let text = code(&b, &["src/main.rs".into()])
            .await
            .failure_text()
            .expect("the missing script is caught");
        assert!(
            text.contains("the task asks for count_lines.py, but there is no such file (the team wrote src/main.rs)"),
            "{text}"
        );
        std::fs::write(dir.path().join("src/count_lines.py"), "print(3)\n").unwrap();
        let text = code(&b, &["src/count_lines.py".into()])
            .await
            .failure_text()
            .expect("the script in another directory is caught");
        assert!(
            text.contains(
                "the task asks for count_lines.py, but the team wrote src/count_lines.py instead"
            ),
            "{text}"
        );
        std::fs::write(dir.path().join("count_lines.py"), "print(3)\n").unwrap();
        let there = code(&b, &["count_lines.py".into()]).await;
        assert!(there.passed(), "{:?}", there.results);
        // A task that moves or removes files may leave a named one gone.
        std::fs::write(dir.path().join("src/helpers.py"), "X = 1\n").unwrap();
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Move helpers.py into src/helpers.py.",
        );
        assert!(code(&b, &["src/helpers.py".into()]).await.passed());
    }

    #[test]
    fn the_files_a_task_names_are_found_once_in_order_and_never_outside_the_workspace() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "key").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/app.js"), "").unwrap();
        std::fs::write(dir.path().join("stats.py"), "").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("leak.txt"),
        )
        .unwrap();
        let text = format!(
            "Fix `src/app.js`, then stats.py. Keep stats.py tidy; see missing.py, ../x.py, \
             leak.txt, {} and README.",
            outside.path().join("secret.txt").display()
        );
        assert_eq!(files_named(dir.path(), &text), ["src/app.js", "stats.py"]);
    }

    #[tokio::test]
    async fn python_syntax_errors_and_stubs_fail_and_real_code_passes() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bad.py"), "def f(:\n    return 1\n```\n").unwrap();
        std::fs::write(
            dir.path().join("stub.py"),
            "def add(a, b):\n    \"\"\"Add.\"\"\"\n\ndef sub(a, b):\n    ...\n\ndef mul(a, b):\n    return a * b\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("good.py"),
            "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b\n",
        )
        .unwrap();
        let b = bench(dir.path());

        let bad = code(&b, &["bad.py".into()]).await;
        assert!(!bad.passed());
        assert!(bad.failure_text().unwrap().contains("py_compile"));

        let stub = code(&b, &["stub.py".into()]).await;
        let text = stub.failure_text().unwrap();
        assert!(text.contains("`add`") && text.contains("`sub`"), "{text}");
        assert!(!text.contains("`mul`"));

        let good = code(&b, &["good.py".into()]).await;
        assert!(good.passed(), "{:?}", good.results);
        assert_eq!(good.results.len(), 3, "syntax, stubs, contracts");
    }

    /// The result of the rule `rule` among `checks`, which must be there.
    fn of<'a>(checks: &'a Checks, rule: &str) -> &'a CheckResult {
        checks
            .results
            .iter()
            .find(|r| r.rules == [rule])
            .unwrap_or_else(|| panic!("no {rule} result in {:?}", checks.results))
    }

    /// Broken code fails the rule and right code passes it; a checker that is not
    /// installed is a skip that says so.
    async fn judged(b: &Bench, rule: &str, file: &str, broken: &str, right: &str) {
        std::fs::write(b.root.join(file), broken).unwrap();
        let checks = code(b, &[file.to_string()]).await;
        let result = of(&checks, rule);
        if result.status == CheckStatus::Skipped {
            assert!(result.detail.contains("not installed"), "{result:?}");
            eprintln!("SKIPPED: {rule}: {}", result.detail);
            return;
        }
        assert_eq!(result.status, CheckStatus::Failed, "{rule}: {result:?}");
        std::fs::write(b.root.join(file), right).unwrap();
        let checks = code(b, &[file.to_string()]).await;
        assert_eq!(
            of(&checks, rule).status,
            CheckStatus::Passed,
            "{rule}: {:?}",
            checks.results
        );
    }

    #[tokio::test]
    async fn each_syntax_rule_fails_broken_code_and_passes_right_code() {
        let dir = tempfile::tempdir().unwrap();
        let b = bench(dir.path());
        judged(
            &b,
            "syntax.javascript",
            "a.js",
            "function f( {\n",
            "function f() {}\n",
        )
        .await;
        judged(&b, "syntax.shell", "a.sh", "if then fi\n", "echo hi\n").await;
        judged(&b, "syntax.json", "a.json", "{\"a\": 1,}\n", "{\"a\": 1}\n").await;
        std::fs::write(
            dir.path().join("tsconfig.json"),
            "{\"files\": [\"a.ts\"]}\n",
        )
        .unwrap();
        // The workspace's own compiler: the VS Code extension's (CI installs it).
        let tsc =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode/node_modules/.bin/tsc");
        if tsc.is_file() {
            std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
            std::os::unix::fs::symlink(tsc, dir.path().join("node_modules/.bin/tsc")).unwrap();
        } else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI installs editors/vscode's typescript"
            );
        }
        judged(
            &b,
            "syntax.typescript",
            "a.ts",
            "let n: number = \"x\";\n",
            "let n: number = 1;\n",
        )
        .await;
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n",
        )
        .unwrap();
        judged(
            &b,
            "syntax.rust",
            "lib.rs",
            "pub fn f() -> u8 { \"x\" }\n",
            "pub fn f() -> u8 { 1 }\n",
        )
        .await;
    }

    #[tokio::test]
    async fn the_project_tests_of_each_language_run_and_their_failure_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let b = bench(dir.path());
        let run = |file: &'static str| {
            let b = b.clone();
            async move { tests(&b, None, &[file.to_string()]).await }
        };
        // JavaScript: a test the task wrote, run by node.
        std::fs::write(
            dir.path().join("sum.test.js"),
            "const assert = require('node:assert');\nrequire('node:test')('sum', () => assert.strictEqual(1 + 1, 3));\n",
        )
        .unwrap();
        let js = run("sum.test.js").await;
        let result = of(&js, "tests.javascript");
        if result.status == CheckStatus::Skipped {
            eprintln!("SKIPPED: tests.javascript: {}", result.detail);
        } else {
            assert_eq!(result.status, CheckStatus::Failed, "{result:?}");
            std::fs::write(
                dir.path().join("sum.test.js"),
                "const assert = require('node:assert');\nrequire('node:test')('sum', () => assert.strictEqual(1 + 1, 2));\n",
            )
            .unwrap();
            assert_eq!(
                of(&run("sum.test.js").await, "tests.javascript").status,
                CheckStatus::Passed
            );
        }
        // Rust: the project's cargo test.
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("lib.rs"),
            "#[test]\nfn t() { assert_eq!(1 + 1, 3); }\n",
        )
        .unwrap();
        let rust = run("lib.rs").await;
        let result = of(&rust, "tests.rust");
        if result.status == CheckStatus::Skipped {
            eprintln!("SKIPPED: tests.rust: {}", result.detail);
        } else {
            assert_eq!(result.status, CheckStatus::Failed, "{result:?}");
            std::fs::write(
                dir.path().join("lib.rs"),
                "#[test]\nfn t() { assert_eq!(1 + 1, 2); }\n",
            )
            .unwrap();
            assert_eq!(
                of(&run("lib.rs").await, "tests.rust").status,
                CheckStatus::Passed
            );
        }
    }

    #[tokio::test]
    async fn a_failure_names_its_rules_and_a_disabled_rule_does_not_run() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("shout.py"),
            "def add(a, b):\n    \"\"\"Add.\"\"\"\n",
        )
        .unwrap();
        let mut b = bench(dir.path());
        b.originals = Arc::new(TaskFiles {
            task: "Implement add(a, b) and a --shout flag in shout.py.".into(),
            files: Vec::new(),
        });
        b.whole_task = true;
        let files = ["shout.py".to_string()];

        let all = code(&b, &files).await;
        let failed: Vec<(&str, &[String])> = all
            .failed()
            .map(|r| (r.kind.as_str(), r.rules.as_slice()))
            .collect();
        assert_eq!(
            failed,
            [
                ("stubs", &["python.stub".to_string()][..]),
                ("contracts", &["names.missing-name".to_string()][..])
            ],
            "{:?}",
            all.results
        );
        assert!(describe(&all.results).contains("failed [python.stub]"));

        b.disabled = vec!["python.stub".into(), "names.missing-name".into()];
        let some = code(&b, &files).await;
        assert!(some.passed(), "{:?}", some.results);
        assert!(
            some.results
                .iter()
                .all(|r| r.kind == "syntax" || r.kind == "contracts"),
            "{:?}",
            some.results
        );

        b.disabled = vec!["syntax.python".into()];
        std::fs::write(dir.path().join("shout.py"), "def f(:\n").unwrap();
        let unchecked = code(&b, &files).await;
        assert!(
            !unchecked
                .results
                .iter()
                .any(|r| r.rules == ["syntax.python"]),
            "{:?}",
            unchecked.results
        );
    }

    #[tokio::test]
    async fn a_function_rewritten_to_print_breaks_the_contract_it_was_given() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let original =
            "def fizzbuzz(n: int) -> list:\n    \"\"\"Return the list of strings for 1..n.\"\"\"\n";
        std::fs::write(dir.path().join("solution.py"), original).unwrap();
        let task = "Implement the function fizzbuzz in `solution.py`.";
        let mut b = bench(dir.path());
        b.originals = capture_originals(&crate::tools::Sandbox::new(dir.path()).unwrap(), task);
        assert_eq!(b.originals.files.len(), 1);
        // The model rewrote the file over the docstring and printed instead.
        std::fs::write(
            dir.path().join("solution.py"),
            "def fizzbuzz(n):\n    for i in range(1, n + 1):\n        print(i)\n",
        )
        .unwrap();

        let broken = code(&b, &["solution.py".into()]).await;
        let text = broken.failure_text().expect("the contract check fails");
        assert!(text.contains("`fizzbuzz` must return its result"), "{text}");
        assert!(
            text.contains("Return the list of strings for 1..n."),
            "the fix prompt gets the original docstring back: {text}"
        );

        std::fs::write(
            dir.path().join("solution.py"),
            "def fizzbuzz(n):\n    return [str(i) for i in range(1, n + 1)]\n",
        )
        .unwrap();
        let kept = code(&b, &["solution.py".into()]).await;
        assert!(kept.passed(), "{:?}", kept.results);
    }

    #[tokio::test]
    async fn a_function_lost_in_a_rewrite_is_caught_but_a_renamed_one_is_not() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let original = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef spread(values):\n    \"\"\"Largest minus smallest.\"\"\"\n    return max(values) - min(values)\n";
        std::fs::write(dir.path().join("stats.py"), original).unwrap();
        let mut b = bench(dir.path());
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Change mean in stats.py to return 0.0 for an empty list.",
        );
        // The model rewrote the file with the one function it was asked about.
        std::fs::write(
            dir.path().join("stats.py"),
            "def mean(nums):\n    if not nums:\n        return 0.0\n    return sum(nums) / len(nums)\n",
        )
        .unwrap();
        let lost = code(&b, &["stats.py".into()]).await;
        let text = lost.failure_text().expect("the lost function is caught");
        assert!(text.contains("`spread` was in the file before"), "{text}");
        assert!(text.contains("return max(values) - min(values)"), "{text}");
        assert!(!text.contains("`mean`"), "{text}");

        // A rename names the old function: its going is what was asked.
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Rename spread in stats.py to span.",
        );
        std::fs::write(
            dir.path().join("stats.py"),
            "def mean(values):\n    return sum(values) / len(values)\n\n\ndef span(values):\n    return max(values) - min(values)\n",
        )
        .unwrap();
        let renamed = code(&b, &["stats.py".into()]).await;
        assert!(renamed.passed(), "{:?}", renamed.results);
    }

    #[tokio::test]
    async fn a_rename_that_leaves_the_old_definition_in_place_is_not_done() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mathx = "def calc(prices):\n    \"\"\"The sum of the prices.\"\"\"\n    return round(sum(prices), 2)\n";
        std::fs::write(dir.path().join("mathx.py"), mathx).unwrap();
        std::fs::write(
            dir.path().join("main.py"),
            "from mathx import calc\n\nprint(calc([1.25, 2.5]))\n",
        )
        .unwrap();
        let mut b = bench(dir.path());
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Rename the function calc in mathx.py to compute_total, and update its caller in main.py.",
        );
        // The task's own check, as the work is done.
        b.whole_task = true;
        std::fs::write(
            dir.path().join("mathx.py"),
            format!("{mathx}def compute_total(prices):\n    return round(sum(prices), 2)\n"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("main.py"),
            "from mathx import compute_total\n\nprint(compute_total([1.25, 2.5]))\n",
        )
        .unwrap();
        let files = ["mathx.py".to_string(), "main.py".to_string()];
        let both = code(&b, &files).await;
        let text = both.failure_text().expect("the old definition is caught");
        assert!(text.contains("mathx.py still defines `calc`"), "{text}");

        // Renamed in place: done.
        std::fs::write(
            dir.path().join("mathx.py"),
            mathx.replace("def calc", "def compute_total"),
        )
        .unwrap();
        let renamed = code(&b, &files).await;
        assert!(renamed.passed(), "{:?}", renamed.results);

        // The old one gone and the new one nowhere: not done either.
        std::fs::write(dir.path().join("mathx.py"), "TOTAL = 0\n").unwrap();
        let lost = code(&b, &files).await;
        let text = lost.failure_text().expect("the missing new name is caught");
        assert!(
            text.contains("no file of the task defines `compute_total`"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_script_rewritten_without_its_imports_names_and_main_block_is_caught() {
        if !python() {
            return;
        }
        // A script rewritten as its main function alone: what it lost is named.
        let dir = tempfile::tempdir().unwrap();
        let report = "from geometry import area\n\nWIDTH, HEIGHT = 3, 4\n\n\ndef main():\n    print(f\"area: {area(WIDTH, HEIGHT)}\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
        std::fs::write(dir.path().join("report.py"), report).unwrap();
        std::fs::write(
            dir.path().join("geometry.py"),
            "def area(w, h):\n    return w * h\n",
        )
        .unwrap();
        let mut b = bench(dir.path());
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Change report.py so that after the area line it also prints the perimeter.",
        );
        std::fs::write(
            dir.path().join("report.py"),
            "def main():\n    print(f\"area: {area(WIDTH, HEIGHT)}\")\n    print(f\"perimeter: {perimeter(WIDTH, HEIGHT)}\")\n",
        )
        .unwrap();
        let broken = code(&b, &["report.py".into()]).await;
        let text = broken.failure_text().expect("the lost parts are caught");
        assert!(
            text.contains("`area` is used but never defined or imported; before the task the file had:\nfrom geometry import area"),
            "{text}"
        );
        assert!(text.contains("`WIDTH` is used but never defined"), "{text}");
        assert!(
            text.contains("`perimeter` is used but never defined or imported"),
            "{text}"
        );
        assert!(
            text.contains(
                "`if __name__ == \"__main__\":` block was in the file before the task and is gone"
            ),
            "{text}"
        );

        // Done right, nothing is said; names bound in any way count as defined.
        std::fs::write(
            dir.path().join("report.py"),
            "from geometry import area\nimport os.path as p\n\nWIDTH, HEIGHT = 3, 4\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n\n\ndef main(*args, **kw):\n    try:\n        total = [x for x in range(3) if (y := x)]\n    except ValueError as e:\n        print(e)\n    print(f\"area: {area(WIDTH, HEIGHT)}\", p, total, y, args, kw, len)\n    print(f\"perimeter: {perimeter(WIDTH, HEIGHT)}\")\n\n\nif __name__ == \"__main__\":\n    main()\n",
        )
        .unwrap();
        let right = code(&b, &["report.py".into()]).await;
        assert!(right.passed(), "{:?}", right.results);
    }

    #[tokio::test]
    async fn an_option_read_that_the_parser_never_adds_is_caught() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let b = bench(dir.path());
        let without = "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args()\n    if args.shout:\n        print(f\"HELLO, {args.name.upper()}!\")\n    else:\n        print(f\"Hello, {args.name}!\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
        std::fs::write(dir.path().join("greet.py"), without).unwrap();
        let text = code(&b, &["greet.py".into()])
            .await
            .failure_text()
            .expect("the missing option is caught");
        assert!(
            text.contains("greet.py:8: `args.shout` is read, but the parser never adds `--shout`: add it, for a flag with parser.add_argument(\"--shout\", action=\"store_true\")"),
            "{text}"
        );
        let with = without.replace(
            "    args = parser.parse_args()",
            "    parser.add_argument(\"-s\", \"--shout\", action=\"store_true\")\n    args = parser.parse_args()",
        );
        std::fs::write(dir.path().join("greet.py"), with).unwrap();
        let right = code(&b, &["greet.py".into()]).await;
        assert!(right.passed(), "{:?}", right.results);
    }

    #[tokio::test]
    async fn an_import_of_a_name_the_task_took_from_a_module_is_caught() {
        if !python() {
            return;
        }
        // A rename in the module that leaves a caller importing the old name.
        let dir = tempfile::tempdir().unwrap();
        let main = "from mathx import calc\n\nif __name__ == \"__main__\":\n    print(calc([1.25, 2.5]))\n";
        std::fs::write(dir.path().join("main.py"), main).unwrap();
        std::fs::write(
            dir.path().join("mathx.py"),
            "def calc(prices):\n    return round(sum(prices), 2)\n",
        )
        .unwrap();
        let mut b = bench(dir.path());
        b.originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Rename the function calc in mathx.py to compute_total, and update its caller in main.py.",
        );
        std::fs::write(
            dir.path().join("mathx.py"),
            "def compute_total(prices):\n    return round(sum(prices), 2)\n",
        )
        .unwrap();
        // One subtask that changed only mathx.py: another may still update main.py.
        let first_step = code(&b, &["mathx.py".into()]).await;
        assert!(first_step.passed(), "{:?}", first_step.results);
        // The whole task: main.py, untouched, is caught.
        b.whole_task = true;
        let text = code(&b, &["mathx.py".into()])
            .await
            .failure_text()
            .expect("the stale import is caught");
        assert!(
            text.contains("main.py:1: imports `calc` from mathx, but mathx.py no longer defines it (it did before the task)"),
            "{text}"
        );
        // An import the team wrote of a name that is not there is caught too.
        std::fs::write(
            dir.path().join("main.py"),
            "from mathx import compute_totals\n\nif __name__ == \"__main__\":\n    print(compute_totals([1.25, 2.5]))\n",
        )
        .unwrap();
        let text = code(&b, &["mathx.py".into(), "main.py".into()])
            .await
            .failure_text()
            .expect("the wrong import is caught");
        assert!(
            text.contains(
                "main.py:1: imports `compute_totals` from mathx, but mathx.py does not define it"
            ),
            "{text}"
        );
        // Done right, nothing is said.
        std::fs::write(
            dir.path().join("main.py"),
            "from mathx import compute_total\n\nif __name__ == \"__main__\":\n    print(compute_total([1.25, 2.5]))\n",
        )
        .unwrap();
        let right = code(&b, &["mathx.py".into(), "main.py".into()]).await;
        assert!(right.passed(), "{:?}", right.results);
        // A task that removes nothing: the name goes back where it was.
        b.originals = Arc::new(TaskFiles {
            task: "Add a function total_tax to mathx.py; main.py prints the total.".into(),
            files: vec![(
                "mathx.py".into(),
                "def compute_total(prices):\n    return round(sum(prices), 2)\n".into(),
            )],
        });
        std::fs::write(
            dir.path().join("mathx.py"),
            "def total_tax(prices):\n    return 0\n",
        )
        .unwrap();
        let text = code(&b, &["mathx.py".into()])
            .await
            .failure_text()
            .expect("the lost function is caught");
        assert!(
            text.contains(
                "put `compute_total` back in mathx.py as it was (the task does not remove it)"
            ),
            "{text}"
        );
    }

    #[test]
    fn originals_are_the_files_the_task_names_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/b.py"), "y = 2\n").unwrap();
        let originals = capture_originals(
            &crate::tools::Sandbox::new(dir.path()).unwrap(),
            "Edit a.py and (pkg/b.py), not ../etc.py or missing.py. Then a.py again.",
        );
        let paths: Vec<&str> = originals.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["a.py", "pkg/b.py"]);
    }

    #[tokio::test]
    async fn a_missing_checker_is_a_skip_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let b = bench(dir.path());
        let result = b
            .command(
                "syntax",
                Runs::Reads,
                "no-such-checker-xyz",
                vec![],
                &["a.x".into()],
            )
            .await;
        assert_eq!(result.status, CheckStatus::Skipped);
        assert!(result.detail.contains("not installed"));
    }

    #[tokio::test]
    async fn written_python_tests_run_and_their_failure_is_reported() {
        if !python() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("calc.py"),
            "def add(a, b):\n    return a - b\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("test_calc.py"),
            "import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
        )
        .unwrap();
        let b = bench(dir.path());
        let files = vec!["calc.py".to_string(), "test_calc.py".to_string()];
        let failing = tests(&b, None, &files).await;
        assert!(!failing.passed(), "{:?}", failing.results);
        std::fs::write(
            dir.path().join("calc.py"),
            "def add(a, b):\n    return a + b\n",
        )
        .unwrap();
        let passing = tests(&b, None, &files).await;
        assert!(passing.passed(), "{:?}", passing.results);
        assert_eq!(passing.results[0].status, CheckStatus::Passed);
    }

    #[tokio::test]
    async fn verify_command_overrides_and_nothing_to_run_is_a_skip() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        let b = bench(dir.path());
        let files = vec!["notes.txt".to_string()];
        let none = tests(&b, None, &files).await;
        assert_eq!(none.results[0].status, CheckStatus::Skipped);
        let failing = tests(&b, Some("echo broken; exit 3"), &files).await;
        assert_eq!(failing.results[0].status, CheckStatus::Failed);
        assert!(failing.results[0].detail.contains("broken"));
    }

    #[test]
    fn rust_and_js_markers_are_stubs() {
        assert_eq!(
            marked_stubs(
                "src/a.rs",
                "fn a() {\n    todo!()\n}\n// todo!() in a comment\n"
            )
            .len(),
            1
        );
        assert_eq!(
            marked_stubs(
                "a.js",
                "function f() { throw new Error('Not implemented'); }"
            )
            .len(),
            1
        );
        assert!(marked_stubs("a.js", "function f() { return 1; }").is_empty());
    }
}
