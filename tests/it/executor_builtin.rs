//! The built-in executor's loop with a scripted model double. Only the model is a test
//! double: the tools, files and processes are real, in a temporary workspace.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conclave::config::CommandPolicy;
use conclave::executor::builtin::{BuiltinExecutor, BuiltinSettings, TOOL_RULES};
use conclave::executor::{ExecutionOutcome, Executor, ExecutorError, SubtaskSpec, TargetFile};
use conclave::model::{
    ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage,
};
use conclave::tools::{DiskWriter, Sandbox, ToolRegistry, ToolSettings};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// One scripted model turn.
enum Turn {
    Answer(ModelResponse),
    Fail(ModelError),
    /// Signals `called` and never answers.
    Hang,
}

type BeforeHook = Box<dyn FnMut(usize) + Send>;

/// Replays queued turns and records every request it gets.
struct ScriptedModel {
    turns: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Runs before answering call `n` (0-based), e.g. to change the workspace.
    before: Mutex<Option<BeforeHook>>,
    called: Notify,
}

impl ScriptedModel {
    fn new(turns: Vec<Turn>) -> Arc<ScriptedModel> {
        Arc::new(ScriptedModel {
            turns: Mutex::new(turns.into()),
            requests: Mutex::new(Vec::new()),
            before: Mutex::new(None),
            called: Notify::new(),
        })
    }

    fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// The tool results of the last request, in order.
    fn tool_results(&self) -> Vec<(String, bool)> {
        let requests = self.requests();
        let last = requests.last().expect("at least one request");
        last.messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool {
                    content, is_error, ..
                } => Some((content.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }
}

#[async_trait]
impl ModelProvider for ScriptedModel {
    fn name(&self) -> &str {
        "scripted-test"
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let index = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(request.clone());
            requests.len() - 1
        };
        if let Some(hook) = self.before.lock().unwrap().as_mut() {
            hook(index);
        }
        let turn = self.turns.lock().unwrap().pop_front();
        match turn {
            Some(Turn::Answer(response)) => {
                on_delta(&response.text);
                Ok(response)
            }
            Some(Turn::Fail(error)) => Err(error),
            Some(Turn::Hang) => {
                self.called.notify_one();
                std::future::pending().await
            }
            None => Err(ModelError::Malformed {
                provider: "scripted-test".into(),
                message: format!("the script has no turn {index}"),
            }),
        }
    }
}

fn call(name: &str, arguments: Value) -> Turn {
    Turn::Answer(ModelResponse {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: String::new(),
            name: name.into(),
            arguments,
        }],
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
    })
}

fn finish(text: &str) -> Turn {
    Turn::Answer(ModelResponse {
        text: text.into(),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
    })
}

fn settings() -> BuiltinSettings {
    BuiltinSettings {
        max_iterations: 10,
        max_retries_per_tool: 2,
        step_timeout: Duration::from_secs(30),
        max_tokens: 1024,
        temperature: None,
        context_window: 8192,
        disabled: Vec::new(),
        error_strategies: true,
    }
}

fn executor(
    root: &Path,
    model: Arc<dyn ModelProvider>,
    settings: BuiltinSettings,
) -> BuiltinExecutor {
    let sandbox = Sandbox::new(root).unwrap();
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    let tools = ToolRegistry::new(
        sandbox,
        writer,
        ToolSettings {
            command_policy: CommandPolicy::Auto,
            ..ToolSettings::default()
        },
        None,
    );
    BuiltinExecutor::new(model, Arc::new(tools), settings)
}

fn spec(description: &str) -> SubtaskSpec {
    SubtaskSpec {
        subtask_id: "sub-1".into(),
        description: description.into(),
        system_prompt: "You are a careful bottom-layer coder.".into(),
        context: String::new(),
        target_files: Vec::new(),
        task_names: Vec::new(),
        asks_for_changes: conclave::checks::intent::asks_for_changes(description),
    }
}

