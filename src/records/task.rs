//! Tasks as they are recorded: what the user asked for, the subtasks a mid agent planned
//! for it, their progress, checks and usage — the task's checkpoint in the store. Its
//! summary and detail on the wire are `crate::wire`'s; the live registry is
//! `runtime::Tasks`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::event::RecoveryEvent;
use super::failure::{Failure, Scope};
use super::usage::TaskUsage;
use crate::ids::{AgentId, SubtaskId, TaskId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Queued,
    Planning,
    AwaitingApproval,
    Running,
    Recovering,
    Escalated,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubtaskStatus {
    Pending,
    Running,
    Recovering,
    Escalated,
    Completed,
    Failed,
    Cancelled,
}

impl SubtaskStatus {
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            SubtaskStatus::Completed | SubtaskStatus::Failed | SubtaskStatus::Cancelled
        )
    }
}

/// Per-task overrides from `conclave/submitTask`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOptions {
    pub continue_on_error: Option<bool>,
    pub timeout_ms: Option<u64>,
    pub max_retries: Option<u32>,
    /// (addition) What becomes of the files this task changed if it fails (overrides
    /// `undo.onFailure`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<crate::config::OnFailure>,
}

impl TaskOptions {
    /// What becomes of a failed task's changes: this task's option, else `undo.onFailure`.
    pub fn failure_policy(&self, config: &crate::config::Config) -> crate::config::OnFailure {
        self.on_failure.unwrap_or(config.undo.on_failure)
    }
}

/// What ran the task's code when its checks last passed, strongest first: how much a
/// "completed" rests on (`team::acceptance` reads it from the checks). The team's own
/// test is the weakest: the same model read the task for the code and for the test, and
/// can misread it the same way in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Evidence {
    /// Tests in the project (its own, or ones written for the task), or the person's
    /// `verify.command`.
    ProjectTests,
    /// The examples the task itself gives, and the team's test.
    TaskExamples,
    /// Only the acceptance test the team wrote.
    OwnTestOnly,
    /// The team's acceptance test, with asserts the code failed set aside because other
    /// evidence gave what the code gives (a second solution written from the task
    /// alone, or the code's own inverse function): the test and the code disagreed, so
    /// a person decides.
    Disputed,
    /// Nothing ran the code (no code, or no test could run).
    Nothing,
}

/// What became of a finished task's changes: put back because it failed, or undone by
/// a person (`crate::undo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reverted {
    pub by: RevertedBy,
    pub at: DateTime<Utc>,
    /// Files put back as they were before the task (one the task created is removed).
    pub restored: Vec<String>,
    /// Files the task changed that were left as they are, with why.
    #[serde(default)]
    pub kept: Vec<KeptFile>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevertedBy {
    /// The task failed and `undo.onFailure` is `restore`.
    Failure,
    /// A person undid the task (`conclave undo`, `conclave/undoTask`).
    Undo,
}

/// A file a revert left as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptFile {
    pub path: String,
    pub reason: String,
}

impl Reverted {
    /// One line for people: what was put back and what was left.
    pub fn describe(&self) -> String {
        let mut line = if self.restored.is_empty() {
            "no file needed putting back".to_string()
        } else {
            format!("put back as before the task: {}", self.restored.join(", "))
        };
        for kept in &self.kept {
            line.push_str(&format!("; {} left as it is ({})", kept.path, kept.reason));
        }
        line
    }
}

/// Editor context sent with a task: files and a selection, as URIs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskContext {
    #[serde(default)]
    pub files: Vec<String>,
    pub selection: Option<serde_json::Value>,
    /// What came before the task, for the agents to read (an ACP session's earlier
    /// turns, the text of files a client attached). It is not what the task asks: the
    /// checks never look in it for files or names to deliver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
}

/// One failure a task met, as the recovery module classified it. On the wire it is the
/// [`Failure`] (kind, severity, transient, fatal, message, scope with its ids) plus `at`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskError {
    #[serde(flatten)]
    pub failure: Failure,
    pub at: DateTime<Utc>,
}

