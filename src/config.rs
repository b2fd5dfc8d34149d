//! Configuration: built-in defaults, overridden by `conclave.toml` in the workspace root,
//! overridden by the editor's `initializationOptions` (docs/protocol.md, "Handshake").
//!
//! Layers are merged as JSON values key by key before the result is deserialised, so a
//! client that sets only `recovery.call.maxAttempts` keeps every other default.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The whole configuration. Field names on the wire and in TOML are camelCase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    pub llm: LlmConfig,
    pub team: TeamConfig,
    pub heartbeat_ms: u64,
    pub recovery: RecoveryConfig,
    pub writes: WriteMode,
    pub approvals: ApprovalsConfig,
    pub executor: ExecutorConfig,
    pub verify: VerifyConfig,
    pub governance: GovernanceConfig,
    pub store: StoreConfig,
    pub editor: EditorConfig,
    pub limits: LimitsConfig,
    pub sandbox: SandboxConfig,
    /// Taking tasks back: what a failed task leaves, and how much file history is kept.
    pub undo: UndoConfig,
    /// `[[mcp.servers]]`: MCP servers whose tools the agents may call.
    pub mcp: McpConfig,
    /// Prices per model name (`[pricing."model"]`), turning token usage into cost.
    pub pricing: std::collections::BTreeMap<String, ModelPrice>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            llm: LlmConfig::default(),
            team: TeamConfig::default(),
            heartbeat_ms: 4000,
            recovery: RecoveryConfig::default(),
            writes: WriteMode::ApplyEdit,
            approvals: ApprovalsConfig::default(),
            executor: ExecutorConfig::default(),
            verify: VerifyConfig::default(),
            governance: GovernanceConfig::default(),
            store: StoreConfig::default(),
            editor: EditorConfig::default(),
            limits: LimitsConfig::default(),
            sandbox: SandboxConfig::default(),
            undo: UndoConfig::default(),
            mcp: McpConfig::default(),
            pricing: std::collections::BTreeMap::new(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LlmProvider {
    Openai,
    Anthropic,
    Scripted,
}

/// Which model the agents use. No provider means no model: tasks that need one fail
/// with LlmNotConfigured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LlmConfig {
    pub provider: Option<LlmProvider>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// The environment variable holding the key (defaults per provider).
    pub api_key_env: Option<String>,
    /// The script file of the scripted provider, relative to the workspace root.
    pub script: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// The model's context window in tokens; prompts are trimmed to fit it. Unset means
    /// [`LlmConfig::context_window`]'s default for the provider.
    pub context_window: Option<u32>,
    /// Retries an agent of the layer gets on the same failure before the ladder moves on:
    /// a coder on its subtask (then a peer, the supervisor), a coordinator waiting for its
    /// provider while planning. Unset, `recovery.severity` decides by the failure's
    /// severity; a task's `options.maxRetries` wins.
    pub max_retries: Option<u32>,
    /// The most one call of this model may take; unset, `recovery.stepTimeoutMs`.
    pub timeout_ms: Option<u64>,
    /// `[llm.top]`, `[llm.mid]`, `[llm.bottom]`: a layer's own model, over this one
    /// ([`LlmConfig::for_layer`]); empty, the layer uses `[llm]`. A strong model
    /// reviewing and a small one coding.
    pub top: LlmOverride,
    pub mid: LlmOverride,
    pub bottom: LlmOverride,
}

/// The layers of the team, as `[llm.top]`, `[llm.mid]` and `[llm.bottom]` name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TeamLayer {
    /// Reviews plans, arbitrates.
    Top,
    /// Plans, supervises, writes the team's acceptance tests.
    Mid,
    /// Codes: the executor and the fix loop.
    Bottom,
}

impl TeamLayer {
    pub const ALL: [TeamLayer; 3] = [TeamLayer::Top, TeamLayer::Mid, TeamLayer::Bottom];

    pub fn as_str(self) -> &'static str {
        match self {
            TeamLayer::Top => "top",
            TeamLayer::Mid => "mid",
            TeamLayer::Bottom => "bottom",
        }
    }
}

/// One layer's model settings: whatever is set here replaces `[llm]`'s.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LlmOverride {
    pub provider: Option<LlmProvider>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub script: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub context_window: Option<u32>,
    pub max_retries: Option<u32>,
    pub timeout_ms: Option<u64>,
}

/// The context window assumed for a local OpenAI-compatible server (llama.cpp's and
/// Ollama's usual 8k).
pub const LOCAL_CONTEXT_WINDOW: u32 = 8192;
/// The context window assumed for the hosted APIs.
pub const HOSTED_CONTEXT_WINDOW: u32 = 128_000;

impl LlmConfig {
    /// `llm.contextWindow`, or 8192 for a local server (a `baseUrl` other than the hosted
    /// APIs') and 128000 for the hosted APIs.
    pub fn context_window(&self) -> u32 {
        if let Some(window) = self.context_window.filter(|w| *w > 0) {
            return window;
        }
        if self.is_hosted() {
            HOSTED_CONTEXT_WINDOW
        } else {
            LOCAL_CONTEXT_WINDOW
        }
    }

    /// Whether `baseUrl` is OpenAI's or Anthropic's own API, or unset (their default).
    /// Anything else is a local server or a proxy with sizes and prices of its own.
    pub fn is_hosted(&self) -> bool {
        let hosted = ["https://api.openai.com", "https://api.anthropic.com"];
        match &self.base_url {
            Some(url) => hosted.iter().any(|h| url.trim().starts_with(h)),
            None => true,
        }
    }

    /// Whether the configured model is called at OpenAI's or Anthropic's own API, where
    /// their list prices apply: a hosted provider at its default or own URL.
    pub fn calls_hosted_api(&self) -> bool {
        match self.provider {
            Some(LlmProvider::Openai | LlmProvider::Anthropic) => self.is_hosted(),
            Some(LlmProvider::Scripted) => false,
            // A bare `baseUrl` is OpenAI-compatible; without one there is no model.
            None => self.base_url.is_some() && self.is_hosted(),
        }
    }

