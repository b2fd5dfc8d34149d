//! A mid agent coordinating one task: plan it, have the top layer sign the plan, run the
//! subtasks on bottom agents in dependency order, carry each failure up the recovery
//! ladder, verify, and finish the task.
//!
//! The ladder for one subtask, in order: retry per severity with full-jitter backoff →
//! hand it to an idle peer (peer_help_request) → escalate to the supervisor (this mid),
//! which acts on a model-proposed solution (replace the agent, reassign, modify the
//! subtask, or pause for a person) → for critical errors, escalate to every top agent
//! and ask the person at the editor or terminal. Every step is a RecoveryEvent.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde::Deserialize;
use serde_json::json;

use super::{Services, SubtaskAssignment, SubtaskReport, first_line, recovery_event};
use crate::model::structured::{StructuredOutput, ask_json};
use crate::model::{ChatMessage, ModelError, ModelRequest};
use crate::recovery::ladder::{Failure, Ladder, LadderStep};
use crate::recovery::{Classify, RecoveryAction, Severity};
use crate::runtime::{
    AgentContext, AgentId, AgentStatus, ApprovalAnswer, ApprovalChoice, ApprovalRequest, BusError,
    Layer, Message, MessageKind, Recipient, Subtask, SubtaskId, SubtaskStatus, TaskError, TaskId,
    TaskRecord, TaskStatus,
};

/// Person-level escalations of one subtask before the team gives up on it.
const MAX_PERSON_ESCALATIONS: u32 = 3;

/// Why coordination stopped early.
pub(super) enum Stop {
    Cancelled,
    Failed(Failure),
}

pub async fn run(ctx: AgentContext, services: Arc<Services>, task_id: TaskId) {
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
    if let Some(task) = services.tasks.get(task_id) {
        // Peer mids learn who coordinates what, so they spread new work elsewhere.
        let _ = ctx.broadcast(
            Recipient::Layer(Layer::Mid),
            MessageKind::PeerCoordination,
            json!({ "taskId": task_id, "title": task.title, "coordinator": ctx.handle.name() }),
        );
    }
    let outcome = tokio::select! {
        outcome = drive(&ctx, &services, task_id) => outcome,
        _ = cancel.cancelled() => Err(Stop::Cancelled),
    };
    finish(&ctx, &services, task_id, outcome).await;
}

async fn drive(ctx: &AgentContext, s: &Arc<Services>, task_id: TaskId) -> Result<(), Stop> {
    let task = s.tasks.get(task_id).ok_or(Stop::Cancelled)?;
    if task.subtasks.is_empty() {
        super::plan::plan_and_approve(ctx, s, &task).await?;
    }
    s.tasks.update(task_id, |t| t.status = TaskStatus::Running);
    run_subtasks(ctx, s, task_id).await;
    let all_done = s.tasks.get(task_id).is_some_and(|t| {
        t.subtasks
            .iter()
            .all(|st| st.status == SubtaskStatus::Completed)
    });
    if all_done {
        super::verify::run(ctx, s, task_id)
            .await
            .map_err(Stop::Failed)?;
    }
    Ok(())
}

pub(super) fn failure_of(error: &ModelError) -> Failure {
    Failure {
        kind: error.kind().to_string(),
        severity: error.severity(),
        transient: error.is_transient(),
        message: error.to_string(),
        retry_after: error.retry_after(),
    }
}

