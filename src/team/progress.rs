//! The mid reports, the top oversees. A mid sends its supervising top agent a progress
//! report at each subtask's end; a subtask that failed for good goes up as a blocker,
//! which the top answers with its verdict (continue, stop, reassign: decided in
//! `recovery::oversight`); two subtasks that would work on the same files at once (of one
//! task, or of two: `peers.rs`) are a conflict the top arbitrates (one after the other);
//! when the task ends the top writes its final report on the task. All of it is on the
//! boards and in the task's log.

use std::sync::Arc;

use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::peers::{Claim, work_in};
use super::roles::agent_name;
use super::{Services, first_line};
use crate::config::OnFailure;
use crate::recovery::FailureKind;
use crate::recovery::oversight::{self, Evaluation, Verdict};
use crate::runtime::{
    AgentContext, AgentId, AgentStatus, Body, FinalReport, Layer, Message, MessageKind, SubtaskId,
    SubtaskStatus, TaskId, TaskRecord, TaskStatus,
};

/// How a subtask's run up the ladder ended, as its mid saw it.
#[derive(Clone, Debug, Default)]
pub(super) struct RunEnd {
    /// A person answered an escalation of it: their word ends it.
    pub(super) person_decided: bool,
    /// The agents that worked on it.
    pub(super) tried: Vec<AgentId>,
}

/// A mid's report of one subtask's end: the payload of `progress_report`, or of
/// `issue_escalation` when the subtask failed for good (then `blocker` says why).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubtaskEnded {
    pub task_id: TaskId,
    pub title: String,
    pub subtask_id: SubtaskId,
    /// 1-based, of `total`.
    pub position: usize,
    pub total: usize,
    pub description: String,
    pub status: SubtaskStatus,
    /// Subtasks of the task completed, and failed, so far.
    pub done: usize,
    pub failed: usize,
    /// Subtasks not started yet that would still run (not waiting on a failed one).
    pub not_started: usize,
    /// One line for the boards and the task's log.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<BlockerFacts>,
}

impl Body for SubtaskEnded {
    const NAME: &'static str = "a report of a subtask's end";
    const KINDS: &'static [MessageKind] =
        &[MessageKind::ProgressReport, MessageKind::IssueEscalation];
    fn kind(&self) -> MessageKind {
        if self.blocker.is_some() {
            MessageKind::IssueEscalation
        } else {
            MessageKind::ProgressReport
        }
    }
}

/// Why a subtask failed for good, and what limits the top's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockerFacts {
    pub kind: FailureKind,
    pub message: String,
    pub person_decided: bool,
    /// The agents that worked on it.
    pub tried: Vec<AgentId>,
    /// The top stepped in on it before.
    pub stepped_in_before: bool,
}

/// What the mid reports when `subtask_id` has ended, and (for a blocker) the top's
/// verdict. Without a supervising top, or when it does not answer in time, the task
/// goes on as the mid runs it.
pub(super) async fn subtask_ended(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    subtask_id: SubtaskId,
    end: &RunEnd,
    stepped_in_before: bool,
) -> Evaluation {
    let going_on = |reason: String| Evaluation {
        verdict: Verdict::Continue,
        reason,
    };
    let Some(task) = s.tasks.get(task_id) else {
        return going_on("the task is gone".into());
    };
    let Some(report) = report_of(&task, subtask_id, end, stepped_in_before) else {
        return going_on("the subtask is gone".into());
    };
    let Some(top) = ctx.handle.config().supervisor.map(|t| s.current_agent(t)) else {
        return going_on("no top agent oversees the task".into());
    };
    if report.blocker.is_none() {
        let message = Message::carrying(ctx.id(), top, &report).with_task(task_id.to_string());
        if let Err(e) = ctx.bus.send(message) {
            tracing::info!(task = %task_id, "progress report not delivered: {e}");
        }
        return going_on("the subtask's end was reported".into());
    }
    let top_name = agent_name(s, top);
    let _ = ctx.append_own_board(&format!(
        "- blocker reported to {top_name}: {}",
        report.summary
    ));
    let request = Message::carrying(ctx.id(), top, &report).with_task(task_id.to_string());
    let patience = s.answer_patience();
    let evaluation = match ctx.bus.request(request, patience).await {
        Ok(reply) => reply
            .body::<Evaluation>()
            .unwrap_or_else(|e| going_on(format!("{top_name}'s verdict: {e}"))),
        Err(e) => going_on(format!("{top_name} gave no verdict ({e})")),
    };
    let _ = ctx.append_own_board(&format!(
        "- {top_name}: {} ({})",
        evaluation.verdict.as_str(),
        evaluation.reason
    ));
    evaluation
}

