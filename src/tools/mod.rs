//! Tools: what a bottom agent's model can do to the workspace.
//!
//! The tools are named as in the model contract (DESIGN.md): `file_read`, `file_write`,
//! `file_edit`, `bash`, `grep`, `glob`, `http_request`. Each one validates its own
//! arguments and reports failures as a typed [`ToolError`] that recovery can classify.
//!
//! - [`sandbox`]: every path is resolved inside the workspace root or refused (code 1005).
//! - [`writer`]: files are written through a [`WorkspaceWriter`] (atomic disk writes now,
//!   the editor's `workspace/applyEdit` later); identical content is a no-op.
//! - [`registry`]: the tool specs offered to the model and the dispatch of a [`ToolCall`]
//!   (argument normalisation, approval, step timeout, cancellation).
//! - [`file`], [`bash`], [`search`], [`http`]: the tools themselves.
//! - [`mcp`]: the tools of MCP servers (`conclave.toml`'s and an ACP client's), as a
//!   [`registry::ToolSource`].
//!
//! [`ToolCall`]: crate::model::ToolCall

pub mod args;
pub mod bash;
pub(crate) mod edit_match;
pub mod file;
pub mod http;
pub mod mcp;
mod python_imports;
pub mod registry;
pub mod sandbox;
pub mod search;
pub mod writer;

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::model::ToolSpec;
use crate::recovery::{Classify, FailureKind, Severity};

pub use crate::exec::HeadTail;
pub use args::Args;
pub use bash::{
    ApprovalHook, ApprovalOutcome, BashSettings, CommandApprovalRequest, FileChangeRequest,
    ToolApprovalRequest,
};
pub use file::ChangeReview;
pub use http::HttpSettings;
pub use registry::{ToolRegistry, ToolSettings, ToolSource, WriteObserver};
pub use sandbox::{EscapeReason, PathOutsideWorkspace, Sandbox};
pub use writer::{ContentHash, DiskWriter, WorkspaceWriter, WriteError, WriteOutcome, WriteStatus};

/// What one successful tool call produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// The text the model sees as the tool result.
    pub content: String,
    /// One line for activity notes and partial results, e.g. `created src/lib.rs (120 bytes)`.
    pub summary: String,
    /// Whether the call changed something or ran a command successfully: a meaningful
    /// result worth keeping as a partial result (reads and searches are not).
    pub progress: bool,
    /// Workspace-relative paths whose content this call changed.
    pub files_written: Vec<PathBuf>,
    /// The repairs made to what the model gave the tool (`checks::REPAIRS`), by id.
    pub repairs: Vec<&'static str>,
}

impl ToolOutput {
    /// The output, noting the repairs made to the call's arguments.
    pub fn with_repairs(mut self, repairs: Vec<&'static str>) -> ToolOutput {
        self.repairs = repairs;
        self
    }
}

/// Where and how a tool call runs.
#[derive(Clone, Debug, Default)]
pub struct CallContext {
    /// Cancelled when the execution is cancelled; tools stop promptly.
    pub cancel: CancellationToken,
    /// The step timeout for one tool call (`recovery.stepTimeoutMs`); tools with their
    /// own deadline (bash, http_request) never wait longer than this.
    pub step_timeout: Option<Duration>,
    /// The subtask the call belongs to, for approval requests and logs.
    pub subtask_id: Option<String>,
}

/// A tool as the registry sees it.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls it by.
    fn name(&self) -> &str;

    /// Its description and JSON schema for the model.
    fn spec(&self) -> ToolSpec;

    /// Asks whoever must agree before the call runs (the command approval policy). Not
    /// bounded by the step timeout: a person may take a while to answer.
    async fn authorize(&self, _args: &Args, _ctx: &CallContext) -> Result<(), ToolError> {
        Ok(())
    }

    /// Runs the call.
    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError>;

    /// Whether this call may be made again after a transient failure without harm (an
    /// idempotent request, a read-only or check command). Dispatch retries only such
    /// calls, with the call-level policy model calls use (`recovery.call`).
    fn repeatable(&self, _args: &Args) -> bool {
        false
    }
}

