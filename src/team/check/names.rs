//! What the task names (`names.*`): the files, flags, functions and renames it asks
//! for, in the work that is the whole task. The cheapest proofs that the work is the
//! task's, read from the task's [`Intent`](crate::checks::intent::Intent).

use std::path::Path;

use async_trait::async_trait;

use super::{Bench, Check, Phase, Work, is_test_file};
use crate::runtime::CheckResult;
use crate::team::files::source_files_named;

/// The `names.*` rules, on the work that is the whole task (the task-level checks, or a
/// subtask carrying the task verbatim); also when no file was written, since a task
/// that asked for changes and got none is not done.
pub struct Names;

#[async_trait]
impl Check for Names {
    fn rules(&self) -> &'static [&'static str] {
        &[
            "names.missing-file",
            "names.unchanged-file",
            "names.missing-name",
            "names.rename",
        ]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        if !bench.whole_task {
            return Vec::new();
        }
        names_check(bench, work.files).await.into_iter().collect()
    }
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
    let defined_before =
        |name: &str| {
            bench.originals.files.iter().any(|(path, text)| {
                crate::checks::defines::names_defined(path, text).contains(name)
            })
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
            defined.push((path, crate::checks::defines::names_defined(path, &text)));
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
    let named_must_change = intent.changes && !named.is_empty() && bench.on("names.unchanged-file");
    let absent: Vec<String> = if intent.changes && !intent.removes && bench.on("names.missing-file")
    {
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
    let mut findings: Vec<Finding> = rename_problems(bench, intent, files)
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
pub(super) fn has_name(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