/// Two subtasks that work on the same files (`conflict_report`): one runs, the other
/// waits for it, so that neither writes over what the other wrote. Both of one task, or
/// the one at work of another task (`running_task`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkConflict {
    /// The task of the subtask held back.
    pub task_id: TaskId,
    pub title: String,
    /// The subtask at work, and the one held back: 1-based positions and descriptions.
    pub running: (usize, String),
    pub waiting: (usize, String),
    pub files: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running_task: Option<RunningTask>,
}

/// The task of the subtask at work in a [`WorkConflict`] between two tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunningTask {
    pub task_id: TaskId,
    pub title: String,
    /// The mid coordinating it, by name.
    pub coordinator: String,
}

impl Body for WorkConflict {
    const NAME: &'static str = "a conflict report";
    const KINDS: &'static [MessageKind] = &[MessageKind::ConflictReport];
}

impl WorkConflict {
    fn issue(&self) -> String {
        match &self.running_task {
            None => format!(
                "subtasks {} and {} of \"{}\" both work on {}",
                self.running.0,
                self.waiting.0,
                self.title,
                self.files.join(", ")
            ),
            Some(other) => format!(
                "{} ({}) and {} both work on {}",
                work_in(self.running.0, &other.title),
                other.coordinator,
                work_in(self.waiting.0, &self.title),
                self.files.join(", ")
            ),
        }
    }

    fn resolution(&self) -> String {
        match &self.running_task {
            None => format!(
                "subtask {} finishes first and subtask {} starts after it, on what it left",
                self.running.0, self.waiting.0
            ),
            Some(other) => format!(
                "{} finishes first and {} starts after it, on what it left",
                work_in(self.running.0, &other.title),
                work_in(self.waiting.0, &self.title)
            ),
        }
    }
}

/// The top's ruling on a [`WorkConflict`]: the payload of its `arbitration_result`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ruling {
    pub resolution: String,
}

impl Body for Ruling {
    const NAME: &'static str = "a ruling";
    const KINDS: &'static [MessageKind] = &[MessageKind::ArbitrationResult];
}

/// Reports that `waiting` is held back while `running` works on the same `files`, and
/// notes the top's ruling. The mid holds it back whatever the answer: a subtask at work
/// cannot be stopped halfway without losing its work.
pub(super) async fn work_conflict(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    running: SubtaskId,
    waiting: SubtaskId,
    files: Vec<String>,
) {
    let conflict = WorkConflict {
        task_id: task.id,
        title: task.title.clone(),
        running: party(task, running),
        waiting: party(task, waiting),
        files,
        running_task: None,
    };
    let line = format!(
        "- subtask {} waits for subtask {}: both work on {}",
        conflict.waiting.0,
        conflict.running.0,
        conflict.files.join(", ")
    );
    arbitrate(ctx, s, conflict, line).await;
}

/// Reports that `waiting` (a position in `task` and a description: a subtask, or 0 and
/// the task's checking) is held back while `holder`, work of another task, works on the
/// same `files`, and notes the top's ruling.
pub(super) async fn peer_work_conflict(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    waiting: (usize, String),
    holder: &Claim,
    files: Vec<String>,
) {
    let line = format!(
        "- {} waits for {}'s task \"{}\": both work on {}",
        work_in(waiting.0, &task.title),
        holder.coordinator,
        holder.title,
        files.join(", ")
    );
    let conflict = WorkConflict {
        task_id: task.id,
        title: task.title.clone(),
        running: (
            holder.writing.work.position,
            holder.writing.work.description.clone(),
        ),
        waiting,
        files,
        running_task: Some(RunningTask {
            task_id: holder.task_id,
            title: holder.title.clone(),
            coordinator: holder.coordinator.clone(),
        }),
    };
    arbitrate(ctx, s, conflict, line).await;
}