impl TaskError {
    /// `failure`, now.
    pub fn now(failure: Failure) -> TaskError {
        TaskError {
            failure,
            at: Utc::now(),
        }
    }

    /// The subtask the failure is about, if it is about one.
    pub fn subtask_id(&self) -> Option<SubtaskId> {
        match self.failure.scope {
            Scope::Subtask { subtask_id, .. } => Some(subtask_id),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subtask {
    pub id: SubtaskId,
    pub description: String,
    /// Indexes of the subtasks that must complete first.
    pub depends_on: Vec<usize>,
    pub assignee: Option<AgentId>,
    /// The assignee's name when it was assigned, so the name outlives the agent (a
    /// completed subtask of an earlier team still says who did it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_name: Option<String>,
    pub status: SubtaskStatus,
    pub attempts: u32,
    pub result: Option<String>,
    pub partial_results: Vec<String>,
    /// Workspace-relative paths this subtask wrote.
    pub files: Vec<String>,
}

impl Subtask {
    pub fn new(description: impl Into<String>, depends_on: Vec<usize>) -> Self {
        Subtask {
            id: SubtaskId::new(),
            description: description.into(),
            depends_on,
            assignee: None,
            assignee_name: None,
            status: SubtaskStatus::Pending,
            attempts: 0,
            result: None,
            partial_results: Vec::new(),
            files: Vec::new(),
        }
    }
}

/// Everything known about one task; also its checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    pub id: TaskId,
    pub title: String,
    pub description: String,
    pub context: TaskContext,
    pub options: TaskOptions,
    pub status: TaskStatus,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub subtasks: Vec<Subtask>,
    pub recovery: Option<RecoveryEvent>,
    pub files_written: Vec<String>,
    pub result: Option<String>,
    pub partial_results: Vec<String>,
    pub errors: Vec<TaskError>,
    /// The mid agent coordinating it.
    pub coordinator: Option<AgentId>,
    /// The plan decision the top layer signed.
    pub plan_decision: Option<Uuid>,
    /// What was checked after the code was written, and how (`team/check/`).
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    /// How many times each check rule found something in the task's work, over every
    /// check that ran (`checks` keeps only the latest), by rule id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rule_findings: BTreeMap<String, u32>,
    /// Tokens and cost so far (checkpoints from before usage was counted have none).
    #[serde(default)]
    pub usage: TaskUsage,
    /// Why the task's work was never run by its checks ("not checked: running code was
    /// refused (…)"); `None` when the checks could run it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// A completed task's: what ran its code when its checks last passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_by: Option<Evidence>,
    /// Who the work belongs to (`acp:<session id>`); `None`: anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Why an unfinished task is not running: it waits for its owner to come back
    /// after a restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<String>,
    /// Its changes were taken back (it failed, or a person undid it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<Reverted>,
    /// What the top layer read and decided while it oversaw the task, kept with the
    /// task so that a restart or a new top agent loses none of it.
    #[serde(default, skip_serializing_if = "OversightTally::is_empty")]
    pub oversight: OversightTally,
    /// The top agent's report on the finished task (`team/progress.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_report: Option<FinalReport>,
}

/// The top layer's tally on a running task, for its final report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OversightTally {
    /// Progress reports and blockers read.
    #[serde(default)]
    pub reports: u32,
    /// Each verdict and ruling, in a line ("subtask 1 of 2: continue (…)").
    #[serde(default)]
    pub decisions: Vec<String>,
}

impl OversightTally {
    pub fn is_empty(&self) -> bool {
        self.reports == 0 && self.decisions.is_empty()
    }
}

/// The report a top agent writes when a task it oversaw has finished: the outcome, what
/// the mid reported on the way, and what the top decided.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FinalReport {
    /// The top agent's name.
    pub by: String,
    pub at: DateTime<Utc>,
    /// Markdown, one fact a line.
    pub text: String,
}

