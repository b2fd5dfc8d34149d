//! ERROR_REPORT.md: what failed, why, and what to do about it, in the format of the
//! error-recovery research (header, summary table, failed tasks, error categories,
//! recommendations), plus the recovery figures.

use std::collections::BTreeMap;
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};

use super::{RecoveryAction, RecoveryEvent};
use crate::runtime::{SubtaskStatus, TaskRecord, TaskStatus};

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
                let had_error = task.errors.iter().any(|e| e.subtask_id == Some(subtask.id));
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

/// Renders the report for `tasks`, whose recovery steps are `steps`.
pub fn render(header: &ReportHeader, tasks: &[TaskRecord], steps: &[RecoveryEvent]) -> String {
    let mut out = String::new();
    let subtasks: Vec<_> = tasks.iter().flat_map(|t| t.subtasks.iter()).collect();
    let completed = subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Completed)
        .count();
    let failed_subtasks = subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Failed)
        .count();
    // A task that failed before it had subtasks (planning) counts as one failed unit.
    let failed_unplanned = tasks
        .iter()
        .filter(|t| t.subtasks.is_empty() && t.status == TaskStatus::Failed)
        .count();
    let total = subtasks.len() + failed_unplanned;
    let failed = failed_subtasks + failed_unplanned;
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
    let _ = writeln!(out, "| Success Rate | {rate:.0}% |\n");
    let _ = writeln!(
        out,
        "Tasks count subtasks across {} submitted task(s).\n",
        tasks.len()
    );

    let _ = writeln!(out, "## Failed Tasks\n");
    let mut any_failed = false;
    let mut categories: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        for error in &task.errors {
            *categories.entry(error.kind.clone()).or_default() += 1;
        }
        let failed_units: Vec<(Option<&crate::runtime::Subtask>, &str)> =
            if task.subtasks.is_empty() {
                if task.status == TaskStatus::Failed {
                    vec![(None, "plan")]
                } else {
                    vec![]
                }
            } else {
                task.subtasks
                    .iter()
                    .filter(|s| s.status == SubtaskStatus::Failed)
                    .map(|s| (Some(s), "execute"))
                    .collect()
            };
        for (subtask, phase) in failed_units {
            any_failed = true;
            let last_error = task
                .errors
                .iter()
                .rev()
                .find(|e| e.subtask_id == subtask.map(|s| s.id));
            let (unit_id, unit_title) = match subtask {
                Some(s) => (s.id.to_string(), s.description.as_str()),
                None => (task.id.to_string(), task.title.as_str()),
            };
            let _ = writeln!(out, "### {unit_id}: {}\n", first_line(unit_title));
            let _ = writeln!(out, "**Task**: {} ({})", task.title, task.id);
            if let Some(s) = subtask {
                let _ = writeln!(out, "**Subtask**: {} (attempts: {})", s.id, s.attempts);
            }
            let _ = writeln!(out, "**Phase**: {phase}");
            match last_error {
                Some(e) => {
                    let _ = writeln!(out, "**Error Type**: {} ({})", e.kind, e.severity);
                    let _ = writeln!(
                        out,
                        "**Timestamp**: {}\n",
                        e.at.to_rfc3339_opts(SecondsFormat::Secs, true)
                    );
                    let _ = writeln!(out, "**Error Message**:\n\n```\n{}\n```\n", e.message);
                }
                None => {
                    let _ = writeln!(out, "**Error Type**: unknown\n");
                }
            }
            if let Some(s) = subtask
                && !s.partial_results.is_empty()
            {
                let _ = writeln!(out, "**Partial Results**:\n");
                for partial in &s.partial_results {
                    let _ = writeln!(out, "- {}", first_line(partial));
                }
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "---\n");
        }
    }
    if !any_failed {
        let _ = writeln!(out, "None.\n");
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

    // Tokens and cost per task (src/runtime/usage.rs).
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
        if let Some(advice) = advice_for(kind) {
            recommend(advice);
        }
    }
    if failed > 0 {
        recommend("Review the failed tasks above; partial results show what was already done.");
        recommend(
            "Re-run only what failed with `conclave/retryTask` (Conclave: Retry Task in the editor).",
        );
    } else {
        recommend("Nothing failed for good; the errors above were recovered.");
    }
    out
}

fn advice_for(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "unauthorized" | "forbidden" => {
            "Check the API key: the variable named by `llm.apiKeyEnv` (or ANTHROPIC_API_KEY / OPENAI_API_KEY) must hold a valid key."
        }
        "spend_limit" => {
            "The provider refused for billing or quota reasons: raise the limit or switch `llm.provider`."
        }
        "rate_limited" => {
            "The provider rate-limited the team: lower `team.bottomPerMid` or raise `recovery.call.maxDelayMs`."
        }
        "timeout" => {
            "Calls or commands timed out: raise `recovery.stepTimeoutMs` or `recovery.subtaskTimeoutMs`, or use a faster model."
        }
        "connection" => {
            "The model server could not be reached: check `llm.baseUrl` and that the server is running."
        }
        "circuit_open" => {
            "A provider kept failing and its circuit breaker opened: check the provider's status, then retry."
        }
        "no_progress" => {
            "The model stopped without making the changes the subtask asked for: make the task more explicit, or use a stronger model."
        }
        "context_overflow" => {
            "A conversation outgrew the model's context: split the task into smaller ones."
        }
        "malformed_response" | "invalid_structured_output" => {
            "The model's answers could not be read: try a stronger model or a lower temperature."
        }
        "llm_not_configured" => {
            "No model is configured: set `llm.provider` (and its key) in conclave.toml or the editor settings."
        }
        "path_outside_workspace" => {
            "A tool tried to leave the workspace; the change was refused. Check the task's paths."
        }
        "http_status" => "The provider answered with an HTTP error; see the messages above.",
        _ => return None,
    })
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}