/// A subtask of `task`: its 1-based position and the first line of its description.
fn party(task: &TaskRecord, id: SubtaskId) -> (usize, String) {
    task.subtasks
        .iter()
        .position(|st| st.id == id)
        .map(|i| (i + 1, first_line(&task.subtasks[i].description)))
        .unwrap_or((0, String::new()))
}

/// Notes `line` on the mid's board, sends `conflict` to its top and notes the ruling.
async fn arbitrate(ctx: &AgentContext, s: &Arc<Services>, conflict: WorkConflict, line: String) {
    let _ = ctx.append_own_board(&line);
    let Some(top) = ctx.handle.config().supervisor.map(|t| s.current_agent(t)) else {
        return;
    };
    let request =
        Message::carrying(ctx.id(), top, &conflict).with_task(conflict.task_id.to_string());
    let patience = s.answer_patience();
    let top_name = agent_name(s, top);
    let line = match ctx.bus.request(request, patience).await {
        Ok(reply) => match reply.body::<Ruling>() {
            Ok(ruling) => format!("- {top_name} ruled: {}", ruling.resolution),
            Err(e) => format!("- {top_name}'s ruling: {e}"),
        },
        Err(e) => format!("- {top_name} gave no ruling ({e})"),
    };
    let _ = ctx.append_own_board(&line);
}

/// The report of `subtask_id`'s end, from the task as it stands.
fn report_of(
    task: &TaskRecord,
    subtask_id: SubtaskId,
    end: &RunEnd,
    stepped_in_before: bool,
) -> Option<SubtaskEnded> {
    let index = task.subtasks.iter().position(|st| st.id == subtask_id)?;
    let subtask = &task.subtasks[index];
    let count = |status: SubtaskStatus| {
        task.subtasks
            .iter()
            .filter(|st| st.status == status)
            .count()
    };
    let (total, position) = (task.subtasks.len(), index + 1);
    let last_error = task
        .errors
        .iter()
        .rev()
        .find(|e| e.subtask_id() == Some(subtask_id));
    let blocker = match (subtask.status, last_error) {
        (SubtaskStatus::Failed, Some(error)) if error.failure.kind != FailureKind::Skipped => {
            Some(BlockerFacts {
                kind: error.failure.kind,
                message: gist(&error.failure.message),
                person_decided: end.person_decided || error.failure.kind == FailureKind::Refused,
                tried: end.tried.clone(),
                stepped_in_before,
            })
        }
        _ => None,
    };
    let outcome = match (&blocker, last_error) {
        (Some(b), _) => format!("failed ({}: {})", b.kind, b.message),
        (None, Some(e)) if subtask.status == SubtaskStatus::Failed => gist(&e.failure.message),
        _ => format!("{:?}", subtask.status).to_lowercase(),
    };
    Some(SubtaskEnded {
        task_id: task.id,
        title: task.title.clone(),
        subtask_id,
        position,
        total,
        description: subtask.description.clone(),
        status: subtask.status,
        done: count(SubtaskStatus::Completed),
        failed: count(SubtaskStatus::Failed),
        not_started: would_still_run(task),
        summary: format!(
            "subtask {position} of {total} \"{}\" {outcome}",
            first_line(&subtask.description)
        ),
        blocker,
    })
}

/// A failure's message in a line: its first, with the next when the first only leads
/// into it ("the code does not pass its checks:").
fn gist(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let line = match (first.strip_suffix(':'), lines.next()) {
        (Some(lead), Some(next)) => format!("{lead}: {next}"),
        _ => first.to_string(),
    };
    crate::records::failure::summarize(&line, 160)
}

