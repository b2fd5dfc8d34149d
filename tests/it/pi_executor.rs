//! The pi executor, two ways:
//!
//! - against the real `@mariozechner/pi-coding-agent` installed in `tests/pi` (`npm ci
//!   --prefix tests/pi`), talking to a wiremock OpenAI-compatible server that streams
//!   SSE. Without the package these tests skip, except under `CI`, where they fail.
//! - over event streams recorded from the real pi (`tests/fixtures/pi`), replayed
//!   through the parser and the run follower under tokio's paused clock.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use conclave::config::CallRetryConfig;
use conclave::executor::pi::agent_dir::{ApiKey, PiApi, PiModel};
use conclave::executor::pi::errors::ErrorContext;
use conclave::executor::pi::events::{PiEvent, PiLine, parse_line};
use conclave::executor::pi::run::{FollowEnd, RunEnd, RunTimers, RunTracker, follow_run};
use conclave::executor::pi::{PiExecutor, PiSettings};
use conclave::executor::{ExecutionOutcome, Executor, ExecutorError, SubtaskSpec};
use conclave::model::ModelError;
use conclave::recovery::{Classify, Severity};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::time::{Instant, timeout};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{body_string_contains, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

// ---------------------------------------------------------------------------------
// Against the real pi
// ---------------------------------------------------------------------------------

const API_KEY: &str = "sk-conclave-test-key";

/// A bound on anything the real-pi tests wait for, so a bug fails instead of hanging.
const HANG_GUARD: Duration = Duration::from_secs(120);

/// The installed pi, or `None` (with a note) when it is missing outside CI. Also
/// routes the executor's logs to the test output (`RUST_LOG`, default `warn`).
fn installed_pi() -> Option<PathBuf> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    // Another test of this binary may have installed it already.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .with_ansi(false)
        .try_init();
    let pi = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pi/node_modules/.bin/pi");
    if pi.exists() {
        return Some(pi);
    }
    let message = format!(
        "pi-coding-agent is not installed at {}; run `npm ci --prefix tests/pi` (needs Node >= 20.18.1)",
        pi.display()
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    eprintln!("skipping: {message}");
    None
}

fn settings(pi: &Path, workspace: &Path, server: &MockServer) -> PiSettings {
    PiSettings {
        pi_path: pi.to_path_buf(),
        workspace_root: workspace.to_path_buf(),
        model: PiModel {
            provider: "openai".into(),
            api: PiApi::OpenAiCompletions,
            base_url: format!("{}/v1", server.uri()),
            model_id: "mock-model".into(),
            api_key: Some(ApiKey::new(API_KEY)),
            max_tokens: None,
        },
        max_iterations: 10,
        allow_bash: false,
        call_retry: CallRetryConfig {
            max_attempts: 1,
            base_delay_ms: 50,
            max_delay_ms: 1000,
        },
        step_timeout: Duration::from_secs(60),
        subtask_timeout: Duration::from_secs(120),
        retry_grace: Duration::from_millis(500),
        startup_timeout: Duration::from_secs(60),
        shutdown_grace: Duration::from_secs(2),
        sandbox: conclave::config::SandboxConfig::default(),
        scrub_env: Vec::new(),
    }
}

fn spec(description: &str) -> SubtaskSpec {
    SubtaskSpec {
        subtask_id: "st-1".into(),
        description: description.into(),
        system_prompt: "You are Conclave bottom agent Ada.".into(),
        context: "The team agreed on plain text files.".into(),
        target_files: Vec::new(),
        task_names: Vec::new(),
        asks_for_changes: conclave::checks::intent::asks_for_changes(description),
    }
}

fn sse(chunks: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for delta_and_finish in chunks {
        let chunk = json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "mock-model",
            "choices": [{
                "index": 0,
                "delta": delta_and_finish["delta"],
                "finish_reason": delta_and_finish["finish"],
            }],
        });
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn text_answer(text: &str) -> ResponseTemplate {
    let (head, tail) = text.split_at(text.len() / 2);
    sse(&[
        json!({ "delta": { "role": "assistant", "content": head } }),
        json!({ "delta": { "content": tail } }),
        json!({ "delta": {}, "finish": "stop" }),
    ])
}

fn tool_call(id: &str, name: &str, args: Value) -> ResponseTemplate {
    sse(&[
        json!({ "delta": { "role": "assistant", "tool_calls": [{
            "index": 0, "id": id, "type": "function",
            "function": { "name": name, "arguments": "" } }] } }),
        json!({ "delta": { "tool_calls": [{
            "index": 0, "function": { "arguments": args.to_string() } }] } }),
        json!({ "delta": {}, "finish": "tool_calls" }),
    ])
}

fn completions() -> wiremock::MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

async fn execute(
    executor: &PiExecutor,
    spec: &SubtaskSpec,
) -> (Result<ExecutionOutcome, ExecutorError>, String) {
    let mut output = String::new();
    let mut sink = |chunk: &str| output.push_str(chunk);
    let result = timeout(
        HANG_GUARD,
        executor.execute(spec, CancellationToken::new(), &mut sink),
    )
    .await
    .expect("the execution hung");
    (result, output)
}

#[tokio::test]
async fn a_plain_answer_is_a_successful_outcome() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .and(header(
            "authorization",
            format!("Bearer {API_KEY}").as_str(),
        ))
        // The role reaches the system prompt, the subtask the user message, verbatim.
        .and(body_string_contains("You are Conclave bottom agent Ada."))
        .and(body_string_contains("Say hello in two words"))
        .and(body_string_contains("The team agreed on plain text files."))
        .respond_with(text_answer("Hello there"))
        .expect(1)
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let executor = PiExecutor::new(settings(&pi, workspace.path(), &server)).unwrap();

    let (result, output) = execute(&executor, &spec("Say hello in two words")).await;

    let outcome = result.unwrap();
    assert!(outcome.success);
    assert_eq!(outcome.summary, "Hello there");
    assert_eq!(outcome.iterations, 1);
    assert!(outcome.files_written.is_empty());
    assert!(output.contains("Hello there"), "streamed: {output:?}");
    assert!(executor.live_processes().is_empty());
}

