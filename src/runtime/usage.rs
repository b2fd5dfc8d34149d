//! The usage meter: every model call's usage, priced by the `[pricing]` table over
//! [`LIST_PRICES`], added up for the session and per task, per subtask and per agent,
//! and the pauses at `limits.maxTokensPerTask` and `limits.maxCostPerTaskUsd`, which ask
//! the person (an approval) whether the task goes on.
//!
//! The [`Meter`] is the [`UsageSink`] of the team's models: each is a
//! [`MeteredModel`] (`model::metered`, [`Meter::meter`]) that counts its calls' tokens,
//! estimated when a provider reports none, and reports them here. The meter fills in a
//! call's task and agent from its subtask when the caller's scope does not name them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use chrono::Utc;
use dashmap::DashMap;
use uuid::Uuid;

use super::approvals::Approvals;
use super::tasks::Tasks;
use crate::config::{Config, ModelPrice, TeamLayer};
use crate::ids::{AgentId, SubtaskId, TaskId};
use crate::model::metered::{MeteredModel, UsageScope, UsageSink};
use crate::model::{ModelError, ModelProvider};
use crate::records::{
    ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest, TaskStatus, TaskUsage,
    TokenUsage, usage::thousands,
};
use crate::recovery::Severity;

/// The providers' published list prices (US dollars per million tokens, input and
/// output) of the default models (`gpt-4o-mini`, `claude-sonnet-4-5`) and their nearest
/// siblings, as read on OpenAI's and Anthropic's pricing and model pages in November
/// 2026. They apply only to the providers' own APIs
/// ([`LlmConfig::calls_hosted_api`]); `[pricing]` entries override them.
///
/// [`LlmConfig::calls_hosted_api`]: crate::config::LlmConfig::calls_hosted_api
pub const LIST_PRICES: &[(&str, ModelPrice)] = &[
    listed("gpt-4o-mini", 0.15, 0.60),
    listed("gpt-4o", 2.50, 10.00),
    listed("claude-sonnet-4-5", 3.00, 15.00),
    listed("claude-haiku-4-5", 1.00, 5.00),
    listed("claude-3-5-haiku", 0.80, 4.00),
];

const fn listed(model: &'static str, input: f64, output: f64) -> (&'static str, ModelPrice) {
    (model, ModelPrice { input, output })
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

    /// The prices usage is counted at: [`LIST_PRICES`] when the model is served by its
    /// provider's own API (a local server or a proxy charges what it charges), with
    /// `config.pricing` over them, an entry replacing any built-in one of the same name
    /// in another case.
    pub fn for_config(config: &Config) -> Self {
        let hosted = TeamLayer::ALL
            .iter()
            .any(|layer| config.llm.for_layer(*layer).calls_hosted_api());
        let mut table: BTreeMap<String, ModelPrice> = if hosted {
            LIST_PRICES
                .iter()
                .map(|(name, price)| (name.to_string(), *price))
                .collect()
        } else {
            BTreeMap::new()
        };
        for (name, price) in &config.pricing {
            table.retain(|known, _| !known.eq_ignore_ascii_case(name));
            table.insert(name.clone(), *price);
        }
        Prices { table }
    }

    /// The price of `model`: its exact entry, else one that differs only in case, else
    /// the entry of the model it is a dated snapshot of (`claude-sonnet-4-5-20250929`,
    /// `gpt-4o-mini-2024-07-18`, `claude-3-5-haiku-latest`).
    pub fn of(&self, model: &str) -> Option<ModelPrice> {
        let named = |model: &str| {
            self.table.get(model).copied().or_else(|| {
                self.table
                    .iter()
                    .find(|(name, _)| name.eq_ignore_ascii_case(model))
                    .map(|(_, price)| *price)
            })
        };
        named(model).or_else(|| snapshot_of(model).and_then(named))
    }

    /// `input` and `output` tokens of `model` in dollars.
    pub fn cost(&self, model: &str, input: u64, output: u64) -> Option<f64> {
        self.of(model)
            .map(|price| (input as f64 * price.input + output as f64 * price.output) / 1_000_000.0)
    }
}

