//! Approvals: questions for the person at the editor or terminal — escalations the team
//! cannot settle, low-confidence fixes, commands under the `ask` policy.
//!
//! An approval waits until someone answers it; nothing here decides by timeout. Pending
//! approvals are listed for any front-end that (re)connects, and withdrawn when their
//! task is cancelled.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::events::{EventBus, RuntimeEvent};
use super::tasks::{SubtaskId, TaskId};
use crate::recovery::Severity;
use crate::store::{Record, Store};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalKind {
    Escalation,
    Decision,
    FileChange,
    Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalChoice {
    Retry,
    Reassign,
    Modify,
    Abort,
    Approve,
    Reject,
}

impl ApprovalChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalChoice::Retry => "retry",
            ApprovalChoice::Reassign => "reassign",
            ApprovalChoice::Modify => "modify",
            ApprovalChoice::Abort => "abort",
            ApprovalChoice::Approve => "approve",
            ApprovalChoice::Reject => "reject",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalOption {
    pub id: ApprovalChoice,
    pub title: String,
}

impl ApprovalOption {
    pub fn new(id: ApprovalChoice, title: impl Into<String>) -> Self {
        ApprovalOption {
            id,
            title: title.into(),
        }
    }

    /// The escalation options: retry, reassign, modify, abort.
    pub fn escalation() -> Vec<ApprovalOption> {
        vec![
            ApprovalOption::new(ApprovalChoice::Retry, "Retry"),
            ApprovalOption::new(ApprovalChoice::Reassign, "Reassign to another agent"),
            ApprovalOption::new(ApprovalChoice::Modify, "Modify the subtask"),
            ApprovalOption::new(ApprovalChoice::Abort, "Abort the subtask"),
        ]
    }

    /// Approve or reject.
    pub fn yes_no() -> Vec<ApprovalOption> {
        vec![
            ApprovalOption::new(ApprovalChoice::Approve, "Approve"),
            ApprovalOption::new(ApprovalChoice::Reject, "Reject"),
        ]
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    pub uri: String,
    pub before: String,
    pub after: String,
}

/// PROTOCOL.md `ApprovalRequest`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub approval_id: Uuid,
    pub kind: ApprovalKind,
    pub task_id: TaskId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtask_id: Option<SubtaskId>,
    pub agent_id: String,
    pub severity: Severity,
    pub title: String,
    /// Markdown.
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed_solution: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<FileDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    pub options: Vec<ApprovalOption>,
    pub created_at: DateTime<Utc>,
}

/// How a person answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAnswer {
    pub decision: ApprovalChoice,
    #[serde(default)]
    pub note: Option<String>,
    #[serde(default)]
    pub modified_description: Option<String>,
}

impl ApprovalAnswer {
    pub fn new(decision: ApprovalChoice) -> Self {
        ApprovalAnswer {
            decision,
            note: None,
            modified_description: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no pending approval {0}")]
    NotFound(Uuid),
    #[error("`{decision}` is not an option of approval {approval}")]
    InvalidDecision { approval: Uuid, decision: String },
}

struct Pending {
    request: Arc<ApprovalRequest>,
    answer: oneshot::Sender<ApprovalAnswer>,
}

/// The pending approvals, cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    pending: Arc<DashMap<Uuid, Pending>>,
    /// Answers to approvals restored after a restart, by subtask, until the resumed
    /// subtask picks them up.
    restored: Arc<DashMap<SubtaskId, oneshot::Receiver<ApprovalAnswer>>>,
    events: EventBus,
    store: Option<Store>,
}

impl Approvals {
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        Approvals {
            pending: Arc::new(DashMap::new()),
            restored: Arc::new(DashMap::new()),
            events,
            store,
        }
    }

    /// Publishes `request` and waits for its answer. `None` means it was withdrawn
    /// (its task was cancelled); callers treat that as abort.
    pub async fn ask(&self, request: ApprovalRequest) -> Option<ApprovalAnswer> {
        let (answer, answered) = oneshot::channel();
        let request = Arc::new(request);
        self.pending.insert(
            request.approval_id,
            Pending {
                request: request.clone(),
                answer,
            },
        );
        if let Some(store) = &self.store {
            store.record(Record::ApprovalRequested(request.clone()));
        }
        self.events
            .publish(RuntimeEvent::ApprovalRequested(request.clone()));
        answered.await.ok()
    }

    /// Makes an approval that was pending when the process stopped pending again, with
    /// its original id, so a reconnecting editor can still answer it. The subtask it
    /// belongs to collects the answer with [`Approvals::take_restored`].
    pub fn restore(&self, request: ApprovalRequest) {
        let (answer, answered) = oneshot::channel();
        let request = Arc::new(request);
        if let Some(subtask) = request.subtask_id {
            self.restored.insert(subtask, answered);
        }
        self.pending.insert(
            request.approval_id,
            Pending {
                request: request.clone(),
                answer,
            },
        );
        self.events
            .publish(RuntimeEvent::ApprovalRequested(request));
    }

    /// The answer channel of a restored approval of `subtask`, if there is one.
    pub fn take_restored(&self, subtask: SubtaskId) -> Option<oneshot::Receiver<ApprovalAnswer>> {
        self.restored.remove(&subtask).map(|(_, answered)| answered)
    }

    /// Answers a pending approval with one of its options.
    pub fn resolve(&self, id: Uuid, answer: ApprovalAnswer) -> Result<(), ApprovalError> {
        {
            let pending = self.pending.get(&id).ok_or(ApprovalError::NotFound(id))?;
            if !pending
                .request
                .options
                .iter()
                .any(|o| o.id == answer.decision)
            {
                return Err(ApprovalError::InvalidDecision {
                    approval: id,
                    decision: answer.decision.as_str().to_string(),
                });
            }
        }
        let (_, pending) = self
            .pending
            .remove(&id)
            .ok_or(ApprovalError::NotFound(id))?;
        self.settled(&pending.request, Some(&answer));
        let _ = pending.answer.send(answer);
        Ok(())
    }

    /// Withdraws every pending approval of `task` (it was cancelled or finished).
    pub fn withdraw_task(&self, task: TaskId) {
        let ids: Vec<Uuid> = self
            .pending
            .iter()
            .filter(|p| p.request.task_id == task)
            .map(|p| *p.key())
            .collect();
        for id in ids {
            if let Some((_, pending)) = self.pending.remove(&id) {
                self.settled(&pending.request, None);
            }
        }
    }

    /// Everything still pending, oldest first.
    pub fn pending(&self) -> Vec<Arc<ApprovalRequest>> {
        let mut all: Vec<Arc<ApprovalRequest>> =
            self.pending.iter().map(|p| p.request.clone()).collect();
        all.sort_by_key(|r| (r.created_at, r.approval_id));
        all
    }

    pub fn get(&self, id: Uuid) -> Option<Arc<ApprovalRequest>> {
        self.pending.get(&id).map(|p| p.request.clone())
    }

    fn settled(&self, request: &Arc<ApprovalRequest>, answer: Option<&ApprovalAnswer>) {
        if let Some(store) = &self.store {
            store.record(Record::ApprovalResolved {
                approval_id: request.approval_id,
                answer: answer.cloned(),
            });
        }
        self.events.publish(RuntimeEvent::ApprovalResolved {
            approval_id: request.approval_id,
            task_id: request.task_id,
            decision: answer.map(|a| a.decision),
        });
    }
}
