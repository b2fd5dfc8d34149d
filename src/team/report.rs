//! ERROR_REPORT.md: what failed, why, and what to do about it, in the format of the
//! error-recovery research (header, summary table, failed tasks, error categories,
//! recommendations), plus the recovery figures.

use std::collections::BTreeMap;
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};

use crate::records::failure::summarize;
use crate::recovery::{FailureKind, RecoveryAction, RecoveryEvent, Scope};
use crate::runtime::{Subtask, SubtaskStatus, TaskError, TaskRecord, TaskStatus};

/// How the session ran, for the header.
#[derive(Clone, Debug)]
pub struct ReportHeader {
    pub generated: DateTime<Utc>,
    /// `serve`, `run` or `demo`.
    pub mode: String,
    pub continue_on_error: bool,
}

/// What recovery did across the reported tasks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecoveryFigures {
    pub retries: usize,
    pub peer_takeovers: usize,
    pub escalations: usize,
    pub replacements: usize,
    /// Subtasks that hit at least one error.
    pub errored: usize,
    /// Of those, the ones that completed anyway.
    pub recovered: usize,
}

impl RecoveryFigures {
    pub fn from(tasks: &[TaskRecord], steps: &[RecoveryEvent]) -> RecoveryFigures {
        let count = |actions: &[RecoveryAction]| {
            steps.iter().filter(|s| actions.contains(&s.action)).count()
        };
        let mut errored = 0;
        let mut recovered = 0;
        for task in tasks {
            for subtask in &task.subtasks {
                let had_error = task.errors.iter().any(|e| {
                    e.subtask_id() == Some(subtask.id) && e.failure.kind != FailureKind::Skipped
                });
                if had_error {
                    errored += 1;
                    if subtask.status == SubtaskStatus::Completed {
                        recovered += 1;
                    }
                }
            }
        }
        RecoveryFigures {
            retries: count(&[RecoveryAction::Retry]),
            peer_takeovers: count(&[RecoveryAction::PeerTakeover]),
            escalations: count(&[
                RecoveryAction::EscalateToSupervisor,
                RecoveryAction::EscalateToTop,
            ]),
            replacements: count(&[RecoveryAction::ReplaceAgent]),
            errored,
            recovered,
        }
    }

    /// recovered / errored, or `None` when nothing errored.
    pub fn recovery_rate(&self) -> Option<f64> {
        (self.errored > 0).then(|| self.recovered as f64 / self.errored as f64)
    }
}

/// One unit the report lists as failed: a subtask, or the task itself when it failed
/// as a whole (planning, a vetoed plan, an expired decision, verify, a timeout, a
/// cancellation, a provider outage).
struct FailedUnit<'a> {
    task: &'a TaskRecord,
    subtask: Option<&'a Subtask>,
    phase: &'static str,
    /// The failure that ended the unit, and the first one it met (its root cause).
    last: Option<&'a TaskError>,
    first: Option<&'a TaskError>,
}

/// Whether a subtask never ran because work it depends on did not complete.
pub fn is_skipped(task: &TaskRecord, subtask: &Subtask) -> bool {
    subtask.status == SubtaskStatus::Failed
        && subtask.attempts == 0
        && task
            .errors
            .iter()
            .any(|e| e.subtask_id() == Some(subtask.id) && e.failure.kind == FailureKind::Skipped)
}

fn failed_units(task: &TaskRecord) -> Vec<FailedUnit<'_>> {
    let mut units = Vec::new();
    for subtask in &task.subtasks {
        if subtask.status != SubtaskStatus::Failed || is_skipped(task, subtask) {
            continue;
        }
        let errors: Vec<&TaskError> = task
            .errors
            .iter()
            .filter(|e| e.subtask_id() == Some(subtask.id))
            .collect();
        units.push(FailedUnit {
            task,
            subtask: Some(subtask),
            phase: "execute",
            last: errors.last().copied(),
            first: errors.first().copied(),
        });
    }
    let task_errors: Vec<&TaskError> = task
        .errors
        .iter()
        .filter(|e| e.subtask_id().is_none())
        .collect();
    let ended_as_a_whole = matches!(task.status, TaskStatus::Failed | TaskStatus::Cancelled)
        && (!task_errors.is_empty() || task.subtasks.is_empty());
    if ended_as_a_whole {
        let last = task_errors.last().copied();
        let phase = match last.map(|e| e.failure.kind) {
            _ if task.subtasks.is_empty() => "plan",
            Some(FailureKind::CheckFailed) => "verify",
            Some(FailureKind::PlanVetoed | FailureKind::DecisionExpired) => "plan",
            Some(FailureKind::Cancelled) => "cancelled",
            Some(FailureKind::Timeout) => "timeout",
            Some(FailureKind::ProviderOutage) => "waiting for the provider",
            _ => "task",
        };
        units.push(FailedUnit {
            task,
            subtask: None,
            phase,
            last,
            first: task_errors.first().copied(),
        });
    }
    units
}

