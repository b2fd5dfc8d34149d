//! The bash tool with real processes: timeouts kill the whole process group, credentials
//! stay out of the environment, output is capped, and the approval policy is obeyed.
//!
//! These run on the normal clock: a paused clock would auto-advance while we wait on a
//! real child and fire timeouts spuriously. No assertion is about elapsed time.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conclave::config::CommandPolicy;
use conclave::model::ToolCall;
use conclave::tools::{
    ApprovalHook, ApprovalOutcome, BashSettings, CallContext, CommandApprovalRequest, DiskWriter,
    Sandbox, ToolError, ToolOutput, ToolRegistry, ToolSettings,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn settings(policy: CommandPolicy) -> ToolSettings {
    ToolSettings {
        command_policy: policy,
        ..ToolSettings::default()
    }
}

fn registry(
    root: &Path,
    settings: ToolSettings,
    approver: Option<Arc<dyn ApprovalHook>>,
) -> ToolRegistry {
    let sandbox = Sandbox::new(root).unwrap();
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    ToolRegistry::new(sandbox, writer, settings, approver)
}

fn bash(arguments: Value) -> ToolCall {
    ToolCall {
        id: "b".into(),
        name: "bash".into(),
        arguments,
    }
}

async fn run(tools: &ToolRegistry, arguments: Value) -> Result<ToolOutput, ToolError> {
    tools
        .dispatch(&bash(arguments), &CallContext::default())
        .await
}

/// Whether the `sleep 1000` with this pid is still running (a zombie counts as dead;
/// a reused pid running something else counts as dead too).
fn sleep_is_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .trim_start()
        .chars()
        .next();
    if matches!(state, Some('Z') | Some('X')) {
        return false;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains("sleep")
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_timeout_kills_the_commands_children_too() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Auto), None);
    let err = run(
        &tools,
        json!({ "command": "sleep 1000 & echo $! > pidfile; echo started; wait", "timeout_ms": 1000 }),
    )
    .await
    .unwrap_err();
    match &err {
        ToolError::Timeout { timeout, output } => {
            assert_eq!(*timeout, Duration::from_millis(1000));
            assert!(
                output.contains("started"),
                "partial output is kept: {output}"
            );
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    let pid = read_pid(&dir.path().join("pidfile"));
    assert!(
        !sleep_is_alive(pid),
        "the background sleep {pid} survived the timeout"
    );
}

#[tokio::test]
async fn background_jobs_do_not_outlive_a_finished_command() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Auto), None);
    let out = run(
        &tools,
        json!({ "command": "sleep 1000 & echo $! > pidfile; echo done" }),
    )
    .await
    .unwrap();
    assert!(out.content.starts_with("exit code: 0\n"), "{}", out.content);
    assert!(out.content.contains("done"), "{}", out.content);
    let pid = read_pid(&dir.path().join("pidfile"));
    assert!(
        !sleep_is_alive(pid),
        "the background sleep {pid} outlived the command"
    );
}

#[tokio::test]
async fn cancellation_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("started.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let tools = Arc::new(registry(dir.path(), settings(CommandPolicy::Auto), None));
    let cancel = CancellationToken::new();
    let ctx = CallContext {
        cancel: cancel.clone(),
        ..CallContext::default()
    };
    let running = tokio::spawn({
        let tools = tools.clone();
        async move {
            tools
                .dispatch(
                    &bash(json!({ "command": "sleep 1000 & echo $! > pidfile; echo go > started.fifo; wait" })),
                    &ctx,
                )
                .await
        }
    });
    // Blocks until the command has started its child and written the pid.
    let fifo_path: PathBuf = fifo.clone();
    tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo_path).unwrap())
        .await
        .unwrap();
    cancel.cancel();
    let result = running.await.unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    let pid = read_pid(&dir.path().join("pidfile"));
    assert!(
        !sleep_is_alive(pid),
        "the sleep {pid} survived cancellation"
    );
}

