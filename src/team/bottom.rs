//! Bottom agents: run assigned subtasks with the executor, keep their whiteboard
//! current with what they do, report the outcome, and take over a peer's subtask when
//! idle.
//!
//! Work is spawned, never run inside the message handler, so the agent keeps answering
//! heartbeats while a long subtask runs. The subtask timeout (ExecutionMonitor) is
//! enforced here: a subtask that runs out of time is cancelled and reported as a
//! high-severity timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tracing::Instrument;

use super::{Services, SubtaskAssignment, SubtaskReport, knowledge};
use crate::executor::{ExecutionOutcome, ExecutorError, SubtaskSpec};
use crate::recovery::{Failure, FailureKind};
use crate::runtime::{
    AgentBehavior, AgentContext, AgentError, AgentStatus, Message, MessageKind, PeerHelpAnswer,
};

pub struct BottomBehavior {
    services: Arc<Services>,
    /// Subtasks this agent is running right now.
    in_flight: Arc<AtomicUsize>,
}

impl BottomBehavior {
    pub fn new(services: Arc<Services>) -> Self {
        BottomBehavior {
            services,
            in_flight: Arc::new(AtomicUsize::new(0)),
        }
    }
}

fn behavior_error(ctx: &AgentContext, e: impl std::fmt::Display) -> AgentError {
    AgentError::Behavior {
        agent: ctx.id(),
        message: e.to_string(),
    }
}

#[async_trait]
impl AgentBehavior for BottomBehavior {
    fn responsibilities(&self) -> String {
        super::roles::BOTTOM.to_string()
    }

    async fn initialize(&mut self, ctx: &AgentContext) -> Result<(), AgentError> {
        let extra = String::new();
        ctx.write_intro_board(&extra)
            .map_err(|e| AgentError::Behavior {
                agent: ctx.id(),
                message: e.to_string(),
            })
    }

    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        match message.kind {
            MessageKind::TaskAssign => {
                let assignment: SubtaskAssignment = message
                    .body()
                    .map_err(|e| behavior_error(ctx, e.to_string()))?;
                self.in_flight.fetch_add(1, Ordering::AcqRel);
                if ctx.handle.status() == AgentStatus::Idle {
                    ctx.handle.transition(
                        AgentStatus::Working,
                        format!("subtask {}", assignment.subtask_id),
                    )?;
                }
                // Every line logged while working on it names the task, the subtask and
                // the attempt.
                let span = tracing::info_span!(
                    "subtask",
                    task = %assignment.task_id,
                    id = %assignment.subtask_id,
                    attempt = assignment.attempt,
                    agent = %ctx.handle.name()
                );
                let (ctx, services, in_flight) =
                    (ctx.clone(), self.services.clone(), self.in_flight.clone());
                tokio::spawn(
                    async move {
                        let report = run_subtask(&ctx, &services, &assignment).await;
                        if let Err(e) = ctx.reply_body(&message, &report) {
                            tracing::warn!(agent = %ctx.id(), "subtask report not delivered: {e}");
                        }
                        if in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
                            ctx.handle.set_current_task(None);
                            if ctx.handle.status() == AgentStatus::Working {
                                let _ =
                                    ctx.handle.transition(AgentStatus::Idle, "subtask finished");
                            }
                        }
                    }
                    .instrument(span),
                );
            }
            MessageKind::PeerHelpRequest => {
                let free = ctx.handle.status() == AgentStatus::Idle
                    && self.in_flight.load(Ordering::Acquire) == 0;
                let reason = if free { "idle, taking it over" } else { "busy" };
                ctx.append_own_board(&format!(
                    "- peer help request from {}: {}",
                    super::roles::agent_name(&self.services, message.from),
                    if free { "accepted" } else { "declined (busy)" }
                ))
                .map_err(|e| behavior_error(ctx, e))?;
                let answer = PeerHelpAnswer {
                    accepted: free,
                    reason: reason.into(),
                };
                ctx.reply_body(&message, &answer)
                    .map_err(|e| behavior_error(ctx, e))?;
            }
            MessageKind::StatusQuery => {
                ctx.reply_body(&message, &ctx.handle.info())
                    .map_err(|e| behavior_error(ctx, e))?;
            }
            other => {
                let from = super::roles::agent_name(&self.services, message.from);
                ctx.append_own_board(&format!("- {} from {from}", other.as_str()))
                    .map_err(|e| behavior_error(ctx, e))?;
            }
        }
        Ok(())
    }
}

