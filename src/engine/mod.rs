//! The engine: Conclave's protocol-agnostic API. Front-ends (the language server, the
//! command line) translate their requests into these calls and render the event stream;
//! nothing here knows about JSON-RPC or terminals.
//!
//! Calls return at once: `submit` hands the task to a mid agent and answers with its id;
//! the team works in its own tasks and reports through [`Engine::subscribe`].

mod error;
mod lock;
mod open;
mod resume;
mod undo;

pub use error::EngineError;
pub use lock::{ClientName, Holder, LockError, WorkspaceLock, process_alive};
pub use open::{OpenError, OpenedWorkspace, open_workspace};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::Utc;
use dashmap::DashMap;
use serde_json::json;
use uuid::Uuid;

use crate::config::{Config, ExecutorKind, TeamLayer};
use crate::exec::{Runner, RunnerSettings};
use crate::executor::Executor;
use crate::executor::breaker::BreakerExecutor;
use crate::executor::builtin::{BuiltinExecutor, BuiltinSettings};
use crate::executor::pi::PiExecutor;
use crate::model::redacting::RedactingModel;
use crate::model::resilient::ResilientModel;
use crate::model::{ModelError, ModelProvider, TeamModels};
use crate::records::EventScope;
use crate::recovery::{RecoveryAction, Severity};
use crate::runtime::usage::Meter;
use crate::runtime::{
    Accessor, AgentId, AgentInfo, ApprovalAnswer, ApprovalRequest, Approvals, EventBus,
    EventStream, Layer, Message, Runtime, RuntimeEvent, Snapshot, SubtaskStatus, TaskContext,
    TaskId, TaskOptions, TaskRecord, TaskStatus, Tasks, Team, WhiteboardId,
};
use crate::store::Store;
use crate::team::{
    BehaviorFactory, CommandApprover, Refusals, Services, SwappableWriter, Whose, recovery_event,
    standard_behaviors,
};
use crate::tools::mcp::{McpContext, McpHub, McpServerSpec};
use crate::tools::{DiskWriter, Sandbox, ToolRegistry, ToolSettings, WorkspaceWriter};
use crate::wire::{TaskDetail, TaskSummary};

/// "the ACP session 1f2e…" for `acp:1f2e…`.
fn describe_owner(owner: &str) -> String {
    match owner.split_once(':') {
        Some(("acp", session)) => format!("the ACP session {session}"),
        _ => owner.to_string(),
    }
}

/// What `submit` takes (docs/protocol.md `conclave/submitTask`).
#[derive(Clone, Debug, Default)]
pub struct SubmitTask {
    pub description: String,
    pub title: Option<String>,
    pub context: TaskContext,
    pub options: TaskOptions,
    /// Who the task's work belongs to (`acp:<session id>`): after a restart it stays
    /// parked until its owner claims it ([`Engine::claim`]). `None`: anyone's.
    pub owner: Option<String>,
}

/// How to start an engine.
pub struct EngineSetup {
    pub workspace: PathBuf,
    pub config: Config,
    /// `None` keeps the audit log in memory only.
    pub store: Option<Store>,
    /// `serve`, `run` or `demo`, for reports.
    pub mode: String,
    /// The agents' behaviours; the standard top/mid/bottom ones unless a test swaps one.
    pub behaviors: Option<BehaviorFactory>,
    /// The model, when the caller built it (tests); otherwise from `config.llm`.
    pub model: Option<Arc<dyn ModelProvider>>,
    /// The runtime's event stream. A caller that subscribes before `Engine::start` sees
    /// everything from the first agent coming up.
    pub events: EventBus,
}

impl EngineSetup {
    pub fn new(workspace: impl Into<PathBuf>, config: Config) -> Self {
        EngineSetup {
            workspace: workspace.into(),
            config,
            store: None,
            mode: "serve".into(),
            behaviors: None,
            model: None,
            events: EventBus::default(),
        }
    }
}

/// ERROR_REPORT.md's text and where it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorReport {
    pub markdown: String,
    pub path: PathBuf,
}

pub struct Engine {
    services: Arc<Services>,
    team: Team,
    /// The MCP servers of the workspace and of its ACP sessions (built-in executor
    /// only: pi has tools of its own).
    mcp: Option<Arc<McpHub>>,
    /// Why no model is available, when none is (for LlmNotConfigured).
    model_problem: Option<String>,
    /// One undo at a time: each looks at the files, then changes them.
    undoing: tokio::sync::Mutex<()>,
}