/// Runs every pending subtask as soon as its dependencies completed, all that are ready
/// at once. A subtask whose dependency failed is skipped (failed), or run anyway with
/// `continueOnError`.
async fn run_subtasks(ctx: &AgentContext, s: &Arc<Services>, task_id: TaskId) {
    let mut started: HashSet<SubtaskId> = HashSet::new();
    let mut running = FuturesUnordered::new();
    loop {
        let Some(task) = s.tasks.get(task_id) else {
            return;
        };
        let continue_on_error = task
            .options
            .continue_on_error
            .unwrap_or(s.config.recovery.continue_on_error);
        for (index, subtask) in task.subtasks.iter().enumerate() {
            if subtask.status != SubtaskStatus::Pending || started.contains(&subtask.id) {
                continue;
            }
            let deps: Vec<&Subtask> = subtask
                .depends_on
                .iter()
                .filter_map(|&d| task.subtasks.get(d))
                .collect();
            if deps.iter().any(|d| !d.status.is_finished()) {
                continue;
            }
            let broken: Vec<usize> = subtask
                .depends_on
                .iter()
                .copied()
                .filter(|&d| {
                    task.subtasks
                        .get(d)
                        .is_some_and(|d| d.status != SubtaskStatus::Completed)
                })
                .collect();
            if !broken.is_empty() && !continue_on_error {
                let message = format!(
                    "skipped: subtask {} did not complete",
                    broken
                        .iter()
                        .map(|d| (d + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                let id = subtask.id;
                s.tasks.update(task_id, |t| {
                    if let Some(st) = t.subtask_mut(id) {
                        st.status = SubtaskStatus::Failed;
                    }
                    t.errors.push(TaskError {
                        subtask_id: Some(id),
                        kind: "dependency_failed".into(),
                        severity: Severity::Low,
                        message,
                        at: Utc::now(),
                    });
                });
                continue;
            }
            if !broken.is_empty() {
                tracing::warn!(task = %task_id, subtask = index + 1, "running despite a failed dependency (continueOnError)");
            }
            started.insert(subtask.id);
            let (ctx, s, id) = (ctx.clone(), s.clone(), subtask.id);
            running.push(async move { run_subtask(&ctx, &s, task_id, id).await });
        }
        if running.next().await.is_none() {
            // Nothing running: either all are done, or the rest were just skipped (loop once more).
            let pending = s.tasks.get(task_id).is_some_and(|t| {
                t.subtasks
                    .iter()
                    .any(|st| st.status == SubtaskStatus::Pending && !started.contains(&st.id))
            });
            if !pending {
                return;
            }
        }
    }
}

/// What one attempt came to.
enum Attempt {
    Done(SubtaskReport),
    /// The assignee was replaced while working; carry on with the new agent.
    Replaced(AgentId),
}

/// One subtask, all the way up the ladder.
async fn run_subtask(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    subtask_id: SubtaskId,
) {
    let Some(task) = s.tasks.get(task_id) else {
        return;
    };
    let Some(subtask) = task.subtask(subtask_id).cloned() else {
        return;
    };
    let mut ladder = Ladder::new(&s.config.recovery, task.options.max_retries);
    let mut description = subtask.description.clone();
    let mut assignee = match subtask
        .assignee
        .filter(|a| s.runtime.pool.get(*a).is_some())
    {
        Some(agent) => agent,
        None => match pick_bottom(ctx, s, &[]) {
            Some(agent) => agent,
            None => {
                fail_subtask(
                    s,
                    task_id,
                    subtask_id,
                    "no bottom agent is available",
                    Severity::High,
                );
                return;
            }
        },
    };
    let mut errored = false;
    let mut takeover_tried = false;
    let mut supervisor_decided = false;
    let mut person_escalations = 0;
    let mut tried: Vec<AgentId> = Vec::new();
    // An escalation that was waiting for a person when the last run stopped: its answer
    // decides how this subtask goes on.
    if let Some(answered) = s.approvals.take_restored(subtask_id) {
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Escalated);
        person_escalations += 1;
        errored = true;
        match answered.await.ok() {
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Retry,
                ..
            }) => {}
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Reassign,
                ..
            }) => {
                if let Some(other) = pick_bottom(ctx, s, &[assignee]) {
                    assignee = other;
                }
            }
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Modify,
                modified_description,
                ..
            }) => {
                if let Some(modified) = modified_description.filter(|m| !m.trim().is_empty()) {
                    description = modified;
                    record_description(s, task_id, subtask_id, &description);
                }
            }
            _ => {
                let failure = Failure {
                    kind: "aborted".into(),
                    severity: Severity::High,
                    transient: false,
                    message: "the user aborted the subtask".into(),
                    retry_after: None,
                };
                give_up(s, task_id, subtask_id, assignee, &failure);
                return;
            }
        }
    }
    loop {
        let attempts = s
            .tasks
            .update(task_id, |t| {
                let st = t.subtask_mut(subtask_id)?;
                st.attempts += 1;
                st.assignee = Some(assignee);
                st.status = if errored {
                    SubtaskStatus::Recovering
                } else {
                    SubtaskStatus::Running
                };
                let attempts = st.attempts;
                refresh_status(t);
                Some(attempts)
            })
            .flatten()
            .unwrap_or(1);
        let report =
            match attempt(ctx, s, &task, subtask_id, assignee, &description, attempts).await {
                Attempt::Replaced(new) => {
                    assignee = new;
                    continue;
                }
                Attempt::Done(report) => report,
            };
        let failure = match report {
            SubtaskReport::Completed {
                summary,
                files,
                partial_results,
            } => {
                s.tasks.update(task_id, |t| {
                    if let Some(st) = t.subtask_mut(subtask_id) {
                        st.status = SubtaskStatus::Completed;
                        st.result = Some(summary);
                        add_new(&mut st.partial_results, partial_results);
                        add_new(&mut st.files, files.clone());
                    }
                    add_new(&mut t.files_written, files);
                    refresh_status(t);
                });
                if errored {
                    s.recovery(recovery_event(
                        task_id,
                        Some(subtask_id),
                        assignee,
                        RecoveryAction::Recovered,
                        Severity::Low,
                        attempts,
                        attempts,
                        format!("subtask recovered on attempt {attempts}"),
                    ));
                }
                return;
            }
            SubtaskReport::Failed {
                kind,
                severity,
                transient,
                message,
                retry_after_ms,
                files,
                partial_results,
            } => {
                s.tasks.update(task_id, |t| {
                    if let Some(st) = t.subtask_mut(subtask_id) {
                        // What earlier attempts achieved stays: a later attempt that
                        // finds the work already done reports nothing new.
                        add_new(&mut st.partial_results, partial_results);
                        add_new(&mut st.files, files);
                    }
                    t.errors.push(TaskError {
                        subtask_id: Some(subtask_id),
                        kind: kind.clone(),
                        severity,
                        message: message.clone(),
                        at: Utc::now(),
                    });
                });
                Failure {
                    kind,
                    severity,
                    transient,
                    message,
                    retry_after: retry_after_ms.map(Duration::from_millis),
                }
            }
        };
        if failure.kind == "cancelled" && s.task_cancel(task_id).is_cancelled() {
            return;
        }
        errored = true;
        let files = s
            .tasks
            .get(task_id)
            .and_then(|t| t.subtask(subtask_id).map(|st| st.files.clone()))
            .unwrap_or_default();
        match ladder.on_failure(&failure) {
            LadderStep::Retry {
                attempt,
                max,
                delay,
            } => {
                let mut event = recovery_event(
                    task_id,
                    Some(subtask_id),
                    assignee,
                    RecoveryAction::Retry,
                    failure.severity,
                    attempt,
                    max,
                    format!(
                        "{} failed ({}): {}; retry {attempt}/{max} in {} ms",
                        agent_name(s, assignee),
                        failure.kind,
                        first_line(&failure.message),
                        delay.as_millis()
                    ),
                );
                event.delay_ms = Some(delay.as_millis() as u64);
                event.files = Some(files);
                s.recovery(event);
                set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Recovering);
                tokio::time::sleep(delay).await;
                continue;
            }
            LadderStep::Exhausted { retries } => {
                tracing::info!(task = %task_id, subtask = %subtask_id, retries, "retries exhausted at {}", failure.severity);
            }
        }
        tried.push(assignee);

        // Peer takeover: not for critical failures, which no peer can fix (bad key, quota).
        if !takeover_tried && failure.severity != Severity::Critical {
            takeover_tried = true;
            match peer_takeover(ctx, s, &task, subtask_id, assignee, &tried, &failure).await {
                Some(peer) => {
                    let mut event = recovery_event(
                        task_id,
                        Some(subtask_id),
                        peer,
                        RecoveryAction::PeerTakeover,
                        failure.severity,
                        1,
                        1,
                        format!(
                            "{} handed the subtask to idle peer {}",
                            agent_name(s, assignee),
                            agent_name(s, peer)
                        ),
                    );
                    event.files = Some(files);
                    s.recovery(event);
                    assignee = peer;
                    ladder.reset();
                    continue;
                }
                None => {
                    let _ = ctx.append_own_board(&format!(
                        "- no idle peer could take over from {}; escalating",
                        agent_name(s, assignee)
                    ));
                }
            }
        }

        // Supervisor: this mid decides on a proposed solution, once per subtask.
        if failure.severity != Severity::Critical && !supervisor_decided {
            supervisor_decided = true;
            let proposal = propose_solution(ctx, s, &description, assignee, &failure).await;
            let escalation = Message::to_agent(
                assignee,
                ctx.id(),
                MessageKind::IssueEscalation,
                json!({
                    "taskId": task_id, "subtaskId": subtask_id, "kind": failure.kind,
                    "severity": failure.severity, "message": failure.message,
                    "metrics": s.runtime.pool.get(assignee).map(|a| a.metrics()),
                    "proposedSolution": proposal,
                }),
            )
            .with_task(task_id.to_string());
            if let Err(e) = ctx.bus.send(escalation) {
                tracing::warn!("escalation message not delivered: {e}");
            }
            let mut event = recovery_event(
                task_id,
                Some(subtask_id),
                assignee,
                RecoveryAction::EscalateToSupervisor,
                failure.severity,
                1,
                1,
                format!(
                    "escalated to supervisor {}: proposed {} ({})",
                    ctx.handle.name(),
                    proposal.action.as_str(),
                    proposal.reason
                ),
            );
            event.files = Some(files.clone());
            s.recovery(event);
            set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Escalated);
            match proposal.action {
                ProposedAction::ReplaceAgent => {
                    match super::replace::replace_agent(s, assignee, &failure.message).await {
                        Ok(new) => {
                            assignee = new;
                            ladder.reset();
                            continue;
                        }
                        Err(e) => tracing::warn!("replacement failed: {e}"),
                    }
                }
                ProposedAction::Reassign => {
                    if let Some(other) = pick_bottom(ctx, s, &tried) {
                        assignee = other;
                        ladder.reset();
                        continue;
                    }
                }
                ProposedAction::Modify => {
                    if let Some(modified) = proposal
                        .modified_description
                        .clone()
                        .filter(|m| !m.trim().is_empty())
                    {
                        description = modified;
                        record_description(s, task_id, subtask_id, &description);
                        ladder.reset();
                        continue;
                    }
                }
                ProposedAction::Pause => {}
            }
        }

        // What the team could not settle, and every critical error, goes to a person.
        if person_escalations >= MAX_PERSON_ESCALATIONS {
            give_up(s, task_id, subtask_id, assignee, &failure);
            return;
        }
        person_escalations += 1;
        if failure.severity == Severity::Critical {
            let notice = Message::new(
                ctx.id(),
                Recipient::Layer(Layer::Top),
                MessageKind::IssueEscalation,
                json!({ "taskId": task_id, "subtaskId": subtask_id, "kind": failure.kind, "severity": failure.severity, "message": failure.message }),
            )
            .with_task(task_id.to_string());
            let _ = ctx.bus.send(notice);
            let mut event = recovery_event(
                task_id,
                Some(subtask_id),
                assignee,
                RecoveryAction::EscalateToTop,
                failure.severity,
                person_escalations,
                MAX_PERSON_ESCALATIONS,
                format!(
                    "critical {} escalated to the top layer and the user: {}",
                    failure.kind,
                    first_line(&failure.message)
                ),
            );
            event.files = Some(files.clone());
            s.recovery(event);
        }
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Escalated);
        let answer = ask_person(s, &task, subtask_id, assignee, &description, &failure).await;
        match answer {
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Retry,
                ..
            }) => ladder.reset(),
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Reassign,
                ..
            }) => {
                if let Some(other) = pick_bottom(ctx, s, &tried) {
                    assignee = other;
                }
                ladder.reset();
            }
            Some(ApprovalAnswer {
                decision: ApprovalChoice::Modify,
                modified_description,
                ..
            }) => {
                if let Some(modified) = modified_description.filter(|m| !m.trim().is_empty()) {
                    description = modified;
                    record_description(s, task_id, subtask_id, &description);
                }
                ladder.reset();
            }
            _ => {
                give_up(s, task_id, subtask_id, assignee, &failure);
                return;
            }
        }
    }
}

