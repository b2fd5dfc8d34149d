//! The one failure type: what went wrong, how bad it is, whether trying again can help,
//! whether it must stop everything, and what it is about (a task, a subtask, a provider
//! or a tool). Reports, task errors, the ladder, ERROR_REPORT.md and the wire all carry
//! a [`Failure`].
//!
//! A [`FailureKind`] decides the defaults (its severity, whether it is transient or
//! fatal); the error types of models, tools and executors say their kind through
//! `recovery::Classify`, so nothing is decided by reading a message. What a kind means,
//! `Failure::new` (a failure with its kind's defaults) and `Failure::of` (a classified
//! error) are recovery's (`recovery/meaning.rs`): here is the data, with the records,
//! since task checkpoints carry failures.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::Severity;
use crate::ids::{SubtaskId, TaskId};

/// What kind of thing went wrong. Stable snake_case names travel on the wire and in
/// ERROR_REPORT.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The provider asked to slow down (HTTP 429), maybe with a Retry-After.
    RateLimited,
    /// The provider or a server failed on its side (HTTP 5xx, 408).
    Server,
    /// A call or a subtask did not finish in its time.
    Timeout,
    /// The connection could not be made or was dropped (reset, refused, truncated stream).
    Connection,
    /// An answer that cannot be read (garbage body, JSON not as asked).
    InvalidResponse,
    /// The conversation no longer fits the model's context window.
    ContextOverflow,
    /// Credentials refused (HTTP 401).
    Auth,
    /// Not allowed: HTTP 403, a sandbox boundary.
    Permission,
    /// A person or the editor said no: a rejected change, a denied command, a refused
    /// read. Final: never retried, never asked again.
    Refused,
    /// A spend or quota limit was reached.
    QuotaExceeded,
    /// Configuration that cannot work (no model configured, a bad setting).
    InvalidConfig,
    /// Stopped on purpose (the user cancelled the task).
    Cancelled,
    /// An executor kept going without getting anywhere.
    NoProgress,
    /// A check of the work (the verify command) failed.
    CheckFailed,
    /// The top layer vetoed the plan for good.
    PlanVetoed,
    /// A decision (a plan signature, a person's answer) was not given in time.
    DecisionExpired,
    /// The provider stayed unavailable longer than recovery's patience.
    ProviderOutage,
    /// The provider's circuit breaker is open: calls are paused for a while.
    CircuitOpen,
    /// A tool call failed (a command exited non-zero, a file was not found, ...).
    Tool,
    /// The executor ended without finishing the subtask.
    Incomplete,
    /// No agent could take the work, or the agent stopped answering.
    AgentUnavailable,
    /// Not run, because work it depends on did not complete.
    Skipped,
    /// A request the provider refuses as it is (HTTP 4xx other than the above).
    BadRequest,
    /// The executor's process died mid-run (pi crashed or was killed).
    ExecutorCrashed,
    /// The workspace cannot be written: its disk is full or read-only. Waited for like a
    /// provider: the work goes on when there is space again.
    DiskUnavailable,
    /// A fault inside Conclave (a report that cannot be read, a store failure).
    Internal,
    /// A kind this version does not know (read from an older or newer record).
    #[serde(other)]
    Other,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::RateLimited => "rate_limited",
            FailureKind::Server => "server",
            FailureKind::Timeout => "timeout",
            FailureKind::Connection => "connection",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::ContextOverflow => "context_overflow",
            FailureKind::Auth => "auth",
            FailureKind::Permission => "permission",
            FailureKind::Refused => "refused",
            FailureKind::QuotaExceeded => "quota_exceeded",
            FailureKind::InvalidConfig => "invalid_config",
            FailureKind::Cancelled => "cancelled",
            FailureKind::NoProgress => "no_progress",
            FailureKind::CheckFailed => "check_failed",
            FailureKind::PlanVetoed => "plan_vetoed",
            FailureKind::DecisionExpired => "decision_expired",
            FailureKind::ProviderOutage => "provider_outage",
            FailureKind::CircuitOpen => "circuit_open",
            FailureKind::Tool => "tool",
            FailureKind::Incomplete => "incomplete",
            FailureKind::AgentUnavailable => "agent_unavailable",
            FailureKind::Skipped => "skipped",
            FailureKind::BadRequest => "bad_request",
            FailureKind::ExecutorCrashed => "executor_crashed",
            FailureKind::DiskUnavailable => "disk_unavailable",
            FailureKind::Internal => "internal",
            FailureKind::Other => "other",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for FailureKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What a failure is about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "scope")]
pub enum Scope {
    /// Not yet attributed (the failure has not reached the task that owns it).
    #[default]
    Unattributed,
    #[serde(rename_all = "camelCase")]
    Task {
        task_id: TaskId,
    },
    #[serde(rename_all = "camelCase")]
    Subtask {
        task_id: TaskId,
        subtask_id: SubtaskId,
    },
    /// A model provider or an executor (by its configured name).
    Provider {
        provider: String,
    },
    Tool {
        tool: String,
    },
}

