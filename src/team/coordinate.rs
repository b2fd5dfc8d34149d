//! A mid agent coordinating one task: plan it, have the top layer sign the plan, run the
//! subtasks on bottom agents in dependency order, carry each failure up the recovery
//! ladder, verify, and finish the task.
//!
//! Subtasks run in `subtask.rs`, each carried up the ladder that `recovery::ladder`
//! decides; `submitTask`'s `options.timeoutMs` bounds the whole task here.

use std::sync::Arc;
use std::time::Duration;

use super::peers::{Claims, PeerEvent, PeerNews, tell_peers};
use super::plan::Stop;
use super::subtask::run_subtasks;
use super::{Services, first_line};
use crate::config::OnFailure;
use crate::config::TeamLayer;
use crate::recovery::ladder::{
    History, LadderPolicy, Outcome, Step, decide, human_duration, provider_trouble,
};
use crate::recovery::{Failure, FailureKind, Scope};
use crate::runtime::{
    AgentContext, AgentStatus, Body, Message, MessageKind, Reverted, RevertedBy, SubtaskStatus,
    TaskError, TaskId, TaskRecord, TaskStatus,
};
use crate::undo::EditedFiles;

pub async fn run(ctx: AgentContext, services: Arc<Services>, task_id: TaskId, claims: Arc<Claims>) {
    {
        let mut state = services.task_state.entry(task_id).or_default();
        if state.coordinating {
            tracing::info!(task = %task_id, "the task is coordinated already");
            return;
        }
        state.coordinating = true;
    }
    let cancel = services.task_cancel(task_id);
    if ctx.handle.status() == AgentStatus::Idle {
        let _ = ctx
            .handle
            .transition(AgentStatus::Working, format!("coordinating task {task_id}"));
    }
    ctx.handle.set_current_task(Some(task_id.to_string()));
    services
        .tasks
        .update(task_id, |t| t.coordinator = Some(ctx.id()));
    // Before any agent touches them: what the task's files promised (check/).
    services.originals(task_id);
    if let Some(task) = services.tasks.get(task_id) {
        // Peer mids learn who coordinates what, so they spread new work elsewhere.
        claims.task_taken(task_id);
        tell_peers(
            &ctx,
            &PeerNews {
                task_id,
                title: task.title.clone(),
                coordinator: ctx.handle.name(),
                event: PeerEvent::TaskTaken,
            },
        );
    }
    // `options.timeoutMs` bounds the task: its time is counted from now, planning
    // included, and running out of it fails the task with a report.
    let timeout = services
        .tasks
        .get(task_id)
        .and_then(|t| t.options.timeout_ms)
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis);
    let deadline = async {
        match timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        outcome = drive(&ctx, &services, task_id, &claims) => outcome,
        _ = cancel.cancelled() => Err(Stop::Cancelled),
        _ = deadline => {
            // Stop whatever still runs (attempts, waits, questions to the person).
            cancel.cancel();
            Err(Stop::Failed(Failure::new(
                FailureKind::Timeout,
                format!(
                    "the task did not finish within its {} (options.timeoutMs)",
                    crate::recovery::ladder::human_duration(timeout.unwrap_or_default())
                ),
            )))
        }
    };
    finish(&ctx, &services, task_id, outcome, &claims).await;
}

async fn drive(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    claims: &Claims,
) -> Result<(), Stop> {
    let task = s.tasks.get(task_id).ok_or(Stop::Cancelled)?;
    if task.subtasks.is_empty() {
        plan_waiting_out_the_provider(ctx, s, &task).await?;
    }
    s.tasks.update(task_id, |t| t.status = TaskStatus::Running);
    run_subtasks(ctx, s, task_id, claims).await;
    let all_done = s.tasks.get(task_id).is_some_and(|t| {
        t.subtasks
            .iter()
            .all(|st| st.status == SubtaskStatus::Completed)
    });
    if all_done {
        super::verify::run(ctx, s, task_id, claims)
            .await
            .map_err(Stop::Failed)?;
    }
    Ok(())
}

