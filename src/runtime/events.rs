//! The runtime event stream: one broadcast of everything observable, which the LSP
//! server and the command line subscribe to.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::broadcast;

use super::agent::{AgentId, Transition};
use super::governance::{ArbitrationResult, Decision};
use super::message::Message;
use super::whiteboard::WhiteboardId;

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
    /// An agent missed `missed` heartbeats in a row; recovery replaces it.
    AgentHung {
        #[serde(rename = "agentId")]
        agent_id: AgentId,
        missed: u32,
        at: DateTime<Utc>,
    },
}

/// The sending side of the stream, cheap to clone. Publishing with no subscriber costs
/// next to nothing, so hot paths (the bus) publish unconditionally.
#[derive(Clone)]
pub struct EventBus {
    sender: broadcast::Sender<RuntimeEvent>,
}

impl EventBus {
    /// `capacity` events are buffered per subscriber; a subscriber that falls further
    /// behind is told how many it missed (broadcast's `Lagged`).
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity);
        EventBus { sender }
    }

    pub fn publish(&self, event: RuntimeEvent) {
        if self.sender.receiver_count() > 0 {
            // An error only means every subscriber left in the meantime.
            let _ = self.sender.send(event);
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<RuntimeEvent> {
        self.sender.subscribe()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        EventBus::new(4096)
    }
}