impl Engine {
    /// Starts the runtime and the configured team on `setup.workspace`.
    pub async fn start(setup: EngineSetup) -> Result<Arc<Engine>, EngineError> {
        let EngineSetup {
            workspace,
            config,
            store,
            mode,
            behaviors,
            model,
            events,
        } = setup;
        let workspace = workspace.canonicalize().map_err(|e| {
            EngineError::Internal(format!("workspace {}: {e}", workspace.display()))
        })?;
        let sandbox = Sandbox::new(&workspace).map_err(|e| EngineError::Internal(e.to_string()))?;
        // The keys this configuration names are secrets wherever they might show up.
        crate::redact::register_environment(&config.llm.key_variables());
        let runtime = Runtime::with_events(config.clone(), store.clone(), events);
        let tasks = Tasks::new(runtime.events.clone(), store.clone());
        let approvals = Approvals::new(runtime.events.clone(), store.clone());

        // Every call's tokens and cost are counted, and `limits.maxTokensPerTask` pauses
        // a task at its limit (src/runtime/usage.rs): one meter over every layer's model.
        let meter = Arc::new(Meter::new(&config, tasks.clone(), approvals.clone()));
        let wrap = |provider, llm: &crate::config::LlmConfig| {
            // Redaction sits next to the network: nothing a retry or a decorator adds
            // gets past it.
            let provider: Arc<dyn ModelProvider> = Arc::new(RedactingModel::new(provider));
            let mut recovery = config.recovery.clone();
            if let Some(timeout) = llm.timeout_ms {
                recovery.step_timeout_ms = timeout;
            }
            resilient(provider, &recovery, &runtime, &tasks)
        };
        let (models, model_problem) = match team_models(model, &config, &workspace, wrap) {
            Ok(models) => (
                Some(TeamModels {
                    top: metered(&meter, models.top, &config, TeamLayer::Top),
                    mid: metered(&meter, models.mid, &config, TeamLayer::Mid),
                    bottom: metered(&meter, models.bottom, &config, TeamLayer::Bottom),
                }),
                None,
            ),
            Err(ModelError::NotConfigured { message }) => {
                tracing::info!(
                    "no model configured: tasks will be refused until one is ({message})"
                );
                (None, Some(message))
            }
            Err(e) => return Err(EngineError::LlmNotConfigured(e.to_string())),
        };

        // Every write for a task is noted in its file history, so it can be taken back.
        let history =
            crate::undo::FileHistory::new(store.clone(), tasks.clone(), config.undo.max_file_bytes);
        let writer = Arc::new(
            SwappableWriter::new(Arc::new(DiskWriter::new(sandbox.clone())))
                .with_history(history.clone(), sandbox.clone()),
        );
        let refusals = Refusals::default();
        // One runner for the team's commands and checks: one sandbox, one temp folder.
        let runner = Runner::new(RunnerSettings::from_config(&config, &workspace))
            .map_err(|e| EngineError::Internal(format!("no temp folder for commands: {e}")))?;
        let mut mcp = None;
        let bottom = config.for_layer(TeamLayer::Bottom);
        let executor: Option<Arc<dyn Executor>> = match (&models, config.executor.kind) {
            (None, _) => None,
            (Some(models), ExecutorKind::Builtin) => {
                let approver = Arc::new(CommandApprover {
                    approvals: approvals.clone(),
                    tasks: tasks.clone(),
                    refusals: refusals.clone(),
                });
                let settings = ToolSettings::from_config(&config);
                let hub = mcp_hub(
                    &config,
                    &runtime,
                    &tasks,
                    McpContext {
                        runner: runner.clone(),
                        policy: config.approvals.commands,
                        approver: Some(approver.clone()),
                        report: Arc::new(|_: &str| {}),
                        max_output_bytes: settings.bash.max_output_bytes,
                    },
                );
                let registry = ToolRegistry::with_runner(
                    sandbox.clone(),
                    writer.clone() as Arc<dyn WorkspaceWriter>,
                    settings,
                    Some(approver),
                    runner.clone(),
                )
                .with_source(hub.clone())
                .with_write_observer(files_of_subtasks(tasks.clone()))
                .with_retry_listener(call_retry_listener(&runtime, EventScope::Tool));
                mcp = Some(hub);
                Some(Arc::new(BuiltinExecutor::new(
                    models.bottom.clone(),
                    Arc::new(registry),
                    BuiltinSettings::from_config(&bottom),
                )))
            }
            // pi runs a process of its own, so it gets a breaker of its own
            // (executor/breaker.rs); its model calls never pass through `resilient`.
            (Some(_), ExecutorKind::Pi) => {
                let pi = PiExecutor::from_config(&bottom, &workspace)
                    .map_err(|e| EngineError::Internal(e.to_string()))?;
                Some(Arc::new(BreakerExecutor::new(
                    Arc::new(pi),
                    "pi",
                    &config.recovery.breaker,
                    Some(breaker_listener(&runtime, &tasks)),
                )))
            }
        };

        let session = format!(
            "{}-{}",
            Utc::now().format("%Y%m%dT%H%M%SZ"),
            &Uuid::new_v4().simple().to_string()[..8]
        );
        let services = Arc::new(Services {
            config: config.clone(),
            session_dir: workspace.join(".conclave").join("sessions").join(session),
            workspace,
            sandbox,
            runner,
            runtime: runtime.clone(),
            tasks,
            approvals,
            models,
            executor,
            writer,
            behaviors: behaviors.unwrap_or_else(standard_behaviors),
            task_state: DashMap::new(),
            attempts: DashMap::new(),
            replaced: DashMap::new(),
            mid_claims: DashMap::new(),
            replacements: tokio::sync::watch::channel(0).0,
            refusals,
            mode,
            history,
        });
        {
            let services = Arc::downgrade(&services);
            meter.set_canceller(Arc::new(move |task| {
                if let Some(services) = services.upgrade() {
                    cancel_task(&services, task);
                }
            }));
        }
        if let Some(store) = &store
            && config.store.compact_after_days > 0
        {
            let before =
                Utc::now() - chrono::Duration::days(i64::from(config.store.compact_after_days));
            match store.compact(before).await {
                Ok(done) if done.tasks > 0 => tracing::info!(
                    tasks = done.tasks,
                    messages = done.messages,
                    "compacted the history of old tasks"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!("the store could not be compacted: {e}"),
            }
        }
        let root = services.workspace.clone();
        match tokio::task::spawn_blocking(move || {
            crate::tools::writer::sweep_stale_temp_files(&root)
        })
        .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!("removed {n} temp file(s) left by an interrupted write"),
            Err(e) => tracing::warn!("the workspace could not be swept for stale temp files: {e}"),
        }
        let saved = match &store {
            Some(store) => resume::load(store, &config.team)
                .await
                .map_err(|e| EngineError::Internal(format!("the store could not be read: {e}")))?,
            None => resume::Saved::default(),
        };
        for board in saved.boards {
            runtime.whiteboards.restore(board);
        }
        let behavior_for =
            |agent: &crate::runtime::AgentConfig| (services.behaviors)(agent, &services);
        let team = if saved.team.is_empty() {
            runtime.build_team(behavior_for)
        } else {
            tracing::info!(
                agents = saved.team.len(),
                "the previous team comes back with its ids"
            );
            crate::runtime::restore_team(&runtime.pool, saved.team, behavior_for)
        }
        .map_err(|e| match e {
            crate::runtime::AgentError::PoolFull { max } => EngineError::AgentPoolFull { max },
            other => EngineError::Internal(other.to_string()),
        })?;
        runtime.start_heartbeats();
        spawn_hung_agent_watch(services.clone());
        let engine = Arc::new(Engine {
            services,
            team,
            mcp,
            model_problem,
            undoing: tokio::sync::Mutex::new(()),
        });
        let resumed: Vec<TaskId> = saved.tasks.iter().map(|t| t.id).collect();
        for task in saved.finished {
            engine.services.tasks.restore_finished(task);
        }
        for task in saved.tasks {
            engine.services.tasks.insert(task);
        }
        for approval in saved.approvals {
            engine.services.approvals.restore(approval);
        }
        for approval in saved.carried {
            engine.services.approvals.carry(approval);
        }
        for id in resumed {
            // A task with an owner waits for it: nothing it does may go out under
            // anyone else (an ACP session's writes name the session).
            let owner = engine.services.tasks.get(id).and_then(|t| t.owner);
            if let Some(owner) = owner {
                tracing::info!(task = %id, %owner, "an unfinished task stays parked until its owner comes back");
                engine.services.tasks.update(id, |t| {
                    t.parked = Some(format!(
                        "waiting for {} to be loaded again",
                        describe_owner(&owner)
                    ));
                });
                continue;
            }
            tracing::info!(task = %id, "resuming an unfinished task from its last checkpoint");
            if let Err(e) = engine.dispatch(id) {
                tracing::error!(task = %id, "could not resume: {e}");
            }
        }
        Ok(engine)
    }

