//! The agent pool: creates agents (each a tokio task), bounded by `team.maxAgents`,
//! looks them up, and destroys them — gracefully, or by force when they hang.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::Utc;
use dashmap::DashMap;
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use super::bus::{Bus, BusError};
use super::events::EventBus;
use super::governance::Governance;
use super::handle::AgentHandle;
use super::journal::Journal;
use super::task::{AgentBehavior, AgentContext, force_terminated, run_agent};
use super::whiteboard::Whiteboards;
use crate::ids::AgentId;
use crate::records::{AgentConfig, AgentError, AgentStatus, Layer, WhiteboardId};
use crate::store::{Record, Store};

struct Entry {
    handle: Arc<AgentHandle>,
    stop: CancellationToken,
    task: AbortHandle,
}

struct PoolInner {
    agents: DashMap<AgentId, Entry>,
    /// Slots taken, including agents being created; never exceeds `max_agents`.
    occupied: AtomicUsize,
    max_agents: usize,
    bus: Bus,
    whiteboards: Whiteboards,
    governance: Governance,
    journal: Journal,
}

/// The pool, cheap to clone.
#[derive(Clone)]
pub struct AgentPool {
    inner: Arc<PoolInner>,
}

/// How long a graceful shutdown may take before the agent's task is aborted.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

impl AgentPool {
    pub fn new(
        max_agents: usize,
        bus: Bus,
        whiteboards: Whiteboards,
        governance: Governance,
        events: EventBus,
        store: Option<Store>,
    ) -> Self {
        AgentPool {
            inner: Arc::new(PoolInner {
                agents: DashMap::new(),
                occupied: AtomicUsize::new(0),
                max_agents,
                bus,
                whiteboards,
                governance,
                journal: Journal::new(events, store),
            }),
        }
    }

    pub fn max_agents(&self) -> usize {
        self.inner.max_agents
    }

    /// Agents in the pool (live or still shutting down).
    pub fn len(&self) -> usize {
        self.inner.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.agents.is_empty()
    }

    /// Free slots left under `max_agents`.
    pub fn free_slots(&self) -> usize {
        self.inner
            .max_agents
            .saturating_sub(self.inner.occupied.load(Ordering::Acquire))
    }

    /// Validates `config`, gives the agent a mailbox and a whiteboard, and starts its task.
    /// The agent reports `idle` once its behaviour has initialised.
    pub fn create(
        &self,
        config: AgentConfig,
        behavior: Box<dyn AgentBehavior>,
    ) -> Result<Arc<AgentHandle>, AgentError> {
        config.validate()?;
        let max = self.inner.max_agents;
        self.inner
            .occupied
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| AgentError::PoolFull { max })?;
        let id = config.id;
        let mailbox = match self.inner.bus.register(id, config.layer) {
            Ok(mailbox) => mailbox,
            Err(BusError::AlreadyRegistered(_)) => {
                self.inner.occupied.fetch_sub(1, Ordering::AcqRel);
                return Err(AgentError::InvalidConfig(format!(
                    "an agent with id {id} already exists"
                )));
            }
            Err(e) => {
                self.inner.occupied.fetch_sub(1, Ordering::AcqRel);
                return Err(AgentError::InvalidConfig(e.to_string()));
            }
        };
        self.inner.whiteboards.create(WhiteboardId::Agent(id));
        self.inner
            .journal
            .keep(Record::AgentCreated(Box::new(config.clone())));
        let handle = Arc::new(AgentHandle::new(
            config,
            self.inner.journal.events().clone(),
            self.inner.journal.store().cloned(),
        ));
        let ctx = AgentContext {
            handle: handle.clone(),
            bus: self.inner.bus.clone(),
            whiteboards: self.inner.whiteboards.clone(),
            governance: self.inner.governance.clone(),
        };
        let stop = CancellationToken::new();
        let pool = self.clone();
        let task_stop = stop.clone();
        // The task waits for the entry to be in the map, so its removal always finds it.
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            if gate.await.is_ok() {
                run_agent(behavior, ctx, mailbox, task_stop).await;
            }
            pool.release(id);
        });
        self.inner.agents.insert(
            id,
            Entry {
                handle: handle.clone(),
                stop,
                task: task.abort_handle(),
            },
        );
        let _ = go.send(());
        Ok(handle)
    }

    /// Shuts the agent down and waits until it is terminated and out of the pool. An
    /// agent that does not stop within a grace period (a hung one) is aborted and forced
    /// to `terminated`. Returns the messages that were still queued for it.
    pub async fn destroy(&self, id: AgentId) -> Result<(), AgentError> {
        let (handle, stop, task) = {
            let entry = self.inner.agents.get(&id).ok_or(AgentError::NotFound(id))?;
            (entry.handle.clone(), entry.stop.clone(), entry.task.clone())
        };
        stop.cancel();
        let stopped = tokio::time::timeout(
            SHUTDOWN_GRACE,
            handle.wait_for_status(|s| *s == AgentStatus::Terminated),
        )
        .await;
        if stopped.is_err() {
            tracing::warn!(agent = %id, "agent did not stop within {SHUTDOWN_GRACE:?}; aborting it");
            task.abort();
            self.inner.bus.unregister(id);
            force_terminated(&handle, "forced shutdown: the agent did not stop");
        }
        self.release(id);
        Ok(())
    }

    /// Removes a finished agent's entry and frees its slot (idempotent).
    fn release(&self, id: AgentId) {
        if self.inner.agents.remove(&id).is_some() {
            self.inner.occupied.fetch_sub(1, Ordering::AcqRel);
            self.inner.bus.unregister(id);
            self.inner.journal.keep(Record::AgentRemoved {
                agent: id,
                at: Utc::now(),
            });
        }
    }

    pub fn get(&self, id: AgentId) -> Option<Arc<AgentHandle>> {
        self.inner.agents.get(&id).map(|e| e.handle.clone())
    }

    /// Every agent, sorted by layer then name.
    pub fn all(&self) -> Vec<Arc<AgentHandle>> {
        let mut all: Vec<Arc<AgentHandle>> =
            self.inner.agents.iter().map(|e| e.handle.clone()).collect();
        all.sort_by_cached_key(|h| (h.layer(), h.name()));
        all
    }

    /// The agents of one layer, sorted by name (for the top layer that is seniority order).
    pub fn by_layer(&self, layer: Layer) -> Vec<Arc<AgentHandle>> {
        let mut agents: Vec<Arc<AgentHandle>> = self
            .inner
            .agents
            .iter()
            .filter(|e| e.handle.layer() == layer)
            .map(|e| e.handle.clone())
            .collect();
        agents.sort_by_cached_key(|h| h.name());
        agents
    }

    /// Calls `visit` for every agent without collecting them (the heartbeat hot path).
    pub fn for_each(&self, mut visit: impl FnMut(&Arc<AgentHandle>)) {
        for entry in self.inner.agents.iter() {
            visit(&entry.handle);
        }
    }

    /// Destroys every agent.
    pub async fn shutdown_all(&self) {
        let ids: Vec<AgentId> = self.inner.agents.iter().map(|e| *e.key()).collect();
        let pool = self.clone();
        let stops = ids.into_iter().map(|id| {
            let pool = pool.clone();
            async move {
                let _ = pool.destroy(id).await;
            }
        });
        futures_util::future::join_all(stops).await;
    }
}