/// The first failure behind a later one: what a report names as the root cause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootCause {
    pub kind: FailureKind,
    pub message: String,
}

/// One failure, classified.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub kind: FailureKind,
    /// A finer stable name from the source, e.g. `http_status` or `command_failed`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code: String,
    pub severity: Severity,
    #[serde(default)]
    pub transient: bool,
    #[serde(default)]
    pub fatal: bool,
    /// A server-requested wait before the next try.
    #[serde(
        default,
        rename = "retryAfterMs",
        with = "millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after: Option<Duration>,
    pub message: String,
    /// The first failure of this chain, when this one is a consequence of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cause: Option<RootCause>,
    #[serde(flatten)]
    pub scope: Scope,
}

impl Failure {
    pub fn with_scope(mut self, scope: Scope) -> Failure {
        self.scope = scope;
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Failure {
        self.severity = severity;
        self
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Failure {
        self.code = code.into();
        self
    }

    pub fn with_retry_after(mut self, after: Option<Duration>) -> Failure {
        self.retry_after = after;
        self
    }

    /// Records `first` as this failure's root cause (keeping the oldest one when
    /// `first` has its own), unless it is the same failure.
    pub fn caused_by(mut self, first: &Failure) -> Failure {
        let root = first.root_cause.clone().unwrap_or(RootCause {
            kind: first.kind,
            message: first.message.clone(),
        });
        if root.kind != self.kind || root.message != self.message {
            self.root_cause = Some(root);
        }
        self
    }

    /// The failure at the bottom of the chain: the root cause if any, else this one.
    pub fn root(&self) -> (FailureKind, &str) {
        match &self.root_cause {
            Some(root) => (root.kind, root.message.as_str()),
            None => (self.kind, self.message.as_str()),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Text shortened for one line of a report or a progress display: the first line, cut
/// at a word boundary (never inside a word or a character) with an ellipsis.
pub fn summarize(text: &str, max_chars: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= max_chars {
        return line.to_string();
    }
    let cut = line
        .char_indices()
        .nth(max_chars)
        .map(|(i, _)| i)
        .unwrap_or(line.len());
    let head = &line[..cut];
    let head = match head.rfind(char::is_whitespace) {
        // Keep a word boundary unless that would throw most of the line away.
        Some(space) if space >= cut / 2 => &head[..space],
        _ => head,
    };
    format!(
        "{}…",
        head.trim_end_matches(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ':')
    )
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => s.serialize_u64(d.as_millis() as u64),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_travels_as_camel_case_json_with_its_scope() {
        let task_id = TaskId::new();
        let subtask_id = SubtaskId::new();
        let first = Failure::new(FailureKind::Server, "HTTP 503");
        let failure = Failure::new(FailureKind::CircuitOpen, "provider paused")
            .with_retry_after(Some(Duration::from_millis(1500)))
            .caused_by(&first)
            .with_scope(Scope::Subtask {
                task_id,
                subtask_id,
            });
        let json = serde_json::to_value(&failure).unwrap();
        assert_eq!(json["kind"], "circuit_open");
        assert_eq!(json["retryAfterMs"], 1500);
        assert_eq!(json["scope"], "subtask");
        assert_eq!(json["subtaskId"], subtask_id.to_string());
        assert_eq!(json["rootCause"]["kind"], "server");
        assert_eq!(json["fatal"], false);
        let back: Failure = serde_json::from_value(json).unwrap();
        assert_eq!(back, failure);
        assert_eq!(back.root(), (FailureKind::Server, "HTTP 503"));
    }

    #[test]
    fn unknown_kinds_from_old_records_still_read() {
        let old = serde_json::json!({
            "kind": "http_status", "severity": "medium", "message": "x",
            "scope": "unattributed"
        });
        let failure: Failure = serde_json::from_value(old).unwrap();
        assert_eq!(failure.kind, FailureKind::Other);
        assert_eq!(failure.scope, Scope::Unattributed);
    }

    #[test]
    fn the_root_cause_is_the_first_failure_of_the_chain() {
        let first = Failure::new(FailureKind::RateLimited, "429");
        let second = Failure::new(FailureKind::Server, "503").caused_by(&first);
        let third = Failure::new(FailureKind::CircuitOpen, "paused").caused_by(&second);
        assert_eq!(third.root(), (FailureKind::RateLimited, "429"));
        let same = Failure::new(FailureKind::Server, "503")
            .caused_by(&Failure::new(FailureKind::Server, "503"));
        assert_eq!(same.root_cause, None);
    }

    #[test]
    fn summaries_never_cut_a_word_or_a_character() {
        assert_eq!(summarize("short line\nsecond", 80), "short line");
        let long = "the provider answered HTTP 503 Service Unavailable repeatedly";
        let cut = summarize(long, 30);
        assert_eq!(cut, "the provider answered HTTP…");
        assert_eq!(summarize("ééééééééééé", 4), "éééé…");
        assert_eq!(summarize("\n\n  hello", 10), "hello");
    }
}