/// A failed tool call. The `Display` text is what the model is told, so it says what
/// went wrong and, where it helps, what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("unknown tool `{name}`; the valid tools are: {}", available.join(", "))]
    UnknownTool {
        name: String,
        available: Vec<String>,
    },
    #[error("invalid arguments: {message}")]
    InvalidArguments { message: String },
    #[error(transparent)]
    OutsideWorkspace(#[from] PathOutsideWorkspace),
    #[error("{} does not exist", path.display())]
    NotFound { path: PathBuf },
    #[error("{}: {message}", path.display())]
    Io {
        path: PathBuf,
        kind: io::ErrorKind,
        message: String,
    },
    #[error("{} is {size} bytes, over the {limit}-byte limit", path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{} looks like a binary file; only text files can be read or edited", path.display())]
    Binary { path: PathBuf },
    /// `nearest` is the text to copy `old_text` from (the file, or its closest lines).
    #[error(
        "old_text was not found in {}; copy old_text exactly from the file, or write the whole file with file_write{}",
        path.display(),
        if nearest.is_empty() { String::new() } else { format!("\n{nearest}") }
    )]
    NoMatch { path: PathBuf, nearest: String },
    #[error(
        "old_text matches {count} places in {}; include more surrounding lines so that it matches exactly one",
        path.display()
    )]
    AmbiguousMatch { path: PathBuf, count: usize },
    #[error("timed out after {} ms{}", timeout.as_millis(), if output.is_empty() { String::new() } else { format!("; output so far:\n{output}") })]
    Timeout {
        timeout: Duration,
        /// Whatever the call produced before it was stopped.
        output: String,
    },
    #[error("{}\n{output}", match exit_code { Some(code) => format!("command exited with code {code}"), None => "command was killed by a signal".to_string() })]
    CommandFailed {
        exit_code: Option<i32>,
        output: String,
    },
    #[error("command not run: {reason}")]
    CommandDenied { command: String, reason: String },
    #[error("the change to {} was rejected: {reason}", path.display())]
    WriteRejected { path: PathBuf, reason: String },
    /// The same change (path and content) was refused earlier in the task; it is not
    /// shown to anyone again.
    #[error("this exact change to {} was refused earlier in this task ({reason}); it is not proposed again", path.display())]
    RefusedBefore { path: PathBuf, reason: String },
    /// The editor refused to give the file's text (ACP `fs/read_text_file` answered
    /// with an error): it is not read from disk behind its back.
    #[error("the editor refused to let {} be read: {reason}", path.display())]
    ReadRefused { path: PathBuf, reason: String },
    #[error("HTTP request failed: {message}")]
    HttpTransport { message: String, connect: bool },
    #[error("HTTP {status}\n{body}")]
    HttpStatus { status: u16, body: String },
    /// A call of a tool that acts on the world (an MCP tool) refused by the approval
    /// policy or the person.
    #[error("{tool} was not called: {reason}")]
    ToolDenied { tool: String, reason: String },
    /// An MCP server that could not be reached: it did not start, it crashed or its
    /// connection dropped. `transient` when trying again may work (it is restarted).
    #[error("the MCP server `{server}` is unavailable: {message}")]
    McpUnavailable {
        server: String,
        message: String,
        transient: bool,
    },
    /// The MCP tool ran and reported an error, or the server refused the call.
    #[error("{tool} failed: {message}")]
    McpFailed { tool: String, message: String },
    /// A `file_write` whose content is only a part of the existing file it would
    /// replace: it keeps neither most of the file's words nor half of its definitions.
    #[error(
        "not written: file_write replaces the whole of {}, and this content is only part of it: the file would lose {}. To add or change one part, use file_edit (old_text copied from the file, or empty to append; new_text the new code); to take a part out, file_edit with that part as old_text and an empty new_text. To rewrite the file, give all of it, with what the task does not ask to change as it is",
        path.display(),
        dropped.iter().map(|name| format!("`{name}`")).collect::<Vec<_>>().join(", ")
    )]
    PartialWrite { path: PathBuf, dropped: Vec<String> },
    #[error("the tool call was cancelled")]
    Cancelled,
}

impl ToolError {
    /// An I/O error on `path`, with "not found" turned into [`ToolError::NotFound`].
    pub fn io(path: impl Into<PathBuf>, error: &io::Error) -> ToolError {
        let path = path.into();
        match error.kind() {
            io::ErrorKind::NotFound => ToolError::NotFound { path },
            kind => ToolError::Io {
                path,
                kind,
                message: error.to_string(),
            },
        }
    }

