//! Tokens and cost: every model call's usage, added up per task, per subtask and per
//! agent, priced by the `[pricing]` table, and the `limits.maxTokensPerTask` pause.
//!
//! [`MeteredModel`] wraps the team's model (outside the retries, so a call counts once
//! when it succeeds). It learns whom a call is for from the [`UsageScope`] the caller
//! runs in ([`scoped`]): the executor scopes its calls to the subtask, the coordinator
//! to the task and its mid agent, a top agent's review to the task it reviews. The
//! subtask's task and assignee are looked up when the scope does not name them.
//!
//! Providers that report no usage (some local servers) are counted by an estimate (four
//! characters a token), and the figures say how many calls were estimated.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use chrono::Utc;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::agent::AgentId;
use super::approvals::{ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest, Approvals};
use super::tasks::{SubtaskId, TaskId, TaskStatus, Tasks};
use crate::config::{Config, ModelPrice};
use crate::model::{DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse};
use crate::recovery::Severity;

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

fn thousands(n: u64) -> String {
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

/// Whom the model calls made inside [`scoped`] are for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UsageScope {
    pub task: Option<TaskId>,
    pub subtask: Option<SubtaskId>,
    pub agent: Option<AgentId>,
}

tokio::task_local! {
    static SCOPE: UsageScope;
}

/// Runs `future` with its model calls counted for `scope`.
pub async fn scoped<F: std::future::Future>(scope: UsageScope, future: F) -> F::Output {
    SCOPE.scope(scope, future).await
}

/// The scope the current task runs in, if any.
pub fn current_scope() -> Option<UsageScope> {
    SCOPE.try_with(|scope| *scope).ok()
}

/// Model prices by model name.
#[derive(Clone, Debug, Default)]
pub struct Prices {
    table: BTreeMap<String, ModelPrice>,
}

impl Prices {
    pub fn new(table: BTreeMap<String, ModelPrice>) -> Self {
        Prices { table }
    }

    /// The price of `model`: its exact entry, else one that differs only in case.
    pub fn of(&self, model: &str) -> Option<ModelPrice> {
        self.table.get(model).copied().or_else(|| {
            self.table
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(model))
                .map(|(_, price)| *price)
        })
    }

    /// `input` and `output` tokens of `model` in dollars.
    pub fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        self.of(model)
            .map(|price| (input as f64 * price.input + output as f64 * price.output) / 1_000_000.0)
    }
}

/// About four characters a token: the estimate used when a provider reports nothing.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// The characters of a request as the model sees them ([`ModelRequest::chars`]).
pub fn request_chars(request: &ModelRequest) -> usize {
    request.chars()
}

/// Ends a task whose person chose to cancel it at the token limit.
pub type TaskCanceller = Arc<dyn Fn(TaskId) + Send + Sync>;

/// The team's model with every call's usage counted, priced and checked against
/// `limits.maxTokensPerTask`.
pub struct MeteredModel {
    inner: Arc<dyn ModelProvider>,
    model: String,
    prices: Prices,
    tasks: Tasks,
    approvals: Approvals,
    limit: Option<u64>,
    /// One pause at a time per task: calls of the other subtasks wait for its answer.
    gates: DashMap<TaskId, Arc<tokio::sync::Mutex<()>>>,
    canceller: OnceLock<TaskCanceller>,
    /// Every call of the session, scoped or not.
    session: Mutex<TokenUsage>,
}

impl MeteredModel {
    pub fn new(
        inner: Arc<dyn ModelProvider>,
        config: &Config,
        tasks: Tasks,
        approvals: Approvals,
    ) -> MeteredModel {
        MeteredModel {
            inner,
            model: config.llm.model_name(),
            prices: Prices::new(config.pricing.clone()),
            tasks,
            approvals,
            limit: config.limits.max_tokens_per_task.filter(|l| *l > 0),
            gates: DashMap::new(),
            canceller: OnceLock::new(),
            session: Mutex::new(TokenUsage::default()),
        }
    }

    /// How a task is cancelled when the person answers the token-limit pause with cancel
    /// (the engine's own cancel). Without one the call just ends cancelled.
    pub fn set_canceller(&self, canceller: TaskCanceller) {
        let _ = self.canceller.set(canceller);
    }

    /// Every call so far, whoever it was for.
    pub fn session_usage(&self) -> TokenUsage {
        *self.session.lock().expect("usage lock")
    }

    /// The task, subtask and agent of a call made in `scope`.
    fn resolve(&self, scope: UsageScope) -> (Option<TaskId>, Option<SubtaskId>, Option<AgentId>) {
        let task = scope
            .task
            .or_else(|| scope.subtask.and_then(|s| self.tasks.task_of(s)));
        let agent = scope.agent.or_else(|| {
            let (task, subtask) = (task?, scope.subtask?);
            self.tasks
                .read(task, |t| t.subtask(subtask).and_then(|s| s.assignee))
                .flatten()
        });
        (task, scope.subtask, agent)
    }