/// Sends the subtask to `assignee` and waits for its report, following a replacement.
async fn attempt(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    subtask_id: SubtaskId,
    assignee: AgentId,
    description: &str,
    attempt: u32,
) -> Attempt {
    let assignee = s.current_agent(assignee);
    let assignment = SubtaskAssignment {
        task_id: task.id,
        subtask_id,
        description: description.to_string(),
        attempt,
        context: context_for(s, task.id),
    };
    let message = Message::to_agent(
        ctx.id(),
        assignee,
        MessageKind::TaskAssign,
        json!(assignment),
    )
    .with_task(task.id.to_string());
    // The bottom agent enforces the subtask timeout itself; this margin only catches an
    // agent that stopped answering altogether.
    let patience =
        Duration::from_millis(s.config.recovery.subtask_timeout_ms) + Duration::from_secs(10);
    let mut replacements = s.replacements.subscribe();
    // Time the subtask spends waiting for a person does not count (the bus's own limit
    // is only a backstop).
    let (request_id, to) = (message.id, message.to);
    let request = s.approvals.timeout_besides_person(
        subtask_id,
        patience,
        ctx.bus.request(message, patience * 1000),
    );
    let request = async move {
        request.await.unwrap_or(Err(BusError::ReplyTimeout {
            request: request_id,
            to,
            after: patience,
        }))
    };
    tokio::pin!(request);
    loop {
        tokio::select! {
            reply = &mut request => {
                return Attempt::Done(match reply {
                    Ok(reply) => serde_json::from_value(reply.payload.clone()).unwrap_or_else(|e| SubtaskReport::Failed {
                        kind: "malformed_report".into(), severity: Severity::Medium, transient: true,
                        message: format!("unreadable report from {}: {e}", agent_name(s, assignee)),
                        retry_after_ms: None, files: Vec::new(), partial_results: Vec::new(),
                    }),
                    Err(BusError::ReplyTimeout { after, .. }) => SubtaskReport::Failed {
                        kind: "timeout".into(), severity: Severity::High, transient: true,
                        message: format!("{} did not report within {} ms", agent_name(s, assignee), after.as_millis()),
                        retry_after_ms: None, files: Vec::new(), partial_results: Vec::new(),
                    },
                    Err(e) => SubtaskReport::Failed {
                        kind: "agent_unavailable".into(), severity: Severity::Medium, transient: true,
                        message: e.to_string(), retry_after_ms: None, files: Vec::new(), partial_results: Vec::new(),
                    },
                });
            }
            changed = replacements.changed() => {
                let now = s.current_agent(assignee);
                if now != assignee {
                    return Attempt::Replaced(now);
                }
                if changed.is_err() {
                    // The services are going away; the request's own timeout still ends this.
                    (&mut request).await.ok();
                }
            }
        }
    }
}