    /// The owner of the task the calling code works for (the task or subtask of the
    /// usage scope it runs in), if that task has one.
    pub fn owner_of_current_work(&self) -> Option<String> {
        let scope = crate::model::metered::current_scope()?;
        let task = scope
            .task
            .or_else(|| scope.subtask.and_then(|s| self.services.tasks.task_of(s)))?;
        self.services.tasks.get(task)?.owner
    }

    /// Resumes the parked tasks that belong to `owner` (its session was loaded again);
    /// returns them.
    pub fn claim(&self, owner: &str) -> Vec<TaskId> {
        let mut parked = Vec::new();
        self.services.tasks.visit(|t| {
            if t.parked.is_some() && t.owner.as_deref() == Some(owner) {
                parked.push(t.id);
            }
        });
        for &id in &parked {
            self.services.tasks.update(id, |t| t.parked = None);
            tracing::info!(task = %id, owner, "resuming a parked task: its owner is back");
            if let Err(e) = self.dispatch(id) {
                tracing::error!(task = %id, "could not resume: {e}");
            }
        }
        parked
    }

    pub fn workspace(&self) -> &Path {
        &self.services.workspace
    }

    /// What people must be told about how commands run, when they are not confined as
    /// configured (no Landlock): `None` when they are.
    pub fn sandbox_warning(&self) -> Option<String> {
        self.services.runner.warning()
    }

