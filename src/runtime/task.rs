//! Running an agent: the behaviour trait that layer logic implements, the context it
//! works through, and the tokio task that wakes on each message.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::bus::{Bus, BusError};
use super::governance::Governance;
use super::handle::AgentHandle;
use super::mailbox::Mailbox;
use super::whiteboard::Whiteboards;
use crate::ids::AgentId;
use crate::records::{
    AgentError, AgentStatus, Body, Heartbeat, Message, MessageKind, Recipient, Snapshot,
    WhiteboardError, WhiteboardId,
};

/// What a layer does. The runtime handles heartbeats, status bookkeeping and shutdown;
/// a behaviour only reacts to messages.
#[async_trait]
pub trait AgentBehavior: Send + 'static {
    /// What this agent is responsible for, as written into its system prompt.
    fn responsibilities(&self) -> String;

    async fn initialize(&mut self, _ctx: &AgentContext) -> Result<(), AgentError> {
        Ok(())
    }

    /// Handles one message. Long work should be spawned, so the agent keeps answering
    /// heartbeats: an agent stuck in here for two beats is reported hung.
    async fn handle(&mut self, ctx: &AgentContext, message: Arc<Message>)
    -> Result<(), AgentError>;

    async fn shutdown(&mut self, _ctx: &AgentContext) -> Result<(), AgentError> {
        Ok(())
    }
}

/// Everything an agent works through. Cheap to clone into spawned work.
#[derive(Clone)]
pub struct AgentContext {
    pub handle: Arc<AgentHandle>,
    pub bus: Bus,
    pub whiteboards: Whiteboards,
    pub governance: Governance,
}

impl AgentContext {
    pub fn id(&self) -> AgentId {
        self.handle.id()
    }

    pub fn send(
        &self,
        to: AgentId,
        kind: MessageKind,
        payload: serde_json::Value,
    ) -> Result<usize, BusError> {
        self.bus
            .send(Message::to_agent(self.id(), to, kind, payload))
    }

    /// Sends `body` to many (a layer, everyone).
    pub fn broadcast_body<B: Body>(&self, to: Recipient, body: &B) -> Result<usize, BusError> {
        self.bus.send(Message::carrying_to(self.id(), to, body))
    }

    pub fn reply(
        &self,
        to: &Message,
        kind: MessageKind,
        payload: serde_json::Value,
    ) -> Result<usize, BusError> {
        self.bus.send(to.reply(self.id(), kind, payload))
    }

    /// Sends `body` to `to`, as the kind it travels as.
    pub fn send_body<B: Body>(&self, to: AgentId, body: &B) -> Result<usize, BusError> {
        self.bus.send(Message::carrying(self.id(), to, body))
    }

    /// Answers `to` with `body`.
    pub fn reply_body<B: Body>(&self, to: &Message, body: &B) -> Result<usize, BusError> {
        self.bus.send(to.reply_carrying(self.id(), body))
    }

    pub async fn request(
        &self,
        to: AgentId,
        kind: MessageKind,
        payload: serde_json::Value,
        timeout: Duration,
    ) -> Result<Arc<Message>, BusError> {
        self.bus
            .request(Message::to_agent(self.id(), to, kind, payload), timeout)
            .await
    }

    pub fn read_board(&self, id: WhiteboardId) -> Result<Snapshot, WhiteboardError> {
        self.whiteboards.read(&self.handle.accessor(), id)
    }

    pub fn write_own_board(&self, content: &str) -> Result<Snapshot, WhiteboardError> {
        self.whiteboards.replace(
            &self.handle.accessor(),
            WhiteboardId::Agent(self.id()),
            content,
        )
    }

    pub fn append_own_board(&self, text: &str) -> Result<Snapshot, WhiteboardError> {
        self.whiteboards.append(
            &self.handle.accessor(),
            WhiteboardId::Agent(self.id()),
            text,
        )
    }

    pub fn append_layer_board(&self, text: &str) -> Result<Snapshot, WhiteboardError> {
        self.whiteboards.append(
            &self.handle.accessor(),
            WhiteboardId::Layer(self.handle.layer()),
            text,
        )
    }