/// Planning, with provider trouble waited out as the ladder says (the same waits, the
/// same patience as a subtask's), so a rate limit or an outage while planning does not
/// fail the task.
async fn plan_waiting_out_the_provider(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
) -> Result<(), Stop> {
    let policy = LadderPolicy::from_config(
        &s.config.recovery,
        task.options
            .max_retries
            .or(s.config.llm.for_layer(TeamLayer::Mid).max_retries),
    );
    let mut history = History::default();
    loop {
        let failure = match super::plan::plan_and_approve(ctx, s, task).await {
            Err(Stop::Failed(failure)) if provider_trouble(&failure).is_some() => failure,
            other => return other,
        };
        match decide(
            &policy,
            &mut history,
            Outcome::Failed(failure.clone()),
            rand::random(),
        ) {
            Step::WaitForProvider {
                provider,
                reason,
                delay,
                waited,
                patience,
            } => {
                let mut event = super::recovery_event(
                    super::Whose {
                        task: task.id,
                        subtask: None,
                        agent: ctx.id(),
                    },
                    crate::recovery::RecoveryAction::WaitForProvider,
                    crate::recovery::Severity::Medium,
                    (0, 0),
                    format!(
                        "waiting for {provider} ({reason}), next try in {} (planning; waited {} of {})",
                        human_duration(delay),
                        human_duration(waited),
                        human_duration(patience)
                    ),
                );
                event.delay_ms = Some(delay.as_millis() as u64);
                event.provider = Some(provider);
                s.recovery(event);
                tokio::time::sleep(delay).await;
                s.tasks.update(task.id, |t| t.subtasks.clear());
            }
            Step::GiveUp(outage) => return Err(Stop::Failed(outage)),
            _ => return Err(Stop::Failed(failure)),
        }
    }
}

/// A mid's last report on a task it coordinated (`progress_report` to its top): the
/// task ended, and how.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct TaskEnded {
    pub(super) task_id: TaskId,
    pub(super) title: String,
    pub(super) status: TaskStatus,
    /// Subtasks completed, of `subtasks`.
    pub(super) completed: usize,
    pub(super) subtasks: usize,
    pub(super) errors: usize,
    pub(super) files_written: Vec<String>,
}

impl Body for TaskEnded {
    const NAME: &'static str = "a report of a task's end";
    const KINDS: &'static [MessageKind] = &[MessageKind::ProgressReport];
}

/// Tells the supervising top agent how the task ended; it keeps the final report.
fn report_upward(ctx: &AgentContext, task: &TaskRecord) {
    let Some(supervisor) = ctx.handle.config().supervisor else {
        return;
    };
    let done = task
        .subtasks
        .iter()
        .filter(|st| st.status == SubtaskStatus::Completed)
        .count();
    let end = TaskEnded {
        task_id: task.id,
        title: task.title.clone(),
        status: task.status,
        completed: done,
        subtasks: task.subtasks.len(),
        errors: task.errors.len(),
        files_written: task.files_written.clone(),
    };
    let report = Message::carrying(ctx.id(), supervisor, &end).with_task(task.id.to_string());
    if let Err(e) = ctx.bus.send(report) {
        tracing::warn!("final report not delivered to the supervisor: {e}");
    }
}

/// A task about to end failed has every file it changed put back as it was before it
/// (`undo.onFailure`, or the task's `onFailure` option), except a file someone changed
/// after the task did, which is left and named. `None` when nothing was to be done.
async fn put_back_if_failed(s: &Services, task_id: TaskId, failed: bool) -> Option<Reverted> {
    let task = s.tasks.get(task_id)?;
    let all = task.subtasks.len();
    let done = task
        .subtasks
        .iter()
        .filter(|st| st.status == SubtaskStatus::Completed)
        .count();
    let fails = task.status != TaskStatus::Cancelled && (failed || all == 0 || done < all);
    let policy = task.options.failure_policy(&s.config);
    if !fails || policy != OnFailure::Restore {
        return None;
    }
    let files = s.history.files_at_end(&task).await;
    if files.is_empty() {
        return None;
    }
    let plan = crate::undo::plan(task_id, &files, &s.sandbox);
    let reverted = crate::undo::apply(
        &plan,
        &*s.writer.untracked(),
        &s.sandbox,
        EditedFiles::Keep,
        RevertedBy::Failure,
    )
    .await;
    tracing::info!(task = %task_id, "the task failed: {}", reverted.describe());
    Some(reverted)
}

