//! Approvals as they are recorded: the question put to the person ([`ApprovalRequest`],
//! docs/protocol.md) and the answer given ([`ApprovalAnswer`]). Asking and waiting is
//! `runtime::Approvals`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::config::Severity;
use crate::ids::{SubtaskId, TaskId};

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

/// docs/protocol.md `ApprovalRequest`.
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
    /// The subtask's current description, for an escalation: what "Modify the subtask"
    /// starts from (an addition, docs/protocol.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask_description: Option<String>,
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
