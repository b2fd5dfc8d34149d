//! Executors: how a bottom agent turns one subtask into work done.
//!
//! Two implementations share the [`Executor`] trait: the built-in model tool loop and
//! pi-coding-agent driven over its RPC mode. Both return an [`ExecutionOutcome`] with the
//! partial results they kept, so recovery can report what was done even when the whole
//! could not be.

pub mod breaker;
pub mod builtin;
pub mod code_answer;
pub mod pi;
pub mod text_calls;

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::model::ModelError;
use crate::recovery::{Classify, FailureKind, Severity};

/// One subtask as an executor receives it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskSpec {
    pub subtask_id: String,
    /// Sent to the model verbatim.
    pub description: String,
    /// The agent's system prompt (role and responsibilities).
    pub system_prompt: String,
    /// Whiteboard context the agent may read, already rendered as markdown.
    pub context: String,
    /// The source files the task names, as they are now: a whole one answered in a code
    /// block instead of a tool call is written (see [`code_answer`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_files: Vec<TargetFile>,
    /// The flags and functions the task asks for by name (`--shout`, `perimeter`): once
    /// the model holds the work done, a whole file in its answer that has one of them and
    /// the file lacks is written (see [`code_answer`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_names: Vec<String>,
    /// Whether the subtask asks for changes, as the team read its plan
    /// (`checks::intent::step_asks_for_changes`): then ending with nothing written,
    /// edited or run is no progress. A question or a read-only step does not.
    #[serde(default)]
    pub asks_for_changes: bool,
}

/// A source file the task names, and its text now (`None`: not there yet).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetFile {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// What an execution produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionOutcome {
    /// True when the model finished the subtask; false when the loop ended without success.
    pub success: bool,
    /// The final answer, or the partial-result synthesis when `success` is false.
    pub summary: String,
    /// Meaningful successful tool results, kept in order.
    pub partial_results: Vec<String>,
    /// Workspace-relative paths written by this execution.
    pub files_written: Vec<PathBuf>,
    pub iterations: u32,
    /// Tool failures seen during the loop.
    pub error_count: u32,
    /// Tool failures followed by a success of the same tool.
    pub recoveries: u32,
    /// Whole files the model's final answer showed in code blocks, different from the
    /// files as they are: not written, but the team's checks may try them (a model may
    /// write a file with a bug, then show the fixed file in its answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposed_files: Vec<TargetFile>,
    /// The ids of the repairs made to the model's output during the execution
    /// (`checks::REPAIRS`), once for each time one was made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repairs: Vec<String>,
    /// Workspace-relative paths the model read, in order: what a peer taking over
    /// need not find again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_read: Vec<String>,
    /// The tool errors it saw ("tool: first line"), each once, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors_seen: Vec<String>,
}

/// Why an execution could not produce an outcome at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("the step did not finish within {} ms", .0.as_millis())]
    StepTimeout(std::time::Duration),
    #[error("the execution was cancelled")]
    Cancelled,
    #[error("the executor process failed: {0}")]
    Process(String),
    /// The executor program is not there or cannot be run (`executor.piPath`): a
    /// configuration problem, fatal.
    #[error("the executor cannot be started: {0}")]
    NotInstalled(String),
    /// The executor process died before it finished (a crash, a kill, out of memory).
    /// Transient: a fresh process may well get through.
    #[error("the executor crashed: {0}")]
    Crashed(String),
    /// The executor process started but never became ready to take work.
    #[error("the executor did not answer: {0}")]
    Unresponsive(String),
    /// The executor's own circuit breaker is open after repeated crashes: no process is
    /// started until `retry_in` has passed. A wait, like a provider's open breaker.
    #[error("the {executor} executor is paused for {}", crate::recovery::ladder::human_duration(*.retry_in))]
    CircuitOpen {
        executor: String,
        retry_in: std::time::Duration,
    },
    /// The subtask asked for changes and the model made none, also after it was told to
    /// use its tools (or its last change failed and it stopped anyway). With what the
    /// execution gathered on the way (what it read, the errors it saw), for whoever
    /// tries next.
    #[error("no progress: {0}")]
    NoProgress(String, Box<ExecutionOutcome>),
    /// The person or the editor refused what the subtask needed (a change, a command,
    /// a read) and the model found no other way: final, never retried as it was. The
    /// text is the refusal itself ("the change to a.txt was rejected: …"); the failure's
    /// kind, `refused`, is said beside it wherever it is shown.
    #[error("{0}")]
    Refused(String),
    /// A write failed because the workspace's disk is full or read-only: waited for
    /// like a provider, and the subtask tried again when it can be written.
    #[error("the workspace cannot be written: {0}")]
    DiskUnavailable(String),
}

