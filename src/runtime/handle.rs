//! The shared, observable state of one live agent: its config, status, metrics and
//! heartbeat bookkeeping. The agent's own task and everyone watching it hold the same
//! `Arc<AgentHandle>`.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};

use chrono::Utc;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::events::EventBus;
use super::journal::Journal;
use super::whiteboard::Accessor;
use crate::ids::AgentId;
use crate::records::{
    AgentConfig, AgentError, AgentMetrics, AgentStatus, Body, Layer, MessageKind, Transition,
};
use crate::store::{Record, Store};

pub struct AgentHandle {
    id: AgentId,
    layer: Layer,
    config: RwLock<AgentConfig>,
    status: watch::Sender<AgentStatus>,
    metrics: Mutex<AgentMetrics>,
    current_task: Mutex<Option<String>>,
    /// The newest heartbeat number this agent acknowledged.
    last_acked_beat: AtomicU64,
    /// The newest heartbeat number sent to it (0: none yet).
    last_beat_sent: AtomicU64,
    missed_in_row: AtomicU32,
    journal: Journal,
}

/// What the editor sees of an agent (docs/protocol.md, `AgentInfo`), and an agent's
/// answer to a `status_query`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub agent_id: AgentId,
    pub name: String,
    pub layer: Layer,
    pub role: String,
    pub status: AgentStatus,
    pub supervisor: Option<AgentId>,
    pub subordinates: Vec<AgentId>,
    pub current_task_id: Option<String>,
    pub metrics: AgentMetrics,
}

impl Body for AgentInfo {
    const NAME: &'static str = "an agent's status";
    const KINDS: &'static [MessageKind] = &[MessageKind::ProgressReport];
}

impl AgentHandle {
    pub fn new(config: AgentConfig, events: EventBus, store: Option<Store>) -> Self {
        let (status, _) = watch::channel(AgentStatus::Initializing);
        AgentHandle {
            id: config.id,
            layer: config.layer,
            config: RwLock::new(config),
            status,
            metrics: Mutex::new(AgentMetrics::default()),
            current_task: Mutex::new(None),
            last_acked_beat: AtomicU64::new(0),
            last_beat_sent: AtomicU64::new(0),
            missed_in_row: AtomicU32::new(0),
            journal: Journal::new(events, store),
        }
    }

    pub fn id(&self) -> AgentId {
        self.id
    }

    pub fn layer(&self) -> Layer {
        self.layer
    }

    pub fn config(&self) -> AgentConfig {
        self.config.read().expect("config lock").clone()
    }

    pub fn name(&self) -> String {
        self.config.read().expect("config lock").name.clone()
    }

    /// Changes the wiring (supervisor, subordinates) of a live agent.
    pub fn update_config(&self, edit: impl FnOnce(&mut AgentConfig)) {
        let mut config = self.config.write().expect("config lock");
        edit(&mut config);
        self.journal
            .keep(Record::AgentCreated(Box::new(config.clone())));
    }

    pub fn status(&self) -> AgentStatus {
        *self.status.borrow()
    }

    /// Moves to `to` if the transition table allows it from the current status, then
    /// records and publishes the change. Checking and changing happen under one lock.
    pub fn transition(
        &self,
        to: AgentStatus,
        reason: impl Into<String>,
    ) -> Result<Transition, AgentError> {
        let mut from = AgentStatus::Initializing;
        let mut allowed = false;
        self.status.send_if_modified(|status| {
            from = *status;
            allowed = status.can_transition_to(to);
            if allowed {
                *status = to;
            }
            allowed
        });
        if !allowed {
            return Err(AgentError::InvalidTransition {
                agent: self.id,
                from,
                to,
            });
        }
        let transition = Transition {
            agent_id: self.id,
            from,
            to,
            reason: reason.into(),
            at: Utc::now(),
        };
        tracing::debug!(agent = %self.id, %from, %to, reason = %transition.reason, "agent status");
        self.journal.keep(Record::Transition(transition.clone()));
        Ok(transition)
    }

    /// Waits until the status satisfies `done` and returns it.
    pub async fn wait_for_status(&self, done: impl FnMut(&AgentStatus) -> bool) -> AgentStatus {
        let mut watcher = self.status.subscribe();
        // The sender lives in `self`, so the wait cannot fail while we borrow it.
        watcher
            .wait_for(done)
            .await
            .map(|s| *s)
            .unwrap_or(AgentStatus::Terminated)
    }

    /// The metrics with a freshly computed performance score.
    pub fn metrics(&self) -> AgentMetrics {
        let mut metrics = self.metrics.lock().expect("metrics lock").clone();
        metrics.refresh_score();
        metrics
    }

    pub fn update_metrics<T>(&self, edit: impl FnOnce(&mut AgentMetrics) -> T) -> T {
        edit(&mut self.metrics.lock().expect("metrics lock"))
    }

    pub fn current_task(&self) -> Option<String> {
        self.current_task.lock().expect("task lock").clone()
    }

    pub fn set_current_task(&self, task: Option<String>) {
        *self.current_task.lock().expect("task lock") = task;
    }

    /// How the whiteboards see this agent.
    pub fn accessor(&self) -> Accessor {
        Accessor::Agent {
            id: self.id,
            layer: self.layer,
            subordinates: self
                .config
                .read()
                .expect("config lock")
                .subordinates
                .clone(),
        }
    }

    pub fn info(&self) -> AgentInfo {
        let config = self.config();
        AgentInfo {
            agent_id: self.id,
            name: config.name,
            layer: config.layer,
            role: config.role,
            status: self.status(),
            supervisor: config.supervisor,
            subordinates: config.subordinates,
            current_task_id: self.current_task(),
            metrics: self.metrics(),
        }
    }

    /// Called by the agent's own task when it takes heartbeat `beat` from its mailbox.
    pub(crate) fn ack_heartbeat(&self, beat: u64) {
        self.last_acked_beat.fetch_max(beat, Ordering::AcqRel);
        self.update_metrics(|m| {
            m.record_heartbeat(true);
            m.last_active_at = Utc::now();
        });
    }

    /// Called by the scheduler before it sends `beat`: settles the previous beat and
    /// returns how many beats in a row this agent has now missed.
    pub(crate) fn settle_heartbeat(&self, beat: u64) -> u32 {
        let previous = self.last_beat_sent.swap(beat, Ordering::AcqRel);
        if previous == 0 {
            return 0;
        }
        if self.last_acked_beat.load(Ordering::Acquire) >= previous {
            self.missed_in_row.store(0, Ordering::Release);
            0
        } else {
            self.update_metrics(|m| m.record_heartbeat(false));
            self.missed_in_row.fetch_add(1, Ordering::AcqRel) + 1
        }
    }

    /// Heartbeats missed in a row right now (0 once the agent answers again).
    pub fn missed_heartbeats(&self) -> u32 {
        self.missed_in_row.load(Ordering::Acquire)
    }

    pub fn last_acked_beat(&self) -> u64 {
        self.last_acked_beat.load(Ordering::Acquire)
    }
}