/// The task and what earlier subtasks produced, for the bottom agent's prompt.
fn context_for(s: &Services, task_id: TaskId) -> String {
    let Some(task) = s.tasks.get(task_id) else {
        return String::new();
    };
    // Every bottom agent sees the whole task verbatim, unless its subtask is the task.
    let whole = super::plan::task_text(&task);
    let mut context = match task.subtasks.as_slice() {
        [only] if only.description.contains(whole) => String::new(),
        [_] => format!("This subtask is the whole task below, as the person wrote it:\n{whole}\n"),
        _ => format!(
            "This subtask is one part of the task below; do only your part.\nThe whole task:\n{whole}\n"
        ),
    };
    let done: Vec<String> = task
        .subtasks
        .iter()
        .filter(|st| st.status == SubtaskStatus::Completed)
        .map(|st| {
            format!(
                "- {}: {}",
                first_line(&st.description),
                first_line(st.result.as_deref().unwrap_or("done"))
            )
        })
        .collect();
    if !done.is_empty() {
        context.push_str("\nAlready done by the team:\n");
        context.push_str(&done.join("\n"));
    }
    context
}

/// An idle bottom agent, this mid's own first, never one of `exclude`; else the least
/// busy of its subordinates.
fn pick_bottom(ctx: &AgentContext, s: &Services, exclude: &[AgentId]) -> Option<AgentId> {
    let mine: Vec<AgentId> = ctx.handle.config().subordinates;
    // Subtasks handed out but not finished, per agent: an agent given one a moment ago
    // still reads as idle until its mailbox loop picks the assignment up.
    let mut assigned: std::collections::HashMap<AgentId, usize> = Default::default();
    s.tasks.visit(|task| {
        for st in &task.subtasks {
            if let Some(agent) = st.assignee
                && !st.status.is_finished()
                && st.status != SubtaskStatus::Pending
            {
                *assigned.entry(agent).or_default() += 1;
            }
        }
    });
    let mut candidates: Vec<_> = s
        .runtime
        .pool
        .by_layer(Layer::Bottom)
        .into_iter()
        .filter(|a| !exclude.contains(&a.id()))
        .filter(|a| {
            !matches!(
                a.status(),
                AgentStatus::Terminated | AgentStatus::ShuttingDown | AgentStatus::Failed
            )
        })
        .collect();
    // Statuses change under our feet: each key is read once (a key read again mid-sort
    // could disagree with itself, and the sort would panic).
    candidates.sort_by_cached_key(|a| {
        let load = assigned.get(&a.id()).copied().unwrap_or(0);
        (
            a.status() != AgentStatus::Idle || load > 0,
            load,
            !mine.contains(&a.id()),
            a.current_task().is_some(),
            a.name(),
        )
    });
    candidates.first().map(|a| a.id())
}

