//! Following one run of pi: from the `prompt` to the final assistant message.
//!
//! [`RunTracker`] is the synchronous bookkeeping: it is fed parsed events, streams the
//! answer's text, keeps tool results and written files, and decides when the run is
//! over. [`follow_run`] is the asynchronous loop around it: it reads stdout lines from
//! a channel, applies the step and subtask deadlines, answers extension dialogs, and
//! runs the grace period after an error `agent_end`.
//!
//! The grace period exists because pi (0.73) emits `agent_end` for a failed model call
//! *before* it decides to retry and emits `auto_retry_start`. An error `agent_end` is
//! therefore final only when nothing that resumes the run (`auto_retry_start`, an
//! overflow `compaction_start`, a new `agent_start`) follows within the grace period;
//! `auto_retry_end` with `success: false` ends it at once.
//!
//! Neither part touches a process, so both are driven by recorded event streams in
//! tests, under tokio's paused clock.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::errors::ErrorContext;
use super::events::{AssistantMessage, PiEvent, PiLine, PiResponse, StopReason, parse_line};
use crate::executor::{ExecutionOutcome, ExecutorError, OutputSink};

/// How much of a bash command's output is kept as a partial result.
const BASH_OUTPUT_CHARS: usize = 500;

/// Extension UI methods that block pi until the client answers.
const DIALOG_METHODS: [&str; 4] = ["select", "confirm", "input", "editor"];

/// Where a run stands after an event.
#[derive(Debug)]
pub enum Progress {
    Running,
    /// An error `agent_end` was seen; it is final unless a retry starts within the
    /// grace period.
    AwaitingRetry,
    Done(RunEnd),
}

/// How pi's run ended, as far as pi's own events tell.
#[derive(Debug)]
pub enum RunEnd {
    /// The final assistant message arrived (`success` is false when it was cut off).
    Completed(ExecutionOutcome),
    /// The model call failed for good, or pi refused the prompt.
    Failed(ExecutorError),
    /// The run ended with `stopReason: "aborted"`.
    Aborted,
    /// More model round trips started than `max_iterations` allows.
    IterationLimit,
}

/// Why [`follow_run`] returned.
#[derive(Debug)]
pub enum FollowEnd {
    Finished(RunEnd),
    Cancelled,
    /// pi printed nothing for this long (one model or tool call is stuck).
    StepTimeout(Duration),
    /// The whole execution took longer than the subtask timeout.
    SubtaskTimeout(Duration),
    /// pi's stdout closed before the run finished.
    Closed,
}

/// The clocks of one run.
#[derive(Clone, Debug)]
pub struct RunTimers {
    /// The longest silence from pi before the step counts as timed out.
    pub step_timeout: Duration,
    /// When the whole execution must be over.
    pub subtask_deadline: Instant,
    /// The subtask timeout the deadline was computed from, for the error.
    pub subtask_timeout: Duration,
    /// How long an error `agent_end` waits for `auto_retry_start` before it is final.
    pub retry_grace: Duration,
}

/// An error `agent_end` that may still be retried.
#[derive(Debug)]
struct PendingError {
    message: String,
    /// An overflow compaction is running; its end decides whether pi retries.
    compacting: bool,
}

/// Bookkeeping of one run, fed with pi's events in order.
#[derive(Debug)]
pub struct RunTracker {
    workspace_root: PathBuf,
    max_iterations: u32,
    errors: ErrorContext,
    iterations: u32,
    partial_results: Vec<String>,
    files_written: Vec<PathBuf>,
    error_count: u32,
    recoveries: u32,
    /// Arguments of tool calls that started and have not ended, by call id
    /// (`tool_execution_end` does not repeat them).
    open_tools: HashMap<String, Value>,
    /// Tools whose latest call failed; a later success of the same tool is a recovery.
    failing_tools: HashSet<String>,
    pending: Option<PendingError>,
}

impl RunTracker {
    pub fn new(workspace_root: &Path, max_iterations: u32, errors: ErrorContext) -> Self {
        RunTracker {
            workspace_root: normalize(workspace_root),
            max_iterations,
            errors,
            iterations: 0,
            partial_results: Vec::new(),
            files_written: Vec::new(),
            error_count: 0,
            recoveries: 0,
            open_tools: HashMap::new(),
            failing_tools: HashSet::new(),
            pending: None,
        }
    }