#[tokio::test]
async fn done_without_any_change_on_a_change_subtask_is_no_progress() {
    // An executor that answers at once and writes nothing has not done a subtask that
    // asks for changes: it needs a write, an edit or a command.
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .respond_with(text_answer("The program prints hello world."))
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let executor = PiExecutor::new(settings(&pi, workspace.path(), &server)).unwrap();

    let (result, _) = execute(
        &executor,
        &spec("Write a Python program in the file hello.py that prints hello world."),
    )
    .await;

    match result {
        Err(ExecutorError::NoProgress(message, _)) => {
            assert!(message.contains("pi made none"), "{message}");
            assert!(message.contains("prints hello world"), "{message}");
        }
        other => panic!("expected no progress, got {other:?}"),
    }
    assert!(!workspace.path().join("hello.py").exists());
    assert!(executor.live_processes().is_empty());
}

#[tokio::test]
async fn a_write_tool_round_trip_creates_the_file() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .respond_with(tool_call(
            "call_1",
            "write",
            json!({ "path": "notes/hello.txt", "content": "hi from pi\n" }),
        ))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    completions()
        // The second call carries the tool's result back to the model.
        .and(body_string_contains("call_1"))
        .respond_with(text_answer("Wrote notes/hello.txt"))
        .with_priority(2)
        .expect(1)
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let executor = PiExecutor::new(settings(&pi, workspace.path(), &server)).unwrap();

    let (result, output) = execute(&executor, &spec("Create notes/hello.txt")).await;

    let outcome = result.unwrap();
    assert!(outcome.success);
    assert_eq!(outcome.summary, "Wrote notes/hello.txt");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes/hello.txt")).unwrap(),
        "hi from pi\n"
    );
    assert_eq!(
        outcome.files_written,
        vec![PathBuf::from("notes/hello.txt")]
    );
    assert_eq!(outcome.partial_results.len(), 1);
    assert!(
        outcome.partial_results[0].starts_with("write notes/hello.txt: "),
        "{:?}",
        outcome.partial_results
    );
    assert_eq!(outcome.iterations, 2);
    assert_eq!(outcome.error_count, 0);
    assert!(
        output.contains("[write notes/hello.txt]"),
        "streamed: {output:?}"
    );
}

