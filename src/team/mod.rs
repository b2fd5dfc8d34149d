//! The team at work: what top, mid and bottom agents do with a task, and the services
//! they share (model, executor, tasks, approvals, recovery reporting).
//!
//! A task flows: the engine sends `task_assign` to a mid agent → the mid plans it with
//! the model ([`coordinate`]) and proposes the plan as a decision → top agents review and
//! sign ([`top`]) → the mid assigns subtasks to bottom agents ([`bottom`]), which run the
//! executor and reply → failures climb the recovery ladder (retry, peer takeover,
//! supervisor, top layer, a person), agents that hang or keep failing are replaced
//! ([`replace`]) → the mid runs the verify command and fix loop ([`verify`]) → done.

pub mod acceptance;
pub mod bottom;
pub mod check;
pub mod consent;
pub mod coordinate;
mod escalate;
mod files;
pub mod knowledge;
pub mod mid;
mod peers;
pub mod plan;
pub mod progress;
pub mod replace;
pub mod report;
pub mod roles;
mod subtask;
pub mod top;
pub mod verify;

use crate::runtime::FileDiff;
use crate::tools::FileChangeRequest;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use chrono::Utc;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::config::{Config, TeamLayer};
use crate::executor::Executor;
use crate::model::ModelProvider;
use crate::recovery::{Failure, RecoveryAction, RecoveryEvent, Severity};
use crate::runtime::{
    AgentBehavior, AgentConfig, AgentId, ApprovalAnswer, ApprovalChoice, ApprovalKind,
    ApprovalOption, ApprovalRequest, Approvals, Body, Layer, MessageKind, Runtime, SubtaskId,
    TaskId, Tasks,
};
use crate::store::Record;
use crate::tools::{
    ApprovalHook, ApprovalOutcome, CommandApprovalRequest, Sandbox, ToolApprovalRequest,
    WorkspaceWriter, WriteError, WriteOutcome,
};

/// Makes the behaviour of a new agent (the team at start, replacements later).
pub type BehaviorFactory =
    Arc<dyn Fn(&AgentConfig, &Arc<Services>) -> Box<dyn AgentBehavior> + Send + Sync>;

/// The standard behaviours: top, mid and bottom by layer.
pub fn standard_behaviors() -> BehaviorFactory {
    Arc::new(
        |config: &AgentConfig, services: &Arc<Services>| -> Box<dyn AgentBehavior> {
            match config.layer {
                Layer::Top => Box::new(top::TopBehavior::new(services.clone())),
                Layer::Mid => Box::new(mid::MidBehavior::new(
                    services.clone(),
                    services.mid_claims.entry(config.id).or_default().clone(),
                )),
                Layer::Bottom => Box::new(bottom::BottomBehavior::new(services.clone())),
            }
        },
    )
}

/// What every agent of the team works with.
pub struct Services {
    pub config: Config,
    pub workspace: PathBuf,
    pub sandbox: Sandbox,
    /// Runs every command and check: scrubbed, confined, bounded (`crate::exec`).
    pub runner: crate::exec::Runner,
    pub runtime: Arc<Runtime>,
    pub tasks: Tasks,
    pub approvals: Approvals,
    /// Each layer's model, wrapped in retries and a breaker; `None` when none is
    /// configured.
    pub models: Option<crate::model::TeamModels>,
    /// How bottom agents do their work; `None` without a model.
    pub executor: Option<Arc<dyn Executor>>,
    pub writer: Arc<SwappableWriter>,
    pub behaviors: BehaviorFactory,
    /// Per unfinished task: what the team keeps while it works on it ([`TaskState`]).
    /// The entry goes when the task ends.
    pub task_state: DashMap<TaskId, TaskState>,
    /// Per running subtask attempt: who runs it, and how to stop just that attempt.
    pub attempts: DashMap<SubtaskId, (AgentId, CancellationToken)>,
    /// Replacements so far (old → new), so waiting coordinators can follow them.
    pub replaced: DashMap<AgentId, AgentId>,
    /// Bumped after every replacement; coordinators waiting on an agent watch it.
    pub replacements: tokio::sync::watch::Sender<u64>,
    /// Each mid's knowledge of the files being written (`peers`), by agent: a replacing
    /// mid takes its predecessor's over, with the holds its coordinators still wait on.
    pub mid_claims: DashMap<AgentId, Arc<peers::Claims>>,
    /// Per unfinished task: the changes refused in it (shared with the tools' approver).
    pub refusals: Refusals,
    /// `.conclave/sessions/<session>/`, where ERROR_REPORT.md goes.
    pub session_dir: PathBuf,
    /// What each task did to each file, so it can be taken back (`crate::undo`).
    pub history: Arc<crate::undo::FileHistory>,
    /// `serve`, `run` or `demo`, for reports.
    pub mode: String,
}

