//! The built-in coding executor: a model tool loop for one subtask.
//!
//! Each iteration is one model call (bounded by the step timeout) followed by the tool
//! calls it asked for, run one after another through the [`ToolRegistry`] (each bounded
//! by the step timeout too). The loop ends when the model answers without tool calls
//! (success, if the work was done: see below), when `max_iterations` model calls have
//! been made (failure with partial results), on cancellation, or on a model error
//! (retries of transient model errors happen in the provider wrapper, not here).
//!
//! What small models on plain local servers do is taken in stride:
//! - Tool calls written as text (a ```` ```json ```` block, `<tool_call>` tags, a bare
//!   object naming a tool; [`super::text_calls`]) are run like native ones; their
//!   results go back as one user message, since such servers may not accept tool turns.
//! - A whole file the task names, answered in a code block with no tool call while the
//!   subtask is not done, is written with `file_write` ([`super::code_answer`]).
//! - An answer without tool calls is not success by itself. When the subtask asks for
//!   changes (`SubtaskSpec::asks_for_changes`) and nothing was changed, or the last file
//!   change failed, the model is told once to use its tools; if it stops again, the execution
//!   ends with [`ExecutorError::NoProgress`] (nothing changed) or an unsuccessful outcome
//!   (some changes, the last one failed), which climb the recovery ladder.
//! - The conversation is kept within `llm.contextWindow` (estimated at four characters a
//!   token): each tool result is capped, old tool output is cut down first, then the
//!   oldest steps are left out. A context-overflow error from the provider compacts the
//!   conversation further and retries, twice at most.
//!
//! Tool-level recovery:
//! - A failed call is an *approach* keyed by (tool, hash of the normalised arguments,
//!   hash of the first 100 characters of the error). The same approach may fail
//!   `max_retries_per_tool` times with a "Retry attempt n/max" note; the next identical
//!   failure tells the model "This approach is not working. Please try a completely
//!   different tool or method…". Different arguments are a different attempt with a
//!   budget of its own; `max_iterations` bounds the whole loop regardless.
//! - Every failure counts in `error_count`. A failure opens an *error episode* for its
//!   tool; the next success of that tool closes it as a recovery. The recovery rate is
//!   recovered episodes / episodes ([`MetricsSnapshot::recovery_rate`]).
//! - Meaningful successes (files changed, commands that succeeded, mutating HTTP
//!   requests; not reads or searches) are kept as partial results. An identical call
//!   that succeeds again with the identical result is not new progress, and the model
//!   is told so, which stops small models from looping on a finished step.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{
    ExecutionOutcome, Executor, ExecutorError, OutputSink, SubtaskSpec, TargetFile, code_answer,
    text_calls,
};
use crate::config::Config;
use crate::model::metered::{self, UsageScope, estimate_tokens, request_chars};
use crate::model::{
    ChatMessage, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason, ToolCall,
};
use crate::recovery::strategy::{self, ErrorCategory, ToolStep};
use crate::recovery::{Classify, quality};
use crate::tools::writer::Fnv1a;
use crate::tools::{Args, CallContext, ToolError, ToolOutput, ToolRegistry};

/// Appended to the agent's system prompt: how to use the tools. Kept short, because the
/// whole prompt plus tool schemas must suit small local models (about 1,500 tokens).
pub const TOOL_RULES: &str = "\
You work in a code workspace through tools. Rules:
- Paths are relative to the workspace root.
- Read a file before changing it, unless its contents are shown to you.
- To create a file or change a short one, write the whole file with file_write, keeping what should stay. Use file_edit (old_text copied exactly, matching once) for a small change in a long file.
- Check your work (e.g. run the tests with bash) when you can.
- If a tool fails, fix the arguments or try another way; never repeat a failing call.
- When the subtask is done, stop calling tools and reply with a short summary.";

/// How many characters of an error identify it for failure tracking.
const ERROR_KEY_CHARS: usize = 100;

/// Told once when the model stops without having changed anything a subtask asked for.
pub const NUDGE_NO_CHANGES: &str = "You have not changed anything yet, so the subtask is not done. \
Call the tools now (file_write to create or replace a file, file_edit to change one, bash to run \
a command). Reply without a tool call only when the work is done.";

/// Repairs of model output the executor makes (`checks::REPAIRS`): tool calls written
/// as text, a whole file answered in a code block while the work is unfinished, and a
/// final answer's code block that has a name the task asks for which the file lacks.
pub const REPAIR_TEXT_CALLS: &str = "repair.text-tool-calls";
pub const REPAIR_CODE_ANSWER: &str = "repair.code-answer";
pub const REPAIR_CODE_ANSWER_NAMES: &str = "repair.code-answer-names";
/// Not the executor's own: the provider cut an answer whose tool calls began repeating
/// (`model::cut_repeated_calls`), and the executor counts it.
pub const REPAIR_REPEATED_CALLS: &str = "repair.repeated-tool-calls";

/// The tools whose failure means a change the model asked for was not made.
const WRITE_TOOLS: &[&str] = &["file_write", "file_edit"];

/// The most tool errors an execution reports having seen (the first ones: later ones
/// tend to repeat them).
const ERRORS_SEEN_KEPT: usize = 6;

/// The latest messages compaction never shortens: the current step and the one before.
const KEEP_RECENT: usize = 4;

/// Cuts `text` to about `max` characters, keeping its head and tail.
fn cap_text(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max || max < 64 {
        return text.to_string();
    }
    let head: String = text.chars().take(max * 2 / 3).collect();
    let tail: String = text.chars().skip(count - max / 3).collect();
    format!(
        "{head}\n[… {} characters cut to fit the context window …]\n{tail}",
        count - head.chars().count() - tail.chars().count()
    )
}