    /// The workspace's path rules, shared with the team (clones share what is
    /// withheld).
    pub fn sandbox(&self) -> &Sandbox {
        &self.services.sandbox
    }

    pub fn config(&self) -> &Config {
        &self.services.config
    }

    pub fn team(&self) -> &Team {
        &self.team
    }

    pub fn session_dir(&self) -> &Path {
        &self.services.session_dir
    }

    /// The runtime underneath, for front-ends that show agents and boards.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.services.runtime
    }

    /// Everything observable, from now on. Every event's record was queued for the
    /// store before the event was published, so an event received and then
    /// [`durable`](Engine::durable) is on disk.
    pub fn subscribe(&self) -> EventStream {
        self.services.runtime.events.subscribe()
    }

    /// Waits until everything recorded so far is committed to the store (at once
    /// without one). One wait covers every record before it: the store commits them
    /// as one batch, so many callers share one commit. A store that cannot commit
    /// (locked, disk full) keeps this waiting until it can: nothing is reported as
    /// done that a kill would lose.
    pub async fn durable(&self) {
        if let Some(store) = &self.services.runtime.store
            && let Err(e) = store.flush().await
        {
            // Only when the store has stopped (the engine is shutting down).
            tracing::debug!("the store's writer has stopped: {e}");
        }
    }

    /// Writes generated files through `writer` from now on (the editor's applyEdit).
    pub fn set_writer(&self, writer: Arc<dyn WorkspaceWriter>) {
        self.services.writer.set(writer);
    }

    /// Queues a task and hands it to the least busy mid agent. Returns at once.
    pub fn submit(&self, request: SubmitTask) -> Result<TaskId, EngineError> {
        if self.services.models.is_none() {
            return Err(EngineError::LlmNotConfigured(
                self.model_problem
                    .clone()
                    .unwrap_or_else(|| crate::model::factory::HOW_TO_CONFIGURE.into()),
            ));
        }
        if request.description.trim().is_empty() {
            return Err(EngineError::InvalidState {
                message: "a task needs a description".into(),
                value: json!({ "description": request.description }),
            });
        }
        let title = request
            .title
            .filter(|t| !t.trim().is_empty())
            .unwrap_or_else(|| title_from(&request.description));
        let mut record =
            TaskRecord::new(title, request.description, request.context, request.options);
        record.owner = request.owner;
        let id = record.id;
        self.services.tasks.insert(record);
        self.dispatch(id)?;
        Ok(id)
    }

    fn dispatch(&self, id: TaskId) -> Result<(), EngineError> {
        let s = &self.services;
        let busy = |mid: AgentId| {
            let mut count = 0;
            s.tasks.visit(|t| {
                count += usize::from(t.coordinator == Some(mid) && !t.status.is_finished());
            });
            count
        };
        let own = s
            .tasks
            .get(id)
            .and_then(|t| t.coordinator)
            .and_then(|mid| s.runtime.pool.get(mid));
        let mid = own
            .or_else(|| {
                s.runtime
                    .pool
                    .by_layer(Layer::Mid)
                    .into_iter()
                    .min_by_key(|m| busy(m.id()))
            })
            .ok_or_else(|| EngineError::InvalidState {
                message: "the team has no mid agent to coordinate tasks (team.mid is 0)".into(),
                value: json!({ "team.mid": 0 }),
            })?;
        s.tasks.update(id, |t| t.coordinator = Some(mid.id()));
        s.task_cancel(id);
        s.runtime
            .bus
            .send(
                Message::carrying(
                    AgentId::SYSTEM,
                    mid.id(),
                    &crate::team::TaskAssignment { task_id: id },
                )
                .with_task(id.to_string()),
            )
            .map_err(|e| EngineError::Internal(e.to_string()))?;
        Ok(())
    }

    fn record(&self, id: &str) -> Result<TaskRecord, EngineError> {
        id.parse::<TaskId>()
            .ok()
            .and_then(|id| self.services.tasks.get(id))
            .ok_or_else(|| EngineError::TaskNotFound(id.to_string()))
    }

    /// Cancels an unfinished task: its work stops, its approvals are withdrawn, and no
    /// file is left half-written (writes are atomic).
    pub fn cancel(&self, id: &str) -> Result<bool, EngineError> {
        let task = self.record(id)?;
        if task.status.is_finished() {
            return Err(EngineError::InvalidState {
                message: format!("task {id} is already {}", status_name(task.status)),
                value: json!({ "taskId": id, "status": task.status }),
            });
        }
        cancel_task(&self.services, task.id);
        Ok(true)
    }

    /// Re-runs the failed (and cancelled) subtasks of a finished task, keeping the rest.
    pub fn retry(&self, id: &str) -> Result<TaskId, EngineError> {
        let task = self.record(id)?;
        if !matches!(task.status, TaskStatus::Failed | TaskStatus::Cancelled) {
            return Err(EngineError::InvalidState {
                message: format!(
                    "only a failed or cancelled task can be retried; task {id} is {}",
                    status_name(task.status)
                ),
                value: json!({ "taskId": id, "status": task.status }),
            });
        }
        self.services.task_state.remove(&task.id);
        self.services.tasks.update(task.id, |t| {
            t.status = TaskStatus::Queued;
            t.result = None;
            for st in t
                .subtasks
                .iter_mut()
                .filter(|st| st.status != SubtaskStatus::Completed)
            {
                st.status = SubtaskStatus::Pending;
            }
        });
        self.dispatch(task.id)?;
        Ok(task.id)
    }

    /// Every task, oldest first.
    pub fn tasks(&self) -> Vec<TaskSummary> {
        let mut all = Vec::new();
        self.services
            .tasks
            .visit(|task| all.push(TaskSummary::of(task)));
        all.sort_by_key(|t| (t.created_at, t.task_id));
        all
    }

    pub fn task(&self, id: &str) -> Result<TaskDetail, EngineError> {
        id.parse::<TaskId>()
            .ok()
            .and_then(|id| self.services.tasks.read(id, TaskDetail::of))
            .ok_or_else(|| EngineError::TaskNotFound(id.to_string()))
    }

    /// A finished task's detail with its top agent's final report, which follows the
    /// task's end by a message or two: waited for up to `patience`, and left out after
    /// that (or when no top agent writes one).
    pub async fn finished_task(
        &self,
        id: &str,
        patience: std::time::Duration,
    ) -> Result<TaskDetail, EngineError> {
        let step = std::time::Duration::from_millis(20);
        let mut waited = std::time::Duration::ZERO;
        loop {
            let detail = self.task(id)?;
            if detail.final_report.is_some() || waited >= patience {
                return Ok(detail);
            }
            tokio::time::sleep(step).await;
            waited += step;
        }
    }

    /// The mid agent coordinating a task, once one was chosen (the ACP front-end shows
    /// that agent's whiteboard).
    pub fn coordinator(&self, id: TaskId) -> Option<AgentId> {
        self.services.tasks.get(id).and_then(|t| t.coordinator)
    }

    pub fn agents(&self) -> Vec<AgentInfo> {
        self.services.runtime.agents()
    }

    pub fn whiteboards(&self) -> Vec<Snapshot> {
        self.services.runtime.whiteboards.list()
    }

    pub fn whiteboard(&self, id: &str) -> Result<Snapshot, EngineError> {
        let board: WhiteboardId = id
            .parse()
            .map_err(|_| EngineError::WhiteboardNotFound(id.to_string()))?;
        self.services
            .runtime
            .whiteboards
            .read(&Accessor::System, board)
            .map_err(|_| EngineError::WhiteboardNotFound(id.to_string()))
    }

    /// Every approval still waiting for an answer.
    pub fn approvals(&self) -> Vec<Arc<ApprovalRequest>> {
        self.services.approvals.pending()
    }

    pub fn resolve_approval(&self, id: &str, answer: ApprovalAnswer) -> Result<(), EngineError> {
        let approval: Uuid = id
            .parse()
            .map_err(|_| EngineError::ApprovalNotFound(id.to_string()))?;
        self.services
            .approvals
            .resolve(approval, answer)
            .map_err(|e| match e {
                crate::runtime::ApprovalError::NotFound(_) => {
                    EngineError::ApprovalNotFound(id.to_string())
                }
                crate::runtime::ApprovalError::InvalidDecision { ref decision, .. } => {
                    EngineError::InvalidState {
                        message: e.to_string(),
                        value: json!({ "approvalId": id, "decision": decision }),
                    }
                }
            })
    }

    /// Writes ERROR_REPORT.md for one task, or for every task, and returns it.
    pub async fn error_report(&self, task: Option<&str>) -> Result<ErrorReport, EngineError> {
        let task = match task {
            Some(id) => Some(self.record(id)?.id),
            None => None,
        };
        let (markdown, path) = crate::team::write_error_report(&self.services, task)
            .await
            .map_err(|e| {
                EngineError::Internal(format!("ERROR_REPORT.md could not be written: {e}"))
            })?;
        Ok(ErrorReport { markdown, path })
    }

    /// Waits until the task is completed, failed or cancelled.
    pub async fn wait_for(&self, id: TaskId) -> Result<TaskSummary, EngineError> {
        let mut events = self.subscribe();
        loop {
            let task = self
                .services
                .tasks
                .get(id)
                .ok_or_else(|| EngineError::TaskNotFound(id.to_string()))?;
            if task.status.is_finished() && !self.services.task_state.contains_key(&id) {
                return Ok(TaskSummary::of(&task));
            }
            match events.recv().await {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return Err(EngineError::Internal("the event stream ended".into())),
            }
        }
    }

    /// Replaces an agent by a new one that carries on with its task, queue, whiteboard
    /// and place in the team (what recovery does to agents that hang or keep failing).
    pub async fn replace_agent(&self, agent: &str, reason: &str) -> Result<AgentId, EngineError> {
        let id: AgentId = agent.parse().map_err(|_| EngineError::InvalidState {
            message: format!("no agent {agent}"),
            value: json!({ "agentId": agent }),
        })?;
        crate::team::replace::replace_agent(&self.services, id, reason, None)
            .await
            .map_err(|e| EngineError::InvalidState {
                message: e.to_string(),
                value: json!({ "agentId": agent }),
            })
    }

    /// Stops the team. Unfinished tasks stay as their last checkpoint.
    pub async fn shutdown(&self) {
        if let Some(mcp) = &self.mcp {
            mcp.shutdown().await;
        }
        let runtime = &self.services.runtime;
        runtime.stop_agents().await;
        self.services.tasks.checkpoint_noted();
        runtime.flush_store().await;
    }

    /// Connects `servers` (an ACP client's) for the tasks `owner` submits, replacing
    /// any it had; `false` when this engine's agents cannot use MCP tools (the pi
    /// executor has tools of its own).
    pub fn attach_mcp_servers(&self, owner: &str, servers: Vec<McpServerSpec>) -> bool {
        match &self.mcp {
            Some(hub) => {
                hub.attach(owner, servers);
                true
            }
            None => false,
        }
    }

    /// Stops the MCP servers `owner` brought (its session closed).
    pub fn detach_mcp_servers(&self, owner: &str) {
        if let Some(hub) = &self.mcp {
            hub.detach(owner);
        }
    }
}