async fn execute(
    executor: &BuiltinExecutor,
    spec: &SubtaskSpec,
) -> (Result<ExecutionOutcome, ExecutorError>, String) {
    let mut output = String::new();
    let mut sink = |text: &str| output.push_str(text);
    let result = executor
        .execute(spec, CancellationToken::new(), &mut sink)
        .await;
    (result, output)
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_fails_twice_then_succeeds_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("file_read", json!({ "path": "notes.txt" })),
        call("file_read", json!({ "path": "notes.txt" })),
        call("file_read", json!({ "path": "notes.txt" })),
        finish("Read the notes."),
    ]);
    // Another agent writes the file just before the third attempt.
    let notes = dir.path().join("notes.txt");
    *model.before.lock().unwrap() = Some(Box::new(move |index| {
        if index == 2 {
            std::fs::write(&notes, "the notes").unwrap();
        }
    }));
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Read notes.txt")).await;
    let outcome = result.unwrap();

    assert!(outcome.success);
    assert_eq!(outcome.summary, "Read the notes.");
    assert_eq!(outcome.error_count, 2);
    assert_eq!(outcome.recoveries, 1);
    assert_eq!(outcome.iterations, 4);
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "three tool calls were made");
    assert!(results[0].1 && results[1].1 && !results[2].1);
    assert!(
        results[0].0.contains("Retry attempt 1/2"),
        "{}",
        results[0].0
    );
    assert!(
        results[1].0.contains("Retry attempt 2/2"),
        "{}",
        results[1].0
    );
    assert_eq!(results[2].0, "the notes");
    let metrics = executor.metrics();
    assert_eq!(metrics.tool_errors, 2);
    assert_eq!(metrics.recovery_rate(), Some(1.0));
}

#[tokio::test(start_paused = true)]
async fn an_approach_that_keeps_failing_is_told_to_change_course() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("file_read", json!({ "path": "missing.txt" })),
        call("file_read", json!({ "path": "missing.txt" })),
        call("file_read", json!({ "path": "missing.txt" })),
        // Different arguments are a different attempt with their own budget.
        call("file_read", json!({ "path": "other.txt" })),
        finish("Gave up on reading."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Read missing.txt")).await;
    let outcome = result.unwrap();

    let results = model.tool_results();
    assert_eq!(results.len(), 4);
    assert!(
        results[2].0.contains("failed after 2 attempts")
            && results[2].0.contains(
                "This approach is not working. Please try a completely different tool or method"
            ),
        "{}",
        results[2].0
    );
    assert!(!results[1].0.contains("not working"));
    assert!(
        results[3].0.contains("Retry attempt 1/2"),
        "{}",
        results[3].0
    );
    // What to do next follows from what went wrong: here, a path that does not exist.
    assert!(
        results[0]
            .0
            .contains("That path does not exist. List the directory"),
        "{}",
        results[0].0
    );
    assert_eq!(outcome.error_count, 4);
    assert_eq!(outcome.recoveries, 0);
    assert_eq!(executor.metrics().alternatives_suggested, 1);
    assert_eq!(executor.metrics().recovery_rate(), Some(0.0));
}

#[tokio::test(start_paused = true)]
async fn with_error_strategies_off_a_failed_call_is_told_only_to_try_another_way() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("file_read", json!({ "path": "missing.txt" })),
        finish("Gave up on reading."),
    ]);
    let off = BuiltinSettings {
        error_strategies: false,
        ..settings()
    };
    let executor = executor(dir.path(), model.clone(), off);
    let (result, _) = execute(&executor, &spec("Read missing.txt")).await;
    result.unwrap();

    let results = model.tool_results();
    assert!(
        results[0].0.contains("Retry attempt 1/2"),
        "{}",
        results[0].0
    );
    assert!(
        results[0]
            .0
            .contains(conclave::recovery::strategy::GENERIC_NEXT_STEP)
            && !results[0].0.contains("List the directory"),
        "{}",
        results[0].0
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_repeated_after_being_told_to_change_course_ends_the_execution() {
    // The same failing file_edit sent again and again: after the "change course" answer,
    // one more repeat ends the loop; iterations are not spent.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let edit = || {
        call(
            "file_edit",
            json!({ "path": "a.py", "old_text": "y = 2", "new_text": "y = 3" }),
        )
    };
    let mut steps: Vec<_> = (0..10).map(|_| edit()).collect();
    steps.push(finish("Never reached."));
    let model = ScriptedModel::new(steps);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Change y in a.py")).await;
    let outcome = result.unwrap();
    assert!(!outcome.success);
    assert_eq!(
        outcome.iterations, 4,
        "three tries, the change-course answer, one repeat"
    );
    assert!(
        outcome
            .summary
            .contains("kept repeating a failing file_edit call"),
        "{}",
        outcome.summary
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
        "x = 1\n"
    );
}

