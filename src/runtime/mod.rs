//! The runtime core: agents and their lifecycle, the message bus, whiteboards,
//! governance, heartbeats and the pool — assembled by [`Runtime`].
//!
//! Data flows one way: a front-end (LSP server, command line) calls into the runtime and
//! subscribes to its [`EventBus`]; agents talk to each other only through the [`Bus`];
//! everything observable is also written to the [`Store`].

mod approvals;
mod behaviors;
mod bus;
mod events;
mod governance;
mod handle;
mod heartbeat;
mod journal;
mod mailbox;
mod pool;
mod task;
mod tasks;
mod team;
pub mod usage;
mod whiteboard;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use crate::ids::{AgentId, SubtaskId, TaskId};
/// The records the runtime keeps (and the store persists) live below the store.
pub use crate::records::{
    AgentConfig, AgentError, AgentMetrics, AgentStatus, ApprovalAnswer, ApprovalChoice,
    ApprovalKind, ApprovalOption, ApprovalRequest, ArbitrationResult, Body, BodyError, Capability,
    CheckCounts, CheckResult, CheckStatus, Decision, DecisionStatus, Evidence, FileDiff,
    FinalReport, Heartbeat, KeptFile, Layer, Message, MessageKind, ModelSettings, Operation,
    OversightTally, PeerHelpAnswer, PeerHelpRequest, PowerType, Priority, Quorum, Recipient,
    Reverted, RevertedBy, Signature, SignatureRequest, Signer, Snapshot, Subtask, SubtaskStatus,
    TaskContext, TaskError, TaskOptions, TaskRecord, TaskStatus, TopPower, Transition, Veto, Vote,
    Warning, WhiteboardError, WhiteboardId,
};
pub use approvals::{ApprovalError, Approvals, Escalation, TimeLimitReached};
pub use behaviors::CoreBehavior;
pub use bus::{Bus, BusError};
pub use events::{EventBus, EventStream, RuntimeEvent};
pub use governance::{Conflict, Governance, GovernanceError, Proposal, Voter, tally};
pub use handle::{AgentHandle, AgentInfo};
pub use heartbeat::{HUNG_AFTER_MISSED, HeartbeatScheduler, RoundReport};
pub use journal::{Journal, events_of};
pub use mailbox::Mailbox;
pub use pool::AgentPool;
pub use task::{AgentBehavior, AgentContext};
pub use tasks::Tasks;
pub use team::{Team, build_team, fits, plan_team, restore_team, voters};
pub use whiteboard::{Accessor, Whiteboards};

use crate::config::Config;
use crate::store::Store;

tokio::task_local! {
    /// The subtask attempt the current tokio task works on (set by bottom agents around
    /// the executor), so what happens deep in a call (a retry, a write to a file) is
    /// attributed to it.
    pub static WORK: (TaskId, SubtaskId, AgentId);
}

/// Everything the agents live in, wired together. Must be created inside a tokio runtime.
pub struct Runtime {
    pub config: Config,
    pub events: EventBus,
    pub bus: Bus,
    pub whiteboards: Whiteboards,
    pub governance: Governance,
    pub pool: AgentPool,
    pub store: Option<Store>,
    stop: CancellationToken,
    heartbeats: Mutex<Option<JoinHandle<()>>>,
}

impl Runtime {
    /// Where facts are kept and told ([`Journal`]).
    pub fn journal(&self) -> Journal {
        Journal::new(self.events.clone(), self.store.clone())
    }

    pub fn new(config: Config, store: Option<Store>) -> Arc<Runtime> {
        Runtime::with_events(config, store, EventBus::default())
    }

    /// A runtime publishing on `events`, which the caller may have subscribed to already
    /// so as to see the team come up.
    pub fn with_events(config: Config, store: Option<Store>, events: EventBus) -> Arc<Runtime> {
        let bus = Bus::new(events.clone(), store.clone());
        let whiteboards = Whiteboards::new(events.clone(), store.clone());
        let governance = Governance::new(
            bus.clone(),
            whiteboards.clone(),
            events.clone(),
            store.clone(),
        );
        let pool = AgentPool::new(
            config.team.max_agents,
            bus.clone(),
            whiteboards.clone(),
            governance.clone(),
            events.clone(),
            store.clone(),
        );
        Arc::new(Runtime {
            config,
            events,
            bus,
            whiteboards,
            governance,
            pool,
            store,
            stop: CancellationToken::new(),
            heartbeats: Mutex::new(None),
        })
    }

    /// Starts beating every `heartbeatMs` (idempotent).
    pub fn start_heartbeats(&self) {
        let mut slot = self.heartbeats.lock().expect("heartbeat lock");
        if slot.is_none() {
            let scheduler =
                HeartbeatScheduler::new(self.pool.clone(), self.bus.clone(), self.events.clone());
            let interval = Duration::from_millis(self.config.heartbeat_ms.max(1));
            *slot = Some(scheduler.spawn(interval, self.stop.child_token()));
        }
    }

    /// Builds the configured team into the pool.
    pub fn build_team(
        &self,
        behavior_for: impl FnMut(&AgentConfig) -> Box<dyn AgentBehavior>,
    ) -> Result<Team, AgentError> {
        build_team(
            &self.pool,
            &self.config.team,
            &self.config.llm,
            behavior_for,
        )
    }

    /// Every agent as the editor sees it.
    pub fn agents(&self) -> Vec<AgentInfo> {
        self.pool.all().iter().map(|a| a.info()).collect()
    }

    /// Stops the heartbeats, shuts every agent down and waits for the store to catch up.
    pub async fn shutdown(&self) {
        self.stop_agents().await;
        self.flush_store().await;
    }

    /// The first half of [`Runtime::shutdown`]: heartbeats and agents stop, so nothing
    /// changes any more; what the owner still has to keep goes in before
    /// [`Runtime::flush_store`].
    pub async fn stop_agents(&self) {
        self.stop.cancel();
        let beats = self.heartbeats.lock().expect("heartbeat lock").take();
        if let Some(beats) = beats {
            let _ = beats.await;
        }
        self.pool.shutdown_all().await;
    }

    /// The second half of [`Runtime::shutdown`]: everything kept so far is on disk.
    pub async fn flush_store(&self) {
        if let Some(store) = &self.store
            && let Err(e) = store.flush().await
        {
            tracing::error!("the store could not be flushed at shutdown: {e}");
        }
    }
}