impl TaskRecord {
    pub fn new(
        title: String,
        description: String,
        context: TaskContext,
        options: TaskOptions,
    ) -> Self {
        let now = Utc::now();
        TaskRecord {
            id: TaskId::new(),
            title,
            description,
            context,
            options,
            status: TaskStatus::Queued,
            created_at: now,
            updated_at: now,
            subtasks: Vec::new(),
            recovery: None,
            files_written: Vec::new(),
            result: None,
            partial_results: Vec::new(),
            errors: Vec::new(),
            coordinator: None,
            plan_decision: None,
            checks: Vec::new(),
            rule_findings: BTreeMap::new(),
            usage: TaskUsage::default(),
            unchecked: None,
            checked_by: None,
            owner: None,
            parked: None,
            reverted: None,
            oversight: OversightTally::default(),
            final_report: None,
        }
    }

    /// 0–100: the share of finished subtasks, 100 once the task completed.
    pub fn progress(&self) -> u8 {
        if self.status == TaskStatus::Completed {
            return 100;
        }
        if self.subtasks.is_empty() {
            return 0;
        }
        let done = self
            .subtasks
            .iter()
            .filter(|s| s.status.is_finished())
            .count();
        ((done * 100) / self.subtasks.len()).min(99) as u8
    }

    /// The task's status while it runs follows its most troubled subtask.
    pub fn refresh_status(&mut self) {
        if self.status.is_finished()
            || matches!(
                self.status,
                TaskStatus::Planning | TaskStatus::AwaitingApproval | TaskStatus::Queued
            )
        {
            return;
        }
        self.status = if self
            .subtasks
            .iter()
            .any(|st| st.status == SubtaskStatus::Escalated)
        {
            TaskStatus::Escalated
        } else if self
            .subtasks
            .iter()
            .any(|st| st.status == SubtaskStatus::Recovering)
        {
            TaskStatus::Recovering
        } else {
            TaskStatus::Running
        };
    }

    pub fn subtask(&self, id: SubtaskId) -> Option<&Subtask> {
        self.subtasks.iter().find(|s| s.id == id)
    }

    pub fn subtask_mut(&mut self, id: SubtaskId) -> Option<&mut Subtask> {
        self.subtasks.iter_mut().find(|s| s.id == id)
    }
}

/// The checks of a task, counted by status (`TaskSummary.checkCounts` on the wire).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckCounts {
    pub passed: u32,
    pub failed: u32,
    pub skipped: u32,
    /// The rule ids behind the failed checks, each once, sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_rules: Vec<String>,
    /// When the latest check ran: a check run again with the same outcome (a fix round)
    /// changes it, so an editor knows its copy of the checks is stale.
    pub at: DateTime<Utc>,
}

impl CheckCounts {
    /// `None` while no check ran.
    pub fn of(checks: &[CheckResult]) -> Option<CheckCounts> {
        let at = checks.iter().map(|c| c.at).max()?;
        let mut counts = CheckCounts {
            at,
            ..CheckCounts::default()
        };
        for check in checks {
            match check.status {
                CheckStatus::Passed => counts.passed += 1,
                CheckStatus::Skipped => counts.skipped += 1,
                CheckStatus::Failed => {
                    counts.failed += 1;
                    counts.failed_rules.extend(check.rules.iter().cloned());
                }
            }
        }
        counts.failed_rules.sort();
        counts.failed_rules.dedup();
        Some(counts)
    }
}

/// One check of the code a task wrote (`team/check/` runs them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// `syntax`, `stubs` or `tests`.
    pub kind: String,
    /// What ran: a command line, or the name of a built-in scan.
    pub name: String,
    pub status: CheckStatus,
    /// Workspace-relative paths it looked at (empty for a whole-project test command).
    pub files: Vec<String>,
    /// Why it was skipped, the end of a failure's output, or what a passed acceptance
    /// test ignored.
    pub detail: String,
    /// The subtask whose work it checked; `None` for the task-level checks.
    pub subtask_id: Option<SubtaskId>,
    pub at: DateTime<Utc>,
    /// The rules behind it (`checks::RULES` ids): the one a single-rule check is, or
    /// those of a many-rule check that found something.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Passed,
    Failed,
    /// The checker is not installed, or there was nothing it could run.
    Skipped,
}