#[tokio::test(start_paused = true)]
async fn max_iterations_returns_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("file_write", json!({ "path": "a.txt", "content": "a" })),
        call(
            "file_edit",
            json!({ "path": "a.txt", "old_text": "zzz", "new_text": "b" }),
        ),
        call(
            "file_write",
            json!({ "path": "src/b.txt", "content": "bb" }),
        ),
        finish("never reached"),
    ]);
    let executor = executor(
        dir.path(),
        model.clone(),
        BuiltinSettings {
            max_iterations: 3,
            ..settings()
        },
    );
    let (result, _) = execute(&executor, &spec("Write two files")).await;
    let outcome = result.unwrap();

    assert!(!outcome.success);
    assert_eq!(outcome.iterations, 3);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(
        outcome.partial_results,
        vec![
            "file_write: created a.txt (1 bytes)".to_string(),
            "file_write: created src/b.txt (2 bytes)".to_string(),
        ]
    );
    assert_eq!(
        outcome.files_written,
        vec![PathBuf::from("a.txt"), PathBuf::from("src/b.txt")]
    );
    assert_eq!(
        outcome.summary,
        "Completed 2 of intended objectives:\n- file_write: created a.txt (1 bytes)\n- file_write: created src/b.txt (2 bytes)\n\nEncountered 1 errors during execution."
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/b.txt")).unwrap(),
        "bb"
    );
}

#[tokio::test(start_paused = true)]
async fn the_description_is_sent_verbatim_with_rules_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call(
            "file_write",
            json!({ "path": "src/lib.rs", "content": "pub fn add(a: i32, b: i32) -> i32 { a + b }\n" }),
        ),
        finish("Added add."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let description =
        "Add `fn add(a: i32, b: i32) -> i32` to src/lib.rs.\n  Keep the   spacing; ümlauts too.";
    let mut subtask = spec(description);
    subtask.context = "## Whiteboard\nuse i32".into();
    let (result, output) = execute(&executor, &subtask).await;
    assert!(result.unwrap().success);
    assert!(output.ends_with("Added add."), "{output}");

    let first = &model.requests()[0];
    match &first.messages[0] {
        ChatMessage::User { content } => {
            assert!(content.starts_with(description), "{content}");
            assert!(content.ends_with("## Whiteboard\nuse i32"), "{content}");
        }
        other => panic!("the first message is not the user's: {other:?}"),
    }
    assert!(
        first
            .system
            .starts_with("You are a careful bottom-layer coder.")
    );
    assert!(first.system.ends_with(TOOL_RULES));
    let names: Vec<&str> = first.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "file_read",
            "file_write",
            "file_edit",
            "bash",
            "grep",
            "glob",
        ],
        "http_request is offered only with sandbox.network = true"
    );
    assert_eq!(first.max_tokens, 1024);
}

#[tokio::test]
async fn small_model_habits_are_handled() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        // Arguments as a JSON string instead of an object.
        call(
            "file_write",
            json!("{\"path\": \"a.txt\", \"content\": \"hello\"}"),
        ),
        // A tool that does not exist.
        call("read_file", json!({ "path": "a.txt" })),
        call("bash", json!({ "command": "cat a.txt" })),
        // The same successful call again.
        call("bash", json!({ "command": "cat a.txt" })),
        finish("Done."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) = execute(&executor, &spec("Write a.txt")).await;
    let outcome = result.unwrap();

    assert!(outcome.success);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hello"
    );
    let results = model.tool_results();
    assert!(!results[0].1, "string arguments worked: {}", results[0].0);
    assert!(results[1].1);
    assert!(
        results[1].0.contains("unknown tool `read_file`")
            && results[1]
                .0
                .contains("file_read, file_write, file_edit, bash, grep, glob"),
        "{}",
        results[1].0
    );
    assert!(!results[2].0.contains("already succeeded"));
    assert!(
        results[3]
            .0
            .contains("already succeeded with the same result"),
        "{}",
        results[3].0
    );
    assert_eq!(
        outcome.partial_results,
        vec![
            "file_write: created a.txt (5 bytes)".to_string(),
            "bash: ran `cat a.txt` (exit 0)".to_string(),
        ],
        "the repeated call is not new progress"
    );
    // The string arguments were stored as an object in the conversation.
    let requests = model.requests();
    match &requests[1].messages[1] {
        ChatMessage::Assistant { tool_calls, .. } => {
            assert_eq!(
                tool_calls[0].arguments,
                json!({ "path": "a.txt", "content": "hello" })
            );
            assert!(!tool_calls[0].id.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // One note per tool call, on lines of their own.
    assert_eq!(
        output.lines().filter(|l| l.starts_with("▸ ")).count(),
        4,
        "{output}"
    );
    assert!(
        output.contains("▸ read_file failed: unknown tool"),
        "{output}"
    );
    assert!(output.ends_with("Done."), "{output}");
}

#[tokio::test(start_paused = true)]
async fn a_model_error_ends_the_execution() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("glob", json!({ "pattern": "*" })),
        Turn::Fail(ModelError::Unauthorized {
            provider: "scripted-test".into(),
        }),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("List files")).await;
    assert!(
        matches!(
            result,
            Err(ExecutorError::Model(ModelError::Unauthorized { .. }))
        ),
        "{result:?}"
    );
    assert_eq!(
        model.requests().len(),
        2,
        "model errors are not retried here"
    );
}