#[tokio::test]
async fn an_unauthorized_model_is_a_critical_typed_error() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": { "message": "Incorrect API key provided", "type": "invalid_request_error" }
        })))
        // Retries are allowed, but a 401 is not worth one.
        .expect(1)
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = settings(&pi, workspace.path(), &server);
    settings.call_retry.max_attempts = 3;
    let executor = PiExecutor::new(settings).unwrap();

    let (result, _) = execute(&executor, &spec("Say hello")).await;

    let error = result.unwrap_err();
    assert!(
        matches!(&error, ExecutorError::Model(ModelError::Unauthorized { provider }) if provider == "openai"),
        "{error:?}"
    );
    assert_eq!(error.severity(), Severity::Critical);
    assert!(executor.live_processes().is_empty());
}

#[tokio::test]
async fn server_errors_are_retried_by_pi_then_reported() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({
            "error": { "message": "overloaded right now" }
        })))
        .expect(2)
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = settings(&pi, workspace.path(), &server);
    settings.call_retry.max_attempts = 2;
    let executor = PiExecutor::new(settings).unwrap();

    let (result, _) = execute(&executor, &spec("Say hello")).await;

    let error = result.unwrap_err();
    assert!(
        matches!(
            &error,
            ExecutorError::Model(ModelError::Http { status: 503, .. })
        ),
        "{error:?}"
    );
    assert!(error.is_transient());
}

#[tokio::test]
async fn the_iteration_limit_returns_partial_results() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    completions()
        .respond_with(tool_call(
            "call_1",
            "write",
            json!({ "path": "loop.txt", "content": "again\n" }),
        ))
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = settings(&pi, workspace.path(), &server);
    settings.max_iterations = 1;
    let executor = PiExecutor::new(settings).unwrap();

    let (result, _) = execute(&executor, &spec("Write loop.txt")).await;

    let outcome = result.unwrap();
    assert!(!outcome.success);
    assert_eq!(outcome.iterations, 1);
    assert_eq!(outcome.files_written, vec![PathBuf::from("loop.txt")]);
    assert!(
        outcome.summary.contains("more than 1 model round trips"),
        "{}",
        outcome.summary
    );
    assert!(executor.live_processes().is_empty());
}

/// Answers nothing for a long time, after saying that the call arrived.
struct Stall(Arc<Notify>);

impl Respond for Stall {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.0.notify_one();
        ResponseTemplate::new(200).set_delay(Duration::from_secs(600))
    }
}

#[tokio::test]
async fn cancellation_aborts_and_the_process_is_reaped() {
    let Some(pi) = installed_pi() else { return };
    let server = MockServer::start().await;
    let called = Arc::new(Notify::new());
    completions()
        .respond_with(Stall(Arc::clone(&called)))
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let executor = Arc::new(PiExecutor::new(settings(&pi, workspace.path(), &server)).unwrap());
    let cancel = CancellationToken::new();

    let run = tokio::spawn({
        let executor = Arc::clone(&executor);
        let cancel = cancel.clone();
        async move {
            let mut sink = |_: &str| {};
            executor
                .execute(&spec("Think for a long time"), cancel, &mut sink)
                .await
        }
    });
    timeout(HANG_GUARD, called.notified())
        .await
        .expect("pi never called the model");
    let pids = executor.live_processes();
    assert_eq!(pids.len(), 1, "{pids:?}");
    cancel.cancel();

    let result = timeout(HANG_GUARD, run)
        .await
        .expect("cancellation hung")
        .unwrap();
    assert!(
        matches!(result, Err(ExecutorError::Cancelled)),
        "{result:?}"
    );
    assert!(executor.live_processes().is_empty());
    // Reaped, not a zombie: a zombie would still accept signal 0.
    let pid = libc::pid_t::try_from(pids[0]).unwrap();
    // SAFETY: signal 0 only checks whether the pid exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "pi (pid {pid}) is still there");
}