/// The MCP servers of `[[mcp.servers]]`, started now, plus whatever an ACP session
/// attaches later. A server that cannot start is said once on the team's board.
fn mcp_hub(
    config: &Config,
    runtime: &Arc<Runtime>,
    tasks: &Tasks,
    mut context: McpContext,
) -> Arc<McpHub> {
    let boards = runtime.whiteboards.clone();
    context.report = Arc::new(move |message: &str| {
        if let Err(e) = boards.append(&Accessor::System, WhiteboardId::Global, message) {
            tracing::warn!("the MCP problem could not be put on the board: {e}");
        }
    });
    let tasks = tasks.clone();
    // The owner of the calling work: an ACP session's tasks get its servers.
    let owner_of_work = Arc::new(move || {
        let scope = crate::model::metered::current_scope()?;
        let task = scope
            .task
            .or_else(|| scope.subtask.and_then(|s| tasks.task_of(s)))?;
        tasks.get(task)?.owner
    });
    let servers = config
        .mcp
        .servers
        .iter()
        .filter_map(McpServerSpec::from_config)
        .collect();
    McpHub::new(servers, context, owner_of_work)
}

/// The model of each layer, each wrapped by `wrap` (redaction, retries, a breaker):
/// `given` for all (tests), else one model for each distinct `[llm.<layer>]` over
/// `[llm]`, shared by the layers that configure the same.
fn team_models(
    given: Option<Arc<dyn ModelProvider>>,
    config: &Config,
    workspace: &Path,
    wrap: impl Fn(Arc<dyn ModelProvider>, &crate::config::LlmConfig) -> Arc<dyn ModelProvider>,
) -> Result<TeamModels, ModelError> {
    if let Some(given) = given {
        return Ok(TeamModels::same(wrap(given, &config.llm)));
    }
    let mut built: Vec<(crate::config::LlmConfig, Arc<dyn ModelProvider>)> = Vec::new();
    let mut model_of = |layer: TeamLayer| -> Result<Arc<dyn ModelProvider>, ModelError> {
        let layer_config = config.for_layer(layer);
        if let Some((_, model)) = built.iter().find(|(llm, _)| *llm == layer_config.llm) {
            return Ok(model.clone());
        }
        let own_table = *config.llm.own(layer) != crate::config::LlmOverride::default();
        let model = crate::model::from_config(&layer_config, workspace).map_err(|e| match e {
            // Which table to fix, when it is the layer's own.
            ModelError::NotConfigured { message } if own_table => ModelError::NotConfigured {
                message: format!("[llm.{}]: {message}", layer.as_str()),
            },
            other => other,
        })?;
        let model = wrap(model, &layer_config.llm);
        built.push((layer_config.llm, model.clone()));
        Ok(model)
    };
    Ok(TeamModels {
        top: model_of(TeamLayer::Top)?,
        mid: model_of(TeamLayer::Mid)?,
        bottom: model_of(TeamLayer::Bottom)?,
    })
}