/// What the team keeps about one unfinished task while it works on it, beside its
/// record: one entry of [`Services::task_state`], gone when the task ends.
#[derive(Default)]
pub struct TaskState {
    /// Cancelled when the task is cancelled.
    pub cancel: CancellationToken,
    /// The files the task names as they were when it began, for the contracts check
    /// (`check/`); captured on first use.
    pub originals: Option<check::Originals>,
    /// The acceptance test as the team wrote it. A test changed on disk since (a coder's
    /// `bash` wrote over it) is put back before it runs.
    pub acceptance_test: Option<String>,
    /// The second solution the acceptance test is run beside once the code failed it
    /// (`acceptance.rs`): `None` until asked for, then the file and its content, or
    /// `Some(None)` when the model gave none.
    pub second_solution: Option<Option<(String, String)>>,
    /// Whether the fix loop has tried the second solution in place of the team's file
    /// (`verify.rs`), which it does once.
    pub second_solution_tried: bool,
    /// Whole files a coder's final answer showed and did not write
    /// ([`crate::executor::ExecutionOutcome::proposed_files`]); the fix loop tries them
    /// before it asks for a fix (`verify.rs`).
    pub proposed_files: Vec<crate::executor::TargetFile>,
    /// Whether the task's checks may run its code (`consent.rs`).
    pub consent: consent::Answer,
    /// What failed attempts learned (`knowledge.rs`).
    pub lessons: Vec<knowledge::Lesson>,
    /// Whether a coordinator has taken the task up: an assignment sent again (after its
    /// supervisor was replaced) never starts a second one.
    pub coordinating: bool,
}

impl Services {
    /// The model `layer`'s agents call, when one is configured.
    pub fn model(&self, layer: TeamLayer) -> Option<Arc<dyn ModelProvider>> {
        self.models.as_ref().map(|m| m.of(layer).clone())
    }

    /// The temperature `layer`'s calls are made at.
    pub fn temperature(&self, layer: TeamLayer) -> Option<f32> {
        self.config.llm.for_layer(layer).temperature
    }

    /// The files `task` names as they were when it began (captured on first use).
    pub fn originals(&self, task: TaskId) -> check::Originals {
        if let Some(originals) = self.task_state.get(&task).and_then(|t| t.originals.clone()) {
            return originals;
        }
        let description = self
            .tasks
            .get(task)
            .map(|t| t.description.clone())
            .unwrap_or_default();
        self.task_state
            .entry(task)
            .or_default()
            .originals
            .get_or_insert_with(|| check::capture_originals(&self.sandbox, &description))
            .clone()
    }

    /// How long an agent waits for another agent's answer (a peer's, the top's):
    /// `recovery.stepTimeoutMs`, at most 10 s, so a silent agent holds nothing up long.
    pub fn answer_patience(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.config.recovery.step_timeout_ms.clamp(100, 10_000))
    }

    /// The cancellation token of `task`, created on first use.
    pub fn task_cancel(&self, task: TaskId) -> CancellationToken {
        self.task_state.entry(task).or_default().cancel.clone()
    }

    /// Publishes a recovery step, stores it, and makes it the task's latest.
    pub fn recovery(&self, event: RecoveryEvent) {
        tracing::info!(
            task = %event.task_id,
            action = event.action.as_str(),
            severity = %event.severity,
            attempt = event.attempt,
            "{}",
            event.message
        );
        let event = Arc::new(event);
        let step = Record::Recovery(event.clone());
        let task = event.task_id.parse::<TaskId>().ok();
        // The step and the checkpoint it changes are committed together.
        let recorded = task.and_then(|task| {
            self.tasks
                .update_with_records(task, vec![step.clone()], |t| {
                    t.recovery = Some((*event).clone())
                })
        });
        if recorded.is_none() {
            self.runtime.journal().keep(step);
        }
    }

    /// The agent now standing in for `agent` (itself, unless replaced, maybe repeatedly).
    pub fn current_agent(&self, mut agent: AgentId) -> AgentId {
        for _ in 0..64 {
            match self.replaced.get(&agent) {
                Some(next) => agent = *next,
                None => break,
            }
        }
        agent
    }
}

