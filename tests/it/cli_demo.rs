//! `conclave demo` as a user runs it: the real binary on its built-in scenario, and
//! `conclave demo --editor` as an editor then meets it, through `conclave serve`.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::support::lsp;

fn demo(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["demo", "--fast"])
        .arg(dir)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

const FILES: [&str; 4] = ["convert.py", "cli.py", "test_convert.py", "README.md"];

#[test]
fn the_demo_recovers_by_retry_takeover_and_escalation_and_writes_its_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("demo");
    let output = demo(&dir);
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{err}");

    for file in FILES {
        assert!(dir.join(file).is_file(), "{file} missing\n{err}");
    }
    let convert = std::fs::read_to_string(dir.join("convert.py")).unwrap();
    assert!(convert.contains("def celsius_to_fahrenheit"), "{convert}");
    assert!(dir.join("conclave.toml").is_file());
    assert!(dir.join(".conclave").join("conclave.db").is_file());

    assert!(
        err.contains("plan approved by the top layer (signed by top-"),
        "{err}"
    );
    // The first two subtasks run in parallel, on two different agents.
    let first_agent = |prefix: &str| {
        err.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split(':').next())
            .map(str::to_string)
    };
    let one = first_agent("[1/4] running on ");
    let two = first_agent("[2/4] running on ");
    assert!(one.is_some() && two.is_some() && one != two, "{err}");
    // Provider trouble (a 503, timeouts) is waited out; work trouble climbs the ladder.
    assert!(
        err.contains("recovery [1/4] provider wait: waiting for demo (")
            && err.contains("), next try in"),
        "{err}"
    );
    assert!(err.contains("recovery [2/4] provider wait: "), "{err}");
    assert!(err.contains("recovery [3/4] retry: "), "{err}");
    assert!(err.contains("recovery [3/4] peer takeover: "), "{err}");
    assert!(
        err.contains("recovery [3/4] escalation to the supervisor: escalated to supervisor mid-1: proposed modify"),
        "{err}"
    );
    // The agent that gave the subtask up is replaced, and the summary counts what the
    // story shows.
    assert!(
        err.contains(
            "recovery [3/4] agent replacement: replaced bottom-1-1 by bottom-1-1.r1: ran out of retries on a subtask"
        ),
        "{err}"
    );
    assert!(
        err.contains("Recovery: 2 retries · 1 peer takeover · 1 escalation · 1 agent replacement"),
        "{err}"
    );
    assert!(err.contains("What each agent did"), "{err}");
    assert!(
        err.contains("Subtasks: 4 completed, 0 failed (of 4)"),
        "{err}"
    );
    // The demo's project has tests, which ran the code: nothing to review.
    assert!(
        err.contains("    Checked by: tests in the project, or verify.command"),
        "{err}"
    );
    assert!(
        err.contains("Recovery rate: 100% (3 of 3 subtasks that hit an error completed anyway)"),
        "{err}"
    );
    assert!(err.contains("The demo went as scripted"), "{err}");
    // Nothing failed for good, so there is no error report.
    assert!(!err.contains("Error report"), "{err}");

    // The same directory takes the demo again; its files are written afresh.
    std::fs::write(dir.join("convert.py"), "stale").unwrap();
    let again = demo(&dir);
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert_eq!(again.status.code(), Some(0), "{err}");
    let convert = std::fs::read_to_string(dir.join("convert.py")).unwrap();
    assert!(convert.contains("def celsius_to_fahrenheit"), "{convert}");
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.txt"), "keep me").unwrap();
    let output = demo(dir.path());
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.txt")).unwrap(),
        "keep me"
    );
    assert!(!dir.path().join("conclave.toml").exists());
}