/// `model`, metered as `layer`'s model (priced by its name).
fn metered(
    meter: &Arc<Meter>,
    model: Arc<dyn ModelProvider>,
    config: &Config,
    layer: TeamLayer,
) -> Arc<dyn ModelProvider> {
    Arc::new(meter.meter(model, config.llm.for_layer(layer).model_name()))
}

fn resilient(
    provider: Arc<dyn ModelProvider>,
    recovery: &crate::config::RecoveryConfig,
    runtime: &Arc<Runtime>,
    tasks: &Tasks,
) -> Arc<dyn ModelProvider> {
    let breaker_listener = breaker_listener(runtime, tasks);
    let retry_listener = call_retry_listener(runtime, EventScope::Subtask);
    Arc::new(
        ResilientModel::new(provider, recovery)
            .with_breaker_listener(breaker_listener)
            .with_retry_listener(retry_listener),
    )
}

/// Turns call-level retries (of model calls with `EventScope::Subtask`, of tool calls
/// with `EventScope::Tool`) into recovery steps of the subtask whose attempt made them.
fn call_retry_listener(
    runtime: &Arc<Runtime>,
    scope: EventScope,
) -> crate::recovery::backoff::RetryListener {
    // Call-level retries are recovery steps like any other: shown and stored, and
    // attributed to the subtask whose attempt made the call.
    let journal = runtime.journal();
    Arc::new(move |retry| {
        let Ok((task, subtask, agent)) = crate::team::WORK.try_with(|w| *w) else {
            return;
        };
        let mut step = recovery_event(
            Whose {
                task,
                subtask: Some(subtask),
                agent,
            },
            RecoveryAction::CallRetry,
            retry.severity,
            (retry.attempt, retry.max_attempts),
            format!(
                "{}: {}; call retry {}/{} in {}",
                match scope {
                    EventScope::Tool => format!("{} {}", retry.source, retry.error_kind),
                    _ => retry.error_kind.to_string(),
                },
                crate::records::failure::summarize(&retry.message, 160),
                retry.attempt,
                retry.max_attempts,
                crate::recovery::ladder::human_duration(retry.delay)
            ),
        );
        step.delay_ms = Some(retry.delay.as_millis() as u64);
        step.scope = scope;
        // A model call's source is its provider; a tool's is named in the message.
        if scope != EventScope::Tool {
            step.provider = Some(retry.source.clone());
        }
        journal.keep(crate::store::Record::Recovery(Arc::new(step)));
    })
}

