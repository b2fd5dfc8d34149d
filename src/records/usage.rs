//! Tokens and cost as they are recorded: one call's or many calls' [`TokenUsage`], and a
//! task's [`TaskUsage`] split by subtask and agent, part of the task's checkpoint. The
//! metered model (`model::metered`) counts them; the runtime's meter prices them and
//! holds tasks to their budgets.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, SubtaskId};

/// Tokens used by some calls, and what they cost when the model has a price.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model calls counted.
    pub calls: u64,
    /// Calls whose provider reported no usage, counted by an estimate.
    #[serde(skip_serializing_if = "is_zero")]
    pub estimated_calls: u64,
    /// US dollars, when `[pricing]` has the model; `None` otherwise.
    pub cost_usd: Option<f64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TokenUsage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.calls += other.calls;
        self.estimated_calls += other.estimated_calls;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    /// One line for summaries and reports: `1,234 in · 56 out · 3 calls · $0.0012`.
    pub fn describe(&self) -> String {
        let mut line = format!(
            "{} in · {} out · {} call{}",
            thousands(self.input_tokens),
            thousands(self.output_tokens),
            self.calls,
            if self.calls == 1 { "" } else { "s" }
        );
        if self.estimated_calls > 0 {
            line.push_str(&format!(" ({} estimated)", self.estimated_calls));
        }
        match self.cost_usd {
            Some(cost) => line.push_str(&format!(" · ${cost:.4}")),
            None => line.push_str(" · cost: no price set"),
        }
        line
    }
}

pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A task's usage: the total, and the same split by subtask and by agent (ids as keys).
/// Part of the task's checkpoint and of `conclave/getTask`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TaskUsage {
    pub total: TokenUsage,
    pub by_subtask: BTreeMap<String, TokenUsage>,
    pub by_agent: BTreeMap<String, TokenUsage>,
    /// The token limit in force, once the person raised `limits.maxTokensPerTask`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_limit: Option<u64>,
    /// The spend cap in force (US dollars), once the person raised
    /// `limits.maxCostPerTaskUsd`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_limit_usd: Option<f64>,
}

impl TaskUsage {
    pub fn record(
        &mut self,
        subtask: Option<SubtaskId>,
        agent: Option<AgentId>,
        usage: &TokenUsage,
    ) {
        self.total.add(usage);
        if let Some(subtask) = subtask {
            self.by_subtask
                .entry(subtask.to_string())
                .or_default()
                .add(usage);
        }
        if let Some(agent) = agent {
            self.by_agent
                .entry(agent.to_string())
                .or_default()
                .add(usage);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_splits_usage_by_subtask_and_agent() {
        let (subtask, agent) = (SubtaskId::new(), AgentId::new());
        let mut usage = TaskUsage::default();
        let call = TokenUsage {
            input_tokens: 10,
            output_tokens: 5,
            calls: 1,
            ..TokenUsage::default()
        };
        usage.record(Some(subtask), Some(agent), &call);
        usage.record(None, Some(agent), &call);
        usage.record(None, None, &call);
        assert_eq!(usage.total.calls, 3);
        assert_eq!(usage.by_subtask[&subtask.to_string()].calls, 1);
        assert_eq!(usage.by_agent[&agent.to_string()].total_tokens(), 30);
        let wire = serde_json::to_value(&usage).unwrap();
        assert_eq!(wire["total"]["inputTokens"], 30);
        assert_eq!(wire["total"]["costUsd"], serde_json::Value::Null);
        assert!(wire.get("tokenLimit").is_none());
        assert!(wire.get("costLimitUsd").is_none());
    }
}