#[tokio::test(start_paused = true)]
async fn a_model_call_past_the_step_timeout_is_a_timeout_of_the_model_call() {
    // The step timeout has one owner, the resilient model, where a timed-out call is
    // retried (here: one attempt, so the timeout comes back as the call's error).
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![Turn::Hang]);
    let recovery = conclave::config::RecoveryConfig {
        step_timeout_ms: 30_000,
        call: conclave::config::CallRetryConfig {
            max_attempts: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let resilient = Arc::new(conclave::model::ResilientModel::new(
        model.clone(),
        &recovery,
    ));
    let executor = executor(dir.path(), resilient, settings());
    let (result, _) = execute(&executor, &spec("Anything")).await;
    assert!(
        matches!(result, Err(ExecutorError::Model(ModelError::Timeout { timeout, .. })) if timeout == Duration::from_secs(30)),
        "{result:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reply_cut_at_the_token_limit_is_continued() {
    let dir = tempfile::tempdir().unwrap();
    let cut = Turn::Answer(ModelResponse {
        text: "I will now".into(),
        tool_calls: Vec::new(),
        usage: Usage::default(),
        stop_reason: StopReason::MaxTokens,
    });
    let model = ScriptedModel::new(vec![cut, finish("Done.")]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Anything")).await;
    assert_eq!(result.unwrap().summary, "Done.");
    let second = &model.requests()[1];
    assert!(matches!(
        second.messages.last(),
        Some(ChatMessage::User { content }) if content.contains("cut off")
    ));
}

#[tokio::test]
async fn cancellation_stops_a_waiting_model_call() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![Turn::Hang]);
    let executor = executor(dir.path(), model.clone(), settings());
    let cancel = CancellationToken::new();
    let mut sink = |_: &str| {};
    let subtask = spec("Anything");
    let (result, ()) = tokio::join!(
        executor.execute(&subtask, cancel.clone(), &mut sink),
        async {
            model.called.notified().await;
            cancel.cancel();
        }
    );
    assert!(
        matches!(result, Err(ExecutorError::Cancelled)),
        "{result:?}"
    );
}

#[tokio::test]
async fn cancellation_stops_a_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("started.fifo");
    let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path and a mode.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let model = ScriptedModel::new(vec![
        call(
            "bash",
            json!({ "command": "echo go > started.fifo; sleep 1000" }),
        ),
        finish("never reached"),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let cancel = CancellationToken::new();
    let mut sink = |_: &str| {};
    let subtask = spec("Run something slow");
    let (result, ()) = tokio::join!(
        executor.execute(&subtask, cancel.clone(), &mut sink),
        async {
            tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap())
                .await
                .unwrap();
            cancel.cancel();
        }
    );
    assert!(
        matches!(result, Err(ExecutorError::Cancelled)),
        "{result:?}"
    );
    assert_eq!(
        model.requests().len(),
        1,
        "no model call after cancellation"
    );
}

#[test]
fn rules_and_tool_schemas_fit_a_small_model_budget() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    let tools = ToolRegistry::new(sandbox, writer, ToolSettings::default(), None);
    let schemas = serde_json::to_string(tools.specs()).unwrap();
    // About four characters a token for English and JSON: rules and schemas take at most
    // 1,000 tokens, leaving the rest of the ~1,500 for the agent's own system prompt.
    let chars = TOOL_RULES.len() + schemas.len();
    println!(
        "rules {} + schemas {} = {chars} chars",
        TOOL_RULES.len(),
        schemas.len()
    );
    assert!(chars <= 3_200, "{chars} characters");
}

fn text(answer: &str) -> Turn {
    finish(answer)
}