/// The subtask attempt the current tokio task works on (`crate::runtime::WORK`).
pub use crate::runtime::WORK;

/// Whose recovery step it is: the task, the subtask (none for a step of the whole task)
/// and the agent it is about.
#[derive(Clone, Copy, Debug)]
pub struct Whose {
    pub task: TaskId,
    pub subtask: Option<SubtaskId>,
    pub agent: AgentId,
}

/// Builds a recovery event with the common fields filled in; `attempt` of `max_attempts`.
pub fn recovery_event(
    Whose {
        task,
        subtask,
        agent,
    }: Whose,
    action: RecoveryAction,
    severity: Severity,
    (attempt, max_attempts): (u32, u32),
    message: impl Into<String>,
) -> RecoveryEvent {
    RecoveryEvent {
        task_id: task.to_string(),
        subtask_id: subtask.map(|s| s.to_string()),
        agent_id: agent.to_string(),
        action,
        severity,
        attempt,
        max_attempts,
        delay_ms: None,
        message: message.into(),
        scope: if subtask.is_some() {
            crate::records::EventScope::Subtask
        } else {
            crate::records::EventScope::Task
        },
        provider: None,
        files: None,
        task_ids: Vec::new(),
        at: Utc::now(),
    }
}

/// A task as its coordinating mid agent receives it in `task_assign` (from the engine,
/// or from the agent it replaces).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAssignment {
    pub task_id: TaskId,
}

impl Body for TaskAssignment {
    const NAME: &'static str = "a task assignment";
    const KINDS: &'static [MessageKind] = &[MessageKind::TaskAssign];
}

/// A subtask as a bottom agent receives it in `task_assign`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskAssignment {
    pub task_id: TaskId,
    pub subtask_id: SubtaskId,
    pub description: String,
    pub attempt: u32,
    /// What the task is about and what earlier subtasks produced.
    pub context: String,
    /// What is left of the subtask's time (`recovery.subtaskTimeoutMs` bounds all its
    /// attempts together); absent, the whole of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
}

impl Body for SubtaskAssignment {
    const NAME: &'static str = "a subtask assignment";
    const KINDS: &'static [MessageKind] = &[MessageKind::TaskAssign];
}

/// A bottom agent's answer to a [`SubtaskAssignment`]: a `progress_report` when it
/// completed, an `error_report` when it failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum SubtaskReport {
    Completed {
        summary: String,
        files: Vec<String>,
        partial_results: Vec<String>,
    },
    Failed {
        failure: Failure,
        files: Vec<String>,
        partial_results: Vec<String>,
        /// What the attempt learned (`knowledge.rs`).
        #[serde(default, skip_serializing_if = "knowledge::Learned::is_empty")]
        learned: Box<knowledge::Learned>,
    },
}

impl Body for SubtaskReport {
    const NAME: &'static str = "a subtask report";
    const KINDS: &'static [MessageKind] = &[MessageKind::ProgressReport, MessageKind::ErrorReport];
    fn kind(&self) -> MessageKind {
        match self {
            SubtaskReport::Completed { .. } => MessageKind::ProgressReport,
            SubtaskReport::Failed { .. } => MessageKind::ErrorReport,
        }
    }
}

/// Writes through whichever writer is current: disk at first, the editor's
/// `workspace/applyEdit` once a client that supports it connects. Every change made for
/// a task is noted in its file history first (`crate::undo`), so the task can be taken
/// back.
pub struct SwappableWriter {
    current: RwLock<Arc<dyn WorkspaceWriter>>,
    history: Option<(Arc<crate::undo::FileHistory>, Sandbox)>,
}

impl SwappableWriter {
    pub fn new(initial: Arc<dyn WorkspaceWriter>) -> Self {
        SwappableWriter {
            current: RwLock::new(initial),
            history: None,
        }
    }

    /// Notes every change made for a task in `history`.
    pub fn with_history(
        mut self,
        history: Arc<crate::undo::FileHistory>,
        sandbox: Sandbox,
    ) -> Self {
        self.history = Some((history, sandbox));
        self
    }

    pub fn set(&self, writer: Arc<dyn WorkspaceWriter>) {
        *self.current.write().expect("writer lock") = writer;
    }

