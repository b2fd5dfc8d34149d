//! The default team: `team.top` top agents (powers and vote weights, in seniority
//! order), `team.mid` mid agents each supervised by a top agent, and `team.bottomPerMid`
//! bottom agents under each mid, wired both ways.

use super::governance::Voter;
use super::pool::AgentPool;
use super::task::AgentBehavior;
use crate::config::{LlmConfig, TeamConfig, TeamLayer};
use crate::ids::AgentId;
use crate::records::{AgentConfig, AgentError, Layer, ModelSettings, PowerType, TopPower};

/// The ids of a built team, each layer in order (top agents in seniority order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Team {
    pub top: Vec<AgentId>,
    pub mid: Vec<AgentId>,
    pub bottom: Vec<AgentId>,
}

impl Team {
    pub fn len(&self) -> usize {
        self.top.len() + self.mid.len() + self.bottom.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The configs of the whole team, wired but not started. Pure, so it can be checked
/// against the pool's limit before any agent exists.
pub fn plan_team(team: &TeamConfig, llm: &LlmConfig) -> Vec<AgentConfig> {
    let mut configs = Vec::new();
    let mut tops = Vec::new();
    for i in 0..team.top {
        let power = PowerType::for_index(i);
        let mut config = AgentConfig::new(
            format!("top-{}", i + 1),
            Layer::Top,
            match power {
                PowerType::PowerA => "Strategic authority: approves plans and gives final sign-off",
                PowerType::PowerB => "Quality authority: reviews plans for risk and correctness",
                PowerType::PowerC => "Resource authority: weighs cost, scope and priorities",
            },
        );
        config.power = Some(TopPower {
            power_type: power,
            vote_weight: team.vote_weights.get(i).copied().unwrap_or(1.0),
            seniority: i,
        });
        tops.push(configs.len());
        configs.push(config);
    }
    for m in 0..team.mid {
        let mut mid = AgentConfig::new(
            format!("mid-{}", m + 1),
            Layer::Mid,
            "Coordinator: splits tasks into subtasks, assigns and supervises bottom agents",
        );
        if !tops.is_empty() {
            let top = tops[m % tops.len()];
            mid.supervisor = Some(configs[top].id);
            let mid_id = mid.id;
            configs[top].subordinates.push(mid_id);
        }
        let mid_index = configs.len();
        configs.push(mid);
        for b in 0..team.bottom_per_mid {
            let mut bottom = AgentConfig::new(
                format!("bottom-{}-{}", m + 1, b + 1),
                Layer::Bottom,
                "Coder: implements subtasks with tools and tests its work",
            );
            bottom.supervisor = Some(configs[mid_index].id);
            configs[mid_index].subordinates.push(bottom.id);
            configs.push(bottom);
        }
    }
    for config in &mut configs {
        apply_layer_settings(config, llm);
    }
    configs
}

/// The model and the limits `config`'s layer has (`[llm.<layer>]` over `[llm]`), as the
/// agent's own: what `conclave/listAgents` and its whiteboard say it runs on.
fn apply_layer_settings(config: &mut AgentConfig, llm: &LlmConfig) {
    let layer = match config.layer {
        Layer::Top => TeamLayer::Top,
        Layer::Mid => TeamLayer::Mid,
        Layer::Bottom => TeamLayer::Bottom,
    };
    let own = llm.for_layer(layer);
    config.model = ModelSettings {
        model: own
            .model
            .clone()
            .or_else(|| own.provider.map(|_| own.model_name())),
        temperature: own.temperature,
    };
    if let Some(retries) = own.max_retries {
        config.max_retries = retries;
    }
    if let Some(timeout) = own.timeout_ms {
        config.timeout_ms = timeout;
    }
}

/// Builds the team into `pool`, giving each agent the behaviour `behavior_for` makes for
/// it. Refuses with PoolFull, before creating anyone, when the team would not fit.
pub fn build_team(
    pool: &AgentPool,
    team: &TeamConfig,
    llm: &LlmConfig,
    mut behavior_for: impl FnMut(&AgentConfig) -> Box<dyn AgentBehavior>,
) -> Result<Team, AgentError> {
    let configs = plan_team(team, llm);
    if configs.len() > pool.free_slots() {
        return Err(AgentError::PoolFull {
            max: pool.max_agents(),
        });
    }
    let mut built = Team::default();
    for config in configs {
        let behavior = behavior_for(&config);
        let (id, layer) = (config.id, config.layer);
        pool.create(config, behavior)?;
        match layer {
            Layer::Top => built.top.push(id),
            Layer::Mid => built.mid.push(id),
            Layer::Bottom => built.bottom.push(id),
        }
    }
    Ok(built)
}

/// Brings back a team from saved configs (same ids, same wiring), in the saved order.
pub fn restore_team(
    pool: &AgentPool,
    configs: Vec<AgentConfig>,
    mut behavior_for: impl FnMut(&AgentConfig) -> Box<dyn AgentBehavior>,
) -> Result<Team, AgentError> {
    if configs.len() > pool.free_slots() {
        return Err(AgentError::PoolFull {
            max: pool.max_agents(),
        });
    }
    let mut team = Team::default();
    for config in configs {
        let behavior = behavior_for(&config);
        let (id, layer) = (config.id, config.layer);
        pool.create(config, behavior)?;
        match layer {
            Layer::Top => team.top.push(id),
            Layer::Mid => team.mid.push(id),
            Layer::Bottom => team.bottom.push(id),
        }
    }
    Ok(team)
}

/// Whether saved configs are a whole team of the configured shape.
pub fn fits(configs: &[AgentConfig], team: &TeamConfig) -> bool {
    let count = |layer| configs.iter().filter(|c| c.layer == layer).count();
    !configs.is_empty()
        && count(Layer::Top) == team.top
        && count(Layer::Mid) == team.mid
        && count(Layer::Bottom) == team.mid * team.bottom_per_mid
}

/// The top layer as voters, in seniority order.
pub fn voters(pool: &AgentPool) -> Vec<Voter> {
    let mut voters: Vec<Voter> = pool
        .by_layer(Layer::Top)
        .iter()
        .filter_map(|agent| {
            agent.config().power.map(|power| Voter {
                agent: agent.id(),
                weight: power.vote_weight,
                seniority: power.seniority,
            })
        })
        .collect();
    voters.sort_by_key(|v| v.seniority);
    voters
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LlmOverride;

    #[test]
    fn each_agent_carries_its_layers_model_and_limits() {
        let llm = LlmConfig {
            model: Some("small".into()),
            base_url: Some("http://127.0.0.1:18080/v1".into()),
            top: LlmOverride {
                model: Some("strong".into()),
                timeout_ms: Some(30_000),
                ..LlmOverride::default()
            },
            bottom: LlmOverride {
                max_retries: Some(1),
                ..LlmOverride::default()
            },
            ..LlmConfig::default()
        };
        let team = TeamConfig {
            top: 1,
            mid: 1,
            bottom_per_mid: 1,
            ..TeamConfig::default()
        };
        let configs = plan_team(&team, &llm);
        let of = |layer| configs.iter().find(|c| c.layer == layer).unwrap();
        assert_eq!(of(Layer::Top).model.model.as_deref(), Some("strong"));
        assert_eq!(of(Layer::Top).timeout_ms, 30_000);
        assert_eq!(of(Layer::Mid).model.model.as_deref(), Some("small"));
        assert_eq!(of(Layer::Bottom).max_retries, 1);
        assert_eq!(of(Layer::Mid).max_retries, 3, "unset: the design's default");
    }
}
