//! Messages between agents: their kinds, priorities and addressing, and the typed
//! bodies they carry ([`Body`]): a body names the kinds of message it travels as, so
//! a sender cannot put it in the wrong one and a reader gets the type back or an error
//! that says what arrived instead. On the wire and in the store a body is the message's
//! JSON `payload`.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
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

    /// A message to `to` carrying `body`, as the kind the body travels as.
    pub fn carrying<B: Body>(from: AgentId, to: AgentId, body: &B) -> Message {
        Message::carrying_to(from, Recipient::Agent(to), body)
    }

    /// [`Message::carrying`] to any recipient (a layer, everyone).
    pub fn carrying_to<B: Body>(from: AgentId, to: Recipient, body: &B) -> Message {
        Message::new(from, to, body.kind(), body.to_payload())
    }

    /// A reply to `self` carrying `body`.
    pub fn reply_carrying<B: Body>(&self, from: AgentId, body: &B) -> Message {
        self.reply(from, body.kind(), body.to_payload())
    }

    /// The body this message carries, read as a `B`: an error when its kind cannot
    /// carry one, or its payload is not one.
    pub fn body<B: Body>(&self) -> Result<B, BodyError> {
        if !B::carried_by(self.kind) {
            return Err(BodyError::Kind {
                wanted: B::NAME,
                found: self.kind,
            });
        }
        serde_json::from_value(self.payload.clone()).map_err(|e| BodyError::Shape {
            wanted: B::NAME,
            message: e.to_string(),
        })
    }
}

/// A typed message body.
pub trait Body: Serialize + DeserializeOwned {
    /// What it is, in errors ("a subtask assignment").
    const NAME: &'static str;

    /// The kinds of message that may carry it; it is sent as the first.
    const KINDS: &'static [MessageKind];

    /// The kind of message this body is sent as.
    fn kind(&self) -> MessageKind {
        Self::KINDS[0]
    }

    /// Whether a message of `kind` may carry this body.
    fn carried_by(kind: MessageKind) -> bool {
        Self::KINDS.contains(&kind)
    }

    fn to_payload(&self) -> serde_json::Value {
        // Bodies are plain data (no maps with non-string keys): serializing cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A message that did not carry the body its reader expected.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("{wanted} was expected, and a {} message came", found.as_str())]
    Kind {
        wanted: &'static str,
        found: MessageKind,
    },
    #[error("{wanted} could not be read: {message}")]
    Shape {
        wanted: &'static str,
        message: String,
    },
}

/// A request that a peer take over a failed subtask (`peer_help_request`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeerHelpRequest {
    pub task_id: crate::ids::TaskId,
    pub subtask_id: crate::ids::SubtaskId,
    /// Why the subtask failed.
    pub reason: String,
}

impl Body for PeerHelpRequest {
    const NAME: &'static str = "a peer help request";
    const KINDS: &'static [MessageKind] = &[MessageKind::PeerHelpRequest];
}

/// A peer's answer to a [`PeerHelpRequest`] (also the answer to a request an agent does
/// not handle, so its sender is never left to time out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeerHelpAnswer {
    pub accepted: bool,
    pub reason: String,
}

impl PeerHelpAnswer {
    pub fn declined(reason: impl Into<String>) -> Self {
        PeerHelpAnswer {
            accepted: false,
            reason: reason.into(),
        }
    }
}

impl Body for PeerHelpAnswer {
    const NAME: &'static str = "a peer's answer";
    const KINDS: &'static [MessageKind] = &[MessageKind::PeerHelpResponse];
}

/// The heartbeat every agent acknowledges (`heartbeat`, to all).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub beat: u64,
}

impl Body for Heartbeat {
    const NAME: &'static str = "a heartbeat";
    const KINDS: &'static [MessageKind] = &[MessageKind::Heartbeat];
}

/// Something an agent is told to note (`warning`), such as whom it replaces.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub message: String,
}

impl Body for Warning {
    const NAME: &'static str = "a warning";
    const KINDS: &'static [MessageKind] = &[MessageKind::Warning];
}

/// A decision a top agent is asked to sign (`signature_request`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureRequest {
    pub decision_id: Uuid,
    pub title: String,
}

impl Body for SignatureRequest {
    const NAME: &'static str = "a signature request";
    const KINDS: &'static [MessageKind] = &[MessageKind::SignatureRequest];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_comes_back_as_sent_and_the_wrong_kind_or_shape_is_said() {
        let from = AgentId::SYSTEM;
        let to = AgentId::new();
        let answer = PeerHelpAnswer::declined("busy");
        let message = Message::carrying(from, to, &answer);
        assert_eq!(message.kind, MessageKind::PeerHelpResponse);
        assert_eq!(
            message.payload["accepted"], false,
            "the wire shape is the body's JSON"
        );
        assert_eq!(message.body::<PeerHelpAnswer>().unwrap(), answer);

        let err = message.body::<PeerHelpRequest>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "a peer help request was expected, and a peer_help_response message came"
        );
        let garbled = Message::to_agent(
            from,
            to,
            MessageKind::PeerHelpResponse,
            serde_json::json!({ "accepted": "maybe" }),
        );
        assert!(
            garbled
                .body::<PeerHelpAnswer>()
                .unwrap_err()
                .to_string()
                .starts_with("a peer's answer could not be read: ")
        );
    }
}
