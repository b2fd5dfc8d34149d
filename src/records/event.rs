//! Recovery events: every step of the ladder, as the editor sees it and the store keeps it
//! (docs/protocol.md, `RecoveryEvent`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::Severity;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryAction {
    Retry,
    PeerTakeover,
    EscalateToSupervisor,
    EscalateToTop,
    ReplaceAgent,
    CircuitOpen,
    CircuitClosed,
    Recovered,
    GaveUp,
    /// The subtask waits for its provider (rate limit, open breaker, outage); no
    /// attempt is spent.
    WaitForProvider,
    /// An agent stopped answering heartbeats (reported until it is handled).
    AgentHung,
    /// A call-level retry of one model call (inside an attempt, before the ladder).
    CallRetry,
}

impl RecoveryAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryAction::Retry => "retry",
            RecoveryAction::PeerTakeover => "peer_takeover",
            RecoveryAction::EscalateToSupervisor => "escalate_to_supervisor",
            RecoveryAction::EscalateToTop => "escalate_to_top",
            RecoveryAction::ReplaceAgent => "replace_agent",
            RecoveryAction::CircuitOpen => "circuit_open",
            RecoveryAction::CircuitClosed => "circuit_closed",
            RecoveryAction::Recovered => "recovered",
            RecoveryAction::GaveUp => "gave_up",
            RecoveryAction::WaitForProvider => "wait_for_provider",
            RecoveryAction::AgentHung => "agent_hung",
            RecoveryAction::CallRetry => "call_retry",
        }
    }
}

/// What a recovery step is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventScope {
    Task,
    #[default]
    Subtask,
    /// A model provider or an executor: `provider` names it; `taskId` is `""`.
    Provider,
    Tool,
}

/// One recovery step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryEvent {
    pub task_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtask_id: Option<String>,
    /// The agent the step is about (nil UUID for provider-level steps like breakers).
    pub agent_id: String,
    pub action: RecoveryAction,
    pub severity: Severity,
    pub attempt: u32,
    pub max_attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    pub message: String,
    /// What the step is about; a provider-wide step has no task.
    #[serde(default)]
    pub scope: EventScope,
    /// The provider the step is about (waits, breakers, outages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// A provider-wide step: the unfinished tasks it holds up (their `taskId` is `""`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub task_ids: Vec<String>,
    pub at: DateTime<Utc>,
}