/// Keeps a conversation within the model's context window.
#[derive(Clone, Copy, Debug)]
struct ContextBudget {
    /// Tokens the prompt (system, tools, messages) may take.
    prompt_tokens: usize,
    /// The whole window, prompt and answer.
    window: usize,
}

impl ContextBudget {
    /// A quarter of the window (at most `max_tokens`) is kept for the answer.
    fn new(window: u32, max_tokens: u32) -> ContextBudget {
        let window = window.max(1024) as usize;
        let reserve = (max_tokens as usize).min(window / 4);
        ContextBudget {
            prompt_tokens: window - reserve,
            window,
        }
    }

    /// The most characters one tool result may have: a quarter of the prompt budget.
    fn result_chars(&self) -> usize {
        self.prompt_tokens
    }

    /// Shrinks `request` until its estimate fits; returns whether anything was cut.
    fn fit(&self, request: &mut ModelRequest) -> bool {
        let fits =
            |r: &ModelRequest| estimate_tokens(request_chars(r)) as usize <= self.prompt_tokens;
        if fits(request) {
            return false;
        }
        // 1. Old tool output, oldest first, down to a line.
        let protected = request.messages.len().saturating_sub(KEEP_RECENT);
        for index in 1..protected {
            let content = match &mut request.messages[index] {
                ChatMessage::Tool { content, .. } => content,
                ChatMessage::User { content } if content.starts_with(TEXT_RESULTS_HEADER) => {
                    content
                }
                _ => continue,
            };
            if content.len() > 200 {
                let line = first_line(content, 150);
                *content = format!("{line} [older output cut to fit the context window]");
            }
            if fits(request) {
                return true;
            }
        }
        // 2. The oldest whole steps (an assistant turn and the results that answer it),
        //    never the latest step.
        let mut dropped = false;
        while !fits(request) {
            let messages = &mut request.messages;
            let later_assistant = messages
                .iter()
                .skip(2)
                .any(|m| matches!(m, ChatMessage::Assistant { .. }));
            if messages.len() <= 2 || !later_assistant {
                break;
            }
            messages.remove(1);
            while messages.len() > 1 && !matches!(messages[1], ChatMessage::Assistant { .. }) {
                messages.remove(1);
            }
            dropped = true;
        }
        if dropped
            && let Some(ChatMessage::User { content }) = request.messages.first_mut()
            && !content.ends_with(STEPS_LEFT_OUT)
        {
            content.push_str(STEPS_LEFT_OUT);
        }
        // 3. Whatever is still too long: every tool result cut to half the usual cap.
        if !fits(request) {
            let cap = self.result_chars() / 2;
            for message in request.messages.iter_mut() {
                match message {
                    ChatMessage::Tool { content, .. } => *content = cap_text(content, cap),
                    ChatMessage::User { content } if content.starts_with(TEXT_RESULTS_HEADER) => {
                        *content = cap_text(content, cap)
                    }
                    _ => {}
                }
            }
        }
        true
    }

    /// A budget for retrying after the provider said the prompt was too long: 60% of
    /// what the conversation is estimated at now.
    fn after_overflow(&self, request: &ModelRequest) -> ContextBudget {
        let now = estimate_tokens(request_chars(request)) as usize;
        ContextBudget {
            prompt_tokens: (now * 6 / 10).min(self.prompt_tokens).max(256),
            window: self.window,
        }
    }

    /// The answer's token limit: `max_tokens`, but never past the window's end.
    fn answer_tokens(&self, request: &ModelRequest, max_tokens: u32) -> u32 {
        let prompt = estimate_tokens(request_chars(request)) as usize;
        let room = self.window.saturating_sub(prompt).max(256);
        (max_tokens as usize).min(room) as u32
    }
}

/// The header of the user message that carries the results of tool calls written as text.
const TEXT_RESULTS_HEADER: &str = "Tool results:";

/// Appended to the task message when old steps were left out of the conversation.
const STEPS_LEFT_OUT: &str = "\n\n(Earlier steps were left out to fit the context window; read files again if you need them.)";

/// The numbers the loop runs by.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinSettings {
    /// Model calls per subtask before giving up with partial results.
    pub max_iterations: u32,
    /// Failures of one approach before the model is told to change course.
    pub max_retries_per_tool: u32,
    /// One model call or one tool call.
    pub step_timeout: Duration,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// `llm.contextWindow`: the conversation is trimmed to fit it.
    pub context_window: u32,
    /// `verify.disabled`: the repairs of model output switched off, by id.
    pub disabled: Vec<String>,
    /// `team.errorStrategies`: a failed tool call is answered with the next step for its
    /// kind of error.
    pub error_strategies: bool,
}

impl Default for BuiltinSettings {
    fn default() -> Self {
        BuiltinSettings::from_config(&Config::default())
    }
}

impl BuiltinSettings {
    /// `executor.maxIterations`, `executor.maxRetriesPerTool`, `recovery.stepTimeoutMs`,
    /// `llm.maxTokens` (default 4096), `llm.temperature`, `llm.contextWindow`,
    /// `verify.disabled` and `team.errorStrategies`.
    pub fn from_config(config: &Config) -> BuiltinSettings {
        BuiltinSettings {
            max_iterations: config.executor.max_iterations,
            max_retries_per_tool: config.executor.max_retries_per_tool,
            step_timeout: Duration::from_millis(config.recovery.step_timeout_ms),
            max_tokens: config.llm.max_tokens.unwrap_or(4096),
            temperature: config.llm.temperature,
            context_window: config.llm.context_window(),
            disabled: config.verify.disabled.clone(),
            error_strategies: config.team.error_strategies,
        }
    }
}