/// Runs one attempt of a subtask under the subtask timeout and reports how it went.
async fn run_subtask(
    ctx: &AgentContext,
    services: &Arc<Services>,
    assignment: &SubtaskAssignment,
) -> SubtaskReport {
    ctx.handle
        .set_current_task(Some(assignment.task_id.to_string()));
    let _ = ctx.append_own_board(&format!(
        "\n## Subtask {} (attempt {})\n{}\n",
        assignment.subtask_id, assignment.attempt, assignment.description
    ));
    let Some(executor) = services.executor.clone() else {
        return failed(Failure::new(
            FailureKind::InvalidConfig,
            "no model is configured",
        ));
    };
    let cancel = services.task_cancel(assignment.task_id).child_token();
    services
        .attempts
        .insert(assignment.subtask_id, (ctx.id(), cancel.clone()));
    let originals = services.originals(assignment.task_id);
    let intent = originals.intent();
    let spec = SubtaskSpec {
        subtask_id: assignment.subtask_id.to_string(),
        description: assignment.description.clone(),
        system_prompt: ctx.system_prompt(super::roles::BOTTOM),
        context: assignment.context.clone(),
        target_files: services
            .tasks
            .get(assignment.task_id)
            .map(|task| {
                super::files::target_files_now(&services.sandbox, super::files::task_text(&task))
            })
            .unwrap_or_default(),
        task_names: intent.names.clone(),
        asks_for_changes: crate::checks::intent::step_asks_for_changes(
            intent,
            &assignment.description,
        ),
    };
    let limit = Duration::from_millis(
        assignment
            .time_limit_ms
            .unwrap_or(services.config.recovery.subtask_timeout_ms)
            .min(services.config.recovery.subtask_timeout_ms)
            .max(1),
    );
    let started = Instant::now();
    let person_before = services.approvals.time_with_person(assignment.subtask_id);
    let mut live = LiveOutput::new(ctx.clone());
    let result = {
        let mut sink = |text: &str| live.push(text);
        // Time spent waiting for a person (approvals) does not count. Call-level retries
        // deep in the model call are attributed to this attempt (WORK).
        let work = executor.execute(&spec, cancel.clone(), &mut sink);
        let owner = (assignment.task_id, assignment.subtask_id, ctx.id());
        super::WORK
            .scope(
                owner,
                services
                    .approvals
                    .timeout_besides_person(assignment.subtask_id, limit, work),
            )
            .await
    };
    // Done means checked (team/check.rs): the work is checked, the executor gets one
    // turn to fix what fails, and a check that still fails is a failed report.
    let mut check_failure = None;
    if let Ok(Ok(outcome)) = &result {
        super::check::record_repairs(services, assignment.task_id, &outcome.repairs);
        super::files::keep_proposed(services, assignment.task_id, outcome);
    }
    let result = match result {
        Ok(Ok(outcome)) if outcome.success => {
            let mut sink = |text: &str| live.push(text);
            // What is left of the attempt's time; a person's answer did not use it.
            let with_person = services
                .approvals
                .time_with_person(assignment.subtask_id)
                .saturating_sub(person_before);
            let remaining = limit
                .saturating_sub(started.elapsed().saturating_sub(with_person))
                .max(Duration::from_secs(1));
            let attempt = super::check::CheckedAttempt {
                task_id: assignment.task_id,
                subtask_id: assignment.subtask_id,
                executor: executor.as_ref(),
                spec: &spec,
                cancel: cancel.clone(),
            };
            let checked = super::check::after_subtask(services, attempt, outcome, &mut sink);
            match services
                .approvals
                .timeout_besides_person(assignment.subtask_id, remaining, checked)
                .await
            {
                Ok(Ok(outcome)) => Ok(Ok(outcome)),
                Ok(Err((outcome, failure))) => {
                    check_failure = Some(failure);
                    Ok(Ok(ExecutionOutcome {
                        success: false,
                        ..outcome
                    }))
                }
                Err(elapsed) => Err(elapsed),
            }
        }
        other => other,
    };
    live.flush();
    if services
        .attempts
        .get(&assignment.subtask_id)
        .is_some_and(|entry| entry.0 == ctx.id())
    {
        services.attempts.remove(&assignment.subtask_id);
    }
    // A failure of the work comes with what the execution gathered: what it did, read
    // and saw, for whoever tries next.
    let (failure, gathered) = match result {
        Ok(Ok(outcome)) if outcome.success => {
            return report_done(ctx, completed(outcome), started);
        }
        Ok(Ok(outcome)) => {
            let failure = check_failure.unwrap_or_else(|| {
                let failure = Failure::new(FailureKind::Incomplete, outcome.summary.clone());
                // Told to go on from its changes, not that nothing changed.
                if outcome.files_written.is_empty() {
                    failure
                } else {
                    failure.with_code(crate::recovery::strategy::CHANGED_FILES)
                }
            });
            (failure, Some(outcome))
        }
        Ok(Err(error)) => {
            let failure = Failure::of(&error);
            match error {
                ExecutorError::NoProgress(_, gathered) => (failure, Some(*gathered)),
                _ => (failure, None),
            }
        }
        Err(_) => {
            cancel.cancel();
            let failure = Failure::new(
                FailureKind::Timeout,
                format!(
                    "the subtask did not finish within {} ms (recovery.subtaskTimeoutMs)",
                    limit.as_millis()
                ),
            );
            (failure, None)
        }
    };
    let mut learned = knowledge::Learned::of(gathered.as_ref());
    // The reflection's call counts for this subtask, as its executor's do.
    let scope = crate::model::metered::UsageScope {
        task: Some(assignment.task_id),
        subtask: Some(assignment.subtask_id),
        agent: Some(ctx.id()),
    };
    let reflection = knowledge::reflect(
        ctx,
        services,
        &assignment.description,
        gathered.as_ref(),
        &failure,
    );
    learned.reflection = crate::model::metered::scoped(scope, reflection).await;
    let reflection = learned.reflection.clone();
    let (files, partial_results) = gathered
        .map(|outcome| (paths(&outcome), outcome.partial_results))
        .unwrap_or_default();
    let report = report_done(
        ctx,
        SubtaskReport::Failed {
            failure,
            files,
            partial_results,
            learned: Box::new(learned),
        },
        started,
    );
    if let Some(reflection) = reflection {
        let _ = ctx.append_own_board(&format!("- reflection: {reflection}"));
    }
    report
}