/// PeerTakeoverCoordinator: asks idle peers of the failing agent, one at a time, to take
/// the subtask over. The first to accept gets it.
async fn peer_takeover(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    subtask_id: SubtaskId,
    failing: AgentId,
    exclude: &[AgentId],
    failure: &Failure,
) -> Option<AgentId> {
    let patience = Duration::from_millis(s.config.recovery.step_timeout_ms.clamp(100, 10_000));
    let peers: Vec<AgentId> = s
        .runtime
        .pool
        .by_layer(Layer::Bottom)
        .into_iter()
        .filter(|a| {
            a.id() != failing && !exclude.contains(&a.id()) && a.status() == AgentStatus::Idle
        })
        .map(|a| a.id())
        .take(3)
        .collect();
    if peers.is_empty() {
        tracing::info!(task = %task.id, "no idle peer for a takeover");
    }
    for peer in peers {
        let request = Message::to_agent(
            failing,
            peer,
            MessageKind::PeerHelpRequest,
            json!({ "taskId": task.id, "subtaskId": subtask_id, "reason": failure.message }),
        )
        .with_task(task.id.to_string());
        match ctx.bus.request(request, patience).await {
            Ok(reply) if reply.payload["accepted"] == true => return Some(peer),
            Ok(_) => continue,
            Err(e) => tracing::info!(peer = %peer, "peer did not answer the help request: {e}"),
        }
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ProposedAction {
    ReplaceAgent,
    Reassign,
    Modify,
    Pause,
}

impl ProposedAction {
    fn as_str(self) -> &'static str {
        match self {
            ProposedAction::ReplaceAgent => "replace_agent",
            ProposedAction::Reassign => "reassign",
            ProposedAction::Modify => "modify",
            ProposedAction::Pause => "pause",
        }
    }
}

/// What a supervisor proposes for an escalated subtask.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SolutionProposal {
    action: ProposedAction,
    reason: String,
    #[serde(default)]
    modified_description: Option<String>,
}