/// Turns breaker state changes (providers' and executors') into recovery steps: shown,
/// stored, and scoped to the provider or executor, not to a task.
fn breaker_listener(
    runtime: &Arc<Runtime>,
    tasks: &Tasks,
) -> crate::recovery::breaker::BreakerListener {
    let journal = runtime.journal();
    let tasks = tasks.clone();
    Arc::new(move |event| {
        use crate::recovery::breaker::BreakerTransition;
        let (action, severity) = match event.transition {
            BreakerTransition::Opened { .. } => (RecoveryAction::CircuitOpen, Severity::High),
            BreakerTransition::Closed => (RecoveryAction::CircuitClosed, Severity::Low),
            BreakerTransition::HalfOpen => return,
        };
        tracing::warn!(provider = %event.name, "circuit breaker: {}", action.as_str());
        // Provider-wide: it belongs to no single task.
        let mut step = recovery_event(
            Whose {
                task: TaskId(Uuid::nil()),
                subtask: None,
                agent: AgentId::SYSTEM,
            },
            action,
            severity,
            (1, 1),
            event.to_string(),
        );
        // Provider-wide: it belongs to no single task (the wire keeps `taskId: ""`).
        step.task_id = String::new();
        step.scope = crate::records::EventScope::Provider;
        step.provider = Some(event.name.clone());
        // The tasks it holds up: every unfinished one (they share the provider).
        tasks.visit(|t| {
            if !t.status.is_finished() {
                step.task_ids.push(t.id.to_string());
            }
        });
        journal.keep(crate::store::Record::Recovery(Arc::new(step)));
    })
}

