//! The end-of-run summary on stderr: subtasks completed and failed, files written, what
//! each agent did, the recovery steps and figures (the same figures ERROR_REPORT.md has).

use std::fmt::Write;

use conclave::recovery::{FailureKind, RecoveryAction};
use conclave::runtime::usage::dollars;
use conclave::runtime::{CheckResult, CheckStatus, DecisionStatus, RevertedBy, SubtaskStatus};

use super::progress::{Style, action_label, clip, plural, subtask_status, task_status};
use super::session::Finished;

/// Renders the summary of a finished task.
pub fn render(finished: &mut Finished, style: Style) -> String {
    let mut out = String::new();
    let summary = &finished.detail.summary;
    let total = summary.subtasks.len();
    let completed = summary
        .subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Completed)
        .count();
    // A subtask that never ran because a dependency failed is skipped, not failed.
    let skipped_ids: Vec<_> = finished
        .detail
        .errors
        .iter()
        .filter(|e| e.failure.kind == FailureKind::Skipped)
        .filter_map(|e| e.subtask_id())
        .collect();
    let skipped = summary
        .subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Failed && skipped_ids.contains(&s.subtask_id))
        .count();
    let failed = summary
        .subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Failed)
        .count()
        - skipped;
    let status = match summary.status {
        conclave::runtime::TaskStatus::Completed => style.green("completed"),
        other => style.red(task_status(other)),
    };
    let _ = writeln!(out, "\n{}", style.bold("Summary"));
    let _ = writeln!(out, "  Task: \"{}\" — {status}", clip(&summary.title, 90));
    // Work nobody could run is said to be unchecked, plainly and at the top.
    if let Some(why) = &summary.unchecked {
        let _ = writeln!(out, "  {} {why}", style.yellow("!"));
    } else if let Some(evidence) = summary.checked_by {
        // What a completion rests on; one only the team itself checked is to be reviewed.
        let mark = if evidence.asks_for_review() {
            style.yellow("!")
        } else {
            " ".into()
        };
        let _ = writeln!(out, "  {mark} Checked by: {}", evidence.describe());
    }
    let _ = writeln!(
        out,
        "  Subtasks: {completed} completed, {failed} failed{}{} (of {total})",
        match skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        },
        match total - completed - failed - skipped {
            0 => String::new(),
            other => format!(", {other} not finished"),
        }
    );
    for (i, s) in summary.subtasks.iter().enumerate() {
        if s.status == SubtaskStatus::Completed {
            continue;
        }
        let error = finished
            .detail
            .errors
            .iter()
            .rev()
            .find(|e| e.subtask_id() == Some(s.subtask_id));
        let first = finished
            .detail
            .errors
            .iter()
            .find(|e| e.subtask_id() == Some(s.subtask_id));
        let why = match error {
            Some(e) if e.failure.kind == FailureKind::Skipped => {
                format!("skipped: {}", clip(&e.failure.message, 100))
            }
            Some(e) if s.status == SubtaskStatus::Failed => {
                let mut why = format!(
                    "{} ({}): {}",
                    e.failure.kind,
                    e.failure.severity,
                    clip(&e.failure.message, 100)
                );
                // The first error is the cause; the last is often only its consequence.
                let (kind, message) = match first {
                    Some(first) if !std::ptr::eq(first, e) => first.failure.root(),
                    _ => e.failure.root(),
                };
                if kind != e.failure.kind || message != e.failure.message {
                    why.push_str(&format!("; first error {kind}: {}", clip(message, 80)));
                }
                why
            }
            _ => subtask_status(s.status).to_string(),
        };
        let _ = writeln!(
            out,
            "    {} {}. {} — {why}",
            style.red("✗"),
            i + 1,
            clip(&s.description, 60)
        );
    }
    for e in finished
        .detail
        .errors
        .iter()
        .filter(|e| e.subtask_id().is_none())
    {
        let _ = writeln!(
            out,
            "    {} task: {} ({}): {}",
            style.red("✗"),
            e.failure.kind,
            e.failure.severity,
            clip(&e.failure.message, 120)
        );
    }
    let files = &finished.detail.files_written;
    if files.is_empty() {
        let _ = writeln!(out, "  Files written: none");
    } else {
        let _ = writeln!(
            out,
            "  Files written ({}): {}",
            files.len(),
            files.join(", ")
        );
    }
    // A failed task's changes are taken back (undo.onFailure): say what was put back.
    match &finished.detail.reverted {
        Some(reverted) => {
            let how = match reverted.by {
                RevertedBy::Failure => "the task failed",
                RevertedBy::Undo => "undone",
            };
            let restored = if reverted.restored.is_empty() {
                "none needed".to_string()
            } else {
                reverted.restored.join(", ")
            };
            let _ = writeln!(out, "  Put back as before the task ({how}): {restored}");
            for kept in &reverted.kept {
                let _ = writeln!(
                    out,
                    "    {} {} left as it is: {}",
                    style.yellow("!"),
                    kept.path,
                    kept.reason
                );
            }
        }
        None if summary.status == conclave::runtime::TaskStatus::Failed
            && !(files.is_empty() && finished.undoable.is_empty()) =>
        {
            let changed = finished
                .undoable
                .iter()
                .filter(|path| !files.contains(path))
                .cloned()
                .collect::<Vec<_>>();
            let by_commands = if changed.is_empty() {
                String::new()
            } else {
                format!(" (by its commands: {})", changed.join(", "))
            };
            let _ = writeln!(
                out,
                "  Changes kept{by_commands}; to take them back: conclave undo {}",
                &summary.task_id.to_string()[..8]
            );
        }
        None => {}
    }
    // Done means checked: what ran on the code, and how it went.
    let checks = &finished.detail.checks;
    let task_level: Vec<&CheckResult> = checks.iter().filter(|c| c.subtask_id.is_none()).collect();
    let shown: Vec<&CheckResult> = if task_level.is_empty() {
        checks.iter().collect()
    } else {
        task_level
    };
    if shown.is_empty() {
        let _ = writeln!(out, "  Checks: none (no code was written)");
    } else {
        let _ = writeln!(out, "  Checks:");
        for c in shown {
            let (mark, how) = match c.status {
                CheckStatus::Passed => (style.green("✓"), "passed".to_string()),
                CheckStatus::Failed if c.rules.is_empty() => (style.red("✗"), "failed".to_string()),
                CheckStatus::Failed => (style.red("✗"), format!("failed [{}]", c.rules.join(", "))),
                CheckStatus::Skipped => ("-".to_string(), format!("skipped: {}", c.detail)),
            };
            let _ = writeln!(out, "    {mark} {} `{}` {how}", c.kind, clip(&c.name, 70));
        }
    }
    let usage = finished.detail.usage.clone();
    let _ = writeln!(out, "  Tokens: {}", usage.total.describe());
    if usage.by_agent.len() > 1 {
        let by_agent: Vec<String> = usage
            .by_agent
            .iter()
            .map(|(agent, used)| {
                let name = match agent.parse() {
                    Ok(id) => finished.names.of(id),
                    Err(_) => agent.clone(),
                };
                format!("{name} {}", used.total_tokens())
            })
            .collect();
        let _ = writeln!(out, "    by agent: {}", by_agent.join(" · "));
    }
    if let Some(cap) = &finished.spend_cap {
        let raised = match usage.cost_limit_usd {
            Some(raised) => format!("; raised to {} for this task", dollars(raised)),
            None => String::new(),
        };
        let _ = writeln!(out, "  Spend cap: {}{raised}", cap.describe());
    }
    let f = finished.figures;
    let _ = writeln!(
        out,
        "  Recovery: {} retr{} · {} peer takeover{} · {} escalation{} · {} agent replacement{}",
        f.retries,
        if f.retries == 1 { "y" } else { "ies" },
        f.peer_takeovers,
        plural(f.peer_takeovers as u64),
        f.escalations,
        plural(f.escalations as u64),
        f.replacements,
        plural(f.replacements as u64),
    );
    let _ = match f.recovery_rate() {
        Some(rate) => writeln!(
            out,
            "  Recovery rate: {:.0}% ({} of {} subtask{} that hit an error completed anyway)",
            rate * 100.0,
            f.recovered,
            f.errored,
            plural(f.errored as u64)
        ),
        None => writeln!(out, "  Recovery rate: n/a (no subtask hit an error)"),
    };
    out
}

