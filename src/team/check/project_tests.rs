//! The tests (`tests.command`, `tests.python`, `tests.javascript`, `tests.rust`):
//! `verify.command` when set; else the tests among the files written; else the
//! project's own command for a language they touch. They run the task's code, so each
//! needs the consent of `approvals.commands`.

use std::path::Path;

use async_trait::async_trait;

use super::bench::NotRun;
use super::{Bench, Check, NOT_RUN, Phase, Runs, Work, extension, is_test_file, with_ext};
use crate::runtime::{CheckResult, CheckStatus};

/// The project's tests, or the ones the task wrote. Nothing to run is one skipped
/// result saying so.
pub struct ProjectTests;

#[async_trait]
impl Check for ProjectTests {
    fn rules(&self) -> &'static [&'static str] {
        &[
            "tests.command",
            "tests.python",
            "tests.javascript",
            "tests.rust",
        ]
    }

    fn phase(&self) -> Phase {
        Phase::Tests
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        tests(bench, work.verify_command, work.files).await
    }
}

async fn tests(bench: &Bench, verify_command: Option<&str>, files: &[String]) -> Vec<CheckResult> {
    let mut results = Vec::new();
    if let Some(command) = verify_command {
        if !bench.on("tests.command") {
            return results;
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
        return results;
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
    results
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