#[tokio::test]
async fn credentials_are_scrubbed_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let unique = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
    let mut settings = settings(CommandPolicy::Auto);
    settings.bash = BashSettings {
        extra_env: vec![
            (
                format!("CONCLAVE_TEST_{unique}_API_KEY"),
                "sk-leaked-1".into(),
            ),
            (
                format!("CONCLAVE_TEST_{unique}_TOKEN"),
                "tok-leaked-2".into(),
            ),
            (
                format!("CONCLAVE_TEST_{unique}_SECRET"),
                "sec-leaked-3".into(),
            ),
            (
                format!("CONCLAVE_TEST_{unique}_CONFIGURED"),
                "cfg-leaked-4".into(),
            ),
            (
                format!("CONCLAVE_TEST_{unique}_VISIBLE"),
                "visible-ok".into(),
            ),
        ],
        ..BashSettings::default()
    };
    settings.scrub_env = vec![format!("CONCLAVE_TEST_{unique}_CONFIGURED")];
    let tools = registry(dir.path(), settings, None);
    let out = run(&tools, json!({ "command": "env" })).await.unwrap();
    assert!(
        out.content.contains("visible-ok"),
        "extra variables pass through"
    );
    for leaked in [
        "sk-leaked-1",
        "tok-leaked-2",
        "sec-leaked-3",
        "cfg-leaked-4",
    ] {
        assert!(
            !out.content.contains(leaked),
            "{leaked} reached the command"
        );
    }
}

#[tokio::test]
async fn long_output_keeps_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings(CommandPolicy::Auto);
    settings.bash.max_output_bytes = 1000;
    let tools = registry(dir.path(), settings, None);
    let out = run(
        &tools,
        json!({ "command": "echo BEGIN; head -c 100000 /dev/zero | tr '\\0' a; echo; echo END" }),
    )
    .await
    .unwrap();
    assert!(out.content.len() < 1200, "{} bytes", out.content.len());
    assert!(
        out.content.starts_with("exit code: 0\nBEGIN"),
        "{}",
        &out.content[..40]
    );
    assert!(out.content.trim_end().ends_with("END"), "the tail is kept");
    assert!(
        out.content.contains("bytes cut from the middle"),
        "the cut is marked"
    );
}

#[tokio::test]
async fn a_failing_command_reports_exit_code_and_both_streams() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Auto), None);
    let err = run(
        &tools,
        json!({ "command": "echo out; echo err >&2; exit 3" }),
    )
    .await
    .unwrap_err();
    match &err {
        ToolError::CommandFailed { exit_code, output } => {
            assert_eq!(*exit_code, Some(3));
            assert_eq!(output, "out\n\n[stderr]\nerr\n");
        }
        other => panic!("expected CommandFailed, got {other:?}"),
    }
    assert!(
        err.to_string().starts_with("command exited with code 3"),
        "{err}"
    );
}

#[tokio::test]
async fn commands_run_in_the_workspace_root() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Auto), None);
    let out = run(&tools, json!({ "command": "pwd" })).await.unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert!(
        out.content.contains(root.to_str().unwrap()),
        "{}",
        out.content
    );
    assert!(out.progress, "a successful command is progress");
    // `timeout_ms: 0` (a small model's "no particular limit") runs with the default.
    let out = run(&tools, json!({ "command": "echo ran", "timeout_ms": 0 }))
        .await
        .unwrap();
    assert!(out.content.contains("ran"), "{}", out.content);
}

#[tokio::test]
async fn deny_policy_refuses_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Deny), None);
    let err = run(&tools, json!({ "command": "touch marker" }))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::CommandDenied { .. }), "{err:?}");
    assert!(!dir.path().join("marker").exists(), "a denied command ran");
}

/// Records what it was asked and answers as told.
struct RecordingApprover {
    answer: ApprovalOutcome,
    asked: Mutex<Vec<CommandApprovalRequest>>,
}

#[async_trait]
impl ApprovalHook for RecordingApprover {
    async fn approve_command(&self, request: &CommandApprovalRequest) -> ApprovalOutcome {
        self.asked.lock().unwrap().push(request.clone());
        self.answer.clone()
    }
}