/// The user messages of the last request, in order.
fn user_messages(model: &ScriptedModel) -> Vec<String> {
    let requests = model.requests();
    let last = requests.last().expect("at least one request");
    last.messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn tool_calls_written_as_text_are_run() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        text(
            "I'll create the file.\n```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hello world')\\n\"}}\n```",
        ),
        text(
            "<tool_call>\n{\"name\": \"bash\", \"parameters\": {\"command\": \"cat hello.py\"}}\n</tool_call>",
        ),
        finish("hello.py prints hello world."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) =
        execute(&executor, &spec("Write hello.py that prints hello world")).await;
    let outcome = result.unwrap();

    assert!(outcome.success, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hello.py")).unwrap(),
        "print('hello world')\n"
    );
    assert_eq!(outcome.files_written, vec![PathBuf::from("hello.py")]);
    assert_eq!(
        outcome.partial_results,
        vec![
            "file_write: created hello.py (21 bytes)".to_string(),
            "bash: ran `cat hello.py` (exit 0)".to_string(),
        ]
    );
    // The results go back as a user message, and the model's own text stays as it was.
    let users = user_messages(&model);
    assert!(users[1].starts_with("Tool results:"), "{users:?}");
    assert!(users[1].contains("[file_write: ok]"), "{users:?}");
    assert!(
        users[2].contains("[bash: ok]") && users[2].contains("hello world"),
        "{users:?}"
    );
    let requests = model.requests();
    assert!(matches!(
        &requests[1].messages[1],
        ChatMessage::Assistant { content, tool_calls } if content.contains("```json") && tool_calls.is_empty()
    ));
    assert!(
        output.contains("▸ file_write: created hello.py"),
        "{output}"
    );
    // Each answer whose calls were read from its text is a repair, named.
    assert_eq!(
        outcome.repairs,
        ["repair.text-tool-calls", "repair.text-tool-calls"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_repair_switched_off_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        text(
            "```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hello world')\\n\"}}\n```",
        ),
        finish("hello.py prints hello world."),
        finish("hello.py prints hello world."),
    ]);
    let off = BuiltinSettings {
        disabled: vec!["repair.text-tool-calls".into()],
        ..settings()
    };
    let executor = executor(dir.path(), model.clone(), off);
    let (result, _) = execute(&executor, &spec("Write hello.py that prints hello world")).await;
    // The call written as text is only text now: nothing is written, and the subtask
    // that asked for a file ends without progress.
    assert!(!dir.path().join("hello.py").exists());
    match result {
        Err(ExecutorError::NoProgress(..)) => {}
        other => panic!("expected no progress, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn several_text_calls_in_one_answer_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        text(
            r#"{"name": "file_write", "arguments": "{\"path\": \"a.txt\", \"content\": \"1\"}"}
then
{"name": "file_edit", "arguments": {"path": "a.txt", "old_text": "1", "new_text": "2"}}"#,
        ),
        finish("Done."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Create a.txt holding 2")).await;
    assert!(result.unwrap().success);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "2"
    );
}

#[tokio::test(start_paused = true)]
async fn an_answer_without_changes_gets_one_nudge_then_is_no_progress() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        finish("The file solution.py does not exist, so I cannot do this."),
        finish("I have completed the task."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) = execute(&executor, &spec("Implement add() in solution.py")).await;
    match result {
        Err(error @ ExecutorError::NoProgress(..)) => {
            use conclave::recovery::Classify;
            assert_eq!(error.kind(), "no_progress");
            assert!(!error.is_transient());
            assert!(error.to_string().contains("completed the task"), "{error}");
        }
        other => panic!("expected no progress, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2, "one nudge, then it ends");
    let users = user_messages(&model);
    assert!(
        users
            .last()
            .unwrap()
            .contains("You have not changed anything yet"),
        "{users:?}"
    );
    assert!(output.contains("no change made yet"), "{output}");
    assert!(!dir.path().join("solution.py").exists());
}

#[tokio::test(start_paused = true)]
async fn a_nudge_that_works_ends_in_success() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        finish("Here is the code: def add(a, b): return a + b"),
        call(
            "file_write",
            json!({ "path": "solution.py", "content": "def add(a, b):\n    return a + b\n" }),
        ),
        finish("Wrote solution.py."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Implement add() in solution.py")).await;
    let outcome = result.unwrap();
    assert!(outcome.success);
    assert_eq!(outcome.summary, "Wrote solution.py.");
    assert!(dir.path().join("solution.py").exists());
}

#[tokio::test(start_paused = true)]
async fn a_whole_file_answered_in_a_code_block_is_written() {
    // The implementation answered in prose, twice, and never a tool call.
    let dir = tempfile::tempdir().unwrap();
    let stub = "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    pass\n";
    std::fs::write(dir.path().join("solution.py"), stub).unwrap();
    let model = ScriptedModel::new(vec![
        finish(
            "To implement add in solution.py, you can use the file_write function:\n\n```python\ndef add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n```\n\nThen run it with:\n```bash\npython3 -c 'import solution'\n```",
        ),
        finish("solution.py now adds."),
    ]);
    let first = executor(dir.path(), model.clone(), settings());
    let mut spec = spec("Implement add() in solution.py");
    spec.target_files = vec![TargetFile {
        path: "solution.py".into(),
        content: Some(stub.into()),
    }];
    let (result, output) = execute(&first, &spec).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("solution.py")).unwrap(),
        "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n    return a + b\n"
    );
    assert_eq!(outcome.files_written, vec![PathBuf::from("solution.py")]);
    assert!(
        output.contains("gave solution.py in a code block and made no tool call"),
        "{output}"
    );
    assert_eq!(outcome.repairs, ["repair.code-answer"]);
    // The model is told what happened to its block.
    let users = user_messages(&model);
    assert!(
        users[1].starts_with("Tool results: (your answer gave the file whole in a code block")
            && users[1].contains("[file_write: ok]"),
        "{users:?}"
    );

    // Once the subtask has changed something, a block in the summary is only a summary.
    let model = ScriptedModel::new(vec![
        call(
            "file_write",
            json!({ "path": "solution.py", "content": "def add(a, b):\n    return a + b\n" }),
        ),
        finish("Done:\n```python\ndef add(a, b):\n    return b + a\n```"),
    ]);
    let second = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&second, &spec).await;
    assert!(result.unwrap().success);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("solution.py")).unwrap(),
        "def add(a, b):\n    return a + b\n"
    );
}