/// Cancels an unfinished task: its status and unfinished subtasks, its running work, its
/// pending approvals.
fn cancel_task(services: &Services, task: TaskId) {
    services.tasks.update(task, |t| {
        t.status = TaskStatus::Cancelled;
        for st in t.subtasks.iter_mut().filter(|st| !st.status.is_finished()) {
            st.status = SubtaskStatus::Cancelled;
        }
        // Why the task ended, for the report (cancellation by the user is fatal).
        t.errors.push(crate::runtime::TaskError::now(
            crate::recovery::Failure::new(
                crate::recovery::FailureKind::Cancelled,
                "the task was cancelled by the user",
            )
            .with_scope(crate::recovery::Scope::Task { task_id: t.id }),
        ));
    });
    services.task_cancel(task).cancel();
    services.approvals.withdraw_task(task);
}

/// Adds each file a tool wrote to its subtask at once, so the editors can mark the
/// files being generated while the subtask still runs.
fn files_of_subtasks(tasks: Tasks) -> crate::tools::WriteObserver {
    Arc::new(move |subtask: &str, path: &Path| {
        let Ok(subtask) = subtask.parse::<crate::runtime::SubtaskId>() else {
            return;
        };
        let Some(task) = tasks.task_of(subtask) else {
            return;
        };
        let path = path.to_string_lossy().into_owned();
        tasks.update(task, |t| {
            if let Some(st) = t.subtask_mut(subtask)
                && !st.files.contains(&path)
            {
                st.files.push(path);
            }
        });
    })
}

/// Replaces every agent the heartbeats report hung. Level-triggered: the scheduler
/// reports a hung agent every round until it is handled, and after a lagging receive
/// the pool itself is read, so a hung agent is never left behind.
fn spawn_hung_agent_watch(services: Arc<Services>) {
    let mut events = services.runtime.events.subscribe();
    let weak = Arc::downgrade(&services);
    drop(services);
    tokio::spawn(async move {
        loop {
            let hung: Vec<(AgentId, u32)> = match events.recv().await {
                Ok(RuntimeEvent::AgentHung {
                    agent_id, missed, ..
                }) => vec![(agent_id, missed)],
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    let Some(services) = weak.upgrade() else {
                        return;
                    };
                    let mut hung = Vec::new();
                    services.runtime.pool.for_each(|a| {
                        let missed = a.missed_heartbeats();
                        if missed >= crate::runtime::HUNG_AFTER_MISSED {
                            hung.push((a.id(), missed));
                        }
                    });
                    hung
                }
                Ok(_) => {
                    if weak.strong_count() == 0 {
                        return;
                    }
                    continue;
                }
                Err(_) => return,
            };
            let Some(services) = weak.upgrade() else {
                return;
            };
            for (agent_id, missed) in hung {
                // Already replaced (a report from before the swap): nothing left to do.
                if services.replaced.contains_key(&agent_id)
                    || services.runtime.pool.get(agent_id).is_none()
                {
                    continue;
                }
                let reason = format!("missed {missed} heartbeats in a row");
                if let Err(e) =
                    crate::team::replace::replace_agent(&services, agent_id, &reason, None).await
                {
                    tracing::warn!(agent = %agent_id, "hung agent not replaced: {e}");
                }
            }
        }
    });
}

/// The first non-empty line, without Markdown heading or list marks (`# Add a flag`
/// is titled `Add a flag`).
fn title_from(description: &str) -> String {
    let line = description
        .lines()
        .map(|l| {
            l.trim()
                .trim_start_matches('#')
                .trim_start_matches(['-', '*', '>'])
                .trim()
        })
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(72) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line.to_string(),
    }
}

fn status_name(status: TaskStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_configured_alike_share_a_model_and_each_gets_its_own_call_limit() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.llm.base_url = Some("http://127.0.0.1:18080/v1".into());
        config.llm.model = Some("small".into());
        config.llm.bottom.timeout_ms = Some(120_000);
        let wrapped = std::sync::Mutex::new(Vec::new());
        let models = team_models(None, &config, dir.path(), |model, llm| {
            wrapped.lock().unwrap().push(llm.timeout_ms);
            model
        })
        .unwrap();
        // Top and mid are configured alike: one model; the bottom's own limit makes it
        // another, wrapped with that limit.
        assert!(Arc::ptr_eq(&models.top, &models.mid));
        assert!(!Arc::ptr_eq(&models.mid, &models.bottom));
        assert_eq!(*wrapped.lock().unwrap(), [None, Some(120_000)]);
        // A layer whose model cannot be built is named.
        config.llm.top.provider = Some(crate::config::LlmProvider::Scripted);
        let Err(ModelError::NotConfigured { message }) =
            team_models(None, &config, dir.path(), |model, _| model)
        else {
            panic!("a scripted top layer without a script is not configured");
        };
        assert!(message.starts_with("[llm.top]: "), "{message}");
    }
}
