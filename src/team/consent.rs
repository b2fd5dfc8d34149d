//! Consent to run the task's code in the checks: the `approvals.commands` policy, asked
//! of the person once per task.
//!
//! - `auto`: the checks run it.
//! - `deny`: nothing the model wrote is executed; the task ends saying its work was not
//!   run ("not checked: running code was refused"), never "checked".
//! - `ask`: the first check that would run the task's code asks, showing what will run
//!   and how it is confined; the answer holds for the rest of the task (fix rounds run
//!   the same checks again). A rejection is final for the task.
//!
//! Without the sandbox `sandbox.required` asks for, nothing runs whatever the policy.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use tokio::sync::OnceCell;
use uuid::Uuid;

use super::Services;
use super::check::CodeConsent;
use crate::config::CommandPolicy;
use crate::exec::Confinement;
use crate::recovery::Severity;
use crate::runtime::{
    AgentId, ApprovalAnswer, ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest,
    Approvals, SubtaskId, TaskId,
};

/// A task's answer, once given: `Ok` to run, `Err(why)` refused.
pub type Answer = Arc<OnceCell<Result<(), String>>>;

/// The consent of one task's checks.
pub struct TaskConsent {
    task: TaskId,
    /// The subtask whose checks ask (its time limit does not count the person's time).
    subtask: Option<SubtaskId>,
    policy: CommandPolicy,
    /// Why nothing may run at all (no sandbox where one is required).
    unavailable: Option<String>,
    sandbox: String,
    approvals: Approvals,
    answer: Answer,
}

impl Services {
    /// The consent the checks of `task` run under (one answer per task).
    pub fn code_consent(&self, task: TaskId, subtask: Option<SubtaskId>) -> Arc<dyn CodeConsent> {
        let answer = self.task_state.entry(task).or_default().consent.clone();
        let unavailable = match self.runner.confinement() {
            Confinement::Refused { reason } => Some(format!(
                "the sandbox is required (sandbox.required = true) and {reason}"
            )),
            _ => None,
        };
        Arc::new(TaskConsent {
            task,
            subtask,
            policy: self.config.approvals.commands,
            unavailable,
            sandbox: self.runner.describe(),
            approvals: self.approvals.clone(),
            answer,
        })
    }

    /// Why the checks of `task` could not run its code, if they were refused.
    pub fn code_refusal(&self, task: TaskId) -> Option<String> {
        self.task_state
            .get(&task)
            .and_then(|state| state.consent.get().cloned())
            .and_then(Result::err)
    }
}

#[async_trait]
impl CodeConsent for TaskConsent {
    async fn may_run(&self, what: &str) -> Result<(), String> {
        if let Some(why) = &self.unavailable {
            return Err(why.clone());
        }
        self.answer
            .get_or_init(|| async {
                match self.policy {
                    CommandPolicy::Auto => Ok(()),
                    CommandPolicy::Deny => {
                        Err("approvals.commands = \"deny\" forbids running the task's code".into())
                    }
                    CommandPolicy::Ask => self.ask(what).await,
                }
            })
            .await
            .clone()
    }

    fn refusal(&self) -> Option<String> {
        self.answer.get().cloned().and_then(Result::err)
    }
}

impl TaskConsent {
    async fn ask(&self, what: &str) -> Result<(), String> {
        let request = ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::Command,
            task_id: self.task,
            subtask_id: self.subtask,
            agent_id: AgentId::SYSTEM.to_string(),
            severity: Severity::Medium,
            title: "Run the team's checks on this task's code?".into(),
            detail: format!(
                "To check its work, the team wants to run code written for this task:\n\n\
                 ```sh\n{what}\n```\n\n\
                 and, until the task ends, the same checks again after each fix: the \
                 project's tests, tests the task wrote, and an acceptance test the team \
                 writes from the task (beside, when the code fails it, a second solution \
                 the team writes from the task alone). They run {}.\n\n\
                 Reject, and nothing the model wrote is run: the task will say its work was \
                 not checked.",
                self.sandbox
            ),
            proposed_solution: None,
            diff: None,
            command: Some(what.to_string()),
            subtask_description: None,
            options: ApprovalOption::yes_no(),
            created_at: Utc::now(),
        };
        match self.approvals.ask(request).await {
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Approve,
                ..
            }) => Ok(()),
            Some(answer) => Err(match answer.note {
                Some(note) if !note.trim().is_empty() => {
                    format!("the person declined to run it ({})", note.trim())
                }
                _ => "the person declined to run it".into(),
            }),
            None => Err("the task ended before anyone answered".into()),
        }
    }
}