/// Counters over every execution of one executor, for reports and the recovery rate.
#[derive(Debug, Default)]
pub struct ExecutorMetrics {
    executions: AtomicU64,
    successes: AtomicU64,
    model_calls: AtomicU64,
    tool_calls: AtomicU64,
    tool_errors: AtomicU64,
    error_episodes: AtomicU64,
    recoveries: AtomicU64,
    alternatives_suggested: AtomicU64,
}

/// A copy of [`ExecutorMetrics`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetricsSnapshot {
    pub executions: u64,
    pub successes: u64,
    pub model_calls: u64,
    pub tool_calls: u64,
    /// Every failed tool call.
    pub tool_errors: u64,
    /// Runs of failures of one tool, each closed by that tool's next success.
    pub error_episodes: u64,
    /// Episodes that ended in a success.
    pub recoveries: u64,
    /// Times the model was told to try a completely different approach.
    pub alternatives_suggested: u64,
}

impl MetricsSnapshot {
    /// Recovered episodes / error episodes; `None` before any error.
    pub fn recovery_rate(&self) -> Option<f64> {
        (self.error_episodes > 0).then(|| self.recoveries as f64 / self.error_episodes as f64)
    }
}

impl ExecutorMetrics {
    pub fn snapshot(&self) -> MetricsSnapshot {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        MetricsSnapshot {
            executions: get(&self.executions),
            successes: get(&self.successes),
            model_calls: get(&self.model_calls),
            tool_calls: get(&self.tool_calls),
            tool_errors: get(&self.tool_errors),
            error_episodes: get(&self.error_episodes),
            recoveries: get(&self.recoveries),
            alternatives_suggested: get(&self.alternatives_suggested),
        }
    }

    fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The built-in executor. Cheap to share: one per bottom agent or one for all.
pub struct BuiltinExecutor {
    model: Arc<dyn ModelProvider>,
    tools: Arc<ToolRegistry>,
    settings: BuiltinSettings,
    metrics: Arc<ExecutorMetrics>,
}

impl BuiltinExecutor {
    /// An executor calling `model` (already wrapped in retries and a circuit breaker)
    /// with the tools of `tools`.
    pub fn new(
        model: Arc<dyn ModelProvider>,
        tools: Arc<ToolRegistry>,
        settings: BuiltinSettings,
    ) -> BuiltinExecutor {
        BuiltinExecutor {
            model,
            tools,
            settings,
            metrics: Arc::new(ExecutorMetrics::default()),
        }
    }

    /// Whether the repair `id` of model output is on (not in `verify.disabled`).
    fn repairs_on(&self, id: &str) -> bool {
        !self.settings.disabled.iter().any(|d| d == id)
    }

    /// Counts across every execution so far.
    pub fn metrics(&self) -> MetricsSnapshot {
        self.metrics.snapshot()
    }

    /// The system prompt sent with every call of a subtask.
    pub fn system_prompt(spec: &SubtaskSpec) -> String {
        if spec.system_prompt.trim().is_empty() {
            TOOL_RULES.to_string()
        } else {
            format!("{}\n\n{TOOL_RULES}", spec.system_prompt.trim_end())
        }
    }

    /// The first user message: the description verbatim, then the context if any.
    pub fn first_message(spec: &SubtaskSpec) -> String {
        if spec.context.trim().is_empty() {
            spec.description.clone()
        } else {
            format!("{}\n\n## Context\n{}", spec.description, spec.context)
        }
    }

    /// One model call under the cancellation token, streaming text. The step timeout is
    /// the model's own (`ResilientModel`), where a timed-out call is retried.
    async fn call_model(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
        out: &mut Output<'_, '_>,
    ) -> Result<ModelResponse, ExecutorError> {
        ExecutorMetrics::bump(&self.metrics.model_calls);
        let mut streamed = false;
        let response = {
            let mut on_delta = |delta: &str| {
                if !delta.is_empty() {
                    streamed = true;
                    out.text(delta);
                }
            };
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ExecutorError::Cancelled),
                answer = self.model.complete(request, &mut on_delta) => answer,
            }
        };
        let response = match response {
            Err(ModelError::Cancelled) => return Err(ExecutorError::Cancelled),
            Err(error) => return Err(ExecutorError::Model(error)),
            Ok(response) => response,
        };
        // Providers that do not stream still get their text shown.
        if !streamed && !response.text.is_empty() {
            out.text(&response.text);
        }
        Ok(response)
    }
}

/// The sink plus whether it is at the start of a line, so notes get lines of their own.
struct Output<'s, 'a> {
    sink: &'s mut OutputSink<'a>,
    at_line_start: bool,
}

impl Output<'_, '_> {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        (self.sink)(text);
        self.at_line_start = text.ends_with('\n');
    }

    fn note(&mut self, line: &str) {
        if !self.at_line_start {
            (self.sink)("\n");
        }
        (self.sink)(line);
        (self.sink)("\n");
        self.at_line_start = true;
    }
}