/// Renders the report for `tasks`, whose recovery steps are `steps`.
pub fn render(header: &ReportHeader, tasks: &[TaskRecord], steps: &[RecoveryEvent]) -> String {
    let mut out = String::new();
    let subtasks: Vec<_> = tasks.iter().flat_map(|t| t.subtasks.iter()).collect();
    let completed = subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Completed)
        .count();
    let skipped: usize = tasks
        .iter()
        .map(|t| t.subtasks.iter().filter(|s| is_skipped(t, s)).count())
        .sum();
    let units: Vec<FailedUnit> = tasks.iter().flat_map(failed_units).collect();
    let failed_subtasks = units.iter().filter(|u| u.subtask.is_some()).count();
    // A task that failed as a whole without a failed subtask to show for it (planning,
    // verify, a veto, an expired decision, a timeout) counts as one failed unit.
    let failed_wholes = tasks
        .iter()
        .filter(|t| {
            matches!(t.status, TaskStatus::Failed | TaskStatus::Cancelled)
                && units
                    .iter()
                    .any(|u| u.subtask.is_none() && std::ptr::eq(u.task, *t))
                && !units
                    .iter()
                    .any(|u| u.subtask.is_some() && std::ptr::eq(u.task, *t))
        })
        .count();
    let total = subtasks.len()
        + tasks
            .iter()
            .filter(|t| t.subtasks.is_empty() && t.status == TaskStatus::Failed)
            .count();
    let failed = failed_subtasks + failed_wholes;
    let rate = if total == 0 {
        100.0
    } else {
        completed as f64 * 100.0 / total as f64
    };

    let _ = writeln!(out, "# Error Report\n");
    let _ = writeln!(
        out,
        "**Generated**: {}",
        header.generated.to_rfc3339_opts(SecondsFormat::Secs, true)
    );
    let _ = writeln!(out, "**Mode**: {}", header.mode);
    let _ = writeln!(out, "**Continue on Error**: {}\n", header.continue_on_error);

    let _ = writeln!(out, "## Summary\n");
    let _ = writeln!(out, "| Metric | Count |\n| --- | --- |");
    let _ = writeln!(out, "| Total Tasks | {total} |");
    let _ = writeln!(out, "| Completed | {completed} |");
    let _ = writeln!(out, "| Failed | {failed} |");
    if skipped > 0 {
        let _ = writeln!(out, "| Skipped | {skipped} |");
    }
    let _ = writeln!(out, "| Success Rate | {rate:.0}% |\n");
    let _ = writeln!(
        out,
        "Tasks count subtasks across {} submitted task(s).\n",
        tasks.len()
    );

    let _ = writeln!(out, "## Failed Tasks\n");
    let mut categories: BTreeMap<FailureKind, usize> = BTreeMap::new();
    for task in tasks {
        for error in &task.errors {
            *categories.entry(error.failure.kind).or_default() += 1;
        }
    }
    for unit in &units {
        let task = unit.task;
        let (unit_id, unit_title) = match unit.subtask {
            Some(s) => (s.id.to_string(), s.description.as_str()),
            None => (task.id.to_string(), task.title.as_str()),
        };
        let _ = writeln!(out, "### {unit_id}: {}\n", summarize(unit_title, 100));
        let _ = writeln!(out, "**Task**: {} ({})", task.title, task.id);
        if let Some(s) = unit.subtask {
            let _ = writeln!(out, "**Subtask**: {} (attempts: {})", s.id, s.attempts);
        }
        let _ = writeln!(out, "**Phase**: {}", unit.phase);
        match unit.last {
            Some(e) => {
                let f = &e.failure;
                let _ = writeln!(
                    out,
                    "**Error Type**: {} ({}{})",
                    f.kind,
                    f.severity,
                    if f.fatal { ", fatal" } else { "" }
                );
                if let Scope::Provider { provider } = &f.scope {
                    let _ = writeln!(out, "**Provider**: {provider}");
                }
                let _ = writeln!(
                    out,
                    "**Timestamp**: {}\n",
                    e.at.to_rfc3339_opts(SecondsFormat::Secs, true)
                );
                let _ = writeln!(out, "**Error Message**:\n\n```\n{}\n```\n", f.message);
                // The first error behind the last one: what actually went wrong.
                let root = match (&f.root_cause, unit.first) {
                    (Some(root), _) => Some((root.kind, root.message.as_str())),
                    (None, Some(first)) if !std::ptr::eq(first, e) => Some(first.failure.root()),
                    _ => None,
                };
                if let Some((kind, message)) = root
                    && (kind != f.kind || message != f.message)
                {
                    let _ = writeln!(out, "**Root Cause**: {kind}\n\n```\n{message}\n```\n");
                }
            }
            None => {
                let _ = writeln!(out, "**Error Type**: unknown\n");
            }
        }
        if let Some(s) = unit.subtask
            && !s.partial_results.is_empty()
        {
            let _ = writeln!(out, "**Partial Results**:\n");
            for partial in &s.partial_results {
                let _ = writeln!(out, "- {}", summarize(partial, 160));
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "---\n");
    }
    if units.is_empty() {
        let _ = writeln!(out, "None.\n");
    }
    if skipped > 0 {
        let _ = writeln!(out, "## Skipped\n");
        for task in tasks {
            for s in task.subtasks.iter().filter(|s| is_skipped(task, s)) {
                let why = task
                    .errors
                    .iter()
                    .find(|e| e.subtask_id() == Some(s.id))
                    .map(|e| e.failure.message.as_str())
                    .unwrap_or("a dependency did not complete");
                let _ = writeln!(out, "- {}: {}", summarize(&s.description, 100), why);
            }
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(out, "## Error Categories\n");
    if categories.is_empty() {
        let _ = writeln!(out, "None.\n");
    } else {
        for (kind, count) in &categories {
            let _ = writeln!(out, "- **{kind}**: {count}");
        }
        let _ = writeln!(out);
    }

    let figures = RecoveryFigures::from(tasks, steps);
    let _ = writeln!(out, "## Recovery\n");
    let _ = writeln!(out, "| Metric | Count |\n| --- | --- |");
    let _ = writeln!(out, "| Retries | {} |", figures.retries);
    let _ = writeln!(out, "| Peer Takeovers | {} |", figures.peer_takeovers);
    let _ = writeln!(out, "| Escalations | {} |", figures.escalations);
    let _ = writeln!(out, "| Agent Replacements | {} |", figures.replacements);
    let _ = writeln!(out, "| Subtasks With Errors | {} |", figures.errored);
    let _ = writeln!(out, "| Recovered | {} |", figures.recovered);
    let _ = writeln!(
        out,
        "| Recovery Rate | {} |\n",
        figures
            .recovery_rate()
            .map(|r| format!("{:.0}%", r * 100.0))
            .unwrap_or_else(|| "n/a".into())
    );

    // Tokens and cost per task (counted by src/model/metered.rs, priced by
    // src/runtime/usage.rs).
    let _ = writeln!(out, "## Token Usage\n");
    for task in tasks {
        let _ = writeln!(out, "- **{}**: {}", task.title, task.usage.total.describe());
    }
    let _ = writeln!(out);

    let _ = writeln!(out, "## Recommendations\n");
    let mut n = 0;
    let mut recommend = |text: &str| {
        n += 1;
        let _ = writeln!(out, "{n}. {text}");
    };
    for kind in categories.keys() {
        if let Some(advice) = advice_for(*kind) {
            recommend(advice);
        }
    }
    if failed > 0 || skipped > 0 {
        recommend("Review the failed tasks above; partial results show what was already done.");
        recommend(
            "Re-run only what failed: retry the task from the editor (`conclave/retryTask`) or run `conclave run` again.",
        );
    } else {
        recommend("Nothing failed for good; the errors above were recovered.");
    }
    out
}

fn advice_for(kind: FailureKind) -> Option<&'static str> {
    Some(match kind {
        FailureKind::Auth | FailureKind::Permission => {
            "Check the API key and permissions: the variable named by `llm.apiKeyEnv` (or ANTHROPIC_API_KEY / OPENAI_API_KEY) must hold a valid key."
        }
        FailureKind::QuotaExceeded => {
            "The provider refused for billing or quota reasons: raise the limit or switch `llm.provider`."
        }
        FailureKind::RateLimited => {
            "The provider rate-limited the team: lower `team.bottomPerMid`, or raise `recovery.providerPatienceMs` to wait longer."
        }
        FailureKind::Timeout => {
            "Calls or commands timed out: raise `recovery.stepTimeoutMs` or `recovery.subtaskTimeoutMs`, or use a faster model."
        }
        FailureKind::Connection => {
            "The model server could not be reached: check `llm.baseUrl` and that the server is running."
        }
        FailureKind::CircuitOpen | FailureKind::ProviderOutage => {
            "A provider kept failing and the team paused its calls: check the provider's status, then retry the task."
        }
        FailureKind::ContextOverflow => {
            "A conversation outgrew the model's context: split the task into smaller ones."
        }
        FailureKind::InvalidResponse => {
            "The model's answers could not be read: try a stronger model or a lower temperature."
        }
        FailureKind::InvalidConfig => {
            "The configuration cannot work (for example no model): set `llm.provider` (and its key) in conclave.toml or the editor settings."
        }
        FailureKind::CheckFailed => {
            "The verify command still fails: run it yourself to see why, fix or adjust `verify.command`, then retry."
        }
        FailureKind::PlanVetoed => {
            "The top layer vetoed the plan: describe the task more precisely, or split it."
        }
        FailureKind::DecisionExpired => {
            "A decision was not made in time: answer approvals sooner, or raise `governance.decisionTtlMs`."
        }
        FailureKind::NoProgress => {
            "The model stopped without making the changes the subtask asked for: make the task more explicit, or use a stronger model."
        }
        FailureKind::ExecutorCrashed => {
            "The executor process kept dying: run `pi --version` in the workspace to see whether pi works, or set `executor.kind = \"builtin\"`."
        }
        FailureKind::BadRequest | FailureKind::Server => {
            "The provider answered with an HTTP error; see the messages above."
        }
        _ => return None,
    })
}