/// What the ladder waits for when the workspace cannot be written.
pub const WORKSPACE_DISK: &str = "the workspace's disk";

impl Classify for ExecutorError {
    fn severity(&self) -> Severity {
        match self {
            ExecutorError::Model(e) => e.severity(),
            ExecutorError::StepTimeout(_) => Severity::High,
            ExecutorError::Cancelled => Severity::Low,
            ExecutorError::Process(_) => Severity::High,
            ExecutorError::NoProgress(..) => Severity::Medium,
            other => other.failure_kind().severity(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            ExecutorError::Model(e) => e.is_transient(),
            ExecutorError::StepTimeout(_)
            | ExecutorError::Crashed(_)
            | ExecutorError::Unresponsive(_)
            | ExecutorError::CircuitOpen { .. }
            | ExecutorError::DiskUnavailable(_) => true,
            ExecutorError::Cancelled
            | ExecutorError::Process(_)
            | ExecutorError::NoProgress(..)
            | ExecutorError::Refused(_)
            | ExecutorError::NotInstalled(_) => false,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ExecutorError::Model(e) => e.kind(),
            ExecutorError::StepTimeout(_) => "timeout",
            ExecutorError::Cancelled => "cancelled",
            ExecutorError::Process(_) => "executor_process",
            ExecutorError::NoProgress(..) => "no_progress",
            ExecutorError::Refused(_) => "refused",
            ExecutorError::NotInstalled(_) => "executor_not_installed",
            ExecutorError::Crashed(_) => "executor_crashed",
            ExecutorError::Unresponsive(_) => "executor_unresponsive",
            ExecutorError::CircuitOpen { .. } => "executor_circuit_open",
            ExecutorError::DiskUnavailable(_) => "disk_unavailable",
        }
    }

    fn failure_kind(&self) -> FailureKind {
        match self {
            ExecutorError::Model(e) => e.failure_kind(),
            ExecutorError::StepTimeout(_) => FailureKind::Timeout,
            ExecutorError::Cancelled => FailureKind::Cancelled,
            ExecutorError::Process(_) => FailureKind::Internal,
            ExecutorError::NoProgress(..) => FailureKind::NoProgress,
            ExecutorError::Refused(_) => FailureKind::Refused,
            ExecutorError::NotInstalled(_) => FailureKind::InvalidConfig,
            ExecutorError::Crashed(_) => FailureKind::ExecutorCrashed,
            ExecutorError::Unresponsive(_) => FailureKind::Timeout,
            ExecutorError::CircuitOpen { .. } => FailureKind::CircuitOpen,
            ExecutorError::DiskUnavailable(_) => FailureKind::DiskUnavailable,
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ExecutorError::Model(e) => e.retry_after(),
            ExecutorError::CircuitOpen { retry_in, .. } => Some(*retry_in),
            _ => None,
        }
    }

    fn provider(&self) -> Option<&str> {
        match self {
            ExecutorError::Model(e) => e.provider(),
            // The ladder waits for an executor paused by its breaker as for a provider.
            ExecutorError::CircuitOpen { executor, .. } => Some(executor),
            ExecutorError::DiskUnavailable(_) => Some(WORKSPACE_DISK),
            _ => None,
        }
    }
}

/// Streamed output of an execution (model text, tool activity), for the agent's whiteboard.
pub type OutputSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// Runs one subtask to an outcome.
#[async_trait]
pub trait Executor: Send + Sync {
    async fn execute(
        &self,
        spec: &SubtaskSpec,
        cancel: CancellationToken,
        on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, ExecutorError>;
}