impl StructuredOutput for SolutionProposal {
    const INSTRUCTIONS: &'static str = "Answer with one JSON object and nothing else: \
        {\"action\": \"replace_agent\" | \"reassign\" | \"modify\" | \"pause\", \"reason\": string, \
        \"modifiedDescription\": string (required for modify: the subtask rewritten so it can succeed)}";

    fn validate(&self) -> Result<(), String> {
        if self.action == ProposedAction::Modify
            && self
                .modified_description
                .as_deref()
                .is_none_or(|d| d.trim().is_empty())
        {
            return Err("modify needs a modifiedDescription".into());
        }
        Ok(())
    }
}

/// SupervisorEscalationHandler's proposal: asks the model; without one (or when it
/// fails), a rule: replace an agent whose score has dropped, else reassign.
async fn propose_solution(
    ctx: &AgentContext,
    s: &Arc<Services>,
    description: &str,
    failing: AgentId,
    failure: &Failure,
) -> SolutionProposal {
    let metrics = s.runtime.pool.get(failing).map(|a| a.metrics());
    if let Some(model) = &s.model {
        let request = ModelRequest {
            system: ctx.system_prompt(super::mid::RESPONSIBILITIES),
            messages: vec![ChatMessage::user(format!(
                "A bottom agent ({}) keeps failing a subtask after retries and a peer takeover.\n\nSubtask: {description}\n\nError ({}, {}): {}\n\nAgent metrics: {}\n\nPropose what to do.",
                agent_name(s, failing),
                failure.kind,
                failure.severity,
                failure.message,
                serde_json::to_string(&metrics).unwrap_or_default()
            ))],
            tools: Vec::new(),
            max_tokens: 512,
            temperature: s.config.llm.temperature,
        };
        match ask_json::<SolutionProposal>(model.as_ref(), &request).await {
            Ok(proposal) => return proposal,
            Err(e) => tracing::info!("no model-proposed solution ({e}); proposing by rule"),
        }
    }
    let score = metrics.map(|m| m.performance_score).unwrap_or(100.0);
    if score < 50.0 {
        SolutionProposal {
            action: ProposedAction::ReplaceAgent,
            reason: format!("performance score {score:.0} is below 50"),
            modified_description: None,
        }
    } else {
        SolutionProposal {
            action: ProposedAction::Pause,
            reason: "the failure persists across agents; a person should decide".into(),
            modified_description: None,
        }
    }
}

