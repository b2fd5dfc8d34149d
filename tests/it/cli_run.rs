//! `conclave run` as a user runs it: the real binary, a temporary workspace with a
//! `conclave.toml` pointing the scripted provider at a script, and the exit code, the
//! files, stderr and ERROR_REPORT.md checked afterwards.

use crate::support::common::python_available;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::run;

fn workspace(steps: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("conclave.toml"),
        run::scripted_without_breaker(""),
    )
    .expect("config");
    std::fs::write(
        dir.path().join("script.json"),
        serde_json::to_string_pretty(&json!({ "name": "test", "steps": steps })).expect("json"),
    )
    .expect("script");
    dir
}

fn conclave(workspace: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .arg("run")
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn plan(subtasks: Value) -> Value {
    json!({ "match": "Plan this task for", "text": json!({ "subtasks": subtasks }).to_string() })
}

/// The two steps of a subtask that writes `path`: the write, then the summary.
fn writes(key: &str, path: &str, content: &str) -> Vec<Value> {
    vec![
        json!({ "match": key, "toolCalls": [ { "name": "file_write", "arguments": { "path": path, "content": content } } ] }),
        json!({ "match": format!("created {path}"), "text": format!("{path} is written.") }),
    ]
}

/// Every ERROR_REPORT.md under the workspace's session directories.
fn error_reports(workspace: &Path) -> Vec<PathBuf> {
    let sessions = workspace.join(".conclave").join("sessions");
    let Ok(entries) = std::fs::read_dir(sessions) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("ERROR_REPORT.md"))
        .filter(|p| p.is_file())
        .collect()
}

/// A plan of two subtasks where the first fails for every agent, for ever, and the second
/// depends on it. The supervisor pauses, so the failure reaches the person (`--approve`).
fn failing_workspace() -> tempfile::TempDir {
    let mut steps = vec![
        plan(json!([
            { "description": "Write broken.txt from the spec" },
            { "description": "Write after.txt once broken.txt exists", "dependsOn": [0] },
        ])),
        json!({ "match": "keeps failing a subtask", "text": "{\"action\": \"pause\", \"reason\": \"a person should look\"}", "repeat": true }),
    ];
    steps.extend(writes("Write after.txt", "after.txt", "after\n"));
    steps.push(json!({
        "match": "Write broken.txt",
        "error": { "kind": "http", "status": 400, "body": "the spec is unreadable" },
        "repeat": true
    }));
    workspace(Value::Array(steps))
}