    /// The environment variables that hold the models' keys: `llm.apiKeyEnv`, each
    /// layer's, and the providers' defaults. Never passed on to a command, and redacted
    /// wherever their values would be shown.
    pub fn key_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
            .map(String::from)
            .to_vec();
        let layers = [&self.top, &self.mid, &self.bottom];
        let named = std::iter::once(&self.api_key_env).chain(layers.map(|l| &l.api_key_env));
        for name in named.flatten() {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// `layer`'s own table (`[llm.<layer>]`), empty when the layer has none.
    pub fn own(&self, layer: TeamLayer) -> &LlmOverride {
        match layer {
            TeamLayer::Top => &self.top,
            TeamLayer::Mid => &self.mid,
            TeamLayer::Bottom => &self.bottom,
        }
    }

    /// The model `layer` runs on: `[llm]` with the layer's own settings over it. A layer
    /// that names another provider, or another server, starts afresh from that
    /// provider's defaults: `[llm]`'s server, key, model and window are another
    /// provider's and are not carried over; the sampling settings (`maxTokens`,
    /// `temperature`) and the agents' limits (`maxRetries`, `timeoutMs`) are.
    pub fn for_layer(&self, layer: TeamLayer) -> LlmConfig {
        let own = self.own(layer);
        let mut merged = LlmConfig {
            top: LlmOverride::default(),
            mid: LlmOverride::default(),
            bottom: LlmOverride::default(),
            ..self.clone()
        };
        let other_provider = own.provider.is_some() && own.provider != self.provider;
        let other_server = own.base_url.is_some() && own.base_url != self.base_url;
        if other_provider || other_server {
            merged.provider = own.provider.or(self.provider);
            merged.base_url = None;
            merged.api_key_env = None;
            merged.model = None;
            merged.script = None;
            merged.context_window = None;
        }
        let LlmOverride {
            provider,
            model,
            base_url,
            api_key_env,
            script,
            max_tokens,
            temperature,
            context_window,
            max_retries,
            timeout_ms,
        } = own.clone();
        merged.provider = provider.or(merged.provider);
        merged.model = model.or(merged.model);
        merged.base_url = base_url.or(merged.base_url);
        merged.api_key_env = api_key_env.or(merged.api_key_env);
        merged.script = script.or(merged.script);
        merged.max_tokens = max_tokens.or(merged.max_tokens);
        merged.temperature = temperature.or(merged.temperature);
        merged.context_window = context_window.or(merged.context_window);
        merged.max_retries = max_retries.or(merged.max_retries);
        merged.timeout_ms = timeout_ms.or(merged.timeout_ms);
        merged
    }

    /// The model name usage is priced under: `llm.model`, else the provider's default.
    pub fn model_name(&self) -> String {
        match (&self.model, self.provider) {
            (Some(model), _) => model.clone(),
            (None, Some(LlmProvider::Anthropic)) => "claude-sonnet-4-5".to_string(),
            (None, Some(LlmProvider::Scripted)) => "scripted".to_string(),
            (None, _) => "gpt-4o-mini".to_string(),
        }
    }
}

/// The spend cap of a task unless `limits.maxCostPerTaskUsd` says otherwise, in US
/// dollars: above what an ordinary task costs on the default hosted models, low enough
/// that a task stuck in retries and fix rounds stops before it costs real money
/// (docs/protocol.md, "Executor: tokens and cost").
pub const DEFAULT_MAX_COST_PER_TASK_USD: f64 = 2.0;

/// Budgets of one task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitsConfig {
    /// Input plus output tokens one task may use before it pauses and the person is
    /// asked whether to go on (with the limit raised by as much again) or cancel.
    pub max_tokens_per_task: Option<u64>,
    /// US dollars one task may spend before it pauses and asks the same way; `0` turns
    /// it off. Only a model with a price (built in or `[pricing]`) can be held to it.
    pub max_cost_per_task_usd: f64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            max_tokens_per_task: None,
            max_cost_per_task_usd: DEFAULT_MAX_COST_PER_TASK_USD,
        }
    }
}

impl LimitsConfig {
    /// The spend cap in force, `None` when switched off (zero, negative or not a number).
    pub fn cost_cap_usd(&self) -> Option<f64> {
        Some(self.max_cost_per_task_usd).filter(|cap| cap.is_finite() && *cap > 0.0)
    }
}

/// What a model costs, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ModelPrice {
    pub input: f64,
    pub output: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TeamConfig {
    pub top: usize,
    pub mid: usize,
    pub bottom_per_mid: usize,
    pub max_agents: usize,
    /// Vote weights of the top agents in seniority order; missing entries weigh 1.
    pub vote_weights: Vec<f64>,
    /// After an attempt that failed at its work, the agent writes a short account of it
    /// (one small model call), given to the next attempt and to whoever takes over.
    pub reflect: bool,
    /// What an agent learned on a failed attempt (the files it read, the errors it saw,
    /// its reflection) goes to the next attempt, the peer who takes over, and the
    /// subtasks of the same task that work on the same files.
    pub share_knowledge: bool,
    /// The prompt after a failure says what to do next for its kind (a missing file, a
    /// syntax error, a failing test, ...: `recovery::strategy`); off, it says only to try
    /// another way. A refusal is told it is final either way.
    pub error_strategies: bool,
}

impl Default for TeamConfig {
    fn default() -> Self {
        TeamConfig {
            top: 3,
            mid: 2,
            bottom_per_mid: 2,
            max_agents: 50,
            vote_weights: Vec::new(),
            reflect: false,
            share_knowledge: false,
            error_strategies: true,
        }
    }
}

/// Every number of the recovery ladder (docs/protocol.md, `recovery`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RecoveryConfig {
    pub continue_on_error: bool,
    /// The most one model call or one tool call may take, however alive it is (a
    /// ceiling: a model call is judged by its silences first).
    pub step_timeout_ms: u64,
    /// A model that has sent nothing for this long since its answer began is stalled.
    pub idle_timeout_ms: u64,
    /// How long a model may take before the first byte of its answer (it reads the
    /// prompt first): this much, plus [`RecoveryConfig::first_byte_per_k_tokens_ms`]
    /// per thousand tokens of prompt.
    pub first_byte_timeout_ms: u64,
    pub first_byte_per_k_tokens_ms: u64,
    /// One subtask, all attempts included.
    pub subtask_timeout_ms: u64,
    pub call: CallRetryConfig,
    pub severity: SeverityLadder,
    pub max_delay_ms: u64,
    pub breaker: BreakerConfig,
    /// How long, in all, a subtask waits for a provider in trouble (rate limits, an
    /// open breaker, an outage) before it ends as a provider outage.
    pub provider_patience_ms: u64,
    /// Call-level retries all agents share (a token bucket): a retry costs one token,
    /// a success earns `retryBudget.perSuccess`. Bounds how many calls a failing
    /// provider gets from the whole team.
    pub retry_budget: RetryBudgetConfig,
}