/// Asks the person at the editor or terminal what to do (approval kind escalation).
async fn ask_person(
    s: &Arc<Services>,
    task: &TaskRecord,
    subtask_id: SubtaskId,
    assignee: AgentId,
    description: &str,
    failure: &Failure,
) -> Option<ApprovalAnswer> {
    let position = task
        .subtasks
        .iter()
        .position(|st| st.id == subtask_id)
        .map(|index| (index + 1, task.subtasks.len()));
    let request = ApprovalRequest::escalation(crate::runtime::Escalation {
        task_id: task.id,
        task_title: &task.title,
        subtask_id,
        position,
        description,
        agent_id: assignee.to_string(),
        severity: failure.severity,
        error_kind: &failure.kind,
        error: &failure.message,
    });
    s.tasks.update(task.id, refresh_status);
    s.approvals.ask(request).await
}

fn give_up(
    s: &Services,
    task_id: TaskId,
    subtask_id: SubtaskId,
    assignee: AgentId,
    failure: &Failure,
) {
    s.recovery(recovery_event(
        task_id,
        Some(subtask_id),
        assignee,
        RecoveryAction::GaveUp,
        failure.severity,
        1,
        1,
        format!("gave up on the subtask: {}", first_line(&failure.message)),
    ));
    set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Failed);
}

