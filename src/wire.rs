//! The task as the front-ends see it: `TaskSummary` (`conclave/taskUpdated`,
//! `listTasks`, the ACP plan) and `TaskDetail` (`conclave/getTask`, the ACP closing
//! message, `conclave run`'s summary), made from the runtime's `TaskRecord` at the edge.
//! The record is the checkpoint, versioned (`store/checkpoint.rs`); these are the wire's
//! shapes, checked against docs/protocol.md and the VS Code extension
//! (`lsp/wire_check.rs`), and free to differ from the record.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, SubtaskId, TaskId};
use crate::records::{
    CheckCounts, CheckResult, Evidence, FinalReport, RecoveryEvent, Reverted, RevertedBy,
    SubtaskStatus, TaskError, TaskRecord, TaskStatus, TaskUsage, TokenUsage,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskSummary {
    pub subtask_id: SubtaskId,
    pub description: String,
    pub assignee: Option<AgentId>,
    /// The assignee's name, also when that agent is gone (docs/protocol.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_name: Option<String>,
    pub status: SubtaskStatus,
    pub attempts: u32,
    /// Workspace-relative paths the subtask has written so far (docs/protocol.md:
    /// editors mark the files being generated).
    pub files: Vec<String>,
}

/// docs/protocol.md `TaskSummary`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    pub task_id: TaskId,
    pub title: String,
    pub status: TaskStatus,
    pub progress: u8,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub subtasks: Vec<SubtaskSummary>,
    pub recovery: Option<RecoveryEvent>,
    /// (addition) Why the task's work was never run by its checks, when it was not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// (addition) A completed task's: what ran its code when its checks last passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_by: Option<Evidence>,
    /// (addition) Why an unfinished task is not running (it waits for the ACP session
    /// it belongs to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked: Option<String>,
    /// (addition) The task's tokens and cost so far (`TaskDetail.usage.total`), so an
    /// editor shows them live; absent until the task's first model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_total: Option<TokenUsage>,
    /// (addition) How the task's checks went, counted (`TaskDetail.checks` has them
    /// whole); absent until a check ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_counts: Option<CheckCounts>,
    /// (addition) Set once the task's changes were taken back: `failure` (put back when
    /// it failed) or `undo` (a person undid it); `TaskDetail.reverted` says which files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted_by: Option<RevertedBy>,
}

impl TaskSummary {
    /// The task as the front-ends show it.
    pub fn of(task: &TaskRecord) -> TaskSummary {
        TaskSummary {
            task_id: task.id,
            title: task.title.clone(),
            status: task.status,
            progress: task.progress(),
            created_at: task.created_at,
            updated_at: task.updated_at,
            subtasks: task
                .subtasks
                .iter()
                .map(|s| SubtaskSummary {
                    subtask_id: s.id,
                    description: s.description.clone(),
                    assignee: s.assignee,
                    assignee_name: s.assignee_name.clone(),
                    status: s.status,
                    attempts: s.attempts,
                    files: s.files.clone(),
                })
                .collect(),
            recovery: task.recovery.clone(),
            unchecked: task.unchecked.clone(),
            checked_by: task.checked_by,
            parked: task.parked.clone(),
            usage_total: (task.usage.total.calls > 0).then_some(task.usage.total),
            check_counts: CheckCounts::of(&task.checks),
            reverted_by: task.reverted.as_ref().map(|r| r.by),
        }
    }
}

/// docs/protocol.md `TaskDetail`: the summary plus what the task produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskDetail {
    #[serde(flatten)]
    pub summary: TaskSummary,
    pub description: String,
    pub files_written: Vec<String>,
    pub result: Option<String>,
    pub partial_results: Vec<String>,
    pub errors: Vec<TaskError>,
    /// (addition) What was checked, and how: syntax, stubs, tests.
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    /// (addition) How many times each check rule found something, by rule id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rule_findings: BTreeMap<String, u32>,
    /// Tokens and cost, in all and by subtask and agent (docs/protocol.md, "Executor: tokens and cost").
    #[serde(default)]
    pub usage: TaskUsage,
    /// (addition) What was put back, and what left as it was, when the task's changes
    /// were taken back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted: Option<Reverted>,
    /// (addition) The top agent's report on the finished task; absent until it is
    /// written, shortly after the task ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_report: Option<FinalReport>,
}

impl TaskDetail {
    /// The task and what it produced, as `conclave/getTask` answers.
    pub fn of(task: &TaskRecord) -> TaskDetail {
        TaskDetail {
            summary: TaskSummary::of(task),
            description: task.description.clone(),
            files_written: task.files_written.clone(),
            result: task.result.clone(),
            partial_results: task.partial_results.clone(),
            errors: task.errors.clone(),
            checks: task.checks.clone(),
            rule_findings: task.rule_findings.clone(),
            usage: task.usage.clone(),
            reverted: task.reverted.clone(),
            final_report: task.final_report.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{CheckStatus, TaskContext, TaskOptions};

    fn check(status: CheckStatus, rules: &[&str], at: DateTime<Utc>) -> CheckResult {
        CheckResult {
            kind: "stubs".into(),
            name: "stub scan".into(),
            status,
            files: vec!["a.py".into()],
            detail: String::new(),
            subtask_id: None,
            at,
            rules: rules.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn a_summary_counts_checks_and_carries_usage_once_a_call_was_made() {
        let mut task = TaskRecord::new(
            "t".into(),
            "d".into(),
            TaskContext::default(),
            TaskOptions::default(),
        );
        let wire = serde_json::to_value(TaskSummary::of(&task)).unwrap();
        assert!(wire.get("usageTotal").is_none() && wire.get("checkCounts").is_none());

        let first = Utc::now();
        let latest = first + chrono::Duration::seconds(1);
        task.checks = vec![
            check(
                CheckStatus::Failed,
                &["python.stub", "python.lost-main"],
                first,
            ),
            check(CheckStatus::Failed, &["python.stub"], latest),
            check(CheckStatus::Passed, &["syntax.python"], first),
            check(CheckStatus::Skipped, &[], first),
        ];
        task.usage.record(
            None,
            None,
            &TokenUsage {
                input_tokens: 1200,
                output_tokens: 34,
                calls: 1,
                ..TokenUsage::default()
            },
        );
        let summary = TaskSummary::of(&task);
        assert_eq!(
            summary.check_counts,
            Some(CheckCounts {
                passed: 1,
                failed: 2,
                skipped: 1,
                failed_rules: vec!["python.lost-main".into(), "python.stub".into()],
                at: latest,
            })
        );
        let wire = serde_json::to_value(&summary).unwrap();
        assert_eq!(wire["usageTotal"]["inputTokens"], 1200);
        assert_eq!(wire["checkCounts"]["failedRules"][1], "python.stub");
        // The detail flattens the summary: its `usage` stays the whole split.
        let detail = serde_json::to_value(TaskDetail::of(&task)).unwrap();
        assert_eq!(detail["usage"]["total"], detail["usageTotal"]);
        assert!(detail["checks"].is_array());
        let back: TaskDetail = serde_json::from_value(detail).unwrap();
        assert_eq!(back.summary, summary);
    }
}