/// Settles the task: completed when every subtask completed (and verify passed),
/// failed otherwise, unless it was cancelled. A task that failed or was cancelled gets
/// its ERROR_REPORT.md, naming why.
async fn finish(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    outcome: Result<(), Stop>,
    claims: &Claims,
) {
    let failure = match outcome {
        Ok(()) => None,
        Err(Stop::Cancelled) => None,
        Err(Stop::Failed(failure)) => Some(failure),
    };
    let reverted = put_back_if_failed(s, task_id, failure.is_some()).await;
    let record = s.tasks.update(task_id, |t| {
        if t.status == TaskStatus::Cancelled {
            if !t
                .errors
                .iter()
                .any(|e| e.failure.kind == FailureKind::Cancelled && e.subtask_id().is_none())
            {
                t.errors.push(TaskError::now(
                    Failure::new(FailureKind::Cancelled, "the task was cancelled by the user")
                        .with_scope(Scope::Task { task_id }),
                ));
            }
            return t.clone();
        }
        if let Some(failure) = &failure {
            t.errors.push(TaskError::now(
                failure.clone().with_scope(Scope::Task { task_id }),
            ));
        }
        let done = t
            .subtasks
            .iter()
            .filter(|st| st.status == SubtaskStatus::Completed)
            .count();
        let all = t.subtasks.len();
        t.status = if failure.is_none() && all > 0 && done == all {
            TaskStatus::Completed
        } else {
            TaskStatus::Failed
        };
        // What a completion rests on, for the editors to show beside it.
        t.checked_by =
            (t.status == TaskStatus::Completed).then(|| crate::runtime::Evidence::of(&t.checks));
        // Work whose code was never run says so, whatever it ended as.
        t.unchecked = s
            .code_refusal(task_id)
            .map(|why| format!("not checked: running code was refused ({why})"));
        t.partial_results = t
            .subtasks
            .iter()
            .flat_map(|st| st.partial_results.iter().cloned())
            .collect();
        t.result = Some(match &failure {
            Some(f) => format!("Failed: {}", f.message),
            None => {
                let summaries: Vec<String> = t
                    .subtasks
                    .iter()
                    .filter_map(|st| st.result.as_deref().map(|r| format!("- {}", first_line(r))))
                    .collect();
                let unchecked = t
                    .unchecked
                    .as_ref()
                    .map(|why| format!(" {}{}.", why[..1].to_uppercase(), &why[1..]))
                    .unwrap_or_default();
                // A completion that rests on the team's own test alone says so.
                let review = match t.checked_by {
                    Some(crate::runtime::Evidence::OwnTestOnly) => {
                        " Only a test the team wrote itself ran the code: review the change."
                    }
                    Some(crate::runtime::Evidence::Disputed) => {
                        " The team's test and its code disagreed, and other evidence sided with the code (a second solution written from the task alone, or the code's own inverse function): review the change."
                    }
                    _ => "",
                };
                format!(
                    "{done} of {all} subtasks completed.{unchecked}{review}\n{}",
                    summaries.join("\n")
                )
            }
        });
        if t.status == TaskStatus::Failed
            && let Some(reverted) = &reverted
        {
            if let Some(result) = &mut t.result {
                result.push_str(&format!(
                    "\nThe task's changes were taken back: {}.",
                    reverted.describe()
                ));
            }
            t.reverted = Some(reverted.clone());
        }
        t.clone()
    });
    // Whatever it left written (put back, when it failed), peers may write now.
    let title = record.as_ref().map(|t| t.title.clone()).unwrap_or_default();
    super::peers::task_ended(ctx, claims, task_id, &title);
    s.history.forget(task_id);
    s.approvals.withdraw_task(task_id);
    s.task_state.remove(&task_id);
    s.refusals.forget(task_id);
    if let Some(record) = record {
        report_upward(ctx, &record);
        let _ = ctx.append_own_board(&format!("- task \"{}\": {:?}", record.title, record.status));
        let _ = ctx.append_global(&format!(
            "- task \"{}\" {}",
            record.title,
            match record.status {
                TaskStatus::Completed => "completed",
                TaskStatus::Cancelled => "was cancelled",
                _ => "failed",
            }
        ));
        // Under `recovery.continueOnError` the report is written whatever the outcome
        // (the seed's "at the end regardless of failures"): a run that was told to push
        // on says afterwards what it pushed through, even when that was nothing.
        let failed = matches!(record.status, TaskStatus::Failed | TaskStatus::Cancelled);
        let continue_on_error = record
            .options
            .continue_on_error
            .unwrap_or(s.config.recovery.continue_on_error);
        if (failed || continue_on_error)
            && let Err(e) = super::write_error_report(s, Some(task_id)).await
        {
            tracing::warn!("ERROR_REPORT.md not written: {e}");
        }
    }
    let mut still_coordinating = false;
    s.tasks.visit(|t| {
        still_coordinating |= t.coordinator == Some(ctx.id()) && !t.status.is_finished();
    });
    if !still_coordinating {
        ctx.handle.set_current_task(None);
        if ctx.handle.status() == AgentStatus::Working {
            let _ = ctx.handle.transition(AgentStatus::Idle, "task finished");
        }
    }
}