/// Subtasks not started that would still run: pending, and not waiting on a subtask
/// that failed (those are skipped anyway).
fn would_still_run(task: &TaskRecord) -> usize {
    let mut doomed = vec![false; task.subtasks.len()];
    // Dependencies point at earlier subtasks (the plan's rules), so one pass settles it.
    for (i, subtask) in task.subtasks.iter().enumerate() {
        doomed[i] = subtask.status == SubtaskStatus::Failed
            || subtask
                .depends_on
                .iter()
                .any(|&d| doomed.get(d).copied().unwrap_or(false));
    }
    task.subtasks
        .iter()
        .zip(&doomed)
        .filter(|(st, doomed)| st.status == SubtaskStatus::Pending && !**doomed)
        .count()
}

/// A top agent's part: reads progress reports and blockers, gives verdicts, writes the
/// final report. What it read and decided is kept on the task (`TaskRecord.oversight`),
/// so the report of a task that outlived a restart, or its first top agent, counts all of it.
#[derive(Default)]
pub(super) struct TopOversight;

/// Notes on the task what its top read (`read`) and decided (`decision`). A decision is
/// checkpointed at once; a report read rides on the task's next checkpoint (the next
/// subtask's start, or the task's end and its final report), so that the common case,
/// a subtask that went well, costs no checkpoint of its own.
fn tally(s: &Services, task_id: TaskId, read: bool, decision: Option<String>) {
    let count = |t: &mut TaskRecord| {
        if read {
            t.oversight.reports += 1;
        }
    };
    match decision {
        Some(decision) => {
            s.tasks.update(task_id, |t| {
                count(t);
                t.oversight.decisions.push(decision);
            });
        }
        None => s.tasks.note(task_id, count),
    }
}

impl TopOversight {
    /// A progress report: noted on the top's board.
    pub(super) fn progress(&self, ctx: &AgentContext, s: &Services, report: &SubtaskEnded) {
        tally(s, report.task_id, true, None);
        let _ = ctx.append_own_board(&format!(
            "- progress on \"{}\": {} ({} of {} done)",
            report.title, report.summary, report.done, report.total
        ));
    }

    /// A blocker: the top's verdict, noted on its board and the global board.
    pub(super) fn blocker(
        &self,
        ctx: &AgentContext,
        s: &Services,
        report: &SubtaskEnded,
    ) -> Evaluation {
        let facts = report.blocker.as_ref();
        let task = s.tasks.get(report.task_id);
        let continue_on_error = task
            .as_ref()
            .and_then(|t| t.options.continue_on_error)
            .unwrap_or(s.config.recovery.continue_on_error);
        let on_failure = task.as_ref().map_or(s.config.undo.on_failure, |t| {
            t.options.failure_policy(&s.config)
        });
        let tried = facts.map(|f| f.tried.as_slice()).unwrap_or(&[]);
        let untried_agents = s
            .runtime
            .pool
            .by_layer(Layer::Bottom)
            .into_iter()
            .filter(|a| a.status() == AgentStatus::Idle && !tried.contains(&a.id()))
            .count();
        let evaluation = oversight::evaluate(&oversight::Blocker {
            kind: facts.map(|f| f.kind).unwrap_or(FailureKind::Other),
            person_decided: facts.is_some_and(|f| f.person_decided),
            stepped_in_before: facts.is_some_and(|f| f.stepped_in_before),
            untried_agents,
            not_started: report.not_started,
            continue_on_error,
            restore_on_failure: on_failure == OnFailure::Restore,
        });
        let line = format!(
            "- blocker on \"{}\": {}; verdict: {} ({})",
            report.title,
            report.summary,
            evaluation.verdict.as_str(),
            evaluation.reason
        );
        tally(
            s,
            report.task_id,
            true,
            Some(format!(
                "subtask {} of {}: {} ({})",
                report.position,
                report.total,
                evaluation.verdict.as_str(),
                evaluation.reason
            )),
        );
        let _ = ctx.append_own_board(&line);
        let _ = ctx.append_global(&line);
        evaluation
    }

