//! The runtime event stream: one broadcast of everything observable, which the LSP
//! server and the command line subscribe to.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::broadcast;

use crate::ids::{AgentId, TaskId};
use crate::records::{
    ApprovalChoice, ApprovalRequest, ArbitrationResult, Decision, Message, TaskRecord, Transition,
    WhiteboardId,
};
use crate::recovery::RecoveryEvent;

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum RuntimeEvent {
    AgentStatus(Transition),
    WhiteboardChanged {
        id: WhiteboardId,
        version: u64,
        content: Arc<str>,
        at: DateTime<Utc>,
    },
    Decision(Arc<Decision>),
    Arbitration(Arc<ArbitrationResult>),
    Message(Arc<Message>),
    /// The task as it now stands (front-ends show it as their wire's summary).
    TaskUpdated(Arc<TaskRecord>),
    Recovery(Arc<RecoveryEvent>),
    ApprovalRequested(Arc<ApprovalRequest>),
    /// An approval was answered (`decision`) or withdrawn (`None`).
    ApprovalResolved {
        #[serde(rename = "approvalId")]
        approval_id: uuid::Uuid,
        #[serde(rename = "taskId")]
        task_id: TaskId,
        decision: Option<ApprovalChoice>,
        /// Why it was withdrawn (set only when `decision` is `None`).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An agent missed `missed` heartbeats in a row; recovery replaces it.
    AgentHung {
        #[serde(rename = "agentId")]
        agent_id: AgentId,
        missed: u32,
        at: DateTime<Utc>,
    },
}

/// The sending side of the stream, cheap to clone. Publishing with no subscriber costs
/// one atomic load, so hot paths (the bus) publish unconditionally.
#[derive(Clone)]
pub struct EventBus {
    sender: broadcast::Sender<RuntimeEvent>,
    /// Live subscribers. broadcast's own `receiver_count` takes a lock shared by every
    /// publisher, which the bus's hot path cannot afford.
    subscribers: Arc<AtomicUsize>,
}

impl EventBus {
    /// `capacity` events are buffered per subscriber; a subscriber that falls further
    /// behind is told how many it missed (broadcast's `Lagged`).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity);
        EventBus {
            sender,
            subscribers: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn publish(&self, event: RuntimeEvent) {
        if self.subscribers.load(Ordering::Acquire) > 0 {
            // An error only means every subscriber left in the meantime.
            let _ = self.sender.send(event);
        }
    }

    /// Whether anyone listens: what nobody would receive need not be made.
    pub fn has_subscribers(&self) -> bool {
        self.subscribers.load(Ordering::Acquire) > 0
    }

    pub fn subscribe(&self) -> EventStream {
        self.subscribers.fetch_add(1, Ordering::AcqRel);
        EventStream {
            receiver: self.sender.subscribe(),
            subscribers: self.subscribers.clone(),
        }
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(4096)
    }
}

/// A subscription to the event stream; use it as a `broadcast::Receiver`.
pub struct EventStream {
    receiver: broadcast::Receiver<RuntimeEvent>,
    subscribers: Arc<AtomicUsize>,
}

impl Deref for EventStream {
    type Target = broadcast::Receiver<RuntimeEvent>;
    fn deref(&self) -> &Self::Target {
        &self.receiver
    }
}

impl DerefMut for EventStream {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.receiver
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::AcqRel);
    }
}
