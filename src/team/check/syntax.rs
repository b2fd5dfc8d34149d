//! The syntax rules (`syntax.*`): each language's own compiler or parser says whether
//! the code is well formed. Reading code needs no one's consent; a checker that is the
//! workspace's own program (its `tsc`, cargo's build scripts) is the task's code to run.

use async_trait::async_trait;

use super::{Bench, Check, Phase, Runs, Work, with_ext};
use crate::runtime::{CheckResult, CheckStatus};

/// `syntax.python`: `python3 -I -m py_compile` over the Python files.
pub struct Python;

#[async_trait]
impl Check for Python {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.python"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let python = with_ext(work.files, &["py"]);
        if python.is_empty() {
            return Vec::new();
        }
        // Isolated (`-I`): the workspace is not on the module path, so a `py_compile.py`
        // of the task's cannot stand in for the standard library's.
        let mut args = vec!["-I".to_string(), "-m".to_string(), "py_compile".to_string()];
        args.extend(python.iter().cloned());
        vec![
            bench
                .command("syntax.python", Runs::Reads, "python3", args, &python)
                .await,
        ]
    }
}

/// `syntax.javascript`: `node --check`, a file at a time.
pub struct JavaScript;

#[async_trait]
impl Check for JavaScript {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.javascript"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let files = with_ext(work.files, &["js", "mjs", "cjs"]);
        file_by_file(bench, "syntax.javascript", ["node", "--check"], &files).await
    }
}

/// `syntax.typescript`: `tsc --noEmit` with the project's `tsconfig.json` (none, no
/// check: without it the compiler's settings would be a guess).
pub struct TypeScript;

#[async_trait]
impl Check for TypeScript {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.typescript"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let typescript = with_ext(work.files, &["ts", "tsx", "mts", "cts"]);
        if typescript.is_empty() || !bench.root.join("tsconfig.json").is_file() {
            return Vec::new();
        }
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
        vec![result]
    }
}

/// `syntax.shell`: `bash -n`, a script at a time.
pub struct Shell;

#[async_trait]
impl Check for Shell {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.shell"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let files = with_ext(work.files, &["sh", "bash"]);
        file_by_file(bench, "syntax.shell", ["bash", "-n"], &files).await
    }
}

/// `syntax.json`: every JSON file parses.
pub struct Json;

#[async_trait]
impl Check for Json {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.json"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let json = with_ext(work.files, &["json"]);
        if json.is_empty() {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for file in &json {
            let text = tokio::fs::read_to_string(bench.root.join(file))
                .await
                .unwrap_or_default();
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
                problems.push(format!("{file}: {e}"));
            }
        }
        vec![bench.verdict("syntax.json", "json parse", &json, problems)]
    }
}

/// `syntax.rust`: `cargo check` in a Cargo project at the workspace root.
pub struct Rust;

#[async_trait]
impl Check for Rust {
    fn rules(&self) -> &'static [&'static str] {
        &["syntax.rust"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let rust = with_ext(work.files, &["rs"]);
        if rust.is_empty() {
            return Vec::new();
        }
        if !bench.root.join("Cargo.toml").is_file() {
            return vec![bench.result(
                "syntax.rust",
                "cargo check",
                CheckStatus::Skipped,
                &rust,
                "no Cargo.toml at the workspace root",
            )];
        }
        vec![
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
        ]
    }
}

/// The rule `rule` as `program flag FILE`, a result for each of `files`.
async fn file_by_file(
    bench: &Bench,
    rule: &str,
    [program, flag]: [&str; 2],
    files: &[String],
) -> Vec<CheckResult> {
    let mut results = Vec::new();
    for file in files {
        results.push(
            bench
                .command(
                    rule,
                    Runs::Reads,
                    program,
                    vec![flag.into(), file.clone()],
                    std::slice::from_ref(file),
                )
                .await,
        );
    }
    results
}
