//! The rules that read Python (`python.*`): one program, `crate::checks::PYTHON_CHECKS`
//! (`src/checks/python/checks.py`), run isolated, finds functions with no body and what
//! a change breaks against the files as they were when the task began. Neither runs on
//! code that does not compile: it would only repeat the compiler.

use async_trait::async_trait;

use super::bench::NotRun;
use super::{Bench, Check, NOT_RUN, Phase, Runs, Work, with_ext};
use crate::runtime::{CheckResult, CheckStatus, TaskId};
use crate::team::Services;

/// `python.stub`: functions whose body is only a docstring, `pass`, `...` or a raised
/// `NotImplementedError`.
pub struct Stubs;

#[async_trait]
impl Check for Stubs {
    fn rules(&self) -> &'static [&'static str] {
        &["python.stub"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let files = with_ext(work.files, &["py"]);
        if files.is_empty() || work.not_passed("syntax.python") {
            return Vec::new();
        }
        let mut args = vec!["stubs".to_string(), disabled_json(bench)];
        args.extend(files.iter().cloned());
        vec![python_rules(bench, crate::checks::Kind::Stubs, "stub scan", args, &files).await]
    }
}

/// The contracts of a Python change (`python.*` of kind contracts), judged against the
/// files as they were when the task began.
pub struct Contracts;

#[async_trait]
impl Check for Contracts {
    fn rules(&self) -> &'static [&'static str] {
        &[
            "python.broken-import",
            "python.lost-definition",
            "python.unkept-return",
            "python.unbound-name",
            "python.unparsed-option",
            "python.lost-main",
        ]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let files = with_ext(work.files, &["py"]);
        if files.is_empty() || work.not_passed("syntax.python") {
            return Vec::new();
        }
        let pairs: Vec<(&String, Option<&String>)> = files
            .iter()
            .map(|file| (file, original(bench, file)))
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
            may_lose_json(bench),
        ];
        vec![
            python_rules(
                bench,
                crate::checks::Kind::Contracts,
                "function contracts",
                args,
                &files,
            )
            .await,
        ]
    }
}

/// The names the task may take away ([`Intent::may_lose`]), as the JSON list the
/// Python checks read.
///
/// [`Intent::may_lose`]: crate::checks::intent::Intent::may_lose
fn may_lose_json(bench: &Bench) -> String {
    serde_json::to_string(bench.intent().may_lose()).unwrap_or_else(|_| "[]".into())
}

/// What a coder's rewrite may drop from a Python file that the team puts back as it was
/// when the task began, unless the task takes code away: a person's code and
/// documentation are not the coder's to drop unasked.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dropped {
    /// Top-level functions and classes the task does not name
    /// (`repair.python-definitions`).
    Definitions,
    /// Docstrings of functions and classes (`repair.python-docstrings`).
    Docstrings,
}

impl Dropped {
    fn repair(self) -> &'static str {
        match self {
            Dropped::Definitions => "repair.python-definitions",
            Dropped::Docstrings => "repair.python-docstrings",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Dropped::Definitions => "definitions",
            Dropped::Docstrings => "docstrings",
        }
    }
}

/// A Python file with what a rewrite dropped put back.
#[derive(Debug, serde::Deserialize)]
struct PutBack {
    path: String,
    content: String,
    /// The functions and classes that came back, or whose docstring did.
    names: Vec<String>,
}

/// The task's Python files that lost what `dropped` names since the task began, with it
/// back. Nothing when the repair is off, the task takes code away, or the program
/// cannot run.
async fn put_back(bench: &Bench, files: &[String], dropped: Dropped) -> Vec<PutBack> {
    if bench.disabled.iter().any(|d| d == dropped.repair()) || bench.intent().removes {
        return Vec::new();
    }
    let python = with_ext(files, &["py"]);
    let pairs: Vec<(&String, &String)> = python
        .iter()
        .filter_map(|file| Some((file, original(bench, file)?)))
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let args: Vec<String> = [
        "-I",
        "-c",
        crate::checks::PYTHON_CHECKS.as_str(),
        dropped.command(),
    ]
    .into_iter()
    .map(String::from)
    .chain([
        disabled_json(bench),
        serde_json::to_string(&pairs).unwrap_or_else(|_| "[]".into()),
        may_lose_json(bench),
    ])
    .collect();
    match bench.run("python3", &args, Runs::Reads).await {
        Ok(ran) if ran.success => ran
            .output
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// Puts back the definitions, then the docstrings, the task's coders dropped from its
/// Python files ([`put_back`]), as a change of the task: undone with it, and asked
/// about under `fileChanges = "ask"`; a refused one stays refused. Each put back is
/// recorded and told to `note`.
pub async fn put_back_dropped(
    s: &Services,
    task_id: TaskId,
    bench: &Bench,
    files: &[String],
    note: &mut (dyn FnMut(&str) + Send),
) {
    for dropped in [Dropped::Definitions, Dropped::Docstrings] {
        for kept in put_back(bench, files, dropped).await {
            let names = kept
                .names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let what = match dropped {
                Dropped::Definitions => format!("{names} were dropped by a rewrite"),
                Dropped::Docstrings => {
                    format!("the docstring(s) of {names} were dropped by a rewrite")
                }
            };
            match s
                .write_change(task_id, &kept.path, &kept.content, false)
                .await
            {
                Ok(_) => {
                    super::record_repairs(s, task_id, &[dropped.repair()]);
                    note(&format!("{}: {what}: put back as they were", kept.path));
                }
                Err(e) => tracing::info!("{}: {what}, and are not put back: {e}", kept.path),
            }
        }
    }
}

/// What `file` held when the task began, if it was there.
fn original<'a>(bench: &'a Bench, file: &str) -> Option<&'a String> {
    bench
        .originals
        .files
        .iter()
        .find(|(path, _)| path == file)
        .map(|(_, content)| content)
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
    let args: Vec<String> = ["-I", "-c", crate::checks::PYTHON_CHECKS.as_str()]
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