/// The model `model` is a dated snapshot of: the name without a trailing `-YYYYMMDD`,
/// `-YYYY-MM-DD` or `-latest`.
fn snapshot_of(model: &str) -> Option<&str> {
    if let Some(base) = model.strip_suffix("-latest") {
        return Some(base);
    }
    let number =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_digit());
    let (before_last, last) = model.rsplit_once('-')?;
    if number(last, 8) {
        return Some(before_last);
    }
    let (before_month, month) = before_last.rsplit_once('-')?;
    let (base, year) = before_month.rsplit_once('-')?;
    (number(year, 4) && number(month, 2) && number(last, 2)).then_some(base)
}

/// Ends a task whose person chose to cancel it at a budget.
pub type TaskCanceller = Arc<dyn Fn(TaskId) + Send + Sync>;

/// `usd` as people read an amount: cents from a dollar up, four decimals below.
pub fn dollars(usd: f64) -> String {
    if usd >= 1.0 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// What the spend cap does under a configuration, as the log and `conclave run` say it.
#[derive(Clone, Debug, PartialEq)]
pub enum SpendCap {
    /// A task pauses and asks at this many US dollars.
    Dollars(f64),
    /// `limits.maxCostPerTaskUsd = 0`.
    Off,
    /// The model has no price, so its tasks have no cost to hold to the cap.
    Unpriced { model: String },
}

impl SpendCap {
    /// The cap under `config`: a task's cost is what its priced models' calls cost, so
    /// the cap holds when any layer's model has a price.
    pub fn of(config: &Config) -> SpendCap {
        let prices = Prices::for_config(config);
        let models: Vec<String> = TeamLayer::ALL
            .iter()
            .map(|layer| config.llm.for_layer(*layer).model_name())
            .collect();
        match config.limits.cost_cap_usd() {
            None => SpendCap::Off,
            Some(_) if models.iter().all(|m| prices.of(m).is_none()) => SpendCap::Unpriced {
                model: models[0].clone(),
            },
            Some(cap) => SpendCap::Dollars(cap),
        }
    }

    /// The cap tasks are held to, when there is one.
    pub fn dollars(&self) -> Option<f64> {
        match self {
            SpendCap::Dollars(cap) => Some(*cap),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            SpendCap::Dollars(cap) => format!(
                "{} a task, then it pauses and asks (limits.maxCostPerTaskUsd)",
                dollars(*cap)
            ),
            SpendCap::Off => "off (limits.maxCostPerTaskUsd = 0)".to_string(),
            SpendCap::Unpriced { model } => format!(
                "none: the model {model:?} has no price, so tasks are not capped by cost \
                 ([pricing.{model:?}] in conclave.toml gives it one; \
                 limits.maxTokensPerTask caps tokens)"
            ),
        }
    }
}

/// The budget a task has reached and what it becomes if the person goes on.
#[derive(Clone, Debug, PartialEq)]
enum Reached {
    Tokens { used: u64, limit: u64, raised: u64 },
    Cost { spent: f64, cap: f64, raised: f64 },
}

/// Which budget `usage` has reached, if any: the token limit `token_base` (or its raised
/// value on the task), else the spend cap `cost_base` (likewise). Going on raises the
/// budget to what was used plus the configured amount again, so the next pause comes
/// after as much again whatever the last call overshot by. A task whose model has no
/// price has no cost, and is never held to the spend cap.
fn reached(usage: &TaskUsage, token_base: Option<u64>, cost_base: Option<f64>) -> Option<Reached> {
    if let Some(base) = token_base {
        let limit = usage.token_limit.unwrap_or(base);
        let used = usage.total.total_tokens();
        if used >= limit {
            return Some(Reached::Tokens {
                used,
                limit,
                raised: used + base,
            });
        }
    }
    let (base, spent) = (cost_base?, usage.total.cost_usd?);
    let cap = usage.cost_limit_usd.unwrap_or(base);
    (spent >= cap).then_some(Reached::Cost {
        spent,
        cap,
        raised: spent + base,
    })
}

impl Reached {
    fn title(&self, usage: &TokenUsage) -> String {
        match self {
            Reached::Tokens { used, limit, .. } => {
                format!("Token limit reached: {used} of {limit} tokens")
            }
            Reached::Cost { spent, cap, .. } => format!(
                "Spending cap reached: {} of {} ({} tokens)",
                dollars(*spent),
                dollars(*cap),
                thousands(usage.total_tokens())
            ),
        }
    }

    fn detail(&self, task_title: &str, usage: &TokenUsage) -> String {
        match self {
            Reached::Tokens {
                used,
                limit,
                raised,
            } => format!(
                "Task \"{task_title}\" has used {used} ({}), reaching its limit of {limit} \
                 tokens (`limits.maxTokensPerTask`). It is paused.\n\nContinue with the \
                 limit raised to {raised} tokens, or cancel the task.",
                usage.describe()
            ),
            Reached::Cost { spent, cap, raised } => format!(
                "Task \"{task_title}\" has spent {} ({}), reaching its cap of {} \
                 (`limits.maxCostPerTaskUsd`). It is paused.\n\nContinue with the cap \
                 raised to {}, or cancel the task.",
                dollars(*spent),
                usage.describe(),
                dollars(*cap),
                dollars(*raised)
            ),
        }
    }

    fn continue_label(&self) -> String {
        match self {
            Reached::Tokens { raised, .. } => format!("Continue (limit {raised} tokens)"),
            Reached::Cost { raised, .. } => format!("Continue (cap {})", dollars(*raised)),
        }
    }

    /// Records the raised budget on the task, where it survives a restart.
    fn raise(&self, usage: &mut TaskUsage) {
        match self {
            Reached::Tokens { raised, .. } => usage.token_limit = Some(*raised),
            Reached::Cost { raised, .. } => usage.cost_limit_usd = Some(*raised),
        }
    }
}

/// Every call's usage counted, priced and checked against `limits.maxTokensPerTask` and
/// `limits.maxCostPerTaskUsd`, across the models of every layer: one meter a team, one
/// [`MeteredModel`] a model ([`Meter::meter`]).
pub struct Meter {
    prices: Prices,
    tasks: Tasks,
    approvals: Approvals,
    token_limit: Option<u64>,
    /// US dollars; `None` when switched off or when no model has a price.
    cost_cap: Option<f64>,
    /// One pause at a time per task: calls of the other subtasks wait for its answer.
    gates: DashMap<TaskId, Arc<tokio::sync::Mutex<()>>>,
    canceller: OnceLock<TaskCanceller>,
    /// Every call of the session, scoped or not.
    session: Mutex<TokenUsage>,
}

impl Meter {
    pub fn new(config: &Config, tasks: Tasks, approvals: Approvals) -> Meter {
        let spend_cap = SpendCap::of(config);
        // Said once, at start, so nobody believes a task is capped when it cannot be.
        tracing::info!("spend cap: {}", spend_cap.describe());
        Meter {
            prices: Prices::for_config(config),
            tasks,
            approvals,
            token_limit: config.limits.max_tokens_per_task.filter(|l| *l > 0),
            cost_cap: spend_cap.dollars(),
            gates: DashMap::new(),
            canceller: OnceLock::new(),
            session: Mutex::new(TokenUsage::default()),
        }
    }

    /// `inner` with its calls metered, priced as the model `model`.
    pub fn meter(self: &Arc<Self>, inner: Arc<dyn ModelProvider>, model: String) -> MeteredModel {
        MeteredModel::new(self.clone(), inner, model)
    }

    /// How a task is cancelled when the person answers a budget pause with cancel (the
    /// engine's own cancel). Without one the call just ends cancelled.
    pub fn set_canceller(&self, canceller: TaskCanceller) {
        let _ = self.canceller.set(canceller);
    }

    /// Every call so far, whoever it was for.
    pub fn session_usage(&self) -> TokenUsage {
        *self.session.lock().expect("usage lock")
    }

    /// The spend cap a task is held to (US dollars): `None` when it is off or the model
    /// has no price.
    pub fn cost_cap_usd(&self) -> Option<f64> {
        self.cost_cap
    }

    /// Waits while `task` is over its token limit or its spend cap and the person has not
    /// yet answered; an answer other than "continue" cancels the task. Both budgets
    /// reached at once are asked one after the other.
    async fn wait_for_budget(
        &self,
        task: TaskId,
        subtask: Option<SubtaskId>,
        agent: Option<AgentId>,
    ) -> Result<(), ModelError> {
        if self.token_limit.is_none() && self.cost_cap.is_none() {
            return Ok(());
        }
        let gate = self.gates.entry(task).or_default().clone();
        let _one_at_a_time = gate.lock().await;
        loop {
            let Some(record) = self.tasks.get(task) else {
                return Ok(());
            };
            if record.status.is_finished() {
                return Ok(());
            }
            let Some(reached) = reached(&record.usage, self.token_limit, self.cost_cap) else {
                return Ok(());
            };
            let spent = &record.usage.total;
            let request = ApprovalRequest {
                approval_id: Uuid::new_v4(),
                kind: ApprovalKind::Decision,
                task_id: task,
                subtask_id: subtask,
                agent_id: agent.unwrap_or(AgentId::SYSTEM).to_string(),
                severity: Severity::Medium,
                title: reached.title(spent),
                detail: reached.detail(&record.title, spent),
                proposed_solution: None,
                diff: None,
                command: None,
                subtask_description: None,
                options: vec![
                    ApprovalOption::new(ApprovalChoice::Approve, reached.continue_label()),
                    ApprovalOption::new(ApprovalChoice::Abort, "Cancel the task"),
                ],
                created_at: Utc::now(),
            };
            tracing::info!(task = %task, budget = ?reached, "task budget reached; asking the person");
            let before = record.status;
            self.tasks
                .update(task, |t| t.status = TaskStatus::AwaitingApproval);
            let answer = self.approvals.ask(request).await;
            let go_on = matches!(&answer, Some(a) if a.decision == ApprovalChoice::Approve);
            if go_on {
                self.tasks.update(task, |t| {
                    reached.raise(&mut t.usage);
                    if t.status == TaskStatus::AwaitingApproval {
                        t.status = before;
                    }
                });
                continue;
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
            return Err(ModelError::Cancelled);
        }
    }
}

#[async_trait]
impl UsageSink for Meter {
    /// The task, subtask and agent of a call made in `scope`: the subtask's task and
    /// assignee are looked up when the scope does not name them.
    fn attribute(&self, scope: UsageScope) -> UsageScope {
        let task = scope
            .task
            .or_else(|| scope.subtask.and_then(|s| self.tasks.task_of(s)));
        let agent = scope.agent.or_else(|| {
            let (task, subtask) = (task?, scope.subtask?);
            self.tasks
                .read(task, |t| t.subtask(subtask).and_then(|s| s.assignee))
                .flatten()
        });
        UsageScope {
            task,
            subtask: scope.subtask,
            agent,
        }
    }

    async fn admit(&self, scope: &UsageScope) -> Result<(), ModelError> {
        match scope.task {
            Some(task) => self.wait_for_budget(task, scope.subtask, scope.agent).await,
            None => Ok(()),
        }
    }

    /// Prices the call, adds it to the session and to its task.
    fn record(&self, scope: &UsageScope, model: &str, usage: TokenUsage) {
        let usage = TokenUsage {
            cost_usd: self
                .prices
                .cost(model, usage.input_tokens, usage.output_tokens),
            ..usage
        };
        self.session.lock().expect("usage lock").add(&usage);
        if let Some(task) = scope.task {
            self.tasks
                .update(task, |t| t.usage.record(scope.subtask, scope.agent, &usage));
        }
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
    fn the_default_models_have_list_prices_only_at_their_providers_own_api() {
        use crate::config::LlmProvider;
        let config = |provider, model: Option<&str>, base_url: Option<&str>| {
            let mut config = Config::default();
            config.llm.provider = Some(provider);
            config.llm.model = model.map(String::from);
            config.llm.base_url = base_url.map(String::from);
            config
        };
        // The defaults per provider (model left out) are priced.
        let anthropic = config(LlmProvider::Anthropic, None, None);
        let sonnet = Prices::for_config(&anthropic).of(&anthropic.llm.model_name());
        assert_eq!(
            sonnet,
            Some(ModelPrice {
                input: 3.0,
                output: 15.0
            })
        );
        let openai = config(LlmProvider::Openai, None, None);
        let prices = Prices::for_config(&openai);
        assert_eq!(
            prices.cost(&openai.llm.model_name(), 1_000_000, 1_000_000),
            Some(0.75)
        );
        // Dated snapshots and `-latest` aliases are the model they name.
        assert_eq!(
            prices.of("gpt-4o-mini-2024-07-18"),
            prices.of("gpt-4o-mini")
        );
        assert_eq!(
            prices.of("claude-sonnet-4-5-20250929"),
            Some(ModelPrice {
                input: 3.0,
                output: 15.0
            })
        );
        assert_eq!(
            prices.of("claude-3-5-haiku-latest"),
            Some(ModelPrice {
                input: 0.8,
                output: 4.0
            })
        );
        assert_eq!(prices.of("gpt-4o-audio-preview"), None);
        assert_eq!(prices.of("qwen2.5-coder:7b"), None);
        // The same name at a local server or a proxy is not the provider's price.
        let local = config(
            LlmProvider::Openai,
            Some("gpt-4o-mini"),
            Some("http://127.0.0.1:11434/v1"),
        );
        assert_eq!(Prices::for_config(&local).of("gpt-4o-mini"), None);
        // `[pricing]` wins over a built-in price, whatever its case.
        let mut priced = config(LlmProvider::Openai, None, None);
        let own = ModelPrice {
            input: 0.1,
            output: 0.2,
        };
        priced.pricing.insert("GPT-4o-mini".into(), own);
        assert_eq!(Prices::for_config(&priced).of("gpt-4o-mini"), Some(own));
        assert_eq!(
            Prices::for_config(&priced).of("gpt-4o-mini-2024-07-18"),
            Some(own)
        );
    }

    #[test]
    fn the_spend_cap_says_when_it_cannot_apply() {
        use crate::config::LlmProvider;
        let mut config = Config::default();
        config.llm.provider = Some(LlmProvider::Anthropic);
        assert_eq!(SpendCap::of(&config), SpendCap::Dollars(2.0));
        assert_eq!(
            SpendCap::of(&config).describe(),
            "$2.00 a task, then it pauses and asks (limits.maxCostPerTaskUsd)"
        );
        config.limits.max_cost_per_task_usd = 0.0;
        assert_eq!(SpendCap::of(&config), SpendCap::Off);
        let mut local = Config::default();
        local.llm.model = Some("qwen2.5-coder:7b".into());
        local.llm.base_url = Some("http://127.0.0.1:11434/v1".into());
        let unpriced = SpendCap::of(&local);
        assert_eq!(unpriced.dollars(), None);
        assert!(
            unpriced.describe().starts_with(
                "none: the model \"qwen2.5-coder:7b\" has no price, so tasks are not capped \
                 by cost ([pricing.\"qwen2.5-coder:7b\"] in conclave.toml gives it one;"
            ),
            "{}",
            unpriced.describe()
        );
        local.pricing.insert(
            "qwen2.5-coder:7b".into(),
            ModelPrice {
                input: 0.0,
                output: 0.0,
            },
        );
        assert_eq!(SpendCap::of(&local), SpendCap::Dollars(2.0));
        // A local coder with a hosted reviewer: the reviewer's calls cost, so the cap holds.
        local.pricing.clear();
        local.llm.top = crate::config::LlmOverride {
            provider: Some(LlmProvider::Anthropic),
            model: Some("claude-haiku-4-5".into()),
            ..Default::default()
        };
        assert_eq!(SpendCap::of(&local), SpendCap::Dollars(2.0));
        let prices = Prices::for_config(&local);
        assert!(prices.of("claude-haiku-4-5").is_some());
        assert!(prices.of("qwen2.5-coder:7b").is_none());
    }

    #[test]
    fn budgets_are_reached_at_their_limit_and_raised_by_as_much_again() {
        let usage = |tokens: u64, cost: Option<f64>| TaskUsage {
            total: TokenUsage {
                input_tokens: tokens,
                calls: 1,
                cost_usd: cost,
                ..TokenUsage::default()
            },
            ..TaskUsage::default()
        };
        // No budget, or under both.
        assert_eq!(reached(&usage(10_000, Some(5.0)), None, None), None);
        assert_eq!(reached(&usage(99, Some(1.99)), Some(100), Some(2.0)), None);
        // The spend cap, at and past it: raised to what was spent plus the cap again.
        assert_eq!(
            reached(&usage(99, Some(2.5)), Some(100), Some(2.0)),
            Some(Reached::Cost {
                spent: 2.5,
                cap: 2.0,
                raised: 4.5
            })
        );
        // No price, no cost: never held to the spend cap.
        assert_eq!(reached(&usage(1_000_000, None), None, Some(0.0001)), None);
        // Both reached: tokens are asked first, then the cap (the next round of `admit`).
        let mut both = usage(150, Some(3.0));
        let first = reached(&both, Some(100), Some(2.0)).unwrap();
        assert_eq!(
            first,
            Reached::Tokens {
                used: 150,
                limit: 100,
                raised: 250
            }
        );
        first.raise(&mut both);
        assert_eq!(both.token_limit, Some(250));
        let second = reached(&both, Some(100), Some(2.0)).unwrap();
        second.raise(&mut both);
        assert_eq!(both.cost_limit_usd, Some(5.0));
        assert_eq!(reached(&both, Some(100), Some(2.0)), None);
        // A raised cap on the task is the one in force.
        both.total.cost_usd = Some(5.0);
        assert!(matches!(
            reached(&both, None, Some(2.0)),
            Some(Reached::Cost { cap, raised, .. }) if cap == 5.0 && raised == 7.0
        ));
    }

    #[test]
    fn the_spend_cap_pause_says_dollars_tokens_and_the_cap() {
        let spent = TokenUsage {
            input_tokens: 1_200_000,
            output_tokens: 34_000,
            calls: 40,
            cost_usd: Some(4.11),
            ..TokenUsage::default()
        };
        let pause = Reached::Cost {
            spent: 4.11,
            cap: 2.0,
            raised: 6.11,
        };
        assert_eq!(
            pause.title(&spent),
            "Spending cap reached: $4.11 of $2.00 (1,234,000 tokens)"
        );
        let detail = pause.detail("Add a flag", &spent);
        assert!(
            detail.starts_with(
                "Task \"Add a flag\" has spent $4.11 (1,200,000 in · 34,000 out · 40 calls · \
                 $4.1100), reaching its cap of $2.00 (`limits.maxCostPerTaskUsd`)."
            ),
            "{detail}"
        );
        assert!(detail.ends_with("Continue with the cap raised to $6.11, or cancel the task."));
        assert_eq!(pause.continue_label(), "Continue (cap $6.11)");
        assert_eq!(dollars(0.00092), "$0.0009");
        let mut usage = TaskUsage::default();
        pause.raise(&mut usage);
        let wire = serde_json::to_value(&usage).unwrap();
        assert_eq!(wire["costLimitUsd"], 6.11);
    }
}