#[test]
fn a_task_whose_subtasks_all_complete_exits_0_without_an_error_report() {
    let mut steps = vec![plan(json!([
        { "description": "Write alpha.txt with a greeting" },
        { "description": "Write beta.txt with a farewell" },
    ]))];
    steps.extend(writes("Write alpha.txt", "alpha.txt", "hello\n"));
    steps.extend(writes("Write beta.txt", "beta.txt", "goodbye\n"));
    let ws = workspace(Value::Array(steps));

    let output = conclave(ws.path(), &["Write two files", "--approve", "deny"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("alpha.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("beta.txt")).unwrap(),
        "goodbye\n"
    );
    assert!(error_reports(ws.path()).is_empty(), "{err}");
    assert!(
        err.contains("Subtasks: 2 completed, 0 failed (of 2)"),
        "{err}"
    );
    // Text files: nothing could run them, and the summary says so (unmarked: there was
    // no code to check).
    assert!(
        err.contains("    Checked by: nothing: no test ran it"),
        "{err}"
    );
    assert!(
        err.contains("alpha.txt") && err.contains("beta.txt"),
        "{err}"
    );
    assert!(err.contains("plan approved by the top layer"), "{err}");
    // The top agent's report closes the summary.
    assert!(
        err.contains("Final report by top-")
            && err.contains("  The task completed: 2 of 2 subtasks completed.")
            && err.contains("  - progress reports read: 2"),
        "{err}"
    );
    assert!(!err.contains("Error report"), "{err}");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(out.contains("2 of 2 subtasks completed"), "{out}");
}

#[test]
fn a_completion_only_the_team_s_own_test_checked_exits_3_and_says_to_review_it() {
    // Code, no tests in the project and no example in the task: the acceptance test the
    // team wrote is all that ran it. Done, but not checked by anything independent.
    if !python_available() {
        return;
    }
    let mut steps = vec![plan(
        json!([{ "description": "Implement double in calc.py" }]),
    )];
    steps.extend(writes(
        "Implement double in calc.py",
        "calc.py",
        "def double(x):\n    \"\"\"Return twice x.\"\"\"\n    return 2 * x\n",
    ));
    steps.push(json!({ "match": "short Python test script", "text": "```python\nfrom calc import double\nassert double(2) == 4\nassert double(5) == 10\n```" }));
    let ws = workspace(Value::Array(steps));
    let output = conclave(
        ws.path(),
        &["Implement double in calc.py", "--approve", "auto"],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("completed"), "{err}");
    assert!(
        err.contains("! Checked by: only a test the team wrote itself"),
        "{err}"
    );
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains("Only a test the team wrote itself ran the code: review the change."),
        "{out}"
    );
    assert!(error_reports(ws.path()).is_empty(), "{err}");
}

#[test]
fn a_subtask_that_keeps_failing_with_approve_deny_exits_1_with_an_error_report() {
    let ws = failing_workspace();
    let output = conclave(ws.path(), &["Write the files", "--approve", "deny"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");

    // The ladder was climbed, visibly, before the person (deny) aborted the subtask.
    assert!(err.contains("recovery [1/2] retry"), "{err}");
    assert!(err.contains("peer takeover"), "{err}");
    assert!(err.contains("escalation to the supervisor"), "{err}");
    assert!(err.contains("abort (--approve deny)"), "{err}");
    // Its dependant did not run.
    assert!(!ws.path().join("after.txt").exists());
    assert!(
        err.contains("Subtasks: 0 completed, 1 failed, 1 skipped (of 2)"),
        "{err}"
    );

    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    assert!(
        err.contains(&format!("Error report: {}", reports[0].display())),
        "{err}"
    );
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("**Mode**: run"), "{report}");
    assert!(report.contains("**Continue on Error**: false"), "{report}");
    assert!(
        report.contains(": Write broken.txt from the spec"),
        "{report}"
    );
    assert!(
        report.contains("**Error Type**: bad_request (high)"),
        "{report}"
    );
    assert!(report.contains("the spec is unreadable"), "{report}");
    assert!(report.contains("| Skipped | 1 |"), "{report}");
    assert!(report.contains("## Skipped\n\n- Write"), "{report}");
    assert!(report.contains("## Recovery"), "{report}");
    assert!(report.contains("| Peer Takeovers | 1 |"), "{report}");
    assert!(report.contains("| Escalations | 1 |"), "{report}");
}

#[test]
fn continue_on_error_runs_dependants_warns_and_is_recorded_in_the_report() {
    let ws = failing_workspace();
    let output = conclave(
        ws.path(),
        &[
            "Write the files",
            "--approve",
            "deny",
            "--continue-on-error",
        ],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("warning: --continue-on-error"), "{err}");
    assert!(
        err.contains("a failed task keeps its changes (`conclave undo` takes them back)"),
        "{err}"
    );
    // The dependant ran despite the failure, and what it wrote is kept: the failed
    // task's partial work is not taken back.
    assert_eq!(
        std::fs::read_to_string(ws.path().join("after.txt")).unwrap(),
        "after\n"
    );
    assert!(!err.contains("Put back as before the task"), "{err}");
    assert!(
        err.contains("Subtasks: 1 completed, 1 failed (of 2)"),
        "{err}"
    );
    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("**Continue on Error**: true"), "{report}");
    assert!(
        report.contains(": Write broken.txt from the spec"),
        "{report}"
    );
}

#[test]
fn continue_on_error_writes_the_report_even_when_everything_completed() {
    let mut steps = vec![plan(json!([
        { "description": "Write alpha.txt with a greeting" },
        { "description": "Write beta.txt with a farewell" },
    ]))];
    steps.extend(writes("Write alpha.txt", "alpha.txt", "hello\n"));
    steps.extend(writes("Write beta.txt", "beta.txt", "goodbye\n"));
    let ws = workspace(Value::Array(steps));
    let output = conclave(
        ws.path(),
        &[
            "Write two files",
            "--approve",
            "deny",
            "--continue-on-error",
        ],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    assert!(
        err.contains(&format!("Error report: {}", reports[0].display())),
        "{err}"
    );
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("**Continue on Error**: true"), "{report}");
    assert!(report.contains("| Success Rate | 100% |"), "{report}");
    assert!(report.contains("## Failed Tasks\n\nNone."), "{report}");
}

#[test]
fn continue_on_error_takes_the_partial_work_back_when_the_config_says_restore() {
    let ws = failing_workspace();
    let config = std::fs::read_to_string(ws.path().join("conclave.toml")).unwrap();
    std::fs::write(
        ws.path().join("conclave.toml"),
        format!("{config}\n[undo]\nonFailure = \"restore\"\n"),
    )
    .unwrap();
    let output = conclave(
        ws.path(),
        &[
            "Write the files",
            "--approve",
            "deny",
            "--continue-on-error",
        ],
    );
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("warning: --continue-on-error"), "{err}");
    assert!(!err.contains("a failed task keeps its changes"), "{err}");
    // The dependant ran, and the configuration's `restore` took its file back.
    assert!(
        err.contains("Subtasks: 1 completed, 1 failed (of 2)"),
        "{err}"
    );
    assert!(!ws.path().join("after.txt").exists(), "{err}");
    assert!(
        err.contains("Put back as before the task (the task failed): after.txt"),
        "{err}"
    );
}