fn fail_subtask(
    s: &Services,
    task_id: TaskId,
    subtask_id: SubtaskId,
    message: &str,
    severity: Severity,
) {
    s.tasks.update(task_id, |t| {
        t.errors.push(TaskError {
            subtask_id: Some(subtask_id),
            kind: "no_agent".into(),
            severity,
            message: message.into(),
            at: Utc::now(),
        });
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = SubtaskStatus::Failed;
        }
        refresh_status(t);
    });
}

fn set_subtask_status(s: &Services, task_id: TaskId, subtask_id: SubtaskId, status: SubtaskStatus) {
    s.tasks.update(task_id, |t| {
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = status;
        }
        refresh_status(t);
    });
}

/// The task's status while it runs follows its most troubled subtask.
fn refresh_status(task: &mut TaskRecord) {
    if task.status.is_finished()
        || matches!(
            task.status,
            TaskStatus::Planning | TaskStatus::AwaitingApproval | TaskStatus::Queued
        )
    {
        return;
    }
    task.status = if task
        .subtasks
        .iter()
        .any(|st| st.status == SubtaskStatus::Escalated)
    {
        TaskStatus::Escalated
    } else if task
        .subtasks
        .iter()
        .any(|st| st.status == SubtaskStatus::Recovering)
    {
        TaskStatus::Recovering
    } else {
        TaskStatus::Running
    };
}

/// A subtask rewritten by its supervisor or a person shows its new description
/// everywhere (editor, reports), since that is what the agents now work on.
fn record_description(s: &Services, task_id: TaskId, subtask_id: SubtaskId, description: &str) {
    s.tasks.update(task_id, |t| {
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.description = description.to_string();
        }
    });
}

/// Appends the items of `new` that `list` does not hold yet, keeping order.
fn add_new(list: &mut Vec<String>, new: Vec<String>) {
    for item in new {
        if !list.contains(&item) {
            list.push(item);
        }
    }
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
    let report = Message::to_agent(
        ctx.id(),
        supervisor,
        MessageKind::ProgressReport,
        json!({
            "taskId": task.id,
            "title": task.title,
            "status": task.status,
            "completed": done,
            "subtasks": task.subtasks.len(),
            "errors": task.errors.len(),
            "filesWritten": task.files_written,
        }),
    )
    .with_task(task.id.to_string());
    if let Err(e) = ctx.bus.send(report) {
        tracing::warn!("final report not delivered to the supervisor: {e}");
    }
}

fn agent_name(s: &Services, agent: AgentId) -> String {
    s.runtime
        .pool
        .get(agent)
        .map(|a| a.name())
        .unwrap_or_else(|| agent.to_string())
}

/// Settles the task: completed when every subtask completed (and verify passed),
/// failed otherwise, unless it was cancelled. A failed task gets its ERROR_REPORT.md.
async fn finish(ctx: &AgentContext, s: &Arc<Services>, task_id: TaskId, outcome: Result<(), Stop>) {
    let failure = match outcome {
        Ok(()) => None,
        Err(Stop::Cancelled) => None,
        Err(Stop::Failed(failure)) => Some(failure),
    };
    let record = s.tasks.update(task_id, |t| {
        if t.status == TaskStatus::Cancelled {
            return t.clone();
        }
        if let Some(failure) = &failure {
            t.errors.push(TaskError {
                subtask_id: None,
                kind: failure.kind.clone(),
                severity: failure.severity,
                message: failure.message.clone(),
                at: Utc::now(),
            });
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
                format!(
                    "{done} of {all} subtasks completed.\n{}",
                    summaries.join("\n")
                )
            }
        });
        t.clone()
    });
    s.approvals.withdraw_task(task_id);
    s.cancels.remove(&task_id);
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
        if record.status == TaskStatus::Failed
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