    /// The current writer itself, whose writes no task's history notes (taking a task
    /// back writes through it).
    pub fn untracked(&self) -> Arc<dyn WorkspaceWriter> {
        self.current.read().expect("writer lock").clone()
    }

    /// The task whose history a write to `path` goes to, with the path relative to the
    /// root and the file before the write when this is the task's first touch of it.
    async fn before_write(
        &self,
        path: &Path,
    ) -> Option<(TaskId, String, Option<crate::store::FileBefore>)> {
        let (history, sandbox) = self.history.as_ref()?;
        let task = history.current_task()?;
        let absolute = sandbox.resolve_for_write(path).ok()?;
        let relative = sandbox.relative(&absolute).to_string_lossy().into_owned();
        let before = if history.touched(task, &relative) {
            None
        } else {
            Some(history.read_before(&absolute).await)
        };
        Some((task, relative, before))
    }

    fn noted(
        &self,
        (task, path, before): (TaskId, String, Option<crate::store::FileBefore>),
        after: Option<&[u8]>,
    ) {
        if let Some((history, _)) = &self.history {
            history.note(
                task,
                &path,
                before.unwrap_or(crate::store::FileBefore::Absent),
                after,
            );
        }
    }
}

#[async_trait]
impl WorkspaceWriter for SwappableWriter {
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError> {
        let touch = self.before_write(path).await;
        let outcome = self.untracked().write_file(path, content).await?;
        if let Some(touch) = touch
            && outcome.status != crate::tools::WriteStatus::Unchanged
        {
            self.noted(touch, Some(content.as_bytes()));
        }
        Ok(outcome)
    }

    async fn read_text(&self, absolute: &Path) -> Result<Option<String>, String> {
        let writer = self.untracked();
        writer.read_text(absolute).await
    }

    async fn remove_file(&self, path: &Path) -> Result<bool, WriteError> {
        let touch = self.before_write(path).await;
        let removed = self.untracked().remove_file(path).await?;
        if let Some(touch) = touch
            && removed
        {
            self.noted(touch, None);
        }
        Ok(removed)
    }

    async fn watch_command(&self) -> Option<Box<dyn crate::tools::writer::CommandWatch>> {
        let (history, sandbox) = self.history.as_ref()?;
        let watch = history.watch_command(sandbox).await?;
        Some(Box::new(watch))
    }
}

/// The changes refused in each unfinished task, by path and content, with why: a
/// refusal is final for that change, so it is neither asked nor written again in the
/// task, whichever path (a tool, the fix loop) proposes it.
#[derive(Clone, Default)]
pub struct Refusals(Arc<DashMap<(TaskId, PathBuf, u64), String>>);

impl Refusals {
    fn key(task: TaskId, path: &Path, content: &str) -> (TaskId, PathBuf, u64) {
        (
            task,
            path.to_path_buf(),
            crate::tools::ContentHash::of(content.as_bytes()).0,
        )
    }

    pub fn get(&self, task: TaskId, path: &Path, content: &str) -> Option<String> {
        self.0
            .get(&Self::key(task, path, content))
            .map(|r| r.value().clone())
    }

    pub fn insert(&self, task: TaskId, path: &Path, content: &str, reason: &str) {
        self.0
            .insert(Self::key(task, path, content), reason.to_string());
    }

    /// Forgets the refusals of a task that ended.
    pub fn forget(&self, task: TaskId) {
        self.0.retain(|(t, _, _), _| *t != task);
    }
}

/// The command approval policy `ask`, answered by a person through the approvals broker;
/// and the memory of refused changes.
pub struct CommandApprover {
    pub approvals: Approvals,
    pub tasks: Tasks,
    pub refusals: Refusals,
}

impl CommandApprover {
    /// The task and assignee a tool call's subtask belongs to.
    fn owner(&self, subtask: Option<SubtaskId>) -> Option<(TaskId, Option<AgentId>)> {
        let subtask = subtask?;
        let task = self.tasks.get(self.tasks.task_of(subtask)?)?;
        Some((task.id, task.subtask(subtask).and_then(|s| s.assignee)))
    }

    /// Asks and maps the answer: only `approve` approves; anything else, or a
    /// withdrawn question, is a refusal with its reason.
    async fn ask(&self, request: ApprovalRequest) -> ApprovalOutcome {
        match self.approvals.ask(request).await {
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Approve,
                ..
            }) => ApprovalOutcome::Approved,
            // The callers say what was declined and by whom; the reason is the person's.
            Some(answer) => ApprovalOutcome::Denied {
                reason: answer
                    .note
                    .filter(|note| !note.trim().is_empty())
                    .unwrap_or_else(|| "no reason given".into()),
            },
            None => ApprovalOutcome::Denied {
                reason: "the task was cancelled".into(),
            },
        }
    }
}