#[tokio::test]
async fn a_missing_pi_binary_is_a_clear_configuration_error() {
    let server = MockServer::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let missing = workspace.path().join("no-such-pi");
    let executor = PiExecutor::new(settings(&missing, workspace.path(), &server)).unwrap();

    let (result, _) = execute(&executor, &spec("Say hello")).await;

    let error = result.unwrap_err();
    assert!(
        matches!(&error, ExecutorError::NotInstalled(m) if m.contains("no-such-pi") && m.contains("executor.piPath")),
        "{error:?}"
    );
    // Configuration: fatal, never retried.
    let failure = conclave::recovery::Failure::of(&error);
    assert!(failure.fatal && !failure.transient, "{failure:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_pi_that_dies_at_startup_reports_its_stderr() {
    use std::os::unix::fs::PermissionsExt;

    let server = MockServer::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let fake = workspace.path().join("fake-pi");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'No models available for conclave' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let executor = PiExecutor::new(settings(&fake, workspace.path(), &server)).unwrap();

    let (result, _) = execute(&executor, &spec("Say hello")).await;

    let error = result.unwrap_err();
    assert!(
        matches!(&error, ExecutorError::Crashed(m)
            if m.contains("before it was ready") && m.contains("No models available") && m.contains('3')),
        "{error:?}"
    );
    // A crash: worth another process, and counted by pi's own breaker.
    let failure = conclave::recovery::Failure::of(&error);
    assert_eq!(
        failure.kind,
        conclave::recovery::FailureKind::ExecutorCrashed
    );
    assert!(failure.transient && !failure.fatal, "{failure:?}");
    assert!(executor.live_processes().is_empty());
}

#[tokio::test]
async fn the_agent_dir_holds_the_model_but_never_the_key() {
    let server = MockServer::start().await;
    let workspace = tempfile::tempdir().unwrap();
    let executor = PiExecutor::new(settings(Path::new("pi"), workspace.path(), &server)).unwrap();
    let models = std::fs::read_to_string(executor.agent_dir().join("models.json")).unwrap();
    let models: Value = serde_json::from_str(&models).unwrap();
    let provider = &models["providers"]["conclave"];
    assert_eq!(provider["baseUrl"], format!("{}/v1", server.uri()));
    assert_eq!(provider["models"][0]["id"], "mock-model");
    for file in ["models.json", "settings.json"] {
        let text = std::fs::read_to_string(executor.agent_dir().join(file)).unwrap();
        assert!(!text.contains(API_KEY), "{file} contains the key");
    }
    let agent_dir = executor.agent_dir().to_path_buf();
    drop(executor);
    assert!(
        !agent_dir.exists(),
        "the private agent dir outlived its executor"
    );
}

// ---------------------------------------------------------------------------------
// Recorded event streams
// ---------------------------------------------------------------------------------

const GRACE: Duration = Duration::from_millis(1500);
const STEP: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> Vec<String> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pi")
        .join(name);
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The lines up to and including the first `agent_end`, and the rest.
fn split_after_first_agent_end(lines: &[String]) -> (Vec<String>, Vec<String>) {
    let end = lines
        .iter()
        .position(|l| l.contains(r#""type":"agent_end""#))
        .expect("the fixture has an agent_end");
    (lines[..=end].to_vec(), lines[end + 1..].to_vec())
}

/// A run follower fed from a channel the test writes recorded lines into.
struct Replay {
    lines: mpsc::Receiver<String>,
    feed: mpsc::Sender<String>,
    tracker: RunTracker,
    timers: RunTimers,
    cancel: CancellationToken,
    commands: mpsc::UnboundedSender<String>,
    _command_rx: mpsc::UnboundedReceiver<String>,
    output: String,
}

impl Replay {
    fn new() -> Self {
        let (feed, lines) = mpsc::channel(4096);
        let (commands, command_rx) = mpsc::unbounded_channel();
        Replay {
            lines,
            feed,
            tracker: RunTracker::new(
                Path::new("/workspace"),
                25,
                ErrorContext::new("openai", STEP, None),
            ),
            timers: RunTimers {
                step_timeout: STEP,
                subtask_deadline: Instant::now() + Duration::from_secs(600),
                subtask_timeout: Duration::from_secs(600),
                retry_grace: GRACE,
            },
            cancel: CancellationToken::new(),
            commands,
            _command_rx: command_rx,
            output: String::new(),
        }
    }

    fn with(lines: &[String]) -> Self {
        let replay = Replay::new();
        replay.push(lines);
        replay
    }

    fn push(&self, lines: &[String]) {
        for line in lines {
            self.feed
                .try_send(line.clone())
                .expect("the replay channel has room");
        }
    }

    /// Follows until the run ends; the feed stays open, as pi's stdout would.
    async fn follow(&mut self) -> FollowEnd {
        let output = &mut self.output;
        let mut sink = |chunk: &str| output.push_str(chunk);
        follow_run(
            &mut self.lines,
            &mut self.tracker,
            &self.timers,
            &self.cancel,
            &self.commands,
            &mut sink,
        )
        .await
    }
}

fn completed(end: FollowEnd) -> ExecutionOutcome {
    match end {
        FollowEnd::Finished(RunEnd::Completed(outcome)) => outcome,
        other => panic!("expected a completed run, got {other:?}"),
    }
}

fn failed(end: FollowEnd) -> ExecutorError {
    match end {
        FollowEnd::Finished(RunEnd::Failed(error)) => error,
        other => panic!("expected a failed run, got {other:?}"),
    }
}

#[test]
fn every_recorded_line_parses() {
    for name in [
        "plain_answer.jsonl",
        "write_tool_round_trip.jsonl",
        "unauthorized_401.jsonl",
        "retry_then_success.jsonl",
        "retries_exhausted_500.jsonl",
        "aborted.jsonl",
    ] {
        let lines = fixture(name);
        assert!(!lines.is_empty(), "{name} is empty");
        for (n, line) in lines.iter().enumerate() {
            let parsed = parse_line(line).unwrap_or_else(|e| panic!("{name}:{}: {e}", n + 1));
            assert!(parsed.is_some(), "{name}:{} is blank", n + 1);
        }
    }
    let deltas: Vec<PiEvent> = fixture("plain_answer.jsonl")
        .iter()
        .filter_map(|l| match parse_line(l) {
            Ok(Some(PiLine::Event(event @ PiEvent::TextDelta(_)))) => Some(event),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![
            PiEvent::TextDelta("Hello".into()),
            PiEvent::TextDelta(" world".into())
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_recorded_plain_answer_completes_and_streams() {
    let mut replay = Replay::with(&fixture("plain_answer.jsonl"));
    let outcome = completed(replay.follow().await);
    assert!(outcome.success);
    assert_eq!(outcome.summary, "Hello world");
    assert_eq!(outcome.iterations, 1);
    assert_eq!(replay.output, "Hello world");
}

#[tokio::test(start_paused = true)]
async fn a_recorded_write_keeps_the_file_and_the_result() {
    let mut replay = Replay::with(&fixture("write_tool_round_trip.jsonl"));
    let outcome = completed(replay.follow().await);
    assert!(outcome.success);
    assert_eq!(outcome.files_written, vec![PathBuf::from("hello.txt")]);
    assert_eq!(
        outcome.partial_results,
        vec!["write hello.txt: Successfully wrote 9 bytes to hello.txt"]
    );
    assert_eq!(outcome.iterations, 2);
}

#[tokio::test(start_paused = true)]
async fn garbage_lines_are_skipped_without_ending_the_run() {
    let lines = fixture("garbage_interleaved.jsonl");
    let bad = lines.iter().filter(|l| parse_line(l).is_err()).count();
    assert_eq!(bad, 3);
    let mut replay = Replay::with(&lines);
    let outcome = completed(replay.follow().await);
    assert_eq!(outcome.summary, "Hello world");
}

#[tokio::test(start_paused = true)]
async fn an_error_agent_end_is_final_only_after_the_grace_period() {
    let mut replay = Replay::with(&fixture("unauthorized_401.jsonl"));
    let run = replay.follow();
    tokio::pin!(run);
    assert!(
        timeout(GRACE - Duration::from_millis(100), &mut run)
            .await
            .is_err(),
        "the error counted before the grace period was over"
    );
    let error = failed(run.await);
    assert!(
        matches!(error, ExecutorError::Model(ModelError::Unauthorized { .. })),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn auto_retry_start_after_agent_end_keeps_the_run_going() {
    // Recorded order: agent_end (error 500), then auto_retry_start, then a good answer.
    let (first, rest) = split_after_first_agent_end(&fixture("retry_then_success.jsonl"));
    assert!(
        rest[0].contains(r#""type":"auto_retry_start""#),
        "{}",
        rest[0]
    );
    let mut replay = Replay::with(&first);
    let feed = replay.feed.clone();
    let outcome = {
        let run = replay.follow();
        tokio::pin!(run);
        // pi announces the retry a second after the error: still within the grace period.
        assert!(timeout(Duration::from_secs(1), &mut run).await.is_err());
        for line in rest {
            feed.send(line).await.unwrap();
        }
        completed(run.await)
    };
    assert!(outcome.success);
    assert_eq!(outcome.summary, "Hello world");
    assert_eq!(replay.output, "Hello world");
}

#[tokio::test(start_paused = true)]
async fn a_retry_announced_after_the_grace_period_comes_too_late() {
    let (first, _) = split_after_first_agent_end(&fixture("retry_then_success.jsonl"));
    let mut replay = Replay::with(&first);
    let error = failed(replay.follow().await);
    assert!(
        matches!(
            error,
            ExecutorError::Model(ModelError::Http { status: 500, .. })
        ),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_end_the_run_without_waiting() {
    let mut replay = Replay::with(&fixture("retries_exhausted_500.jsonl"));
    // auto_retry_end with success: false is final at once, well inside the grace period.
    let end = timeout(GRACE / 2, replay.follow())
        .await
        .expect("waited for the grace period after auto_retry_end");
    let error = failed(end);
    assert!(
        matches!(
            error,
            ExecutorError::Model(ModelError::Http { status: 500, .. })
        ),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_recorded_abort_ends_as_aborted() {
    let mut replay = Replay::with(&fixture("aborted.jsonl"));
    let end = replay.follow().await;
    assert!(
        matches!(end, FollowEnd::Finished(RunEnd::Aborted)),
        "{end:?}"
    );
    assert_eq!(replay.output, "Working");
}

#[tokio::test(start_paused = true)]
async fn silence_from_pi_is_a_step_timeout() {
    let lines = fixture("plain_answer.jsonl");
    let start = lines
        .iter()
        .position(|l| l.contains(r#""type":"agent_start""#))
        .unwrap();
    let mut replay = Replay::with(&lines[..=start]);
    let run = replay.follow();
    tokio::pin!(run);
    assert!(
        timeout(STEP - Duration::from_secs(1), &mut run)
            .await
            .is_err()
    );
    let end = run.await;
    assert!(
        matches!(end, FollowEnd::StepTimeout(d) if d == STEP),
        "{end:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_and_closed_output_end_the_follow() {
    let lines = fixture("plain_answer.jsonl");
    let mut replay = Replay::with(&lines[..4]);
    replay.cancel.cancel();
    assert!(matches!(replay.follow().await, FollowEnd::Cancelled));

    let mut replay = Replay::with(&lines[..4]);
    let (closed_feed, _) = mpsc::channel(1);
    // Dropping the only sender is stdout closing.
    replay.feed = closed_feed;
    assert!(matches!(replay.follow().await, FollowEnd::Closed));
}

/// pi's process is confined like any command: its own `bash` writes inside the
/// workspace, and nowhere else.
#[tokio::test]
async fn pi_and_its_bash_tool_write_only_inside_the_workspace() {
    let Some(pi) = installed_pi() else { return };
    let abi = unsafe {
        // SAFETY: with a null attribute and size 0 the call reads and writes no memory.
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if abi < 1 {
        assert!(std::env::var_os("CI").is_none(), "CI needs Landlock");
        eprintln!("SKIPPED: no Landlock on this kernel");
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let escaped = outside.path().join("escaped.txt");
    let server = MockServer::start().await;
    completions()
        .respond_with(tool_call(
            "call_1",
            "bash",
            json!({ "command": format!("echo in > inside.txt; echo out > {}; echo done", escaped.display()) }),
        ))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    completions()
        .and(body_string_contains("call_1"))
        .respond_with(text_answer("Ran it."))
        .with_priority(2)
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    let mut settings = settings(&pi, workspace.path(), &server);
    settings.allow_bash = true;
    let executor = PiExecutor::new(settings).unwrap();
    let (result, _) = execute(&executor, &spec("Run the command")).await;
    result.unwrap();
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("inside.txt")).unwrap(),
        "in\n",
        "the command ran"
    );
    assert!(
        !escaped.exists(),
        "a write outside the workspace got through"
    );
}