    pub fn invalid(message: impl Into<String>) -> ToolError {
        ToolError::InvalidArguments {
            message: message.into(),
        }
    }
}

impl From<crate::recovery::backoff::Cancelled> for ToolError {
    fn from(_: crate::recovery::backoff::Cancelled) -> ToolError {
        ToolError::Cancelled
    }
}

impl From<WriteError> for ToolError {
    fn from(error: WriteError) -> ToolError {
        match error {
            WriteError::OutsideWorkspace(e) => ToolError::OutsideWorkspace(e),
            WriteError::Io { path, source } => ToolError::io(path, &source),
            WriteError::Rejected { path, reason } => ToolError::WriteRejected { path, reason },
        }
    }
}

impl ToolError {
    /// Whether a person or the editor refused the call: final, never to be retried as
    /// it was.
    /// The workspace's disk is full or read-only: no call can write until that changes.
    pub fn is_disk_unavailable(&self) -> bool {
        matches!(
            self,
            ToolError::Io { kind, .. } if matches!(
                kind,
                io::ErrorKind::StorageFull
                    | io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::QuotaExceeded
            )
        )
    }

    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ToolError::CommandDenied { .. }
                | ToolError::WriteRejected { .. }
                | ToolError::RefusedBefore { .. }
                | ToolError::ReadRefused { .. }
                | ToolError::ToolDenied { .. }
        )
    }
}

/// How tool failures climb the recovery ladder. The guiding question is "would the
/// same call, repeated, succeed?" and "is a person's decision involved?":
///
/// - refusals of a boundary (path outside the workspace, command denied, change
///   rejected, permission denied) are critical and never transient: retrying cannot
///   help and a person must know;
/// - timeouts, connection failures, HTTP 408/429/5xx and interrupted I/O are transient;
///   timeouts are high (they cost a whole step), the others medium;
/// - mistakes the model can fix with other arguments (unknown tool, bad arguments,
///   missing file, no or several matches, too large, binary) are low;
/// - a command that ran and failed is medium: the code or the command needs changing.
impl Classify for ToolError {
    fn severity(&self) -> Severity {
        match self {
            ToolError::OutsideWorkspace(_)
            | ToolError::CommandDenied { .. }
            | ToolError::WriteRejected { .. }
            | ToolError::RefusedBefore { .. }
            | ToolError::ReadRefused { .. }
            | ToolError::ToolDenied { .. } => Severity::Critical,
            ToolError::Io { kind, .. } if *kind == io::ErrorKind::PermissionDenied => {
                Severity::Critical
            }
            ToolError::HttpStatus { status, .. } if *status == 401 || *status == 403 => {
                Severity::Critical
            }
            ToolError::Timeout { .. } => Severity::High,
            ToolError::Io { .. }
            | ToolError::CommandFailed { .. }
            | ToolError::HttpTransport { .. }
            | ToolError::HttpStatus { .. }
            | ToolError::McpUnavailable { .. }
            | ToolError::McpFailed { .. } => Severity::Medium,
            ToolError::UnknownTool { .. }
            | ToolError::InvalidArguments { .. }
            | ToolError::NotFound { .. }
            | ToolError::TooLarge { .. }
            | ToolError::Binary { .. }
            | ToolError::NoMatch { .. }
            | ToolError::AmbiguousMatch { .. }
            | ToolError::PartialWrite { .. }
            | ToolError::Cancelled => Severity::Low,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            ToolError::Timeout { .. } | ToolError::HttpTransport { .. } => true,
            ToolError::McpUnavailable { transient, .. } => *transient,
            ToolError::HttpStatus { status, .. } => {
                *status >= 500 || *status == 408 || *status == 429
            }
            ToolError::Io { kind, .. } => matches!(
                kind,
                io::ErrorKind::Interrupted
                    | io::ErrorKind::TimedOut
                    | io::ErrorKind::WouldBlock
                    | io::ErrorKind::StorageFull
                    | io::ErrorKind::ReadOnlyFilesystem
                    | io::ErrorKind::QuotaExceeded
            ),
            _ => false,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ToolError::UnknownTool { .. } => "unknown_tool",
            ToolError::InvalidArguments { .. } => "invalid_arguments",
            ToolError::OutsideWorkspace(_) => "path_outside_workspace",
            ToolError::NotFound { .. } => "not_found",
            ToolError::Io { kind, .. } if *kind == io::ErrorKind::PermissionDenied => {
                "permission_denied"
            }
            error @ ToolError::Io { .. } if error.is_disk_unavailable() => "disk_unavailable",
            ToolError::Io { .. } => "io",
            ToolError::TooLarge { .. } => "too_large",
            ToolError::Binary { .. } => "binary_file",
            ToolError::NoMatch { .. } => "no_match",
            ToolError::AmbiguousMatch { .. } => "ambiguous_match",
            ToolError::PartialWrite { .. } => "partial_write",
            ToolError::Timeout { .. } => "timeout",
            ToolError::CommandFailed { .. } => "command_failed",
            ToolError::CommandDenied { .. } => "command_denied",
            ToolError::WriteRejected { .. } => "write_rejected",
            ToolError::RefusedBefore { .. } => "refused_before",
            ToolError::ReadRefused { .. } => "read_refused",
            ToolError::HttpTransport { .. } => "http_transport",
            ToolError::HttpStatus { .. } => "http_status",
            ToolError::ToolDenied { .. } => "tool_denied",
            ToolError::McpUnavailable { .. } => "mcp_unavailable",
            ToolError::McpFailed { .. } => "mcp_tool_failed",
            ToolError::Cancelled => "cancelled",
        }
    }