/// Counts the attempt in the agent's metrics, says how it went on the agent's board and
/// gives the report back.
fn report_done(ctx: &AgentContext, report: SubtaskReport, started: Instant) -> SubtaskReport {
    let succeeded = matches!(report, SubtaskReport::Completed { .. });
    ctx.handle
        .update_metrics(|m| m.record_task(succeeded, started.elapsed()));
    let line = match &report {
        SubtaskReport::Completed { summary, .. } => {
            format!("- done: {}", super::first_line(summary))
        }
        SubtaskReport::Failed { failure, .. } => {
            format!(
                "- failed ({}): {}",
                failure.kind,
                super::first_line(&failure.message)
            )
        }
    };
    let _ = ctx.append_own_board(&line);
    report
}

fn paths(outcome: &ExecutionOutcome) -> Vec<String> {
    outcome
        .files_written
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

fn completed(outcome: ExecutionOutcome) -> SubtaskReport {
    SubtaskReport::Completed {
        files: paths(&outcome),
        summary: outcome.summary,
        partial_results: outcome.partial_results,
    }
}

/// A report of `failure` (classified by the error's type, never by its words).
fn failed(failure: Failure) -> SubtaskReport {
    SubtaskReport::Failed {
        failure,
        files: Vec::new(),
        partial_results: Vec::new(),
        learned: Box::default(),
    }
}

/// Streams executor output onto the agent's whiteboard a line at a time, so the editor
/// shows live progress without a new board version per token.
struct LiveOutput {
    ctx: AgentContext,
    pending: String,
}

impl LiveOutput {
    fn new(ctx: AgentContext) -> Self {
        LiveOutput {
            ctx,
            pending: String::new(),
        }
    }

    fn push(&mut self, text: &str) {
        self.pending.push_str(text);
        if let Some(end) = self.pending.rfind('\n') {
            let lines: String = self.pending.drain(..=end).collect();
            let lines = lines.trim_end();
            if !lines.is_empty() {
                let _ = self.ctx.append_own_board(lines);
            }
        }
    }

    fn flush(&mut self) {
        let rest = std::mem::take(&mut self.pending);
        if !rest.trim().is_empty() {
            let _ = self.ctx.append_own_board(rest.trim_end());
        }
    }
}