/// The shared retry budget (see [`RecoveryConfig::retry_budget`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RetryBudgetConfig {
    /// Tokens at the start and at most.
    pub capacity: f64,
    /// Tokens a successful call earns back.
    pub per_success: f64,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            capacity: 10.0,
            per_success: 1.0,
        }
    }
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            continue_on_error: false,
            step_timeout_ms: 300_000,
            idle_timeout_ms: 60_000,
            first_byte_timeout_ms: 60_000,
            first_byte_per_k_tokens_ms: 30_000,
            subtask_timeout_ms: 600_000,
            call: CallRetryConfig::default(),
            severity: SeverityLadder::default(),
            max_delay_ms: 60_000,
            breaker: BreakerConfig::default(),
            provider_patience_ms: 600_000,
            retry_budget: RetryBudgetConfig::default(),
        }
    }
}

/// Quick retries of one transient model or tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CallRetryConfig {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl Default for CallRetryConfig {
    fn default() -> Self {
        CallRetryConfig {
            max_attempts: 3,
            base_delay_ms: 250,
            max_delay_ms: 8000,
        }
    }
}

/// The per-provider circuit breaker (docs/protocol.md, `recovery`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BreakerConfig {
    /// How many recent calls the failure rate is computed over.
    pub window: usize,
    /// Fewer calls than this in the window never open the breaker.
    pub min_calls: usize,
    /// Failure rate (0.0–1.0) at which the breaker opens.
    pub failure_rate: f64,
    pub open_ms: u64,
    /// Successful probes in half-open state needed to close again.
    pub half_open_probes: u32,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            window: 20,
            min_calls: 5,
            failure_rate: 0.5,
            open_ms: 30_000,
            half_open_probes: 3,
        }
    }
}

/// How bad a failure is. The order matters: `Low < Medium < High < Critical`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeverityStep {
    pub max_retries: u32,
    pub base_delay_ms: u64,
}

/// Subtask-level retry limits and base delays per severity (the design's defaults).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SeverityLadder {
    pub low: SeverityStep,
    pub medium: SeverityStep,
    pub high: SeverityStep,
    pub critical: SeverityStep,
}

impl SeverityLadder {
    pub fn step(&self, severity: Severity) -> SeverityStep {
        match severity {
            Severity::Low => self.low,
            Severity::Medium => self.medium,
            Severity::High => self.high,
            Severity::Critical => self.critical,
        }
    }
}

impl Default for SeverityLadder {
    fn default() -> Self {
        let step = |max_retries, base_delay_ms| SeverityStep {
            max_retries,
            base_delay_ms,
        };
        SeverityLadder {
            low: step(3, 1000),
            medium: step(2, 5000),
            high: step(1, 10_000),
            critical: step(0, 0),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteMode {
    #[serde(rename = "applyEdit")]
    ApplyEdit,
    #[serde(rename = "disk")]
    Disk,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileChangePolicy {
    Auto,
    Ask,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CommandPolicy {
    Ask,
    Auto,
    Deny,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApprovalsConfig {
    pub file_changes: FileChangePolicy,
    pub commands: CommandPolicy,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            file_changes: FileChangePolicy::Auto,
            commands: CommandPolicy::Ask,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutorKind {
    Builtin,
    Pi,
}

/// How bottom agents do their work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecutorConfig {
    pub kind: ExecutorKind,
    /// Model round trips per subtask before the loop gives up with partial results.
    pub max_iterations: u32,
    /// Failures of one (tool, error) approach before the model is told to change course.
    pub max_retries_per_tool: u32,
    /// The `pi` binary for `kind = "pi"`.
    pub pi_path: Option<String>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            kind: ExecutorKind::Builtin,
            max_iterations: 25,
            max_retries_per_tool: 2,
            pi_path: None,
        }
    }
}

/// The test command run after a task's code is written (code and tests together).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VerifyConfig {
    pub command: Option<String>,
    pub max_rounds: u32,
    /// Fixes the model rates below this go to the user instead of being applied.
    pub min_confidence: u8,
    /// Check written code (syntax, stubs, tests) before calling work done; on by default.
    pub checks: bool,
    /// When Python code changed and no test ran, the team writes an acceptance test from
    /// the task and runs it (`team/acceptance.rs`); on by default.
    pub acceptance_tests: bool,
    /// How long one run of the team's acceptance test (with the task's examples) may
    /// take, never more than `recovery.subtaskTimeoutMs`. Code that loops forever then
    /// costs this, not the subtask's whole time, before a fix round hears it; the
    /// project's own suites keep the subtask's limit, since they may take minutes.
    pub acceptance_timeout_ms: u64,
    /// Rules of the checks switched off, by id (docs/checks.md).
    pub disabled: Vec<String>,
    /// The fix loop's second round starts afresh: the files the task names are put back
    /// as they were before it and a coder does the task anew, told what failed
    /// (`recovery::quality::FRESH_START_ROUND`), instead of mending the code that failed.
    pub fresh_start: bool,
    /// Once the code fails comparisons of the team's acceptance test, the coders' model
    /// writes the changed file anew from the task alone, and the fix loop tries that
    /// second solution in place of the team's before its first round
    /// (`team/acceptance.rs`); on by default.
    pub second_solution: bool,
    /// A comparison the second solution fails with the code's very values is disputed and
    /// set aside, and a task that passes so is handed to review
    /// (`acceptance.disputed-assert`); off by default: on held-out work its disputes
    /// handed wrong code to review.
    pub disputes: bool,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            command: None,
            max_rounds: 3,
            min_confidence: 50,
            checks: true,
            acceptance_tests: true,
            acceptance_timeout_ms: 120_000,
            disabled: Vec::new(),
            fresh_start: false,
            second_solution: true,
            disputes: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReviewMode {
    /// Top agents ask the model to review each plan.
    Model,
    /// Top agents check plans by fixed rules: no model call (cheap runs, demos).
    Rules,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlanQuorum {
    All,
    WeightedMajority,
}

/// How plans are approved by the top layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GovernanceConfig {
    pub review: ReviewMode,
    pub quorum: PlanQuorum,
    /// How long the top layer has to sign a plan.
    pub decision_ttl_ms: u64,
    /// Plans with more subtasks than this are vetoed by the rules review.
    pub max_subtasks: usize,
}

impl Default for GovernanceConfig {
    fn default() -> Self {
        GovernanceConfig {
            review: ReviewMode::Model,
            quorum: PlanQuorum::WeightedMajority,
            decision_ttl_ms: 300_000,
            max_subtasks: 20,
        }
    }
}

/// Keeping the audit log bounded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoreConfig {
    /// Finished tasks older than this many days have their events folded into a summary
    /// when a session starts (and on `conclave gc`). 0 turns automatic compaction off.
    pub compact_after_days: u32,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            compact_after_days: 30,
        }
    }
}

/// How commands and checks are confined (src/exec/, docs/security.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxConfig {
    /// Whether commands and checks may use the network (TCP). Off by default.
    pub network: bool,
    /// Whether running anything needs the sandbox: with `true` (the default) commands
    /// and checks are refused where Landlock is missing; with `false` they run
    /// unconfined, and Conclave says so.
    pub required: bool,
    /// More places commands may write, besides the workspace (`~/` is the home folder,
    /// other relative paths are the workspace's).
    pub writable_paths: Vec<String>,
    /// More places commands may not read, besides the home folder's secrets.
    pub hidden_paths: Vec<String>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            network: false,
            required: true,
            writable_paths: Vec::new(),
            hidden_paths: Vec::new(),
        }
    }
}