    pub fn append_global(&self, text: &str) -> Result<Snapshot, WhiteboardError> {
        self.whiteboards
            .append(&self.handle.accessor(), WhiteboardId::Global, text)
    }

    /// Starts the agent's own board with its name, role and `extra` — unless the board
    /// already has history (restored after a restart, or inherited by a replacement).
    pub fn write_intro_board(&self, extra: &str) -> Result<(), WhiteboardError> {
        let board = self.read_board(WhiteboardId::Agent(self.id()))?;
        if board.version > 0 {
            return Ok(());
        }
        let config = self.handle.config();
        self.write_own_board(&format!("# {}\n\n{}\n{extra}", config.name, config.role))?;
        Ok(())
    }

    /// The system prompt every layer's model calls start from.
    pub fn system_prompt(&self, responsibilities: &str) -> String {
        let config = self.handle.config();
        let capabilities: Vec<&str> = config.capabilities.iter().map(|c| c.as_str()).collect();
        format!(
            "You are {name}, a {layer}-layer agent in a team of coding agents.\n\
             Role: {role}\nCapabilities: {caps}\n\nResponsibilities:\n{responsibilities}",
            name = config.name,
            layer = config.layer,
            role = config.role,
            caps = capabilities.join(", "),
        )
    }
}

/// The body of an agent's tokio task: initialize, then handle messages as they arrive
/// until `stop` is cancelled or the mailbox closes, then shut down to `terminated`.
pub(crate) async fn run_agent(
    mut behavior: Box<dyn AgentBehavior>,
    ctx: AgentContext,
    mailbox: Arc<Mailbox>,
    stop: CancellationToken,
) {
    let handle = ctx.handle.clone();
    let started = match behavior.initialize(&ctx).await {
        Ok(()) => handle.transition(AgentStatus::Idle, "initialization complete"),
        Err(e) => handle.transition(AgentStatus::Failed, format!("initialization failed: {e}")),
    };
    if let Err(e) = started {
        tracing::error!(agent = %handle.id(), "{e}");
    }
    loop {
        let message = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            message = mailbox.recv() => match message {
                Some(message) => message,
                None => break,
            },
        };
        if message.kind == MessageKind::Heartbeat {
            // A beat that cannot be read is still a beat: acknowledged as beat 0.
            let beat = message.body::<Heartbeat>().map_or(0, |h| h.beat);
            handle.ack_heartbeat(beat);
            continue;
        }
        handle.update_metrics(|m| {
            m.messages_processed += 1;
            if message.kind == MessageKind::Warning {
                m.warnings_received += 1;
            }
            m.last_active_at = chrono::Utc::now();
        });
        if let Err(e) = behavior.handle(&ctx, message.clone()).await {
            tracing::warn!(agent = %handle.id(), kind = message.kind.as_str(), "message handling failed: {e}");
        }
    }
    shut_down(&mut *behavior, &ctx).await;
}

/// Walks the status to `terminated` through allowed steps, letting the behaviour clean up
/// on the way and closing the mailbox before the last step.
async fn shut_down(behavior: &mut dyn AgentBehavior, ctx: &AgentContext) {
    let handle = &ctx.handle;
    for &step in handle.status().path_to_terminated() {
        if step == AgentStatus::Terminated {
            if let Err(e) = behavior.shutdown(ctx).await {
                tracing::warn!(agent = %handle.id(), "shutdown hook failed: {e}");
            }
            let undelivered = ctx.bus.unregister(handle.id());
            if !undelivered.is_empty() {
                tracing::warn!(
                    agent = %handle.id(),
                    count = undelivered.len(),
                    "agent shut down with messages still queued; they stay in the audit log"
                );
            }
            let _ = handle.transition(step, "shutdown complete");
        } else {
            let _ = handle.transition(step, "shutdown requested");
        }
    }
}

/// Forces an agent whose task no longer runs (aborted or hung) to `terminated`.
pub(crate) fn force_terminated(handle: &AgentHandle, reason: &str) {
    for &step in handle.status().path_to_terminated() {
        let _ = handle.transition(step, reason);
    }
}