    /// Takes one line of pi's output into account.
    pub fn observe(&mut self, line: PiLine, on_output: OutputSink<'_>) -> Progress {
        match line {
            PiLine::Response(response) => self.observe_response(response),
            PiLine::Event(event) => self.observe_event(event, on_output),
        }
    }

    /// The grace period after an error `agent_end` passed without a retry.
    pub fn grace_expired(&mut self) -> Progress {
        match self.pending.take() {
            Some(pending) => {
                Progress::Done(RunEnd::Failed(self.errors.model_failure(&pending.message)))
            }
            None => Progress::Running,
        }
    }

    /// The outcome so far, for a run that ended without finishing (`success: false`).
    pub fn unfinished_outcome(&self, reason: &str) -> ExecutionOutcome {
        let mut summary = format!("The subtask was not finished: {reason}.");
        if self.partial_results.is_empty() {
            summary.push_str(" Nothing was done yet.");
        } else {
            summary.push_str(" Done so far:");
            for result in &self.partial_results {
                summary.push_str("\n- ");
                summary.push_str(result);
            }
        }
        self.outcome(false, summary)
    }

    fn outcome(&self, success: bool, summary: String) -> ExecutionOutcome {
        ExecutionOutcome {
            success,
            summary,
            partial_results: self.partial_results.clone(),
            files_written: self.files_written.clone(),
            iterations: self.iterations,
            error_count: self.error_count,
            recoveries: self.recoveries,
            proposed_files: Vec::new(),
            repairs: Vec::new(),
            // Not gathered from pi's events.
            files_read: Vec::new(),
            errors_seen: Vec::new(),
        }
    }

    fn status(&self) -> Progress {
        match &self.pending {
            Some(pending) if !pending.compacting => Progress::AwaitingRetry,
            _ => Progress::Running,
        }
    }

    fn observe_response(&mut self, response: PiResponse) -> Progress {
        if response.command == "prompt" && !response.success {
            let message = response
                .error
                .unwrap_or_else(|| "no reason given".to_string());
            let error = match self.errors.model_failure(&message) {
                ExecutorError::Process(message) => {
                    ExecutorError::Process(format!("pi refused the prompt: {message}"))
                }
                typed => typed,
            };
            return Progress::Done(RunEnd::Failed(error));
        }
        if !response.success {
            tracing::warn!(
                command = %response.command,
                error = %self.errors.redact(response.error.as_deref().unwrap_or("")),
                "pi refused a command"
            );
        }
        self.status()
    }

    fn observe_event(&mut self, event: PiEvent, on_output: OutputSink<'_>) -> Progress {
        match event {
            PiEvent::AgentStart => {
                self.pending = None;
            }
            PiEvent::TurnStart => {
                self.iterations += 1;
                if self.iterations > self.max_iterations {
                    // The turn that just started is not one of ours to count.
                    self.iterations = self.max_iterations;
                    return Progress::Done(RunEnd::IterationLimit);
                }
            }
            PiEvent::TextDelta(delta) => on_output(&delta),
            PiEvent::ToolStart {
                call_id,
                tool,
                args,
            } => {
                on_output(&format!("\n[{}]\n", describe_call(&tool, &args)));
                self.open_tools.insert(call_id, args);
            }
            PiEvent::ToolEnd {
                call_id,
                tool,
                output,
                is_error,
            } => self.tool_ended(&call_id, tool, &output, is_error, on_output),
            PiEvent::AgentEnd { last_assistant } => return self.agent_ended(last_assistant),
            PiEvent::AutoRetryStart {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                self.pending = None;
                tracing::info!(
                    attempt,
                    max_attempts,
                    delay_ms,
                    error = %self.errors.redact(&error_message),
                    "pi retries the model call"
                );
            }
            PiEvent::AutoRetryEnd {
                success: false,
                final_error,
                ..
            } => {
                if let Some(pending) = self.pending.take() {
                    let message = final_error.unwrap_or(pending.message);
                    return Progress::Done(RunEnd::Failed(self.errors.model_failure(&message)));
                }
            }
            PiEvent::CompactionStart { reason } => {
                if let Some(pending) = self.pending.as_mut().filter(|_| reason == "overflow") {
                    pending.compacting = true;
                }
            }
            PiEvent::CompactionEnd {
                will_retry,
                error_message,
                ..
            } => {
                if let Some(pending) = self.pending.take_if(|p| p.compacting) {
                    if !will_retry {
                        let message = error_message.unwrap_or(pending.message);
                        return Progress::Done(RunEnd::Failed(self.errors.model_failure(&message)));
                    }
                }
            }
            PiEvent::ExtensionError { error } => {
                tracing::warn!(error = %self.errors.redact(&error), "a pi extension failed");
            }
            PiEvent::AutoRetryEnd { .. }
            | PiEvent::TurnEnd
            | PiEvent::ExtensionUiRequest { .. }
            | PiEvent::Other(_) => {}
        }
        self.status()
    }