/// What becomes of the files a failed task changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Every file the task changed is put back as it was before the task, unless the
    /// person edited it meanwhile.
    Restore,
    /// The task's changes stay; `conclave undo` can still take them back.
    Keep,
}

/// Taking tasks back (`crate::undo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UndoConfig {
    /// What a task that ends failed leaves: `restore` (the default) or `keep`.
    pub on_failure: OnFailure,
    /// A file larger than this (in bytes) is not kept in the file history when a task
    /// first changes it, so that task cannot put it back.
    pub max_file_bytes: u64,
}

impl Default for UndoConfig {
    fn default() -> Self {
        UndoConfig {
            on_failure: OnFailure::Restore,
            max_file_bytes: 2 * 1024 * 1024,
        }
    }
}

/// MCP servers (docs/protocol.md, "MCP servers"): each one's tools are offered to the
/// agents as `mcp__<server>__<tool>`, under the commands approval policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpConfig {
    pub servers: Vec<McpServerConfig>,
}

/// How long one MCP tool call may take unless `timeoutMs` says otherwise.
pub const DEFAULT_MCP_TIMEOUT_MS: u64 = 60_000;

/// One `[[mcp.servers]]` entry: a program speaking MCP on stdin/stdout (`command`), or a
/// streamable HTTP endpoint (`url`). Values of `env` and `headers` may name variables of
/// Conclave's own environment as `${NAME}`; they are secrets wherever they might show.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerConfig {
    /// Letters, digits, `_` and `-`: it names the server's tools (`mcp__<name>__<tool>`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The only variables the server gets besides the scrubbed environment commands get.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub headers: std::collections::BTreeMap<String, String>,
    /// How long one tool call may take; [`DEFAULT_MCP_TIMEOUT_MS`] when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// A stdio server runs in the commands' sandbox; `true` lets it use the network
    /// even when `sandbox.network` is off (a database or a ticket tracker).
    #[serde(default)]
    pub network: bool,
    #[serde(default = "enabled")]
    pub enabled: bool,
}

fn enabled() -> bool {
    true
}

/// A problem with one `[[mcp.servers]]` entry: which one, which key, what.
#[derive(Debug, PartialEq)]
struct McpEntryProblem {
    index: usize,
    key: Option<String>,
    message: String,
}

impl McpEntryProblem {
    fn describe(&self, line: Option<usize>) -> String {
        let line = line.map(|n| format!("line {n}, ")).unwrap_or_default();
        let key = self
            .key
            .as_ref()
            .map(|k| format!(".{k}"))
            .unwrap_or_default();
        format!("{line}`mcp.servers[{}]{key}`: {}", self.index, self.message)
    }
}

/// The first problem of the `mcp.servers` entries of `layer`: one that does not read as
/// an entry (a key of the wrong type, an unknown or missing key), or one that reads but
/// cannot work (no or two transports, a name that cannot name tools, a name twice).
fn mcp_problem(layer: &serde_json::Value) -> Option<McpEntryProblem> {
    let entries = layer.get("mcp")?.get("servers")?;
    let Some(entries) = entries.as_array() else {
        return Some(McpEntryProblem {
            index: 0,
            key: None,
            message: "expected a list of servers ([[mcp.servers]])".into(),
        });
    };
    let mut names = std::collections::HashSet::new();
    for (index, entry) in entries.iter().enumerate() {
        let problem = |key: Option<&str>, message: String| McpEntryProblem {
            index,
            key: key.map(String::from),
            message,
        };
        let server = match serde_json::from_value::<McpServerConfig>(entry.clone()) {
            Ok(server) => server,
            Err(e) => {
                // Which key: the first that fails over a minimal good entry.
                let key = entry.as_object().and_then(|table| {
                    table.iter().find_map(|(key, value)| {
                        let mut alone = serde_json::json!({ "name": "x", "command": "x" });
                        alone[key.as_str()] = value.clone();
                        serde_json::from_value::<McpServerConfig>(alone)
                            .err()
                            .map(|_| key.clone())
                    })
                });
                return Some(problem(key.as_deref(), e.to_string()));
            }
        };
        if server.name.is_empty()
            || !server
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Some(problem(
                Some("name"),
                format!(
                    "{:?} cannot name tools: use letters, digits, `_` and `-`",
                    server.name
                ),
            ));
        }
        if !names.insert(server.name.clone()) {
            return Some(problem(
                Some("name"),
                format!("two servers are called {:?}", server.name),
            ));
        }
        match (&server.command, &server.url) {
            (None, None) => {
                return Some(problem(
                    None,
                    "needs `command` (a stdio server) or `url` (a streamable HTTP server)".into(),
                ));
            }
            (Some(_), Some(_)) => {
                return Some(problem(
                    Some("url"),
                    "a server has `command` or `url`, not both".into(),
                ));
            }
            (Some(command), None) if command.trim().is_empty() => {
                return Some(problem(Some("command"), "is empty".into()));
            }
            (None, Some(url)) if !(url.starts_with("http://") || url.starts_with("https://")) => {
                return Some(problem(
                    Some("url"),
                    format!("{url:?} is not an http:// or https:// address"),
                ));
            }
            _ => {}
        }
        if server.timeout_ms == Some(0) {
            return Some(problem(Some("timeoutMs"), "must be above 0".into()));
        }
    }
    None
}

