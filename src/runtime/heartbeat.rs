//! Heartbeats: a liveness check, not the work loop. Every `heartbeatMs` the scheduler
//! settles the previous beat for each agent (acknowledged or missed), then sends the
//! next one at urgent priority. An agent that misses two beats in a row is reported
//! hung on the event stream, where recovery picks it up, and reported again every round
//! for as long as it stays hung (level-triggered: a watcher that missed one report gets
//! the next, and the agent's state can be read at any time,
//! [`super::AgentHandle::missed_heartbeats`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::Utc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::bus::Bus;
use super::events::{EventBus, RuntimeEvent};
use super::pool::AgentPool;
use crate::ids::AgentId;
use crate::records::{AgentStatus, Heartbeat, Message, Priority, Recipient};

/// Beats missed in a row after which an agent is reported hung.
pub const HUNG_AFTER_MISSED: u32 = 2;

/// What one round did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundReport {
    pub beat: u64,
    pub sent: usize,
    /// Agents that did not acknowledge the previous beat.
    pub missed: Vec<AgentId>,
    /// Agents at [`HUNG_AFTER_MISSED`] misses in a row or more.
    pub hung: Vec<AgentId>,
}

pub struct HeartbeatScheduler {
    pool: AgentPool,
    bus: Bus,
    events: EventBus,
    beat: AtomicU64,
}

impl HeartbeatScheduler {
    pub fn new(pool: AgentPool, bus: Bus, events: EventBus) -> Self {
        HeartbeatScheduler {
            pool,
            bus,
            events,
            beat: AtomicU64::new(0),
        }
    }

    /// One beat over every live agent: settle the previous beat for each, then send one
    /// shared heartbeat message to all of them.
    pub fn round(&self) -> RoundReport {
        let beat = self.beat.fetch_add(1, Ordering::AcqRel) + 1;
        let mut report = RoundReport {
            beat,
            ..RoundReport::default()
        };
        self.pool.for_each(|agent| {
            if matches!(
                agent.status(),
                AgentStatus::Initializing | AgentStatus::ShuttingDown | AgentStatus::Terminated
            ) {
                return;
            }
            let missed = agent.settle_heartbeat(beat);
            if missed > 0 {
                report.missed.push(agent.id());
            }
            if missed >= HUNG_AFTER_MISSED {
                report.hung.push(agent.id());
                if missed == HUNG_AFTER_MISSED {
                    tracing::warn!(agent = %agent.id(), "missed {missed} heartbeats in a row: hung");
                }
                self.events.publish(RuntimeEvent::AgentHung {
                    agent_id: agent.id(),
                    missed,
                    at: Utc::now(),
                });
            }
        });
        // One message shared by every mailbox: one allocation and one audit row per beat.
        let message = Message::carrying_to(AgentId::SYSTEM, Recipient::All, &Heartbeat { beat })
            .with_priority(Priority::Urgent);
        report.sent = self.bus.send(message).unwrap_or(0);
        report
    }

    /// Beats every `interval` until `stop` is cancelled. The first beat goes out one
    /// interval after the start, so new agents have time to initialise.
    pub fn spawn(self, interval: Duration, stop: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move {
            let mut ticks =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = ticks.tick() => { self.round(); }
                }
            }
        })
    }
}