/// What the loop remembers between tool calls of one execution.
#[derive(Default)]
struct LoopState {
    /// (tool, args hash, error hash) → failures so far.
    failed_approaches: HashMap<(String, u64, u64), u32>,
    /// Set when the model repeats a call it was told to give up: why the loop ends.
    stuck: Option<String>,
    /// Set when a write found the workspace's disk full or read-only: no other call
    /// can help, so the execution ends and recovery waits for the disk.
    disk_unavailable: Option<String>,
    /// Tools whose latest call failed: open error episodes.
    failing_tools: HashSet<String>,
    /// (tool, args hash) → hash of the result of its latest success.
    successes: HashMap<(String, u64), u64>,
    partial_results: Vec<String>,
    files_written: Vec<PathBuf>,
    files_read: Vec<String>,
    errors_seen: Vec<String>,
    error_count: u32,
    recoveries: u32,
    /// Whether any call changed something (a file written, even with the content it
    /// already had; a command that is not read-only; a mutating request).
    changed: bool,
    /// The latest failed file change not followed by a successful one: (tool, error).
    failed_change: Option<(String, String)>,
    /// The first refusal (of a change, a command, a read) by the person or the editor.
    refused: Option<String>,
    /// The refused calls (tool, args hash): the same one made again ends the execution,
    /// since a refusal is final and the model is not taking it as such.
    refused_calls: HashSet<(String, u64)>,
    refused_again: bool,
    /// Set when the model repeats a call that already succeeded after it was told so:
    /// it takes the work as done and cannot say so, and would send the call until the
    /// iterations run out.
    repeating_success: bool,
    /// (tool, args hash) → how often a successful call came again with the same result.
    success_repeats: HashMap<(String, u64), u32>,
    /// The repairs made to the model's output, by id, once for each time.
    repairs: Vec<String>,
}

/// Why an answer without tool calls does not finish the subtask.
enum Unfinished {
    NothingChanged,
    ChangeFailed { tool: String, error: String },
}

impl Unfinished {
    fn nudge(&self) -> String {
        match self {
            Unfinished::NothingChanged => NUDGE_NO_CHANGES.to_string(),
            Unfinished::ChangeFailed { tool, error } => format!(
                "Your last {tool} call failed ({error}), so that change was not made and the subtask is not done. \
                 Fix the call and try again, or make the change another way. Reply without a tool call only when the work is done."
            ),
        }
    }
}

impl LoopState {
    /// How the execution ended, with what the loop gathered.
    fn outcome(self, success: bool, summary: String, iterations: u32) -> ExecutionOutcome {
        ExecutionOutcome {
            success,
            summary,
            partial_results: self.partial_results,
            files_written: self.files_written,
            iterations,
            error_count: self.error_count,
            recoveries: self.recoveries,
            proposed_files: Vec::new(),
            repairs: self.repairs,
            files_read: self.files_read,
            errors_seen: self.errors_seen,
        }
    }

    /// Notes a repair of the model's output, by id, in the outcome and the log.
    fn repaired(&mut self, id: &str) {
        tracing::info!(repair = id, "repaired the model's output");
        self.repairs.push(id.to_string());
    }

    /// Whether an answer without tool calls may end the subtask.
    fn unfinished(&self, asks_for_changes: bool) -> Option<Unfinished> {
        if let Some((tool, error)) = &self.failed_change {
            return Some(Unfinished::ChangeFailed {
                tool: tool.clone(),
                error: error.clone(),
            });
        }
        strategy::nothing_done(asks_for_changes, self.changed).then_some(Unfinished::NothingChanged)
    }

    /// A summary of what was done when the whole could not be.
    fn synthesize(&self) -> String {
        if self.partial_results.is_empty() {
            return format!(
                "Unable to complete task. No partial results available.\n\nEncountered {} errors during execution.",
                self.error_count
            );
        }
        let listed: Vec<String> = self
            .partial_results
            .iter()
            .map(|r| format!("- {r}"))
            .collect();
        format!(
            "Completed {} of intended objectives:\n{}\n\nEncountered {} errors during execution.",
            self.partial_results.len(),
            listed.join("\n"),
            self.error_count
        )
    }
}

/// Hashes a JSON value with object keys sorted, so equal arguments hash equally
/// whatever order the model wrote them in.
fn hash_json(value: &Value, hasher: &mut Fnv1a) {
    match value {
        Value::Null => hasher.write(b"n"),
        Value::Bool(b) => hasher.write(if *b { b"t" } else { b"f" }),
        Value::Number(n) => {
            hasher.write(b"#");
            hasher.write(n.to_string().as_bytes());
        }
        Value::String(s) => {
            hasher.write(b"\"");
            hasher.write(&(s.len() as u64).to_le_bytes());
            hasher.write(s.as_bytes());
        }
        Value::Array(items) => {
            hasher.write(b"[");
            hasher.write(&(items.len() as u64).to_le_bytes());
            for item in items {
                hash_json(item, hasher);
            }
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            hasher.write(b"{");
            hasher.write(&(keys.len() as u64).to_le_bytes());
            for key in keys {
                hasher.write(&(key.len() as u64).to_le_bytes());
                hasher.write(key.as_bytes());
                hash_json(&map[key], hasher);
            }
        }
    }
}