/// Who did what: top agents' votes on the plan, the coordinator, and every run of
/// attempts a bottom agent made at a subtask, with how it ended.
pub fn agents(finished: &mut Finished, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n{}", style.bold("What each agent did"));
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(plan) = finished.view.plan.clone() {
        for agent in &plan.signed_by {
            rows.push((finished.names.of(*agent), "signed the plan".into()));
        }
        for (agent, reason) in &plan.vetoes {
            rows.push((
                finished.names.of(*agent),
                format!("vetoed the plan: {}", clip(reason, 80)),
            ));
        }
        if plan.status == DecisionStatus::Expired {
            rows.push(("top layer".into(), "did not sign the plan in time".into()));
        }
    }
    if let Some(mid) = finished.record.as_ref().and_then(|r| r.coordinator) {
        let total = finished.view.subtasks.len();
        let escalations: Vec<String> = finished
            .steps
            .iter()
            .filter(|s| s.action == RecoveryAction::EscalateToSupervisor)
            .filter_map(|s| {
                s.message
                    .split_once("proposed ")
                    .map(|(_, p)| p.to_string())
            })
            .collect();
        let mut what = format!(
            "planned {total} subtask{}, assigned and supervised them",
            plural(total as u64)
        );
        for proposal in escalations {
            let _ = write!(what, "; on an escalation, proposed {}", clip(&proposal, 90));
        }
        rows.push((finished.names.of(mid), what));
    }
    let shifts = finished.view.shifts.clone();
    let total = finished.view.subtasks.len();
    let mut bottoms: Vec<(String, Vec<String>)> = Vec::new();
    for (n, shift) in shifts.iter().enumerate() {
        let later = shifts[n + 1..].iter().find(|s| s.subtask == shift.subtask);
        let status = finished
            .view
            .subtasks
            .get(shift.subtask)
            .map(|s| s.status)
            .unwrap_or(SubtaskStatus::Pending);
        let ending = match later {
            Some(next) => format!("handed over to {}", finished.names.of(next.agent)),
            None if status == SubtaskStatus::Completed => {
                let files = finished
                    .record
                    .as_ref()
                    .and_then(|r| r.subtasks.get(shift.subtask))
                    .map(|s| s.files.join(", "))
                    .unwrap_or_default();
                if files.is_empty() {
                    "completed".to_string()
                } else {
                    format!("completed, wrote {files}")
                }
            }
            None => subtask_status(status).to_string(),
        };
        let description = finished
            .view
            .subtasks
            .get(shift.subtask)
            .map(|s| clip(&s.description, 40))
            .unwrap_or_default();
        let line = format!(
            "[{}/{total}] {description}: {} attempt{} → {ending}",
            shift.subtask + 1,
            shift.attempts,
            plural(shift.attempts)
        );
        let name = finished.names.of(shift.agent);
        match bottoms.iter_mut().find(|(n, _)| *n == name) {
            Some((_, lines)) => lines.push(line),
            None => bottoms.push((name, vec![line])),
        }
    }
    bottoms.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, lines) in bottoms {
        for (i, line) in lines.into_iter().enumerate() {
            rows.push((if i == 0 { name.clone() } else { String::new() }, line));
        }
    }
    let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    for (name, what) in rows {
        let _ = writeln!(out, "  {name:<width$}  {what}");
    }
    out
}

/// Every recovery step of the task, in order.
pub fn steps(finished: &Finished, style: Style) -> String {
    let mut out = String::new();
    if finished.steps.is_empty() {
        return out;
    }
    let _ = writeln!(out, "\n{}", style.bold("Recovery steps"));
    let total = finished.view.subtasks.len();
    for step in &finished.steps {
        let place = step
            .subtask_id
            .as_deref()
            .and_then(|id| finished.view.position(id))
            .map(|i| format!("[{}/{total}]", i + 1))
            .unwrap_or_else(|| "     ".into());
        let _ = writeln!(
            out,
            "  {place} {} {}",
            style.yellow(&format!("{:<28}", action_label(step.action))),
            clip(&step.message, 140)
        );
    }
    out
}