    fn tool_ended(
        &mut self,
        call_id: &str,
        tool: String,
        output: &str,
        is_error: bool,
        on_output: OutputSink<'_>,
    ) {
        let args = self.open_tools.remove(call_id).unwrap_or(Value::Null);
        if is_error {
            self.error_count += 1;
            on_output(&format!("[{tool} failed: {}]\n", first_line(output)));
            self.failing_tools.insert(tool);
            return;
        }
        if self.failing_tools.remove(&tool) {
            self.recoveries += 1;
        }
        match tool.as_str() {
            "write" | "edit" => {
                let path = args.get("path").and_then(Value::as_str);
                self.partial_results.push(format!(
                    "{tool} {}: {}",
                    path.unwrap_or("?"),
                    output.trim()
                ));
                if let Some(path) = path {
                    self.record_written(path);
                }
            }
            "bash" => {
                let command = args.get("command").and_then(Value::as_str).unwrap_or("?");
                self.partial_results.push(format!(
                    "bash `{command}`: {}",
                    truncate(output.trim(), BASH_OUTPUT_CHARS)
                ));
            }
            // Reads and searches change nothing; they are not results worth keeping.
            _ => {}
        }
    }

    fn record_written(&mut self, raw: &str) {
        match workspace_relative(&self.workspace_root, raw) {
            Some(path) if !self.files_written.contains(&path) => self.files_written.push(path),
            Some(_) => {}
            None => tracing::warn!(path = raw, "pi wrote a file outside the workspace root"),
        }
    }

    fn agent_ended(&mut self, last: Option<AssistantMessage>) -> Progress {
        let Some(last) = last else {
            return Progress::Done(RunEnd::Failed(ExecutorError::Process(
                "pi ended the run without an assistant message".to_string(),
            )));
        };
        match last.stop_reason {
            StopReason::Error => {
                self.pending = Some(PendingError {
                    message: last
                        .error_message
                        .unwrap_or_else(|| "the model call failed without a message".into()),
                    compacting: false,
                });
                Progress::AwaitingRetry
            }
            StopReason::Aborted => Progress::Done(RunEnd::Aborted),
            StopReason::Length => Progress::Done(RunEnd::Completed(
                self.unfinished_outcome("the model's answer was cut off at its output token limit"),
            )),
            StopReason::Stop | StopReason::ToolUse | StopReason::Other(_) => {
                Progress::Done(RunEnd::Completed(self.outcome(true, last.text)))
            }
        }
    }
}