    fn failure_kind(&self) -> FailureKind {
        match self {
            ToolError::OutsideWorkspace(_) => FailureKind::Permission,
            ToolError::CommandDenied { .. }
            | ToolError::WriteRejected { .. }
            | ToolError::RefusedBefore { .. }
            | ToolError::ReadRefused { .. }
            | ToolError::ToolDenied { .. } => FailureKind::Refused,
            ToolError::Io { kind, .. } if *kind == io::ErrorKind::PermissionDenied => {
                FailureKind::Permission
            }
            error @ ToolError::Io { .. } if error.is_disk_unavailable() => {
                FailureKind::DiskUnavailable
            }
            ToolError::HttpStatus { status, .. } if *status == 401 => FailureKind::Auth,
            ToolError::HttpStatus { status, .. } if *status == 403 => FailureKind::Permission,
            ToolError::HttpStatus { status, .. } if *status == 429 => FailureKind::RateLimited,
            ToolError::HttpStatus { status, .. } if *status >= 500 || *status == 408 => {
                FailureKind::Server
            }
            ToolError::HttpTransport { .. } => FailureKind::Connection,
            ToolError::McpUnavailable {
                transient: true, ..
            } => FailureKind::Connection,
            ToolError::Timeout { .. } => FailureKind::Timeout,
            ToolError::Cancelled => FailureKind::Cancelled,
            _ => FailureKind::Tool,
        }
    }
}

/// Cuts `text` to at most `limit` bytes on a character boundary, saying so when it did.
pub fn truncate_text(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[… truncated: showing {end} of {} bytes …]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_text("héllo", 10), "héllo");
        let cut = truncate_text("héllo", 2);
        assert!(cut.starts_with("h\n"), "{cut}");
    }

    #[test]
    fn boundary_refusals_are_critical_and_timeouts_transient() {
        let outside = ToolError::OutsideWorkspace(PathOutsideWorkspace {
            path: "../x".into(),
            reason: EscapeReason::ParentTraversal,
        });
        assert_eq!(outside.severity(), Severity::Critical);
        assert!(!outside.is_transient());
        let timeout = ToolError::Timeout {
            timeout: Duration::from_secs(1),
            output: String::new(),
        };
        assert_eq!(timeout.severity(), Severity::High);
        assert!(timeout.is_transient());
        let missing = ToolError::io("a.txt", &io::Error::from(io::ErrorKind::NotFound));
        assert_eq!(missing.kind(), "not_found");
        assert_eq!(missing.severity(), Severity::Low);
        let busy = ToolError::HttpStatus {
            status: 503,
            body: String::new(),
        };
        assert!(busy.is_transient());
    }
}