/// The line of the `index`-th `[[mcp.servers]]` table of `text`, or of its `key`.
fn mcp_line(text: &str, index: usize, key: Option<&str>) -> Option<usize> {
    let mut seen = 0;
    let mut inside = false;
    let mut header = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line.replace(' ', "") == "[[mcp.servers]]" && {
                seen += 1;
                seen == index + 1
            };
            if inside {
                header = Some(number + 1);
            }
        } else if inside
            && let (Some(key), Some((name, _))) = (key, line.split_once('='))
            && name.trim().trim_matches('"') == key
        {
            return Some(number + 1);
        }
    }
    header
}

/// How long `conclave serve` waits for the editor's answers (docs/protocol.md,
/// `editor`). Whatever happens when a wait runs out loses nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EditorConfig {
    /// An unanswered `conclave/requestApproval` (or `window/showMessageRequest`) is given
    /// up on after this long; the approval stays pending and listed.
    pub approval_timeout_ms: u64,
    /// An unanswered `workspace/applyEdit` is given up on after this long; the server
    /// then writes the file to disk itself.
    pub apply_edit_timeout_ms: u64,
}

impl Default for EditorConfig {
    fn default() -> Self {
        EditorConfig {
            approval_timeout_ms: 600_000,
            apply_edit_timeout_ms: 10_000,
        }
    }
}

/// A configuration layer that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{origin} is not valid: {message}")]
    Invalid { origin: String, message: String },
}

impl Config {
    /// This configuration as `layer` sees it: `llm` is the layer's model
    /// ([`LlmConfig::for_layer`]).
    pub fn for_layer(&self, layer: TeamLayer) -> Config {
        Config {
            llm: self.llm.for_layer(layer),
            ..self.clone()
        }
    }

    /// Defaults, then `<workspace>/conclave.toml` if it exists, then `overrides` (the
    /// editor's `initializationOptions`), merged key by key.
    pub fn load(
        workspace: &Path,
        overrides: Option<&serde_json::Value>,
    ) -> Result<Config, ConfigError> {
        let path = workspace.join("conclave.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let file_layer = match &text {
            Some(text) => Some(parse_toml(text, &path.display().to_string())?),
            None => None,
        };
        Config::from_layers(file_layer.as_ref(), overrides).map_err(|e| {
            match (&e, &text, &file_layer) {
                (ConfigError::Invalid { origin, .. }, Some(text), Some(layer))
                    if origin == "conclave.toml"
                        && let Some(problem) = mcp_problem(layer) =>
                {
                    let line = mcp_line(text, problem.index, problem.key.as_deref());
                    ConfigError::Invalid {
                        origin: origin.clone(),
                        message: problem.describe(line),
                    }
                }
                (ConfigError::Invalid { origin, message }, Some(text), Some(layer))
                    if origin == "conclave.toml" =>
                {
                    located(text, layer, message).unwrap_or(e)
                }
                _ => e,
            }
        })
    }