/// Reads pi's stdout lines until the run ends, a deadline passes, or `cancel` fires.
///
/// `lines` yields stdout lines and closes with stdout; `commands` takes JSON lines for
/// pi's stdin (used to dismiss extension dialogs).
pub async fn follow_run(
    lines: &mut mpsc::Receiver<String>,
    tracker: &mut RunTracker,
    timers: &RunTimers,
    cancel: &CancellationToken,
    commands: &mpsc::UnboundedSender<String>,
    on_output: OutputSink<'_>,
) -> FollowEnd {
    let mut idle_deadline = Instant::now() + timers.step_timeout;
    let mut grace_deadline: Option<Instant> = None;
    loop {
        let progress = tokio::select! {
            biased;
            () = cancel.cancelled() => return FollowEnd::Cancelled,
            line = lines.recv() => {
                let Some(line) = line else { return FollowEnd::Closed };
                idle_deadline = Instant::now() + timers.step_timeout;
                match parse_line(&line) {
                    Ok(Some(parsed)) => {
                        if let PiLine::Event(PiEvent::AutoRetryStart { delay_ms, .. }) = &parsed {
                            // pi is silent while it waits before the retry.
                            idle_deadline += Duration::from_millis(*delay_ms);
                        }
                        if let PiLine::Event(PiEvent::ExtensionUiRequest { id, method }) = &parsed {
                            dismiss_dialog(commands, id, method);
                        }
                        tracker.observe(parsed, &mut *on_output)
                    }
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "skipping a line pi printed");
                        continue;
                    }
                }
            }
            () = sleep_until_some(grace_deadline) => tracker.grace_expired(),
            () = tokio::time::sleep_until(idle_deadline) => {
                return FollowEnd::StepTimeout(timers.step_timeout);
            }
            () = tokio::time::sleep_until(timers.subtask_deadline) => {
                return FollowEnd::SubtaskTimeout(timers.subtask_timeout);
            }
        };
        match progress {
            Progress::Done(end) => return FollowEnd::Finished(end),
            Progress::AwaitingRetry => {
                grace_deadline.get_or_insert_with(|| Instant::now() + timers.retry_grace);
            }
            Progress::Running => grace_deadline = None,
        }
    }
}

/// Answers a blocking extension dialog with "cancelled" so that pi never waits on a
/// person who is not there.
fn dismiss_dialog(commands: &mpsc::UnboundedSender<String>, id: &str, method: &str) {
    if !DIALOG_METHODS.contains(&method) {
        return;
    }
    tracing::info!(method, "dismissing a pi extension dialog");
    let reply = serde_json::json!({ "type": "extension_ui_response", "id": id, "cancelled": true });
    // A closed channel means pi's stdin is gone; the run ends on its own then.
    let _ = commands.send(reply.to_string());
}