impl CommandApprover {
    /// Asks the person whether the change of `request` may be made in `task_id`.
    pub async fn ask_change(
        &self,
        task_id: TaskId,
        subtask: Option<SubtaskId>,
        assignee: Option<AgentId>,
        request: &FileChangeRequest,
    ) -> ApprovalOutcome {
        let path = request.path.display().to_string();
        let verb = if request.before.is_some() {
            "Change"
        } else {
            "Create"
        };
        let request = ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::FileChange,
            task_id,
            subtask_id: subtask,
            agent_id: assignee.unwrap_or(AgentId::SYSTEM).to_string(),
            severity: Severity::Medium,
            title: format!("{verb} `{path}`?"),
            detail: format!(
                "An agent wants to {} `{path}` ({} bytes). The diff shows the change.",
                verb.to_lowercase(),
                request.after.len()
            ),
            proposed_solution: None,
            diff: Some(FileDiff {
                uri: path,
                before: request.before.clone().unwrap_or_default(),
                after: request.after.clone(),
            }),
            command: None,
            subtask_description: None,
            options: ApprovalOption::yes_no(),
            created_at: Utc::now(),
        };
        self.ask(request).await
    }
}

#[async_trait]
impl ApprovalHook for CommandApprover {
    async fn approve_command(&self, request: &CommandApprovalRequest) -> ApprovalOutcome {
        let subtask: Option<SubtaskId> = request.subtask_id.as_deref().and_then(|s| s.parse().ok());
        let Some((task_id, assignee)) = self.owner(subtask) else {
            return ApprovalOutcome::Denied {
                reason: "the command does not belong to a known subtask".into(),
            };
        };
        let request = ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::Command,
            task_id,
            subtask_id: subtask,
            agent_id: assignee.unwrap_or(AgentId::SYSTEM).to_string(),
            severity: Severity::Medium,
            title: format!("Run `{}`?", first_line(&request.command)),
            detail: format!(
                "An agent wants to run this command in `{}`:\n\n```sh\n{}\n```",
                request.workdir.display(),
                request.command
            ),
            proposed_solution: None,
            diff: None,
            command: Some(request.command.clone()),
            subtask_description: None,
            options: ApprovalOption::yes_no(),
            created_at: Utc::now(),
        };
        self.ask(request).await
    }

    async fn approve_file_change(&self, request: &FileChangeRequest) -> ApprovalOutcome {
        let subtask: Option<SubtaskId> = request.subtask_id.as_deref().and_then(|s| s.parse().ok());
        let Some((task_id, assignee)) = self.owner(subtask) else {
            return ApprovalOutcome::Denied {
                reason: "the change does not belong to a known subtask".into(),
            };
        };
        self.ask_change(task_id, subtask, assignee, request).await
    }

    fn refused_before(&self, request: &FileChangeRequest) -> Option<String> {
        let subtask = request.subtask_id.as_deref()?.parse().ok()?;
        let task = self.tasks.task_of(subtask)?;
        self.refusals.get(task, &request.path, &request.after)
    }

    fn note_refusal(&self, request: &FileChangeRequest, reason: &str) {
        let subtask = request.subtask_id.as_deref().and_then(|s| s.parse().ok());
        if let Some(task) = subtask.and_then(|s| self.tasks.task_of(s)) {
            self.refusals
                .insert(task, &request.path, &request.after, reason);
        }
    }

    /// An MCP tool call is a command to the approval policy (the same kind, so "always
    /// approve commands" covers it), shown as the call it is.
    async fn approve_tool(&self, request: &ToolApprovalRequest) -> ApprovalOutcome {
        let subtask: Option<SubtaskId> = request.subtask_id.as_deref().and_then(|s| s.parse().ok());
        let Some((task_id, assignee)) = self.owner(subtask) else {
            return ApprovalOutcome::Denied {
                reason: "the call does not belong to a known subtask".into(),
            };
        };
        let arguments = serde_json::to_string_pretty(&request.arguments).unwrap_or_default();
        let hint = if request.read_only_hint {
            "\n\nThe server says this tool only reads (its own claim)."
        } else {
            ""
        };
        let request = ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::Command,
            task_id,
            subtask_id: subtask,
            agent_id: assignee.unwrap_or(AgentId::SYSTEM).to_string(),
            severity: Severity::Medium,
            title: format!("Call `{}`?", request.tool),
            detail: format!(
                "An agent wants to call `{}` of {}: {}\n\n```json\n{arguments}\n```{hint}",
                request.tool, request.provider, request.description
            ),
            proposed_solution: None,
            diff: None,
            command: Some(request.call_line()),
            subtask_description: None,
            options: ApprovalOption::yes_no(),
            created_at: Utc::now(),
        };
        self.ask(request).await
    }

    fn tool_refused_before(&self, request: &ToolApprovalRequest) -> Option<String> {
        let subtask = request.subtask_id.as_deref()?.parse().ok()?;
        let task = self.tasks.task_of(subtask)?;
        self.refusals.get(
            task,
            Path::new(&request.tool),
            &request.arguments.to_string(),
        )
    }

    fn note_tool_refusal(&self, request: &ToolApprovalRequest, reason: &str) {
        let subtask = request.subtask_id.as_deref().and_then(|s| s.parse().ok());
        if let Some(task) = subtask.and_then(|s| self.tasks.task_of(s)) {
            self.refusals.insert(
                task,
                Path::new(&request.tool),
                &request.arguments.to_string(),
                reason,
            );
        }
    }
}

