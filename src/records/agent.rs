//! The agent model: identity, configuration, the status state machine, capabilities
//! and metrics, as the store records them. Nothing here runs: the runtime runs agents
//! (`runtime::task`) and its pool owns them (`runtime::pool`).

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::ids::AgentId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Top,
    Mid,
    Bottom,
}

impl Layer {
    pub const ALL: [Layer; 3] = [Layer::Top, Layer::Mid, Layer::Bottom];

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Top => "top",
            Layer::Mid => "mid",
            Layer::Bottom => "bottom",
        }
    }

    /// The capabilities an agent of this layer may hold.
    pub fn capabilities(self) -> &'static [Capability] {
        use Capability::*;
        match self {
            Layer::Top => &[Plan, Reflect, Review, Arbitrate],
            Layer::Mid => &[Plan, Reflect, Review, Coordinate, Delegate],
            Layer::Bottom => &[Plan, Reflect, Execute, ToolCall, CodeGen, TestExec],
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "top" => Ok(Layer::Top),
            "mid" => Ok(Layer::Mid),
            "bottom" => Ok(Layer::Bottom),
            other => Err(format!(
                "unknown layer `{other}` (expected top, mid or bottom)"
            )),
        }
    }
}

/// What an agent can be asked to do. Which layer may hold which is fixed by
/// [`Layer::capabilities`], the capability registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    Plan,
    Execute,
    Reflect,
    ToolCall,
    CodeGen,
    TestExec,
    Review,
    Coordinate,
    Delegate,
    Arbitrate,
}

impl Capability {
    pub fn as_str(self) -> &'static str {
        use Capability::*;
        match self {
            Plan => "plan",
            Execute => "execute",
            Reflect => "reflect",
            ToolCall => "tool_call",
            CodeGen => "code_gen",
            TestExec => "test_exec",
            Review => "review",
            Coordinate => "coordinate",
            Delegate => "delegate",
            Arbitrate => "arbitrate",
        }
    }
}

/// The status of an agent. Changes only through [`AgentStatus::check_transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    Initializing,
    Idle,
    Working,
    WaitingApproval,
    Blocked,
    Failed,
    ShuttingDown,
    Terminated,
}

impl AgentStatus {
    pub const ALL: [AgentStatus; 8] = [
        AgentStatus::Initializing,
        AgentStatus::Idle,
        AgentStatus::Working,
        AgentStatus::WaitingApproval,
        AgentStatus::Blocked,
        AgentStatus::Failed,
        AgentStatus::ShuttingDown,
        AgentStatus::Terminated,
    ];

    /// The transition table: the statuses reachable in one step from `self`.
    pub fn successors(self) -> &'static [AgentStatus] {
        use AgentStatus::*;
        match self {
            Initializing => &[Idle, Failed],
            // Between attempts a subtask's agent is idle; it waits for its provider
            // (blocked), for a person (waiting_approval) or has run out of retries
            // (failed, until it is replaced).
            Idle => &[Working, WaitingApproval, Blocked, Failed, ShuttingDown],
            Working => &[Idle, Blocked, Failed, WaitingApproval],
            WaitingApproval => &[Working, Idle, Blocked],
            Blocked => &[Working, Idle, Failed],
            Failed => &[Working, Terminated],
            ShuttingDown => &[Terminated],
            Terminated => &[],
        }
    }

    pub fn can_transition_to(self, to: AgentStatus) -> bool {
        self.successors().contains(&to)
    }

    pub fn as_str(self) -> &'static str {
        use AgentStatus::*;
        match self {
            Initializing => "initializing",
            Idle => "idle",
            Working => "working",
            WaitingApproval => "waiting_approval",
            Blocked => "blocked",
            Failed => "failed",
            ShuttingDown => "shutting_down",
            Terminated => "terminated",
        }
    }

    /// The statuses an agent passes through to end in `Terminated` from `self`, shortest
    /// path through the table (e.g. working → idle → shutting_down → terminated).
    pub fn path_to_terminated(self) -> &'static [AgentStatus] {
        use AgentStatus::*;
        match self {
            Initializing => &[Failed, Terminated],
            Idle => &[ShuttingDown, Terminated],
            Working | WaitingApproval => &[Idle, ShuttingDown, Terminated],
            Blocked => &[Idle, ShuttingDown, Terminated],
            Failed => &[Terminated],
            ShuttingDown => &[Terminated],
            Terminated => &[],
        }
    }
}