    /// A conflict between two subtasks: the one at work goes on, the other after it. The
    /// ruling goes on the global board, as the seed's arbitration result.
    pub(super) fn conflict(
        &self,
        ctx: &AgentContext,
        s: &Services,
        conflict: &WorkConflict,
    ) -> Ruling {
        let ruling = Ruling {
            resolution: conflict.resolution(),
        };
        let _ = ctx.append_global(&format!(
            "## Arbitration Result\n\nConflict: {}\nResolution: {}\nArbitrator: {}\n",
            conflict.issue(),
            ruling.resolution,
            ctx.handle.name()
        ));
        let _ = ctx.append_own_board(&format!(
            "- arbitrated: {}: {}",
            conflict.issue(),
            ruling.resolution
        ));
        tally(
            s,
            conflict.task_id,
            false,
            Some(format!(
                "a conflict ({}): one after the other",
                conflict.issue()
            )),
        );
        ruling
    }

    /// The task ended: the top writes its final report on the task, its board and its
    /// layer's board.
    pub(super) fn finished(&self, ctx: &AgentContext, s: &Services, task_id: TaskId) {
        let Some(task) = s.tasks.get(task_id) else {
            return;
        };
        let by = ctx.handle.name();
        let text = final_report(&task, s);
        let _ = ctx.append_own_board(&format!("- final report on \"{}\":\n{text}", task.title));
        let _ = ctx.append_layer_board(&format!(
            "- final report on \"{}\" by {by}: {}",
            task.title,
            text.lines().next().unwrap_or("")
        ));
        s.tasks.update(task_id, |t| {
            t.final_report = Some(FinalReport {
                by: by.clone(),
                at: Utc::now(),
                text: text.clone(),
            })
        });
    }
}