    /// The usage of one answer, estimated when the provider reported none.
    fn usage_of(&self, request: &ModelRequest, response: &ModelResponse) -> TokenUsage {
        let reported = response.usage;
        let (input, output, estimated) = if !reported.is_reported() {
            let output_chars = response.text.len()
                + response
                    .tool_calls
                    .iter()
                    .map(|c| c.name.len() + c.arguments.to_string().len())
                    .sum::<usize>();
            (
                estimate_tokens(request_chars(request)),
                estimate_tokens(output_chars),
                1,
            )
        } else {
            (reported.input_tokens, reported.output_tokens, 0)
        };
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            calls: 1,
            estimated_calls: estimated,
            cost_usd: self.prices.cost(&self.model, input, output),
        }
    }

    /// Waits while `task` is over its token limit and the person has not yet answered;
    /// an answer other than "continue" cancels the task.
    async fn admit(
        &self,
        task: TaskId,
        subtask: Option<SubtaskId>,
        agent: Option<AgentId>,
    ) -> Result<(), ModelError> {
        let Some(base) = self.limit else {
            return Ok(());
        };
        let gate = self.gates.entry(task).or_default().clone();
        let _one_at_a_time = gate.lock().await;
        let Some(record) = self.tasks.get(task) else {
            return Ok(());
        };
        let limit = record.usage.token_limit.unwrap_or(base);
        let used = record.usage.total.total_tokens();
        if used < limit || record.status.is_finished() {
            return Ok(());
        }
        let raised = used + base;
        let request = ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::Decision,
            task_id: task,
            subtask_id: subtask,
            agent_id: agent.unwrap_or(AgentId::SYSTEM).to_string(),
            severity: Severity::Medium,
            title: format!("Token limit reached: {used} of {limit} tokens"),
            detail: format!(
                "Task \"{}\" has used {} ({}), reaching its limit of {limit} tokens \
                 (`limits.maxTokensPerTask`). It is paused.\n\nContinue with the limit \
                 raised to {raised} tokens, or cancel the task.",
                record.title,
                used,
                record.usage.total.describe()
            ),
            proposed_solution: None,
            diff: None,
            command: None,
            subtask_description: None,
            options: vec![
                ApprovalOption::new(
                    ApprovalChoice::Approve,
                    format!("Continue (limit {raised} tokens)"),
                ),
                ApprovalOption::new(ApprovalChoice::Abort, "Cancel the task"),
            ],
            created_at: Utc::now(),
        };
        tracing::info!(task = %task, used, limit, "token limit reached; asking the person");
        let before = record.status;
        self.tasks
            .update(task, |t| t.status = TaskStatus::AwaitingApproval);
        let answer = self.approvals.ask(request).await;
        let go_on = matches!(&answer, Some(a) if a.decision == ApprovalChoice::Approve);
        if go_on {
            self.tasks.update(task, |t| {
                t.usage.token_limit = Some(raised);
                if t.status == TaskStatus::AwaitingApproval {
                    t.status = before;
                }
            });
            return Ok(());
        }
        match self.canceller.get() {
            Some(cancel) => cancel(task),
            None => {
                self.tasks.update(task, |t| {
                    if t.status == TaskStatus::AwaitingApproval {
                        t.status = before;
                    }
                });
            }
        }
        Err(ModelError::Cancelled)
    }
}

#[async_trait]
impl ModelProvider for MeteredModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn ready(&self) -> Result<(), ModelError> {
        let (task, subtask, agent) = self.resolve(current_scope().unwrap_or_default());
        match task {
            Some(task) => self.admit(task, subtask, agent).await,
            None => Ok(()),
        }
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let (task, subtask, agent) = self.resolve(current_scope().unwrap_or_default());
        if let Some(task) = task {
            self.admit(task, subtask, agent).await?;
        }
        let response = self.inner.complete(request, on_delta).await?;
        let usage = self.usage_of(request, &response);
        self.session.lock().expect("usage lock").add(&usage);
        if let Some(task) = task {
            self.tasks
                .update(task, |t| t.usage.record(subtask, agent, &usage));
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_prices_per_million() {
        let prices = Prices::new(BTreeMap::from([(
            "Qwen".to_string(),
            ModelPrice {
                input: 2.0,
                output: 10.0,
            },
        )]));
        assert_eq!(prices.cost("qwen", 1_000_000, 100_000), Some(3.0));
        assert_eq!(prices.cost("other", 1, 1), None);
        let mut total = TokenUsage::default();
        total.add(&TokenUsage {
            input_tokens: 1200,
            output_tokens: 30,
            calls: 1,
            estimated_calls: 0,
            cost_usd: Some(0.5),
        });
        total.add(&TokenUsage {
            input_tokens: 800,
            output_tokens: 20,
            calls: 1,
            estimated_calls: 1,
            cost_usd: Some(0.25),
        });
        assert_eq!(total.total_tokens(), 2050);
        assert_eq!(total.cost_usd, Some(0.75));
        assert_eq!(
            total.describe(),
            "2,000 in · 50 out · 2 calls (1 estimated) · $0.7500"
        );
        assert_eq!(
            TokenUsage::default().describe(),
            "0 in · 0 out · 0 calls · cost: no price set"
        );
    }

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
    }

    #[tokio::test]
    async fn the_scope_is_seen_inside_and_not_outside() {
        let task = TaskId::new();
        assert_eq!(current_scope(), None);
        let seen = scoped(
            UsageScope {
                task: Some(task),
                ..UsageScope::default()
            },
            async { current_scope() },
        )
        .await;
        assert_eq!(seen.and_then(|s| s.task), Some(task));
    }
}