    /// Defaults overridden by each present layer in turn. Each layer is checked as it is
    /// laid on, so a bad value is blamed on the layer that brought it: a typo in
    /// `conclave.toml` is reported as such even when the editor sends options too.
    pub fn from_layers(
        file_layer: Option<&serde_json::Value>,
        overrides: Option<&serde_json::Value>,
    ) -> Result<Config, ConfigError> {
        let mut merged = serde_json::to_value(Config::default()).expect("config serialises");
        let check = |merged: &serde_json::Value, origin: &str| {
            serde_json::from_value::<Config>(merged.clone()).map_err(|e| ConfigError::Invalid {
                origin: origin.to_string(),
                message: e.to_string(),
            })
        };
        let defaults = merged.clone();
        let mut config = Config::default();
        if let Some(layer) = file_layer {
            if let Some(problem) = mcp_problem(layer) {
                return Err(ConfigError::Invalid {
                    origin: "conclave.toml".into(),
                    message: problem.describe(None),
                });
            }
            warn_unknown(&defaults, layer, "conclave.toml");
            merge(&mut merged, layer);
            config = check(&merged, "conclave.toml")?;
        }
        if let Some(layer) = overrides {
            let sets_nothing = match layer {
                serde_json::Value::Null => true,
                serde_json::Value::Array(items) => items.is_empty(),
                _ => false,
            };
            if !(layer.is_object() || sets_nothing) {
                return Err(ConfigError::Invalid {
                    origin: "initializationOptions".to_string(),
                    message: format!("expected an object of settings, got {layer}"),
                });
            }
            if let Some(problem) = mcp_problem(layer) {
                return Err(ConfigError::Invalid {
                    origin: "initializationOptions".into(),
                    message: problem.describe(None),
                });
            }
            warn_unknown(&defaults, layer, "initializationOptions");
            merge(&mut merged, layer);
            config = check(&merged, "initializationOptions")?;
        }
        for id in crate::checks::unknown_ids(&config.verify.disabled) {
            tracing::warn!(
                "verify.disabled: no check rule is called `{id}`, so it switches nothing off (the rules: {})",
                crate::checks::RULES
                    .iter()
                    .map(|r| r.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        Ok(config)
    }
}

/// Logs every setting of `layer` that Conclave does not know (a typo, most likely): it
/// is ignored, and the warning says so and lists the settings known at that level.
fn warn_unknown(defaults: &serde_json::Value, layer: &serde_json::Value, origin: &str) {
    for (key, known) in unknown_keys(defaults, layer, "") {
        tracing::warn!(
            "{origin}: unknown setting `{key}` is ignored (known here: {})",
            known.join(", ")
        );
    }
}

/// (dotted key, the keys known beside it) for each key of `layer` absent from `defaults`.
fn unknown_keys(
    defaults: &serde_json::Value,
    layer: &serde_json::Value,
    prefix: &str,
) -> Vec<(String, Vec<String>)> {
    let (Some(defaults), Some(layer)) = (defaults.as_object(), layer.as_object()) else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    for (key, value) in layer {
        let dotted = format!("{prefix}{key}");
        match defaults.get(key) {
            Some(default) => {
                unknown.extend(unknown_keys(default, value, &format!("{dotted}.")));
            }
            None => unknown.push((dotted, defaults.keys().cloned().collect())),
        }
    }
    unknown
}

/// `message`, the error of a `conclave.toml` whose values do not fit, with the line and
/// the whole key (`team.top`) of the value it is about, which the merged layers no
/// longer know: the first value of the file that alone, over the defaults, meets the
/// same error. `None` when no single value does.
fn located(text: &str, file_layer: &serde_json::Value, message: &str) -> Option<ConfigError> {
    let defaults = serde_json::to_value(Config::default()).ok()?;
    let mut leaves = Vec::new();
    leaf_paths(file_layer, &mut Vec::new(), &mut leaves);
    let (path, _) = leaves.into_iter().find_map(|(path, value)| {
        let mut layer = value.clone();
        for key in path.iter().rev() {
            layer = serde_json::json!({ key.as_str(): layer });
        }
        let mut merged = defaults.clone();
        merge(&mut merged, &layer);
        match serde_json::from_value::<Config>(merged) {
            Err(e) if e.to_string() == message => Some((path, value)),
            _ => None,
        }
    })?;
    let line = line_of(text, &path)
        .map(|n| format!("line {n}, "))
        .unwrap_or_default();
    Some(ConfigError::Invalid {
        origin: "conclave.toml".into(),
        message: format!("{line}`{}`: {message}", path.join(".")),
    })
}

/// Every value of `value` that is not a table, with its path of keys, in order.
fn leaf_paths<'a>(
    value: &'a serde_json::Value,
    path: &mut Vec<String>,
    leaves: &mut Vec<(Vec<String>, &'a serde_json::Value)>,
) {
    match value.as_object() {
        Some(table) => {
            for (key, inner) in table {
                path.push(key.clone());
                leaf_paths(inner, path, leaves);
                path.pop();
            }
        }
        None => leaves.push((path.clone(), value)),
    }
}

/// The line of `text` (TOML) that sets the key at `path`: under a `[table]` header with
/// the key on its line, or as a dotted key.
fn line_of(text: &str, path: &[String]) -> Option<usize> {
    for split in (0..path.len()).rev() {
        let (table, key) = (path[..split].join("."), path[split..].join("."));
        let mut current = String::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with('[') {
                current = line
                    .trim_matches(|c| c == '[' || c == ']')
                    .trim()
                    .to_string();
            } else if let Some((name, _)) = line.split_once('=') {
                let name: String = name
                    .split('.')
                    .map(|part| part.trim().trim_matches('"'))
                    .collect::<Vec<_>>()
                    .join(".");
                if current == table && name == key {
                    return Some(index + 1);
                }
            }
        }
    }
    None
}

fn parse_toml(text: &str, origin: &str) -> Result<serde_json::Value, ConfigError> {
    let value: toml::Value = toml::from_str(text).map_err(|e| ConfigError::Invalid {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    serde_json::to_value(value).map_err(|e| ConfigError::Invalid {
        origin: origin.to_string(),
        message: e.to_string(),
    })
}

/// Overlays `layer` onto `base`: objects merge key by key, anything else replaces.
/// `null` in a layer means "not set" and keeps the value below it, and so does an empty
/// array where an object is expected: Lua clients (Neovim) encode an empty table as `[]`.
fn merge(base: &mut serde_json::Value, layer: &serde_json::Value) {
    match (base, layer) {
        (serde_json::Value::Object(base), serde_json::Value::Object(layer)) => {
            for (key, value) in layer {
                match base.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (_, serde_json::Value::Null) => {}
        (serde_json::Value::Object(_), serde_json::Value::Array(items)) if items.is_empty() => {}
        (base, layer) => *base = layer.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_match_the_protocol() {
        let config = Config::default();
        assert_eq!(config.heartbeat_ms, 4000);
        assert_eq!(config.team.max_agents, 50);
        assert_eq!(config.recovery.severity.medium.max_retries, 2);
        assert_eq!(config.recovery.severity.medium.base_delay_ms, 5000);
        assert_eq!(config.recovery.call.max_attempts, 3);
    }

    #[test]
    fn layers_override_key_by_key() {
        let file = json!({ "team": { "top": 5 }, "recovery": { "call": { "maxAttempts": 7 } } });
        let init = json!({ "team": { "mid": 4 }, "writes": "disk" });
        let config = Config::from_layers(Some(&file), Some(&init)).unwrap();
        assert_eq!(config.team.top, 5);
        assert_eq!(config.team.mid, 4);
        assert_eq!(config.team.bottom_per_mid, 2);
        assert_eq!(config.recovery.call.max_attempts, 7);
        assert_eq!(config.recovery.call.base_delay_ms, 250);
        assert_eq!(config.writes, WriteMode::Disk);
    }

    #[test]
    fn toml_file_is_read_from_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("conclave.toml"),
            "heartbeatMs = 1000\n[llm]\nprovider = \"scripted\"\nscript = \"s.json\"\n",
        )
        .unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.heartbeat_ms, 1000);
        assert_eq!(config.llm.provider, Some(LlmProvider::Scripted));
    }

    #[test]
    fn limits_pricing_and_context_window_are_read() {
        let file = json!({
            "llm": { "model": "qwen", "baseUrl": "http://127.0.0.1:18080/v1" },
            "limits": { "maxTokensPerTask": 50000 },
            "pricing": { "qwen": { "input": 0.5, "output": 1.5 } }
        });
        let config = Config::from_layers(Some(&file), None).unwrap();
        assert_eq!(config.limits.max_tokens_per_task, Some(50_000));
        assert_eq!(config.pricing["qwen"].output, 1.5);
        assert_eq!(config.llm.context_window(), LOCAL_CONTEXT_WINDOW);
        let hosted =
            Config::from_layers(Some(&json!({ "llm": { "provider": "openai" } })), None).unwrap();
        assert_eq!(hosted.llm.context_window(), HOSTED_CONTEXT_WINDOW);
        let set =
            Config::from_layers(Some(&json!({ "llm": { "contextWindow": 4096 } })), None).unwrap();
        assert_eq!(set.llm.context_window(), 4096);
        assert_eq!(Config::default().limits.max_tokens_per_task, None);
    }

    #[test]
    fn the_spend_cap_is_on_by_default_and_zero_turns_it_off() {
        let default = Config::default().limits;
        assert_eq!(default.max_cost_per_task_usd, DEFAULT_MAX_COST_PER_TASK_USD);
        assert_eq!(default.cost_cap_usd(), Some(2.0));
        // Setting another budget keeps the default cap.
        let tokens_only = json!({ "limits": { "maxTokensPerTask": 1000 } });
        let config = Config::from_layers(Some(&tokens_only), None).unwrap();
        assert_eq!(config.limits.cost_cap_usd(), Some(2.0));
        let off = json!({ "limits": { "maxCostPerTaskUsd": 0 } });
        let config = Config::from_layers(Some(&off), None).unwrap();
        assert_eq!(config.limits.cost_cap_usd(), None);
        let set = json!({ "limits": { "maxCostPerTaskUsd": 0.25 } });
        let config = Config::from_layers(Some(&set), None).unwrap();
        assert_eq!(config.limits.cost_cap_usd(), Some(0.25));
        let negative = LimitsConfig {
            max_cost_per_task_usd: -1.0,
            ..LimitsConfig::default()
        };
        assert_eq!(negative.cost_cap_usd(), None);
    }

    #[test]
    fn only_openai_and_anthropic_themselves_are_hosted() {
        let llm = |url: Option<&str>| LlmConfig {
            base_url: url.map(String::from),
            ..LlmConfig::default()
        };
        assert!(llm(None).is_hosted());
        assert!(llm(Some("https://api.openai.com/v1")).is_hosted());
        assert!(llm(Some(" https://api.anthropic.com")).is_hosted());
        assert!(!llm(Some("http://127.0.0.1:11434/v1")).is_hosted());
        assert!(!llm(Some("https://openrouter.ai/api/v1")).is_hosted());
        let provider = |provider, url: Option<&str>| LlmConfig {
            provider,
            ..llm(url)
        };
        assert!(provider(Some(LlmProvider::Anthropic), None).calls_hosted_api());
        assert!(provider(Some(LlmProvider::Openai), None).calls_hosted_api());
        assert!(
            !provider(Some(LlmProvider::Openai), Some("http://127.0.0.1:8080/v1"))
                .calls_hosted_api()
        );
        assert!(provider(None, Some("https://api.openai.com/v1")).calls_hosted_api());
        assert!(!provider(None, None).calls_hosted_api());
        assert!(!provider(Some(LlmProvider::Scripted), None).calls_hosted_api());
    }

    #[test]
    fn a_layer_takes_its_own_model_and_the_rest_from_llm() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("conclave.toml"),
            "[llm]\nprovider = \"openai\"\nbaseUrl = \"http://127.0.0.1:18080/v1\"\n\
             model = \"small\"\napiKeyEnv = \"LOCAL_KEY\"\ntemperature = 0.2\ncontextWindow = 8192\n\n\
             [llm.mid]\nmodel = \"medium\"\n\n\
             [llm.top]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\napiKeyEnv = \"REVIEW_KEY\"\n",
        )
        .unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        // No table of its own: [llm] as it is.
        let bottom = config.llm.for_layer(TeamLayer::Bottom);
        assert_eq!(bottom.model.as_deref(), Some("small"));
        assert_eq!(
            bottom.base_url.as_deref(),
            Some("http://127.0.0.1:18080/v1")
        );
        assert_eq!(
            bottom,
            LlmConfig {
                top: LlmOverride::default(),
                mid: LlmOverride::default(),
                ..config.llm.clone()
            }
        );
        // The same server with another model: the server, key and sampling carry over.
        let mid = config.llm.for_layer(TeamLayer::Mid);
        assert_eq!(mid.model.as_deref(), Some("medium"));
        assert_eq!(mid.base_url.as_deref(), Some("http://127.0.0.1:18080/v1"));
        assert_eq!(mid.api_key_env.as_deref(), Some("LOCAL_KEY"));
        assert_eq!(mid.context_window(), 8192);
        // Another provider starts from its own defaults: no local URL, no local window.
        let top = config.llm.for_layer(TeamLayer::Top);
        assert_eq!(top.provider, Some(LlmProvider::Anthropic));
        assert_eq!(top.base_url, None);
        assert!(top.calls_hosted_api());
        assert_eq!(top.context_window(), HOSTED_CONTEXT_WINDOW);
        assert_eq!(top.temperature, Some(0.2));
        // Every layer's key is a secret.
        let keys = config.llm.key_variables();
        assert!(
            keys.contains(&"LOCAL_KEY".to_string()) && keys.contains(&"REVIEW_KEY".to_string())
        );
        // A key a layer does not know is warned about, as anywhere else.
        let defaults = serde_json::to_value(Config::default()).unwrap();
        let unknown = unknown_keys(
            &defaults,
            &json!({ "llm": { "top": { "modle": "x" } } }),
            "",
        );
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].0, "llm.top.modle");
        assert!(unknown[0].1.contains(&"model".to_string()));
    }

