//! Messages between agents: their kinds, priorities and addressing.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::agent::{AgentId, Layer};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    TaskAssign,
    ProgressReport,
    StatusQuery,
    PeerHelpRequest,
    PeerHelpResponse,
    IssueEscalation,
    ErrorReport,
    SignatureRequest,
    ConflictReport,
    ArbitrationResult,
    PeerCoordination,
    Heartbeat,
    HeartbeatAck,
    Warning,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        use MessageKind::*;
        match self {
            TaskAssign => "task_assign",
            ProgressReport => "progress_report",
            StatusQuery => "status_query",
            PeerHelpRequest => "peer_help_request",
            PeerHelpResponse => "peer_help_response",
            IssueEscalation => "issue_escalation",
            ErrorReport => "error_report",
            SignatureRequest => "signature_request",
            ConflictReport => "conflict_report",
            ArbitrationResult => "arbitration_result",
            PeerCoordination => "peer_coordination",
            Heartbeat => "heartbeat",
            HeartbeatAck => "heartbeat_ack",
            Warning => "warning",
        }
    }
}

/// Delivery order: urgent before high before normal before low; FIFO within one priority.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low = 0,
    #[default]
    Normal = 1,
    High = 2,
    Urgent = 3,
}

impl Priority {
    pub const COUNT: usize = 4;

    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Urgent => "urgent",
        }
    }
}

/// Who a message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind", content = "value")]
pub enum Recipient {
    Agent(AgentId),
    /// Every registered agent but the sender.
    All,
    /// Every registered agent of one layer but the sender.
    Layer(Layer),
}

impl std::fmt::Display for Recipient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Recipient::Agent(id) => id.fmt(f),
            Recipient::All => f.write_str("all"),
            Recipient::Layer(layer) => write!(f, "layer:{layer}"),
        }
    }
}

/// One message. Shared as `Arc<Message>` between mailboxes, the store and event subscribers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: Uuid,
    pub from: AgentId,
    pub to: Recipient,
    pub kind: MessageKind,
    pub priority: Priority,
    pub payload: serde_json::Value,
    /// Set on replies: the id of the request answered.
    pub in_reply_to: Option<Uuid>,
    pub task_id: Option<String>,
    pub at: DateTime<Utc>,
}

impl Message {
    pub fn new(
        from: AgentId,
        to: Recipient,
        kind: MessageKind,
        payload: serde_json::Value,
    ) -> Self {
        Message {
            id: Uuid::new_v4(),
            from,
            to,
            kind,
            priority: Priority::Normal,
            payload,
            in_reply_to: None,
            task_id: None,
            at: Utc::now(),
        }
    }

    pub fn to_agent(
        from: AgentId,
        to: AgentId,
        kind: MessageKind,
        payload: serde_json::Value,
    ) -> Self {
        Message::new(from, Recipient::Agent(to), kind, payload)
    }

    pub fn with_priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }

    pub fn with_task(mut self, task_id: impl Into<String>) -> Self {
        self.task_id = Some(task_id.into());
        self
    }

    /// A reply to `self`, addressed back to its sender.
    pub fn reply(&self, from: AgentId, kind: MessageKind, payload: serde_json::Value) -> Message {
        let mut reply = Message::to_agent(from, self.from, kind, payload);
        reply.in_reply_to = Some(self.id);
        reply.priority = self.priority;
        reply.task_id = self.task_id.clone();
        reply
    }

    pub fn into_shared(self) -> Arc<Message> {
        Arc::new(self)
    }
}