impl fmt::Display for AgentStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recorded status change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub agent_id: AgentId,
    pub from: AgentStatus,
    pub to: AgentStatus,
    pub reason: String,
    pub at: DateTime<Utc>,
}

/// The top layer's three powers, in seniority order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerType {
    PowerA,
    PowerB,
    PowerC,
}

impl PowerType {
    pub fn for_index(i: usize) -> PowerType {
        [PowerType::PowerA, PowerType::PowerB, PowerType::PowerC][i % 3]
    }
}

/// A top agent's standing in votes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopPower {
    pub power_type: PowerType,
    pub vote_weight: f64,
    /// 0 is the most senior; breaks ties in arbitration.
    pub seniority: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSettings {
    pub model: Option<String>,
    pub temperature: Option<f32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentConfig {
    pub id: AgentId,
    pub name: String,
    pub layer: Layer,
    pub role: String,
    pub supervisor: Option<AgentId>,
    pub subordinates: Vec<AgentId>,
    pub capabilities: Vec<Capability>,
    pub model: ModelSettings,
    pub max_retries: u32,
    pub timeout_ms: u64,
    /// Set for top agents only.
    pub power: Option<TopPower>,
}

impl AgentConfig {
    /// A config with the layer's full capability set and the design's defaults
    /// (3 retries, 5 minute timeout).
    pub fn new(name: impl Into<String>, layer: Layer, role: impl Into<String>) -> Self {
        AgentConfig {
            id: AgentId::new(),
            name: name.into(),
            layer,
            role: role.into(),
            supervisor: None,
            subordinates: Vec::new(),
            capabilities: layer.capabilities().to_vec(),
            model: ModelSettings::default(),
            max_retries: 3,
            timeout_ms: 300_000,
            power: None,
        }
    }

    /// Refuses capabilities outside the agent's layer and powers on non-top agents.
    pub fn validate(&self) -> Result<(), AgentError> {
        if let Some(capability) = self
            .capabilities
            .iter()
            .find(|c| !self.layer.capabilities().contains(c))
        {
            return Err(AgentError::CapabilityNotAllowed {
                agent: self.name.clone(),
                layer: self.layer,
                capability: *capability,
            });
        }
        if self.power.is_some() && self.layer != Layer::Top {
            return Err(AgentError::InvalidConfig(format!(
                "{} is a {} agent; only top agents hold a power and a vote weight",
                self.name, self.layer
            )));
        }
        Ok(())
    }

    pub fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }
}

/// An agent's counters, and the performance score derived from them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentMetrics {
    pub tasks_completed: u64,
    pub tasks_failed: u64,
    pub average_task_duration_ms: f64,
    pub messages_processed: u64,
    pub heartbeats_responded: u64,
    pub heartbeats_missed: u64,
    pub warnings_received: u64,
    pub last_active_at: DateTime<Utc>,
    pub performance_score: f64,
}

impl Default for AgentMetrics {
    fn default() -> Self {
        AgentMetrics {
            tasks_completed: 0,
            tasks_failed: 0,
            average_task_duration_ms: 0.0,
            messages_processed: 0,
            heartbeats_responded: 0,
            heartbeats_missed: 0,
            warnings_received: 0,
            last_active_at: Utc::now(),
            performance_score: 100.0,
        }
    }
}

impl AgentMetrics {
    /// Counts a finished task and folds its duration into the running average.
    pub fn record_task(&mut self, succeeded: bool, duration: Duration) {
        let finished_before = (self.tasks_completed + self.tasks_failed) as f64;
        if succeeded {
            self.tasks_completed += 1;
        } else {
            self.tasks_failed += 1;
        }
        let ms = duration.as_secs_f64() * 1000.0;
        self.average_task_duration_ms =
            (self.average_task_duration_ms * finished_before + ms) / (finished_before + 1.0);
        self.last_active_at = Utc::now();
        self.refresh_score();
    }

    pub fn record_heartbeat(&mut self, responded: bool) {
        if responded {
            self.heartbeats_responded += 1;
        } else {
            self.heartbeats_missed += 1;
        }
        self.refresh_score();
    }