fn hash_str(text: &str) -> u64 {
    let mut hasher = Fnv1a::new();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// The first line of `text`, at most `max` characters.
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// Gives every call a unique id and turns string-encoded arguments into objects, so the
/// conversation sent back to the provider is well formed.
fn normalise_calls(calls: &mut [ToolCall], iteration: u32) {
    let mut seen = HashSet::new();
    for (index, call) in calls.iter_mut().enumerate() {
        if call.id.trim().is_empty() || !seen.insert(call.id.clone()) {
            call.id = format!("call_{iteration}_{index}");
            seen.insert(call.id.clone());
        }
        if !call.arguments.is_object() {
            if let Ok(args) = Args::from_value(&call.arguments) {
                call.arguments = args.into_value();
            }
        }
    }
}

impl BuiltinExecutor {
    /// Runs one tool call and turns its result into the tool message for the model,
    /// tracking failures by approach (see the module's doc).
    async fn run_tool(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
        state: &mut LoopState,
        out: &mut Output<'_, '_>,
    ) -> Result<ChatMessage, ExecutorError> {
        ExecutorMetrics::bump(&self.metrics.tool_calls);
        let tool_name = self
            .tools
            .find(&call.name)
            .map(|t| t.name().to_string())
            .unwrap_or_else(|| call.name.clone());
        let args_hash = {
            let mut hasher = Fnv1a::new();
            hash_json(&call.arguments, &mut hasher);
            hasher.finish()
        };
        let result = self.tools.dispatch(call, ctx).await;
        let (content, is_error) = match result {
            Ok(output) => {
                let change = match tool_name.as_str() {
                    // Also a write that left the file as it was: on a retry the work
                    // may be there already. A task's named file left as it was before
                    // the task is caught by the checks (`team/check/`).
                    name if WRITE_TOOLS.contains(&name) => true,
                    "bash" => !call
                        .arguments
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(crate::tools::bash::read_only_command),
                    _ => output.progress,
                };
                if change {
                    state.changed = true;
                    // A write that left the file as it was does not make the change a
                    // failed edit wanted: writing the file back unchanged after a failed
                    // file_edit is not the edit.
                    if output.progress || !WRITE_TOOLS.contains(&tool_name.as_str()) {
                        state.failed_change = None;
                    }
                }
                if tool_name == "file_read"
                    && let Some(path) = call.arguments.get("path").and_then(Value::as_str)
                    && !state.files_read.iter().any(|p| p == path)
                {
                    state.files_read.push(path.to_string());
                }
                (
                    self.on_success(&tool_name, args_hash, output, state, out),
                    false,
                )
            }
            Err(ToolError::Cancelled) => return Err(ExecutorError::Cancelled),
            Err(error) => (
                self.on_failure(&tool_name, args_hash, &error, state, out),
                true,
            ),
        };
        let cap = ContextBudget::new(self.settings.context_window, self.settings.max_tokens)
            .result_chars();
        Ok(ChatMessage::Tool {
            tool_call_id: call.id.clone(),
            name: call.name.clone(),
            content: cap_text(&content, cap),
            is_error,
        })
    }

    fn on_success(
        &self,
        tool: &str,
        args_hash: u64,
        output: ToolOutput,
        state: &mut LoopState,
        out: &mut Output<'_, '_>,
    ) -> String {
        if state.failing_tools.remove(tool) {
            state.recoveries += 1;
            ExecutorMetrics::bump(&self.metrics.recoveries);
            tracing::info!(tool, "tool recovered after failing");
        }
        let result_hash = hash_str(&output.content);
        let repeat = state
            .successes
            .insert((tool.to_string(), args_hash), result_hash)
            == Some(result_hash);
        out.note(&format!("▸ {tool}: {}", first_line(&output.summary, 160)));
        if output.progress && !repeat {
            state
                .partial_results
                .push(format!("{tool}: {}", output.summary));
        }
        for path in output.files_written {
            if !state.files_written.contains(&path) {
                state.files_written.push(path);
            }
        }
        for repair in output.repairs {
            state.repaired(repair);
        }
        if repeat {
            let count = state
                .success_repeats
                .entry((tool.to_string(), args_hash))
                .or_insert(0);
            *count += 1;
            if *count >= 2 {
                state.repeating_success = true;
            }
            format!(
                "{}\n\n(This exact call already succeeded with the same result. If the subtask is done, stop calling tools and reply with a short summary.)",
                output.content
            )
        } else {
            output.content
        }
    }

    /// A failed tool call: counted per approach (tool, arguments, error), with a note
    /// to retry, then to change course, then the end of the loop.
    fn on_failure(
        &self,
        tool: &str,
        args_hash: u64,
        error: &ToolError,
        state: &mut LoopState,
        out: &mut Output<'_, '_>,
    ) -> String {
        let message = error.to_string();
        if error.is_disk_unavailable() {
            out.note(&format!("▸ {tool} failed: {}", first_line(&message, 160)));
            state.disk_unavailable = Some(first_line(&message, 300));
            return format!("Failed: {message}");
        }
        if error.is_refusal() {
            // Final: no retry count, no "try different parameters".
            state.error_count += 1;
            out.note(&format!("▸ {tool} refused: {}", first_line(&message, 160)));
            tracing::info!(
                tool,
                kind = error.kind(),
                "refused by the person or the editor"
            );
            state
                .refused
                .get_or_insert_with(|| first_line(&message, 300));
            if !state.refused_calls.insert((tool.to_string(), args_hash)) {
                state.refused_again = true;
            }
            return format!(
                "Refused: {message}\nThat decision is final for this task. {}",
                ErrorCategory::Refused.next_step()
            );
        }
        if WRITE_TOOLS.contains(&tool) {
            state.failed_change = Some((tool.to_string(), first_line(&message, 200)));
        }
        if matches!(error, ToolError::PartialWrite { .. }) {
            state.repaired(crate::tools::file::REPAIR_PARTIAL_WRITE);
        }
        let seen = format!("{tool}: {}", first_line(&message, 200));
        if state.errors_seen.len() < ERRORS_SEEN_KEPT && !state.errors_seen.contains(&seen) {
            state.errors_seen.push(seen);
        }
        let error_key: String = message.chars().take(ERROR_KEY_CHARS).collect();
        let key = (tool.to_string(), args_hash, hash_str(&error_key));
        let retry_count = state.failed_approaches.get(&key).copied().unwrap_or(0);
        let max = self.settings.max_retries_per_tool;

        state.error_count += 1;
        ExecutorMetrics::bump(&self.metrics.tool_errors);
        if state.failing_tools.insert(tool.to_string()) {
            ExecutorMetrics::bump(&self.metrics.error_episodes);
        }
        out.note(&format!("▸ {tool} failed: {}", first_line(&message, 160)));

        state.failed_approaches.insert(key, retry_count + 1);
        match strategy::after_tool_failure(retry_count, max) {
            ToolStep::Retry { attempt, max } => {
                tracing::info!(
                    tool,
                    kind = error.kind(),
                    severity = %error.severity(),
                    attempt,
                    max,
                    "tool failed; the model may retry"
                );
                format!(
                    "Tool '{tool}' failed: {message}\nRetry attempt {attempt}/{max}. {}",
                    ErrorCategory::of_tool_error(error.kind())
                        .next_step_if(self.settings.error_strategies)
                )
            }
            step @ (ToolStep::ChangeCourse | ToolStep::Stuck) => {
                if step == ToolStep::Stuck {
                    // The loop ends here instead of spending every iteration on it.
                    state.stuck = Some(format!(
                        "the model kept repeating a failing {tool} call after it was told to change approach ({})",
                        first_line(&message, 160)
                    ));
                }
                ExecutorMetrics::bump(&self.metrics.alternatives_suggested);
                tracing::info!(
                    tool,
                    kind = error.kind(),
                    attempts = retry_count,
                    "approach exhausted; asking the model for a different one"
                );
                format!(
                    "Tool '{tool}' failed after {retry_count} attempts: {message}\nThis approach is not working. Please try a completely different tool or method to accomplish this task."
                )
            }
        }
    }
}

#[async_trait]
impl Executor for BuiltinExecutor {
    async fn execute(
        &self,
        spec: &SubtaskSpec,
        cancel: CancellationToken,
        on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, ExecutorError> {
        let span = tracing::info_span!("builtin_execute", subtask = %spec.subtask_id);
        // The model calls of this execution count towards its subtask (and so its task
        // and agent) in the usage figures.
        let scope = UsageScope {
            subtask: spec.subtask_id.parse().ok(),
            ..metered::current_scope().unwrap_or_default()
        };
        metered::scoped(scope, self.run_loop(spec, cancel, on_output))
            .instrument(span)
            .await
    }
}

/// The user message carrying the results of tool calls the model wrote as text.
fn text_results_message(results: &[ChatMessage], why: &str) -> ChatMessage {
    let mut text = String::from(TEXT_RESULTS_HEADER);
    if !why.is_empty() {
        text.push_str(&format!(" ({why})"));
    }
    for result in results {
        if let ChatMessage::Tool {
            name,
            content,
            is_error,
            ..
        } = result
        {
            let status = if *is_error { "failed" } else { "ok" };
            text.push_str(&format!("\n\n[{name}: {status}]\n{content}"));
        }
    }
    text.push_str("\n\nContinue with the next tool call, or reply with a short summary when the subtask is done.");
    ChatMessage::user(text)
}

impl BuiltinExecutor {
    async fn run_loop(
        &self,
        spec: &SubtaskSpec,
        cancel: CancellationToken,
        mut on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, ExecutorError> {
        ExecutorMetrics::bump(&self.metrics.executions);
        let mut out = Output {
            sink: &mut on_output,
            at_line_start: true,
        };
        // The tools of this work's MCP servers are ready (or reported) before the model
        // is told what it may call.
        self.tools.prepare().await;
        let mut request = ModelRequest {
            system: Self::system_prompt(spec),
            messages: vec![ChatMessage::user(Self::first_message(spec))],
            tools: self.tools.offered(),
            max_tokens: self.settings.max_tokens,
            temperature: self.settings.temperature,
        };
        let ctx = CallContext {
            cancel: cancel.clone(),
            step_timeout: Some(self.settings.step_timeout),
            subtask_id: Some(spec.subtask_id.clone()),
        };
        let budget = ContextBudget::new(self.settings.context_window, self.settings.max_tokens);
        let asks_for_changes = spec.asks_for_changes;
        let mut state = LoopState::default();
        let mut iterations = 0;
        let mut nudges = 0;
        // A whole file in the answer once the model held the work done: written once.
        let mut final_block_written = false;
        let mut overflows = 0;
        let mut tighter: Option<ContextBudget> = None;

        while iterations < self.settings.max_iterations {
            if cancel.is_cancelled() {
                return Err(ExecutorError::Cancelled);
            }
            iterations += 1;
            if tighter.unwrap_or(budget).fit(&mut request) {
                tracing::info!(
                    messages = request.messages.len(),
                    "conversation compacted to fit the context window"
                );
            }
            request.max_tokens = budget.answer_tokens(&request, self.settings.max_tokens);
            // A task paused at its token limit waits here for the person, outside the
            // step timeout.
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(ExecutorError::Cancelled),
                ready = self.model.ready() => match ready {
                    Ok(()) => {}
                    Err(ModelError::Cancelled) => return Err(ExecutorError::Cancelled),
                    Err(error) => return Err(ExecutorError::Model(error)),
                },
            }
            let mut response = match self.call_model(&request, &cancel, &mut out).await {
                Err(ExecutorError::Model(ModelError::ContextOverflow { message, .. }))
                    if quality::compact_after_overflow(overflows) =>
                {
                    overflows += 1;
                    tighter = Some(tighter.unwrap_or(budget).after_overflow(&request));
                    out.note(&format!(
                        "▸ the conversation was too long for the model ({}); compacting and retrying",
                        first_line(&message, 100)
                    ));
                    continue;
                }
                other => other?,
            };
            // Calls written as text, when the answer has no native ones.
            let textual = response.tool_calls.is_empty()
                && !request.tools.is_empty()
                && self.repairs_on(REPAIR_TEXT_CALLS)
                && {
                    let found =
                        text_calls::parse(&response.text, &|name| self.tools.find(name).is_some());
                    response.tool_calls = found;
                    !response.tool_calls.is_empty()
                };
            if textual {
                state.repaired(REPAIR_TEXT_CALLS);
                crate::model::cut_repeated_calls(&mut response);
            }
            if response.stop_reason == StopReason::RepeatedToolCalls {
                state.repaired(REPAIR_REPEATED_CALLS);
                out.note(&format!(
                    "▸ the answer began repeating its tool calls; it was cut after {} call(s)",
                    response.tool_calls.len()
                ));
            }
            // A whole file answered in a code block while the subtask is not done yet:
            // written as the file_write it stands for (see `code_answer`).
            let unfinished = state.unfinished(asks_for_changes).is_some();
            let from_code_block = response.tool_calls.is_empty()
                && response.stop_reason != StopReason::MaxTokens
                && self.tools.find("file_write").is_some()
                && (unfinished || !final_block_written)
                && match self
                    .code_block_write(&response.text, spec, unfinished)
                    .await
                {
                    Some(call) => {
                        final_block_written |= !unfinished;
                        state.repaired(if unfinished {
                            REPAIR_CODE_ANSWER
                        } else {
                            REPAIR_CODE_ANSWER_NAMES
                        });
                        out.note(&format!(
                            "▸ the answer gave {} in a code block and made no tool call: writing it with file_write",
                            call.arguments["path"].as_str().unwrap_or("a file")
                        ));
                        response.tool_calls = vec![call];
                        true
                    }
                    None => false,
                };
            let textual = textual || from_code_block;
            normalise_calls(&mut response.tool_calls, iterations);
            request.messages.push(if textual {
                ChatMessage::Assistant {
                    content: response.text.clone(),
                    tool_calls: Vec::new(),
                }
            } else {
                response.to_message()
            });

            if response.tool_calls.is_empty() {
                if response.stop_reason == StopReason::MaxTokens {
                    // Cut off mid-answer: ask it to go on rather than take half an answer.
                    request.messages.push(ChatMessage::user(
                        "Your reply was cut off at the token limit. Continue, more briefly.",
                    ));
                    continue;
                }
                // Nothing was changed because someone said no: that is the end of it,
                // not a reason to nudge the model into asking again.
                if let (Some(refused), false) = (&state.refused, state.changed) {
                    tracing::info!(iterations, "subtask ended: what it needed was refused");
                    return Err(ExecutorError::Refused(refused.clone()));
                }
                if let Some(unfinished) = state.unfinished(asks_for_changes) {
                    if quality::nudge_unfinished(nudges) {
                        nudges += 1;
                        out.note(match &unfinished {
                            Unfinished::NothingChanged => {
                                "▸ no change made yet: telling the model to use its tools"
                            }
                            Unfinished::ChangeFailed { .. } => {
                                "▸ the last file change failed: telling the model it is not done"
                            }
                        });
                        request.messages.push(ChatMessage::user(unfinished.nudge()));
                        continue;
                    }
                    return self.stop_unfinished(unfinished, &response, state, iterations);
                }
                ExecutorMetrics::bump(&self.metrics.successes);
                let summary = match response.text.trim() {
                    "" => "The model finished without a summary.".to_string(),
                    text => text.to_string(),
                };
                tracing::info!(
                    iterations,
                    errors = state.error_count,
                    recoveries = state.recoveries,
                    "subtask finished"
                );
                let mut outcome = state.outcome(true, summary, iterations);
                outcome.proposed_files = self.proposed_in(&response.text, spec).await;
                return Ok(outcome);
            }

            let mut results = Vec::with_capacity(response.tool_calls.len());
            for call in &response.tool_calls {
                if cancel.is_cancelled() {
                    return Err(ExecutorError::Cancelled);
                }
                results.push(self.run_tool(call, &ctx, &mut state, &mut out).await?);
            }
            if from_code_block {
                request.messages.push(text_results_message(
                    &results,
                    if final_block_written && !unfinished {
                        "your answer gave the file whole in a code block with what the task asks for, which the file lacked, so the block was written with file_write"
                    } else {
                        "your answer gave the file whole in a code block and made no tool call, so the block was written with file_write"
                    },
                ));
            } else if textual {
                request.messages.push(text_results_message(&results, ""));
            } else {
                request.messages.extend(results);
            }
            if state.repeating_success {
                // The same successful call a third time: the model holds the work done.
                // Whether it is, the subtask's checks decide.
                tracing::info!(iterations, "subtask ended: a successful call repeated");
                out.note("▸ the same successful call came a third time: taking the work as done");
                let success = state.unfinished(asks_for_changes).is_none();
                let summary = format!(
                    "The model repeated a call that had already succeeded.\n\n{}",
                    state.synthesize()
                );
                return Ok(state.outcome(success, summary, iterations));
            }
            if let Some(why) = state.disk_unavailable.take() {
                tracing::warn!(iterations, "subtask stopped: {why}");
                return Err(ExecutorError::DiskUnavailable(why));
            }
            if let (true, false, Some(refused)) =
                (state.refused_again, state.changed, &state.refused)
            {
                tracing::info!(
                    iterations,
                    "subtask ended: the model made a refused call again"
                );
                return Err(ExecutorError::Refused(refused.clone()));
            }
            if let Some(why) = state.stuck.take() {
                tracing::info!(iterations, "subtask stopped: {why}");
                out.note(&format!("▸ stopped: {why}"));
                let summary = format!("Stopped: {why}.\n\n{}", state.synthesize());
                return Ok(state.outcome(false, summary, iterations));
            }
        }

        tracing::info!(
            iterations,
            errors = state.error_count,
            partial = state.partial_results.len(),
            "subtask stopped at max iterations"
        );
        let summary = state.synthesize();
        Ok(state.outcome(false, summary, iterations))
    }

    /// The `file_write` a code block of `text` stands for (see [`code_answer`]). While
    /// the subtask is `unfinished`, against the files as the subtask began; once the
    /// model holds it done, only a block with a name the task asks for that the file as
    /// it is now lacks.
    async fn code_block_write(
        &self,
        text: &str,
        spec: &SubtaskSpec,
        unfinished: bool,
    ) -> Option<ToolCall> {
        let targets = &spec.target_files;
        if unfinished {
            if !self.repairs_on(REPAIR_CODE_ANSWER) {
                return None;
            }
            return code_answer::file_write_in(text, targets);
        }
        if spec.task_names.is_empty() || !self.repairs_on(REPAIR_CODE_ANSWER_NAMES) {
            return None;
        }
        let now = self.targets_now(spec).await;
        code_answer::missing_names_written_in(text, &now, &spec.task_names)
    }

    /// The task's files that exist, with their text as the tools read it now.
    async fn targets_now(&self, spec: &SubtaskSpec) -> Vec<TargetFile> {
        let mut now = Vec::new();
        for target in &spec.target_files {
            if let Some(content) = self.tools.current_text(&target.path).await {
                now.push(TargetFile {
                    path: target.path.clone(),
                    content: Some(content),
                });
            }
        }
        now
    }

    /// The whole files of the task a final answer shows, different from them as they are
    /// now (see [`ExecutionOutcome::proposed_files`]).
    async fn proposed_in(&self, text: &str, spec: &SubtaskSpec) -> Vec<TargetFile> {
        let now = self.targets_now(spec).await;
        code_answer::whole_files_in(text, &now)
            .into_iter()
            .map(|(path, content)| TargetFile {
                path,
                content: Some(content),
            })
            .collect()
    }

    /// The end of an execution whose model stopped, after the nudge, without the work
    /// done: no progress when nothing changed, else an unsuccessful outcome that keeps
    /// the partial results.
    fn stop_unfinished(
        &self,
        unfinished: Unfinished,
        response: &ModelResponse,
        state: LoopState,
        iterations: u32,
    ) -> Result<ExecutionOutcome, ExecutorError> {
        let said = first_line(response.text.trim(), 160);
        let said = if said.is_empty() {
            "(no text)".to_string()
        } else {
            said
        };
        tracing::info!(
            iterations,
            changed = state.changed,
            "subtask ended without progress"
        );
        match unfinished {
            Unfinished::NothingChanged => {
                let reason = format!(
                    "the subtask asked for changes and the model made none, also after it was told to use its tools; it said: {said}"
                );
                let gathered = state.outcome(false, reason.clone(), iterations);
                Err(ExecutorError::NoProgress(reason, Box::new(gathered)))
            }
            Unfinished::ChangeFailed { tool, error } if !state.changed => {
                let reason = format!(
                    "the model's {tool} call failed ({error}) and it stopped without making the change; it said: {said}"
                );
                let gathered = state.outcome(false, reason.clone(), iterations);
                Err(ExecutorError::NoProgress(reason, Box::new(gathered)))
            }
            Unfinished::ChangeFailed { tool, error } => {
                let summary = format!(
                    "The model stopped although its last {tool} call failed ({error}), so that change was not made.\n\n{}",
                    state.synthesize()
                );
                Ok(state.outcome(false, summary, iterations))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn argument_hashes_ignore_key_order_but_not_values() {
        let hash = |v: &Value| {
            let mut h = Fnv1a::new();
            hash_json(v, &mut h);
            h.finish()
        };
        assert_eq!(
            hash(&json!({ "a": 1, "b": "x" })),
            hash(&json!({ "b": "x", "a": 1 }))
        );
        assert_ne!(hash(&json!({ "a": 1 })), hash(&json!({ "a": 2 })));
        assert_ne!(hash(&json!({ "a": "1" })), hash(&json!({ "a": 1 })));
        assert_ne!(hash(&json!(["ab", "c"])), hash(&json!(["a", "bc"])));
    }

    #[test]
    fn calls_get_unique_ids_and_object_arguments() {
        let mut calls = vec![
            ToolCall {
                id: String::new(),
                name: "file_read".into(),
                arguments: json!("{\"path\":\"a\"}"),
            },
            ToolCall {
                id: "x".into(),
                name: "glob".into(),
                arguments: json!({ "pattern": "*" }),
            },
            ToolCall {
                id: "x".into(),
                name: "glob".into(),
                arguments: json!({ "pattern": "*.rs" }),
            },
        ];
        normalise_calls(&mut calls, 4);
        assert_eq!(calls[0].id, "call_4_0");
        assert_eq!(calls[0].arguments, json!({ "path": "a" }));
        assert_eq!(calls[1].id, "x");
        assert_eq!(calls[2].id, "call_4_2");
    }

    #[test]
    fn the_synthesis_follows_the_seed() {
        let mut state = LoopState {
            error_count: 2,
            ..LoopState::default()
        };
        assert!(state.synthesize().starts_with("Unable to complete task."));
        state.partial_results = vec!["file_write: created a".into(), "bash: ran `x`".into()];
        assert_eq!(
            state.synthesize(),
            "Completed 2 of intended objectives:\n- file_write: created a\n- bash: ran `x`\n\nEncountered 2 errors during execution."
        );
    }

    #[test]
    fn long_text_keeps_its_head_and_tail() {
        let text = format!("HEAD{}TAIL", "x".repeat(10_000));
        let cut = cap_text(&text, 1_000);
        assert!(cut.starts_with("HEAD") && cut.ends_with("TAIL"), "{cut}");
        assert!(cut.chars().count() < 1_100);
        assert!(cut.contains("characters cut to fit the context window"));
        assert_eq!(cap_text("short", 1_000), "short");
    }

    #[test]
    fn recovery_rate_is_recovered_over_errored_episodes() {
        let none = MetricsSnapshot::default();
        assert_eq!(none.recovery_rate(), None);
        let some = MetricsSnapshot {
            error_episodes: 4,
            recoveries: 3,
            ..MetricsSnapshot::default()
        };
        assert_eq!(some.recovery_rate(), Some(0.75));
    }
}