#[test]
fn approve_ask_with_a_closed_stdin_aborts_and_says_so() {
    let ws = failing_workspace();
    let output = conclave(ws.path(), &["Write the files", "--approve", "ask"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(err.contains("Approval needed: escalation"), "{err}");
    assert!(err.contains("stdin is closed"), "{err}");
    assert!(err.contains("abort — no answer (stdin is closed)"), "{err}");
    assert_eq!(error_reports(ws.path()).len(), 1, "{err}");
}

#[test]
fn approve_auto_retries_an_escalation_once_then_aborts() {
    let ws = failing_workspace();
    let output = conclave(ws.path(), &["Write the files", "--approve", "auto"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert_eq!(
        err.matches("retry (--approve auto retries an escalated subtask once)")
            .count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("abort (--approve auto already retried this subtask once)"),
        "{err}"
    );
}

#[test]
fn without_a_model_run_exits_2_and_says_how_to_configure_one() {
    let ws = tempfile::tempdir().unwrap();
    let output = conclave(ws.path(), &["Write anything"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("no model is configured"), "{err}");
    assert!(err.contains("llm.provider"), "{err}");
    assert!(err.contains("ANTHROPIC_API_KEY"), "{err}");
    assert!(err.contains("conclave demo"), "{err}");
    assert!(error_reports(ws.path()).is_empty());
}

#[test]
fn a_missing_workspace_exits_2() {
    let ws = tempfile::tempdir().unwrap();
    let output = conclave(&ws.path().join("nope"), &["Write anything"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("is not a directory"));
}

#[test]
fn a_model_that_only_answers_prose_fails_the_task_with_exit_1_and_a_report() {
    // No plan can be read from it, so the task stays whole in one subtask (never worse
    // than one agent); the agents make no change either, and that is what fails.
    let ws = workspace(json!([ { "text": "I would rather not plan today.", "repeat": true } ]));
    let output = conclave(ws.path(), &["Write the files", "--approve", "deny"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("plan: 1 subtasks\n  1. Write the files\n"),
        "{err}"
    );
    assert!(err.contains("failed (no_progress)"), "{err}");
    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("no_progress"), "{report}");
}

#[test]
fn the_token_limit_is_asked_and_auto_continues_and_the_summary_shows_tokens() {
    // A limit the planning call alone passes, so both of the bottom agent's calls ask.
    let ws = a_txt_task_with("[limits]\nmaxTokensPerTask = 50\n");
    let output = conclave(ws.path(), &["Write a.txt", "--approve", "auto"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "a\n"
    );
    assert_eq!(
        err.matches("approval answered: approve (--approve auto) — Token limit reached")
            .count(),
        2,
        "{err}"
    );
    assert!(
        err.contains("  Tokens: ") && err.contains(" · 3 calls · cost: no price set"),
        "{err}"
    );
    // The scripted model spends nothing: no spend cap to speak of.
    assert!(!err.contains("Spend cap:"), "{err}");
}

/// A one-subtask task that writes a.txt, with `extra` in its conclave.toml.
fn a_txt_task_with(extra: &str) -> tempfile::TempDir {
    let mut steps = vec![plan(json!([{ "description": "Write a.txt" }]))];
    steps.extend(writes("Write a.txt", "a.txt", "a\n"));
    let ws = workspace(json!(steps));
    std::fs::write(
        ws.path().join("conclave.toml"),
        run::scripted_without_breaker(extra),
    )
    .unwrap();
    ws
}

/// [`a_txt_task_with`] the scripted model priced at $1 / $2 a million tokens and a spend
/// cap its planning call alone passes.
fn priced_with_a_small_spend_cap() -> tempfile::TempDir {
    a_txt_task_with(
        "[limits]\nmaxCostPerTaskUsd = 0.0001\n\n[pricing.\"scripted\"]\ninput = 1.0\noutput = 2.0\n",
    )
}

#[test]
fn the_spend_cap_is_asked_in_dollars_and_auto_continues_and_the_summary_names_it() {
    let ws = priced_with_a_small_spend_cap();
    let output = conclave(ws.path(), &["Write a.txt", "--approve", "auto"]);
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "a\n"
    );
    // Both of the bottom agent's calls ask, each naming dollars spent and the cap.
    assert_eq!(
        err.matches("approval answered: approve (--approve auto) — Spending cap reached: $0.0")
            .count(),
        2,
        "{err}"
    );
    assert!(err.contains(" of $0.0001 ("), "{err}");
    assert!(
        err.contains(
            "  Spend cap: $0.0001 a task, then it pauses and asks (limits.maxCostPerTaskUsd); \
             raised to $0.0"
        ),
        "{err}"
    );
}

#[test]
fn denying_more_spending_cancels_the_run() {
    let ws = priced_with_a_small_spend_cap();
    let output = conclave(ws.path(), &["Write a.txt", "--approve", "deny"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{err}");
    assert!(
        err.contains("approval answered: abort (--approve deny) — Spending cap reached: $0.0"),
        "{err}"
    );
    assert!(err.contains("cancelled"), "{err}");
    assert!(!ws.path().join("a.txt").exists(), "{err}");
}

/// `conclave serve --stdio` and `conclave acp` typed in a terminal say what they wait
/// for on stderr (stdout stays protocol only), and the end of input ends them.
#[test]
fn serve_and_acp_typed_in_a_terminal_say_what_they_wait_for() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    for (args, expected) in [
        (
            &["serve", "--stdio"][..],
            "waiting for an editor to speak the Language Server Protocol",
        ),
        (&["acp"][..], "waiting for an Agent Client Protocol client"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (mut master, mut slave) = (0, 0);
        // SAFETY: openpty writes two new descriptors into the two integers.
        let opened = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(opened, 0, "a pseudo-terminal");
        // SAFETY: both descriptors were just opened and are owned here alone.
        let (master, slave) =
            unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
        let mut child = Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::from(slave))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (lines, first_line) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut seen = String::new();
            let mut buffer = [0u8; 512];
            while !seen.contains('\n') {
                match stderr.read(&mut buffer) {
                    Ok(n) if n > 0 => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
                    _ => break,
                }
            }
            let _ = lines.send(seen);
        });
        // A bound on a failure only: the line comes at once.
        let seen = first_line
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_default();
        assert!(seen.contains(expected), "{args:?}: {seen:?}");
        assert!(seen.contains("conclave run"), "{args:?}: {seen}");
        // Ctrl-D at the start of a line: the end of input, as a person ends it.
        let mut terminal = std::fs::File::from(master);
        std::io::Write::write_all(&mut terminal, b"\x04").unwrap();
        let status = child.wait().unwrap();
        drop(terminal);
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        assert!(
            stdout.is_empty(),
            "{args:?}: stdout is protocol only: {stdout:?}"
        );
        assert!(
            status.code().is_some(),
            "{args:?} ended by itself: {status:?}"
        );
    }
}

#[test]
fn a_workspace_another_conclave_serves_is_refused_with_who_holds_it_and_nothing_is_touched() {
    use conclave::engine::{ClientName, Holder, WorkspaceLock};
    let mut steps = vec![plan(
        json!([{ "description": "Write alpha.txt with a greeting" }]),
    )];
    steps.extend(writes("Write alpha.txt", "alpha.txt", "hello\n"));
    let ws = workspace(Value::Array(steps));
    // An editor's server, alive, holds the folder.
    let editor = Holder::this_process(
        Some(ClientName {
            name: "Visual Studio Code".into(),
            version: None,
        }),
        None,
    );
    let lock = WorkspaceLock::acquire(ws.path(), &editor).expect("the test takes the folder");

    let output = conclave(ws.path(), &["Write alpha.txt", "--approve", "auto"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("already serving"), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())) && err.contains("Visual Studio Code"),
        "the holder is named: {err}"
    );
    assert!(!ws.path().join("alpha.txt").exists(), "no task ran");
    assert!(
        !ws.path().join(".conclave/conclave.db").exists(),
        "the store was not opened"
    );

    drop(lock);
    let output = conclave(ws.path(), &["Write alpha.txt", "--approve", "auto"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("alpha.txt")).unwrap(),
        "hello\n"
    );
}

#[test]
fn log_lines_name_the_task_and_the_subtask_attempt_they_are_about() {
    let ws = failing_workspace();
    let output = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["run", "Write alpha.txt", "--approve", "deny", "--workspace"])
        .arg(ws.path())
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs");
    let err = stderr(&output);
    let id_after = |marker: &str| -> Option<String> {
        let at = err.find(marker)? + marker.len();
        err.get(at..at + 36).map(str::to_string)
    };
    let task = id_after("task{id=").unwrap_or_else(|| panic!("no task span: {err}"));
    let subtask_task =
        id_after("subtask{task=").unwrap_or_else(|| panic!("no subtask span: {err}"));
    assert_eq!(task, subtask_task, "both spans name the same task");
    assert!(
        err.lines()
            .any(|l| l.contains("subtask{task=") && l.contains("attempt=2")),
        "a retried subtask's lines say which attempt: {err}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_program_the_team_started_dies_with_a_killed_conclave() {
    // Conclave bounds every program it starts while it runs; once it is killed, nothing
    // may run on unsupervised. A coder's command is still sleeping when `conclave run`
    // gets SIGKILL: the command must go with it.
    if !python_available() {
        return;
    }
    let marker = format!("orphan-check-{}", std::process::id());
    let command = format!(
        "python3 -c 'import pathlib, time; pathlib.Path(\"started.txt\").write_text(\"1\"); time.sleep(120)' {marker}"
    );
    let dir = workspace(json!([
        plan(json!([{ "description": "Run the long job" }])),
        { "match": "Run the long job", "toolCalls": [ { "name": "bash", "arguments": { "command": command, "timeout_ms": 120000 } } ] },
        { "match": "exit code", "text": "Done." }
    ]));
    let config = std::fs::read_to_string(dir.path().join("conclave.toml")).unwrap();
    std::fs::write(
        dir.path().join("conclave.toml"),
        format!("{config}\n[approvals]\ncommands = \"auto\"\n"),
    )
    .unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["run", "--approve", "auto", "--workspace"])
        .arg(dir.path())
        .arg("Run the long job")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("conclave runs");
    let started = dir.path().join("started.txt");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started.exists(), "the command never started");
    run.kill().unwrap();
    run.wait().unwrap();
    // The kernel kills the program when its parent goes; give it a moment to.
    let still_running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .any(|cmdline| String::from_utf8_lossy(&cmdline).contains(&marker))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while still_running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let orphaned = still_running();
    if orphaned {
        let _ = Command::new("pkill").args(["-f", &marker]).status();
    }
    assert!(
        !orphaned,
        "the command outlived the conclave that started it"
    );
}