    /// 40 × success rate + 30 × responsiveness + 30 × heartbeat reliability, where
    /// responsiveness is `1 − min(average task duration / 60 s, 1)`. Rates with nothing
    /// to count yet are 1.
    pub fn score(&self) -> f64 {
        let tasks = self.tasks_completed + self.tasks_failed;
        let success_rate = if tasks == 0 {
            1.0
        } else {
            self.tasks_completed as f64 / tasks as f64
        };
        let responsiveness = 1.0 - (self.average_task_duration_ms / 60_000.0).min(1.0);
        let beats = self.heartbeats_responded + self.heartbeats_missed;
        let reliability = if beats == 0 {
            1.0
        } else {
            self.heartbeats_responded as f64 / beats as f64
        };
        40.0 * success_rate + 30.0 * responsiveness + 30.0 * reliability
    }

    pub fn refresh_score(&mut self) {
        self.performance_score = self.score();
    }
}

/// Errors of the agent model and its lifecycle.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AgentError {
    #[error("agent {agent} cannot go from {from} to {to}")]
    InvalidTransition {
        agent: AgentId,
        from: AgentStatus,
        to: AgentStatus,
    },
    #[error("{agent} is a {layer} agent and may not hold the `{capability:?}` capability")]
    CapabilityNotAllowed {
        agent: String,
        layer: Layer,
        capability: Capability,
    },
    #[error("invalid agent configuration: {0}")]
    InvalidConfig(String),
    #[error("agent {0} is not in the pool")]
    NotFound(AgentId),
    #[error("the team cannot grow past {max} agents (team.maxAgents)")]
    PoolFull { max: usize },
    #[error("agent {agent} failed: {message}")]
    Behavior { agent: AgentId, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_weights_success_responsiveness_and_reliability() {
        let mut m = AgentMetrics::default();
        assert_eq!(m.score(), 100.0);
        m.record_task(true, Duration::from_secs(30));
        m.record_task(false, Duration::from_secs(30));
        m.record_heartbeat(true);
        m.record_heartbeat(true);
        m.record_heartbeat(true);
        m.record_heartbeat(false);
        // 40 × 0.5 + 30 × (1 − 30/60) + 30 × 0.75
        assert!((m.performance_score - (20.0 + 15.0 + 22.5)).abs() < 1e-9);
        assert_eq!(m.average_task_duration_ms, 30_000.0);
    }

    #[test]
    fn slow_tasks_floor_responsiveness_at_zero() {
        let mut m = AgentMetrics::default();
        m.record_task(true, Duration::from_secs(600));
        assert!((m.score() - 70.0).abs() < 1e-9);
    }

    #[test]
    fn capabilities_outside_the_layer_are_refused() {
        let mut config = AgentConfig::new("mid-1", Layer::Mid, "planner");
        assert!(config.validate().is_ok());
        config.capabilities.push(Capability::Execute);
        assert!(matches!(
            config.validate(),
            Err(AgentError::CapabilityNotAllowed {
                capability: Capability::Execute,
                ..
            })
        ));
        let mut top = AgentConfig::new("top-1", Layer::Top, "power");
        top.capabilities = vec![Capability::Arbitrate, Capability::Review];
        assert!(top.validate().is_ok());
        top.capabilities.push(Capability::CodeGen);
        assert!(top.validate().is_err());
    }

    #[test]
    fn the_capability_registry_matches_the_design() {
        use Capability::*;
        for layer in Layer::ALL {
            assert!(layer.capabilities().contains(&Plan));
            assert!(layer.capabilities().contains(&Reflect));
        }
        for c in [Execute, ToolCall, CodeGen, TestExec] {
            assert!(Layer::Bottom.capabilities().contains(&c));
            assert!(!Layer::Mid.capabilities().contains(&c));
            assert!(!Layer::Top.capabilities().contains(&c));
        }
        assert!(Layer::Mid.capabilities().contains(&Review));
        assert!(Layer::Top.capabilities().contains(&Review));
        assert!(!Layer::Bottom.capabilities().contains(&Review));
        for c in [Coordinate, Delegate] {
            assert!(Layer::Mid.capabilities().contains(&c));
            assert!(!Layer::Top.capabilities().contains(&c));
        }
        assert!(Layer::Top.capabilities().contains(&Arbitrate));
        assert!(!Layer::Mid.capabilities().contains(&Arbitrate));
    }

    #[test]
    fn every_status_reaches_terminated_through_allowed_steps() {
        for status in AgentStatus::ALL {
            let mut at = status;
            for &next in status.path_to_terminated() {
                assert!(at.can_transition_to(next), "{at} -> {next}");
                at = next;
            }
            assert_eq!(at, AgentStatus::Terminated);
        }
    }
}