#[tokio::test]
async fn ask_policy_consults_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let approve = Arc::new(RecordingApprover {
        answer: ApprovalOutcome::Approved,
        asked: Mutex::new(Vec::new()),
    });
    let tools = registry(
        dir.path(),
        settings(CommandPolicy::Ask),
        Some(approve.clone()),
    );
    let ctx = CallContext {
        subtask_id: Some("sub-1".into()),
        ..CallContext::default()
    };
    tools
        .dispatch(&bash(json!({ "command": "touch approved" })), &ctx)
        .await
        .unwrap();
    assert!(dir.path().join("approved").exists());
    let asked = approve.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].command, "touch approved");
    assert_eq!(asked[0].subtask_id.as_deref(), Some("sub-1"));

    let decline = Arc::new(RecordingApprover {
        answer: ApprovalOutcome::Denied {
            reason: "not today".into(),
        },
        asked: Mutex::new(Vec::new()),
    });
    let tools = registry(
        dir.path(),
        settings(CommandPolicy::Ask),
        Some(decline.clone()),
    );
    let err = run(&tools, json!({ "command": "touch declined" }))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not today"), "{err}");
    assert!(!dir.path().join("declined").exists());
    assert_eq!(decline.asked.lock().unwrap().len(), 1);

    // Ask with nobody to ask refuses rather than running.
    let tools = registry(dir.path(), settings(CommandPolicy::Ask), None);
    let err = run(&tools, json!({ "command": "touch unasked" }))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::CommandDenied { .. }), "{err:?}");
    assert!(!dir.path().join("unasked").exists());
}

/// A registry whose call-level retries wait 10 ms and are told to `on_retry`.
fn retrying_registry(
    root: &Path,
    on_retry: impl Fn(String) + Send + Sync + 'static,
) -> ToolRegistry {
    use conclave::recovery::backoff::RetryPolicy;
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(10),
        max_retry_after: Duration::from_millis(10),
    };
    registry(root, settings(CommandPolicy::Auto), None)
        .with_retry_policy(policy, Arc::new(|| 0.5))
        .with_retry_listener(Arc::new(move |retry| {
            on_retry(format!("{} {}", retry.source, retry.error_kind))
        }))
}

#[cfg(unix)]
#[tokio::test]
async fn a_read_only_command_killed_by_its_timeout_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    // The first `cat` blocks on a FIFO nobody writes and is killed by its timeout. When
    // the retry is announced a writer comes along, so the second `cat` gets its line.
    let retries = Arc::new(Mutex::new(Vec::new()));
    let seen = retries.clone();
    let tools = retrying_registry(dir.path(), move |retry| {
        seen.lock().unwrap().push(retry);
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, "ready\n"));
    });

    let output = run(&tools, json!({ "command": "cat pipe", "timeout_ms": 500 }))
        .await
        .unwrap();

    assert!(output.content.contains("ready"), "{}", output.content);
    assert_eq!(retries.lock().unwrap().as_slice(), ["bash timeout"]);
}

#[tokio::test]
async fn a_command_that_may_change_things_is_not_run_again_after_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let retries = Arc::new(Mutex::new(Vec::new()));
    let seen = retries.clone();
    let tools = retrying_registry(dir.path(), move |retry| seen.lock().unwrap().push(retry));

    let error = run(
        &tools,
        json!({ "command": "echo run >> runs.txt; sleep 30", "timeout_ms": 300 }),
    )
    .await
    .unwrap_err();

    assert!(matches!(error, ToolError::Timeout { .. }), "{error:?}");
    let runs = std::fs::read_to_string(dir.path().join("runs.txt")).unwrap();
    assert_eq!(runs.lines().count(), 1, "ran once: {runs:?}");
    assert!(retries.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_program_that_runs_itself_is_stopped_long_before_its_timeout() {
    if !cfg!(target_os = "linux")
        || std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "this test needs a program CI installs"
        );
        eprintln!("SKIPPED: a program this test needs is not installed");
        return;
    }
    // A program that runs itself (each copy waiting on the next) would exhaust the
    // machine: the run is stopped when it starts too many processes.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "import subprocess, sys\nsubprocess.run([sys.executable, 'hello.py'])\n",
    )
    .unwrap();
    let tools = registry(dir.path(), settings(CommandPolicy::Auto), None);
    let error = run(
        &tools,
        json!({ "command": "python3 hello.py", "timeout_ms": 600_000 }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, ToolError::CommandFailed { .. })
            && error.to_string().contains("started more than"),
        "{error}"
    );
    let root = dir.path().canonicalize().unwrap();
    let left = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == root))
        .count();
    assert_eq!(left, 0, "copies of the program are left running");
}