impl Services {
    /// The approver of commands and changes, over this team's approvals and refusals.
    pub fn approver(&self) -> CommandApprover {
        CommandApprover {
            approvals: self.approvals.clone(),
            tasks: self.tasks.clone(),
            refusals: self.refusals.clone(),
        }
    }

    /// Writes a change the team makes itself (the fix loop) under the same consent as
    /// the tools' changes: a change refused earlier in the task is not made again,
    /// `fileChanges = "ask"` asks the person first (unless they `approved` it already),
    /// and a write the editor refuses is remembered.
    pub async fn write_change(
        &self,
        task: TaskId,
        path: &str,
        content: &str,
        approved: bool,
    ) -> Result<WriteOutcome, WriteError> {
        let absolute = self.sandbox.resolve(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        if before.as_deref() != Some(content) {
            if let Some(reason) = self.refusals.get(task, &relative, content) {
                return Err(WriteError::Rejected {
                    path: relative,
                    reason: format!("this exact change was refused earlier in the task ({reason})"),
                });
            }
            if self.config.approvals.file_changes == crate::config::FileChangePolicy::Ask
                && !approved
            {
                let request = FileChangeRequest {
                    path: relative.clone(),
                    before,
                    after: content.to_string(),
                    subtask_id: None,
                };
                if let ApprovalOutcome::Denied { reason } =
                    self.approver().ask_change(task, None, None, &request).await
                {
                    let reason = format!("the person declined the change ({reason})");
                    self.refusals.insert(task, &relative, content, &reason);
                    return Err(WriteError::Rejected {
                        path: relative,
                        reason,
                    });
                }
            }
        }
        let written = self.writer.write_file(&relative, content).await;
        if let Err(WriteError::Rejected { reason, .. }) = &written {
            self.refusals.insert(task, &relative, content, reason);
        }
        written
    }
}

/// Writes ERROR_REPORT.md for one task (or every task) into the session directory and
/// returns its text and path.
pub async fn write_error_report(
    s: &Services,
    task: Option<TaskId>,
) -> std::io::Result<(String, PathBuf)> {
    let tasks: Vec<_> = s
        .tasks
        .records()
        .into_iter()
        .filter(|t| task.is_none_or(|id| t.id == id))
        .collect();
    let steps = match &s.runtime.store {
        Some(store) => store
            .recovery_steps(task.map(|t| t.to_string()))
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let header = report::ReportHeader {
        generated: Utc::now(),
        mode: s.mode.clone(),
        continue_on_error: s.config.recovery.continue_on_error,
    };
    let markdown = crate::redact::string(report::render(&header, &tasks, &steps));
    tokio::fs::create_dir_all(&s.session_dir).await?;
    let path = s.session_dir.join("ERROR_REPORT.md");
    tokio::fs::write(&path, &markdown).await?;
    Ok((markdown, path))
}

/// The first line of `text`, shortened between words for a one-line message.
pub(crate) fn first_line(text: &str) -> String {
    crate::records::failure::summarize(text, 100)
}