/// What `conclave demo --editor DIR` prints and leaves.
fn prepare_for_editor(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["demo", "--editor", "--fast"])
        .arg(dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

/// Answers every approval of `task` with "approve" until the task ends; returns the
/// approvals seen and the task's final status.
async fn approve_until_finished(
    server: &mut lsp::Server,
    task: &str,
) -> (Vec<serde_json::Value>, serde_json::Value) {
    let mut approvals = Vec::new();
    loop {
        let message = server
            .wait_for("an approval or the end of the task", |m| {
                (m.get("id").is_some() && m["method"] == "conclave/requestApproval")
                    || (m["method"] == "conclave/taskUpdated"
                        && m["params"]["task"]["taskId"] == task
                        && matches!(
                            m["params"]["task"]["status"].as_str(),
                            Some("completed" | "failed" | "cancelled")
                        ))
            })
            .await;
        if message["method"] == "conclave/taskUpdated" {
            return (approvals, message["params"]["task"].clone());
        }
        server
            .respond(
                message["id"].clone(),
                serde_json::json!({ "decision": "approve" }),
            )
            .await;
        approvals.push(message["params"].clone());
    }
}

#[tokio::test]
async fn the_editor_try_out_runs_its_suggested_tasks_and_answers_anything_else_politely() {
    use serde_json::json;
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("try");
    let output = prepare_for_editor(&dir);
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("Open it in your editor"), "{err}");
    let printed = String::from_utf8_lossy(&output.stdout).trim().to_string();
    assert_eq!(Path::new(&printed), dir.canonicalize().unwrap());
    for file in ["conclave.toml", "try-script.json", "TRY.md", "sample.txt"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let guide = std::fs::read_to_string(dir.join("TRY.md")).unwrap();
    assert!(guide.contains("Write a word counter in Python"), "{guide}");

    // An editor opens the folder: approvals announced, files written by the server.
    let mut server = lsp::Server::spawn(&dir).await;
    server
        .initialize(
            json!({ "experimental": { "conclave": { "approvals": true, "recoveryStatus": true } } }),
            serde_json::Value::Null,
        )
        .await;

    let first = server
        .submit("Write a word counter in Python: wordcount.py and its tests")
        .await;
    let (approvals, end) = approve_until_finished(&mut server, &first).await;
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(end["subtasks"].as_array().unwrap().len(), 2, "{end}");
    assert_eq!(approvals.len(), 2, "one approval per file: {approvals:?}");
    assert!(
        approvals
            .iter()
            .all(|a| a["kind"] == "fileChange" && a["diff"]["before"] == "")
    );
    // The try-out's injected provider failure is waited out (issue 13), visibly.
    let retry = server
        .notification("conclave/recoveryStatus", |p| {
            p["taskId"] == first.as_str()
                && (p["action"] == "retry" || p["action"] == "wait_for_provider")
        })
        .await;
    assert!(retry["message"].as_str().is_some(), "{retry}");
    let wordcount = std::fs::read_to_string(dir.join("wordcount.py")).unwrap();
    assert!(wordcount.contains("def count_words"), "{wordcount}");
    assert!(dir.join("test_wordcount.py").is_file());

    // The second suggested task changes the file the first one wrote: its diff shows it.
    let second = server.submit("Add a --top option to wordcount.py").await;
    let (approvals, end) = approve_until_finished(&mut server, &second).await;
    assert_eq!(end["status"], "completed", "{end}");
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0]["diff"]["before"], wordcount.as_str());
    let changed = std::fs::read_to_string(dir.join("wordcount.py")).unwrap();
    assert!(changed.contains("--top"), "{changed}");

    // Anything else: a polite answer, not a dry script and an open breaker.
    for _ in 0..2 {
        let other = server.submit("Port my whole app to Haskell").await;
        let (approvals, end) = approve_until_finished(&mut server, &other).await;
        assert_eq!(end["status"], "completed", "{end}");
        assert!(approvals.is_empty(), "{approvals:?}");
        let detail = server
            .call("conclave/getTask", json!({ "taskId": other }))
            .await;
        let result = detail["result"].as_str().unwrap_or_default();
        assert!(result.contains("Offline try-out, no model"), "{detail}");
        assert!(result.contains("TRY.md"), "{detail}");
        assert!(result.contains("conclave.toml"), "{detail}");
    }
    assert_eq!(server.shutdown_and_exit().await.code(), Some(0));
}
