//! Executors: how a bottom agent turns one subtask into work done.
//!
//! Two implementations share the [`Executor`] trait: the built-in model tool loop and
//! pi-coding-agent driven over its RPC mode. Both return an [`ExecutionOutcome`] with the
//! partial results they kept, so recovery can report what was done even when the whole
//! could not be.

pub mod builtin;
pub mod pi;
pub mod text_calls;

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::model::ModelError;
use crate::recovery::{Classify, Severity};

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
    /// The subtask asked for changes and the model made none, also after it was told to
    /// use its tools (or its last change failed and it stopped anyway).
    #[error("no progress: {0}")]
    NoProgress(String),
}

impl Classify for ExecutorError {
    fn severity(&self) -> Severity {
        match self {
            ExecutorError::Model(e) => e.severity(),
            ExecutorError::StepTimeout(_) => Severity::High,
            ExecutorError::Cancelled => Severity::Low,
            ExecutorError::Process(_) => Severity::High,
            ExecutorError::NoProgress(_) => Severity::Medium,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            ExecutorError::Model(e) => e.is_transient(),
            ExecutorError::StepTimeout(_) => true,
            ExecutorError::Cancelled | ExecutorError::Process(_) | ExecutorError::NoProgress(_) => {
                false
            }
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ExecutorError::Model(e) => e.kind(),
            ExecutorError::StepTimeout(_) => "timeout",
            ExecutorError::Cancelled => "cancelled",
            ExecutorError::Process(_) => "executor_process",
            ExecutorError::NoProgress(_) => "no_progress",
        }
    }

    fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ExecutorError::Model(e) => e.retry_after(),
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