#[tokio::test(start_paused = true)]
async fn a_whole_file_with_the_flag_the_task_asks_for_after_a_change_is_written() {
    // An edit that "succeeded" without what was asked, then an answer with the whole
    // file, right, in a code block: the block is the change.
    let dir = tempfile::tempdir().unwrap();
    let greet = "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args()\n    print(f\"Hello, {args.name}!\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
    std::fs::write(dir.path().join("greet.py"), greet).unwrap();
    let with_flag = "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    parser.add_argument(\"--shout\", action=\"store_true\")\n    args = parser.parse_args()\n    greeting = f\"Hello, {args.name}!\"\n    print(greeting.upper() if args.shout else greeting)\n\n\nif __name__ == \"__main__\":\n    main()\n";
    let model = ScriptedModel::new(vec![
        call(
            "file_edit",
            json!({ "path": "greet.py", "old_text": "Hello, {args.name}!", "new_text": "HELLO, {args.name}!" }),
        ),
        finish(&format!(
            "To add the --shout flag, the updated greet.py will look like this:\n\n```python\n{with_flag}```"
        )),
        finish("greet.py has the --shout flag."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let mut spec = spec("Add a --shout flag to greet.py: with it, the greeting is upper case.");
    spec.target_files = vec![TargetFile {
        path: "greet.py".into(),
        content: Some(greet.into()),
    }];
    spec.task_names = vec!["--shout".into()];
    let (result, _) = execute(&executor, &spec).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    assert_eq!(outcome.summary, "greet.py has the --shout flag.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("greet.py")).unwrap(),
        with_flag
    );
    let users = user_messages(&model);
    assert!(
        users
            .last()
            .unwrap()
            .contains("with what the task asks for, which the file lacked"),
        "{users:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_successful_call_sent_a_third_time_ends_the_execution() {
    // One file_write sent over and over, the "already succeeded" note ignored: the loop
    // ends instead of spending the run's time.
    let dir = tempfile::tempdir().unwrap();
    let write = || {
        call(
            "file_write",
            json!({ "path": "geometry.py", "content": "def perimeter(w, h):\n    return 2 * (w + h)\n" }),
        )
    };
    let model = ScriptedModel::new(vec![write(), write(), write(), write(), write()]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) = execute(&executor, &spec("Add perimeter to geometry.py")).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    // The first call creates the file; the next ones leave it unchanged, the same result
    // each time: the third of those ends it.
    assert_eq!(
        model.requests().len(),
        4,
        "ended at the third identical result"
    );
    assert_eq!(outcome.files_written, vec![PathBuf::from("geometry.py")]);
    assert!(output.contains("came a third time"), "{output}");
}

#[tokio::test(start_paused = true)]
async fn a_question_needs_no_changes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.py"), "print(1)\n").unwrap();
    let model = ScriptedModel::new(vec![
        call("file_read", json!({ "path": "main.py" })),
        finish("main.py prints 1."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Explain what main.py does")).await;
    assert!(result.unwrap().success);
}

#[tokio::test(start_paused = true)]
async fn a_failed_write_followed_by_done_is_not_done() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    let model = ScriptedModel::new(vec![
        call(
            "file_edit",
            json!({ "path": "a.py", "old_text": "y = 1", "new_text": "y = 2" }),
        ),
        finish("Done: a.py now sets y = 2."),
        finish("Done."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Change y to 2 in a.py")).await;
    assert!(
        matches!(&result, Err(ExecutorError::NoProgress(m, _)) if m.contains("file_edit")),
        "{result:?}"
    );
    let users = user_messages(&model);
    assert!(
        users
            .last()
            .unwrap()
            .contains("Your last file_edit call failed"),
        "{users:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_write_after_other_changes_ends_unsuccessful_with_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let model = ScriptedModel::new(vec![
        call("file_write", json!({ "path": "a.txt", "content": "a" })),
        call(
            "file_edit",
            json!({ "path": "b.txt", "old_text": "x", "new_text": "y" }),
        ),
        finish("All done."),
        finish("All done, really."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Write a.txt and fix b.txt")).await;
    let outcome = result.unwrap();
    assert!(!outcome.success);
    assert!(
        outcome.summary.contains("last file_edit call failed"),
        "{}",
        outcome.summary
    );
    assert_eq!(
        outcome.partial_results,
        vec!["file_write: created a.txt (1 bytes)"]
    );
}

#[tokio::test]
async fn a_read_only_command_is_no_change_but_writing_the_same_content_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "same").unwrap();
    let model = ScriptedModel::new(vec![
        call("bash", json!({ "command": "ls -la | grep a" })),
        finish("Looks fine."),
        call("file_write", json!({ "path": "a.txt", "content": "same" })),
        finish("a.txt holds the content."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Make a.txt hold `same`")).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    assert_eq!(
        model.requests().len(),
        4,
        "the ls did not count as a change"
    );
}

#[tokio::test]
async fn huge_tool_output_is_capped_and_old_steps_are_compacted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(60_000)).unwrap();
    let mut turns = Vec::new();
    for i in 0..6 {
        turns.push(call(
            "bash",
            json!({ "command": format!("cat big.txt; echo {i}") }),
        ));
    }
    turns.push(finish("Read it all."));
    let model = ScriptedModel::new(turns);
    let executor = executor(
        dir.path(),
        model.clone(),
        BuiltinSettings {
            context_window: 4096,
            ..settings()
        },
    );
    let (result, _) = execute(&executor, &spec("Read big.txt")).await;
    assert!(result.unwrap().success);
    for request in model.requests() {
        let chars = request.system.len()
            + serde_json::to_string(&request.messages).unwrap().len()
            + serde_json::to_string(&request.tools).unwrap().len();
        // 4,096 tokens, a quarter kept for the answer: about 12,000 characters of prompt
        // (the JSON of the messages adds a little over what the model sees).
        assert!(chars < 16_000, "a request of {chars} characters");
        assert!(request.max_tokens <= 1024);
    }
    let last = model.requests().pop().unwrap();
    assert!(
        matches!(&last.messages[0], ChatMessage::User { content } if content.starts_with("Read big.txt")),
        "the task is always kept"
    );
    let tool_texts: Vec<&String> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { content, .. } => Some(content),
            _ => None,
        })
        .collect();
    assert!(
        tool_texts
            .first()
            .is_some_and(|t| t.ends_with("[older output cut to fit the context window]")),
        "{tool_texts:?}"
    );
    assert!(
        tool_texts
            .last()
            .is_some_and(|t| t.contains("characters cut to fit the context window")),
        "the latest result is capped, not dropped"
    );
}

#[tokio::test(start_paused = true)]
async fn a_long_conversation_leaves_out_its_oldest_steps() {
    let dir = tempfile::tempdir().unwrap();
    let mut turns = Vec::new();
    for i in 0..40 {
        turns.push(call(
            "glob",
            json!({ "pattern": format!("dir{i}/**/*.txt") }),
        ));
    }
    turns.push(finish("Nothing there."));
    let model = ScriptedModel::new(turns);
    let executor = executor(
        dir.path(),
        model.clone(),
        BuiltinSettings {
            max_iterations: 50,
            context_window: 1024,
            ..settings()
        },
    );
    let (result, _) = execute(&executor, &spec("Look for text files")).await;
    assert!(result.unwrap().success);
    let requests = model.requests();
    let last = requests.last().unwrap();
    // 40 steps would be 81 messages; the conversation stops growing instead.
    let longest = requests.iter().map(|r| r.messages.len()).max().unwrap();
    assert!(longest < 30, "{longest} messages");
    match &last.messages[0] {
        ChatMessage::User { content } => {
            assert!(content.starts_with("Look for text files"), "{content}");
            assert!(content.contains("Earlier steps were left out"), "{content}");
        }
        other => panic!("{other:?}"),
    }
    // Every tool result still answers a call in the conversation sent.
    assert!(matches!(last.messages[1], ChatMessage::Assistant { .. }));
}

#[tokio::test(start_paused = true)]
async fn a_context_overflow_is_compacted_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "y".repeat(5_000)).unwrap();
    let model = ScriptedModel::new(vec![
        call("file_read", json!({ "path": "big.txt" })),
        call("file_read", json!({ "path": "big.txt" })),
        Turn::Fail(ModelError::ContextOverflow {
            provider: "scripted-test".into(),
            message: "the request exceeds the available context size".into(),
        }),
        finish("Read it."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) = execute(&executor, &spec("Read big.txt twice")).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    assert!(output.contains("too long for the model"), "{output}");
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let size = |r: &ModelRequest| serde_json::to_string(&r.messages).unwrap().len();
    assert!(
        size(&requests[3]) < size(&requests[2]),
        "the retry was smaller: {} then {}",
        size(&requests[2]),
        size(&requests[3])
    );
}

#[tokio::test(start_paused = true)]
async fn a_context_overflow_that_persists_fails_the_execution() {
    let dir = tempfile::tempdir().unwrap();
    let overflow = || {
        Turn::Fail(ModelError::ContextOverflow {
            provider: "scripted-test".into(),
            message: "prompt is too long".into(),
        })
    };
    let model = ScriptedModel::new(vec![overflow(), overflow(), overflow()]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Anything")).await;
    assert!(
        matches!(
            result,
            Err(ExecutorError::Model(ModelError::ContextOverflow { .. }))
        ),
        "{result:?}"
    );
    assert_eq!(model.requests().len(), 3, "two compacted retries");
}

#[tokio::test(start_paused = true)]
async fn writing_the_file_back_unchanged_does_not_make_a_failed_edit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.py"), "def f():\n    pass\n").unwrap();
    let model = ScriptedModel::new(vec![
        call(
            "file_edit",
            json!({ "path": "s.py", "old_text": "def g():", "new_text": "\"\"\"Doc.\"\"\"" }),
        ),
        call(
            "file_write",
            json!({ "path": "s.py", "content": "def f():\n    pass\n" }),
        ),
        finish("The docstring is added."),
        finish("Done."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(&executor, &spec("Add a docstring to f in s.py")).await;
    let outcome = result.unwrap();
    assert!(!outcome.success, "{outcome:?}");
    assert!(
        outcome.summary.contains("last file_edit call failed"),
        "{}",
        outcome.summary
    );
    assert_eq!(model.requests().len(), 4, "told once, then it ends");
}

#[tokio::test(start_paused = true)]
async fn tool_calls_written_as_text_over_and_over_run_once() {
    // The same write three times in one answer, as a looping model writes it: the
    // answer is cut where it repeats, the write runs once, and the cut is a named repair.
    let dir = tempfile::tempdir().unwrap();
    let write = "```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"hello.py\", \"content\": \"print('hello')\\n\"}}\n```\n";
    let model = ScriptedModel::new(vec![
        text(&write.repeat(3)),
        finish("hello.py prints hello."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, output) = execute(&executor, &spec("Write hello.py that prints hello")).await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    assert_eq!(
        outcome.partial_results,
        ["file_write: created hello.py (15 bytes)"]
    );
    assert!(
        output.contains("the answer began repeating its tool calls; it was cut after 1 call(s)"),
        "{output}"
    );
    assert_eq!(
        outcome.repairs,
        ["repair.text-tool-calls", "repair.repeated-tool-calls"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_new_function_written_as_the_whole_file_is_refused_and_the_model_edits_instead() {
    let dir = tempfile::tempdir().unwrap();
    let geometry = "import math\n\n\ndef area(width, height):\n    \"\"\"The area of a width x height rectangle.\"\"\"\n    return width * height\n\n\ndef circle_area(radius):\n    \"\"\"The area of a circle.\"\"\"\n    return math.pi * radius ** 2\n";
    std::fs::write(dir.path().join("geometry.py"), geometry).unwrap();
    let perimeter = "def perimeter(width, height):\n    return 2 * (width + height)\n";
    let model = ScriptedModel::new(vec![
        call(
            "file_write",
            json!({ "path": "geometry.py", "content": perimeter }),
        ),
        call(
            "file_edit",
            json!({ "path": "geometry.py", "old_text": "", "new_text": perimeter }),
        ),
        finish("Added perimeter to geometry.py."),
    ]);
    let executor = executor(dir.path(), model.clone(), settings());
    let (result, _) = execute(
        &executor,
        &spec("Add perimeter(width, height) to geometry.py"),
    )
    .await;
    let outcome = result.unwrap();
    assert!(outcome.success, "{outcome:?}");
    let now = std::fs::read_to_string(dir.path().join("geometry.py")).unwrap();
    assert!(
        now.starts_with(geometry) && now.contains("def perimeter("),
        "{now}"
    );
    assert_eq!(outcome.repairs, ["repair.partial-file-write"]);
    // The model was told what the write would have lost, and how to add the part.
    let told: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Tool { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        told.iter()
            .any(|t| t.contains("would lose `area`, `circle_area`")
                && t.contains("change only the part the task is about with file_edit")),
        "{told:?}"
    );
}