/// The final report's text: the outcome first, then one fact a line.
fn final_report(task: &TaskRecord, s: &Services) -> String {
    let count = |status: SubtaskStatus| {
        task.subtasks
            .iter()
            .filter(|st| st.status == status)
            .count()
    };
    let outcome = match task.status {
        TaskStatus::Completed => "completed",
        TaskStatus::Cancelled => "cancelled",
        TaskStatus::Failed => "failed",
        _ => "unfinished",
    };
    let mut lines = vec![format!(
        "The task {outcome}: {} of {} subtasks completed.",
        count(SubtaskStatus::Completed),
        task.subtasks.len()
    )];
    if let Some(decision) = task
        .plan_decision
        .and_then(|id| s.runtime.governance.get(id))
    {
        let signers: Vec<String> = decision
            .signatures
            .iter()
            .map(|sig| agent_name(s, sig.agent))
            .collect();
        let vetoes = decision.vetoes.len();
        lines.push(format!(
            "- plan: {} subtask(s), signed by {}{}",
            task.subtasks.len(),
            if signers.is_empty() {
                "nobody".to_string()
            } else {
                signers.join(", ")
            },
            if vetoes > 0 {
                format!(" after {vetoes} veto(es)")
            } else {
                String::new()
            }
        ));
    }
    lines.push(format!(
        "- progress reports read: {}",
        task.oversight.reports
    ));
    for decision in &task.oversight.decisions {
        lines.push(format!("- decided on {decision}"));
    }
    for subtask in &task.subtasks {
        if subtask.status != SubtaskStatus::Completed
            && let Some(error) = task
                .errors
                .iter()
                .rev()
                .find(|e| e.subtask_id() == Some(subtask.id))
        {
            lines.push(format!(
                "- \"{}\": {} ({})",
                first_line(&subtask.description),
                gist(&error.failure.message),
                error.failure.kind
            ));
        }
    }
    if let Some(counts) = crate::runtime::CheckCounts::of(&task.checks) {
        lines.push(format!(
            "- checks: {} passed, {} failed, {} skipped",
            counts.passed, counts.failed, counts.skipped
        ));
    }
    if task.status == TaskStatus::Completed {
        lines.push(format!(
            "- what ran the code: {}",
            task.checked_by
                .unwrap_or_else(|| crate::runtime::Evidence::of(&task.checks))
                .describe()
        ));
    }
    if let Some(why) = &task.unchecked {
        lines.push(format!("- {why}"));
    }
    if !task.files_written.is_empty() {
        lines.push(format!(
            "- files written: {}",
            task.files_written.join(", ")
        ));
    }
    if let Some(reverted) = &task.reverted {
        lines.push(format!("- taken back: {}", reverted.describe()));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::{Failure, Scope};
    use crate::runtime::{Subtask, TaskContext, TaskError, TaskOptions};

    /// a failed for good; b waits on a; c is running; d waits on c; e is free.
    fn task() -> TaskRecord {
        let mut task = TaskRecord::new(
            "Five steps".into(),
            "Five steps".into(),
            TaskContext::default(),
            TaskOptions::default(),
        );
        task.subtasks = vec![
            Subtask::new("Write a.py", vec![]),
            Subtask::new("Test a.py", vec![0]),
            Subtask::new("Write c.py", vec![]),
            Subtask::new("Test c.py", vec![2]),
            Subtask::new("Write the README", vec![]),
        ];
        task.subtasks[0].status = SubtaskStatus::Failed;
        task.subtasks[2].status = SubtaskStatus::Running;
        let (task_id, subtask_id) = (task.id, task.subtasks[0].id);
        task.errors.push(TaskError::now(
            Failure::new(FailureKind::Timeout, "the subtask used up its 10 min\nmore").with_scope(
                Scope::Subtask {
                    task_id,
                    subtask_id,
                },
            ),
        ));
        task
    }

    #[test]
    fn a_failed_subtask_goes_up_as_a_blocker_counting_only_work_that_would_still_run() {
        let task = task();
        let end = RunEnd {
            person_decided: true,
            tried: vec![AgentId::new()],
        };
        let report = report_of(&task, task.subtasks[0].id, &end, false).unwrap();
        assert_eq!((report.position, report.total), (1, 5));
        assert_eq!((report.done, report.failed), (0, 1));
        // "Test a.py" waits on the failed one and is skipped anyway; "Test c.py" and the
        // README would still run.
        assert_eq!(report.not_started, 2);
        assert_eq!(
            report.summary,
            "subtask 1 of 5 \"Write a.py\" failed (timeout: the subtask used up its 10 min)"
        );
        let blocker = report.blocker.expect("a blocker");
        assert_eq!(blocker.kind, FailureKind::Timeout);
        assert!(blocker.person_decided);
        assert_eq!(blocker.tried, end.tried);
    }

    #[test]
    fn a_message_that_leads_into_its_next_line_is_said_with_it() {
        assert_eq!(
            gist("the code does not pass its checks:\n\n  syntax: orders.py line 3\nmore"),
            "the code does not pass its checks: syntax: orders.py line 3"
        );
        assert_eq!(gist("exit 1\ntraceback"), "exit 1");
    }

    #[test]
    fn a_completed_or_skipped_subtask_is_progress_not_a_blocker() {
        let mut task = task();
        task.subtasks[2].status = SubtaskStatus::Completed;
        let report = report_of(&task, task.subtasks[2].id, &RunEnd::default(), false).unwrap();
        assert!(report.blocker.is_none());
        assert_eq!(report.summary, "subtask 3 of 5 \"Write c.py\" completed");
        assert_eq!(report.done, 1);

        let (task_id, subtask_id) = (task.id, task.subtasks[1].id);
        task.subtasks[1].status = SubtaskStatus::Failed;
        task.errors.push(TaskError::now(
            Failure::new(FailureKind::Skipped, "skipped: subtask 1 did not complete").with_scope(
                Scope::Subtask {
                    task_id,
                    subtask_id,
                },
            ),
        ));
        let report = report_of(&task, subtask_id, &RunEnd::default(), false).unwrap();
        assert!(report.blocker.is_none(), "a skip is reported, not ruled on");
        assert_eq!(
            report.summary,
            "subtask 2 of 5 \"Test a.py\" skipped: subtask 1 did not complete"
        );
    }
}