async fn sleep_until_some(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A short human description of a tool call, e.g. `write src/main.rs`.
fn describe_call(tool: &str, args: &Value) -> String {
    let detail = ["path", "command", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(Value::as_str));
    match detail {
        Some(detail) => format!("{tool} {}", truncate(first_line(detail), 120)),
        None => tool.to_string(),
    }
}

/// `raw` as pi's tools resolve it (relative to the workspace root, a leading `@`
/// dropped), relative to the workspace root; `None` when it lies outside.
fn workspace_relative(root: &Path, raw: &str) -> Option<PathBuf> {
    let raw = raw.strip_prefix('@').unwrap_or(raw);
    let path = Path::new(raw);
    let absolute = if path.is_absolute() {
        normalize(path)
    } else {
        normalize(&root.join(path))
    };
    let relative = absolute.strip_prefix(root).ok()?;
    (!relative.as_os_str().is_empty()).then(|| relative.to_path_buf())
}

/// Resolves `.` and `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tracker() -> RunTracker {
        RunTracker::new(
            Path::new("/ws"),
            3,
            ErrorContext::new("openai", Duration::from_secs(30), None),
        )
    }

    fn feed(tracker: &mut RunTracker, event: PiEvent) -> Progress {
        tracker.observe(PiLine::Event(event), &mut |_: &str| {})
    }

    fn tool(tracker: &mut RunTracker, id: &str, tool: &str, args: Value, ok: bool) {
        feed(
            tracker,
            PiEvent::ToolStart {
                call_id: id.into(),
                tool: tool.into(),
                args,
            },
        );
        feed(
            tracker,
            PiEvent::ToolEnd {
                call_id: id.into(),
                tool: tool.into(),
                output: if ok { "done".into() } else { "failed".into() },
                is_error: !ok,
            },
        );
    }

    #[test]
    fn paths_are_made_workspace_relative() {
        let root = Path::new("/ws");
        assert_eq!(
            workspace_relative(root, "src/a.rs"),
            Some(PathBuf::from("src/a.rs"))
        );
        assert_eq!(
            workspace_relative(root, "./src/../b.rs"),
            Some(PathBuf::from("b.rs"))
        );
        assert_eq!(
            workspace_relative(root, "/ws/c/d.txt"),
            Some(PathBuf::from("c/d.txt"))
        );
        assert_eq!(
            workspace_relative(root, "@e.txt"),
            Some(PathBuf::from("e.txt"))
        );
        assert_eq!(workspace_relative(root, "../outside.txt"), None);
        assert_eq!(workspace_relative(root, "/etc/passwd"), None);
        assert_eq!(workspace_relative(root, "."), None);
    }

    #[test]
    fn tool_results_counts_and_recoveries() {
        let mut t = tracker();
        tool(
            &mut t,
            "1",
            "edit",
            json!({"path": "a.rs", "edits": []}),
            false,
        );
        tool(
            &mut t,
            "2",
            "edit",
            json!({"path": "a.rs", "edits": []}),
            true,
        );
        tool(&mut t, "3", "read", json!({"path": "a.rs"}), true);
        tool(&mut t, "4", "bash", json!({"command": "ls"}), true);
        tool(&mut t, "5", "write", json!({"path": "a.rs"}), true);
        let outcome = t.unfinished_outcome("testing");
        assert_eq!(outcome.error_count, 1);
        assert_eq!(outcome.recoveries, 1);
        assert_eq!(
            outcome.partial_results,
            vec!["edit a.rs: done", "bash `ls`: done", "write a.rs: done"]
        );
        assert_eq!(outcome.files_written, vec![PathBuf::from("a.rs")]);
        assert!(
            outcome.summary.contains("- bash `ls`: done"),
            "{}",
            outcome.summary
        );
    }

    #[test]
    fn too_many_turns_end_the_run() {
        let mut t = tracker();
        for _ in 0..3 {
            assert!(matches!(
                feed(&mut t, PiEvent::TurnStart),
                Progress::Running
            ));
        }
        assert!(matches!(
            feed(&mut t, PiEvent::TurnStart),
            Progress::Done(RunEnd::IterationLimit)
        ));
        assert_eq!(t.unfinished_outcome("limit").iterations, 3);
    }

    #[test]
    fn an_overflow_compaction_that_retries_keeps_the_run_alive() {
        let mut t = tracker();
        let ended = feed(
            &mut t,
            PiEvent::AgentEnd {
                last_assistant: Some(AssistantMessage {
                    stop_reason: StopReason::Error,
                    text: String::new(),
                    error_message: Some("prompt is too long".into()),
                }),
            },
        );
        assert!(matches!(ended, Progress::AwaitingRetry));
        let compacting = feed(
            &mut t,
            PiEvent::CompactionStart {
                reason: "overflow".into(),
            },
        );
        assert!(matches!(compacting, Progress::Running));
        let compacted = feed(
            &mut t,
            PiEvent::CompactionEnd {
                will_retry: true,
                aborted: false,
                error_message: None,
            },
        );
        assert!(matches!(compacted, Progress::Running));
        assert!(matches!(t.grace_expired(), Progress::Running));
    }

    #[test]
    fn a_failed_compaction_makes_the_overflow_final() {
        let mut t = tracker();
        feed(
            &mut t,
            PiEvent::AgentEnd {
                last_assistant: Some(AssistantMessage {
                    stop_reason: StopReason::Error,
                    text: String::new(),
                    error_message: Some("400 maximum context length exceeded".into()),
                }),
            },
        );
        feed(
            &mut t,
            PiEvent::CompactionStart {
                reason: "overflow".into(),
            },
        );
        let end = feed(
            &mut t,
            PiEvent::CompactionEnd {
                will_retry: false,
                aborted: false,
                error_message: None,
            },
        );
        assert!(
            matches!(
                end,
                Progress::Done(RunEnd::Failed(ExecutorError::Model(
                    crate::model::ModelError::ContextOverflow { .. }
                )))
            ),
            "{end:?}"
        );
    }

    #[test]
    fn a_refused_prompt_fails_the_run() {
        let mut t = tracker();
        let end = t.observe(
            PiLine::Response(PiResponse {
                id: Some("prompt".into()),
                command: "prompt".into(),
                success: false,
                error: Some("Agent is already processing".into()),
            }),
            &mut |_: &str| {},
        );
        assert!(
            matches!(&end, Progress::Done(RunEnd::Failed(ExecutorError::Process(m))) if m.contains("already processing")),
            "{end:?}"
        );
    }
}