    #[test]
    fn a_value_of_the_wrong_type_in_the_file_names_its_line_and_whole_key() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                // A table of severities needs the defaults the file leaves out.
                "heartbeatMs = 1000\n[recovery.severity.low]\nbaseDelayMs = 10\n\n[team]\ntop = \"three\"\n",
                "conclave.toml is not valid: line 6, `team.top`: invalid type: string \"three\"",
            ),
            (
                "recovery.call.maxAttempts = \"many\"\n",
                "conclave.toml is not valid: line 1, `recovery.call.maxAttempts`: invalid type: string \"many\"",
            ),
            (
                "[team]\ntop = \"three\"\n",
                "conclave.toml is not valid: line 2, `team.top`: invalid type: string \"three\"",
            ),
            (
                "writes = \"disk\"\n\n[recovery.severity.low]\nbaseDelayMs = -3\n",
                "conclave.toml is not valid: line 4, `recovery.severity.low.baseDelayMs`: invalid value: integer `-3`",
            ),
            (
                "heartbeatMs = \"soon\"\n",
                "conclave.toml is not valid: line 1, `heartbeatMs`: invalid type: string \"soon\"",
            ),
        ];
        for (text, expected) in cases {
            std::fs::write(dir.path().join("conclave.toml"), text).unwrap();
            let message = Config::load(dir.path(), None).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{text:?}: {message}");
        }
        // A bad value from the editor is not blamed on a line of the file.
        std::fs::write(dir.path().join("conclave.toml"), "heartbeatMs = 1000\n").unwrap();
        let message = Config::load(dir.path(), Some(&json!({ "writes": "paper" })))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("initializationOptions is not valid"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_value_names_its_origin() {
        let err = Config::from_layers(None, Some(&json!({ "writes": "paper" }))).unwrap_err();
        assert!(err.to_string().contains("initializationOptions"), "{err}");
    }

    #[test]
    fn a_typo_in_the_file_is_blamed_on_the_file_even_with_editor_options() {
        let file = json!({ "writes": "dsk" });
        for init in [json!({}), json!({ "heartbeatMs": 1000 }), json!(null)] {
            let err = Config::from_layers(Some(&file), Some(&init)).unwrap_err();
            let message = err.to_string();
            assert!(
                message.starts_with("conclave.toml is not valid"),
                "{message}"
            );
            assert!(message.contains("dsk"), "{message}");
        }
        let err =
            Config::from_layers(Some(&json!({})), Some(&json!({ "writes": "paper" }))).unwrap_err();
        assert!(
            err.to_string().starts_with("initializationOptions"),
            "{err}"
        );
    }

    #[test]
    fn unknown_settings_are_found_with_the_keys_known_beside_them() {
        let defaults = serde_json::to_value(Config::default()).unwrap();
        let layer =
            json!({ "aprovals": {}, "approvals": { "fileChange": "ask" }, "heartbeatMs": 5 });
        let unknown = unknown_keys(&defaults, &layer, "");
        let keys: Vec<&str> = unknown.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["approvals.fileChange", "aprovals"]);
        assert!(unknown[0].1.contains(&"fileChanges".to_string()));
    }

    #[test]
    fn check_rules_are_switched_off_by_id_in_the_file_or_the_editor() {
        let file = parse_toml("[verify]\ndisabled = [\"python.stub\"]\n", "conclave.toml").unwrap();
        let config = Config::from_layers(Some(&file), None).unwrap();
        assert_eq!(config.verify.disabled, ["python.stub"]);
        let init = json!({ "verify": { "disabled": ["names.rename", "tests.acceptance"] } });
        let config = Config::from_layers(Some(&file), Some(&init)).unwrap();
        assert_eq!(config.verify.disabled, ["names.rename", "tests.acceptance"]);
        assert!(Config::default().verify.disabled.is_empty());
    }

    #[test]
    fn empty_or_null_editor_options_keep_the_file_settings() {
        let file = json!({ "heartbeatMs": 1000, "llm": { "model": "m1" } });
        for init in [json!([]), json!(null), json!({}), json!({ "llm": [] })] {
            let config = Config::from_layers(Some(&file), Some(&init)).unwrap();
            assert_eq!(config.heartbeat_ms, 1000, "{init}");
            assert_eq!(config.llm.model.as_deref(), Some("m1"), "{init}");
        }
    }

    #[test]
    fn editor_options_that_are_not_an_object_are_refused() {
        for init in [json!([1]), json!("fast"), json!(3)] {
            let err = Config::from_layers(None, Some(&init)).unwrap_err();
            assert!(err.to_string().contains("expected an object"), "{err}");
        }
    }

    #[test]
    fn mcp_servers_are_read_with_their_defaults() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("conclave.toml"),
            "[[mcp.servers]]\nname = \"db\"\ncommand = \"db-mcp\"\nargs = [\"--ro\"]\nenv = { DB_URL = \"${DB_URL}\" }\n\n[[mcp.servers]]\nname = \"tracker\"\nurl = \"https://mcp.example.com/mcp\"\nheaders = { Authorization = \"Bearer ${TRACKER_TOKEN}\" }\ntimeoutMs = 5000\nenabled = false\n",
        )
        .unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        let [db, tracker] = &config.mcp.servers[..] else {
            panic!("{:?}", config.mcp.servers)
        };
        assert_eq!(db.command.as_deref(), Some("db-mcp"));
        assert_eq!(db.args, ["--ro"]);
        assert_eq!(db.env["DB_URL"], "${DB_URL}");
        assert!(db.enabled && !db.network && db.timeout_ms.is_none());
        assert_eq!(tracker.url.as_deref(), Some("https://mcp.example.com/mcp"));
        assert_eq!(tracker.timeout_ms, Some(5000));
        assert!(!tracker.enabled);
    }

    #[test]
    fn a_bad_mcp_server_names_its_entry_key_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n\n[[mcp.servers]]\nname = \"b\"\ncommand = \"y\"\ntimeoutMs = \"soon\"\n",
                "conclave.toml is not valid: line 8, `mcp.servers[1].timeoutMs`: invalid type: string \"soon\"",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncomand = \"x\"\n",
                "conclave.toml is not valid: line 3, `mcp.servers[0].comand`: unknown field `comand`",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\n",
                "conclave.toml is not valid: line 1, `mcp.servers[0]`: needs `command`",
            ),
            (
                "[[mcp.servers]]\nname = \"a b\"\ncommand = \"x\"\n",
                "conclave.toml is not valid: line 2, `mcp.servers[0].name`: \"a b\" cannot name tools",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
                "conclave.toml is not valid: line 4, `mcp.servers[0].url`: a server has `command` or `url`, not both",
            ),
            (
                "[[mcp.servers]]\nname = \"a\"\ncommand = \"x\"\n[[mcp.servers]]\nname = \"a\"\nurl = \"ftp://h\"\n",
                "conclave.toml is not valid: line 5, `mcp.servers[1].name`: two servers are called \"a\"",
            ),
        ];
        for (text, expected) in cases {
            std::fs::write(dir.path().join("conclave.toml"), text).unwrap();
            let message = Config::load(dir.path(), None).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{text:?}: {message}");
        }
        let options = json!({ "mcp": { "servers": [ { "name": "a" } ] } });
        let err = Config::from_layers(None, Some(&options)).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("initializationOptions is not valid: `mcp.servers[0]`: needs"),
            "{err}"
        );
    }
}
