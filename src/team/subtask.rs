//! Running a task's subtasks on bottom agents, each carried up the recovery ladder.
//!
//! What to do after a failure is decided by the pure ladder
//! ([`crate::recovery::ladder::decide`]); this module only carries the steps out (send
//! the attempt, wait, ask a peer, the supervisor or a person, give up), feeds back what
//! came of them, and keeps the subtask's and the agents' states true while it does:
//! an agent waiting for its provider is `blocked`, one waiting for a person is
//! `waiting_approval`, one that ran out of retries is `failed` until it is replaced.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::time::Instant;
use tracing::Instrument;
use uuid::Uuid;

use super::escalate::{
    EscalationNotice, ProposedAction, ask_person, peer_takeover, propose_solution,
};
use super::files::{named_files_now, target_files_now};
use super::peers::{Claim, Claimed, Claims, Work};
use super::progress::RunEnd;
use super::roles::agent_name;
use super::{
    Services, SubtaskAssignment, SubtaskReport, Whose, first_line, knowledge, recovery_event,
};
use crate::config::TeamLayer;
use crate::recovery::ladder::{
    History, LadderPolicy, Outcome, PersonAnswer, Step, decide, human_duration,
};
use crate::recovery::oversight::Verdict;
use crate::recovery::strategy::ErrorCategory;
use crate::recovery::{Failure, FailureKind, RecoveryAction, Scope, Severity, quality};
use crate::runtime::{
    AgentContext, AgentId, AgentStatus, ApprovalAnswer, ApprovalChoice, BusError, Layer, Message,
    Recipient, Subtask, SubtaskId, SubtaskStatus, TaskError, TaskId, TaskRecord,
};

/// Runs every pending subtask as soon as its dependencies completed, all that are ready
/// at once. A subtask whose dependency did not complete is skipped, or run anyway with
/// `continueOnError`; after a fatal failure nothing new starts, whatever the option.
///
/// A subtask whose files another task's subtask is writing waits for it
/// ([`super::peers`]): it is held back until that work is over, woken by the peer's
/// news, and goes ahead after `recovery.subtaskTimeoutMs` of waiting for one piece of
/// work.
pub(super) async fn run_subtasks(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    claims: &Claims,
) {
    let mut started: HashSet<SubtaskId> = HashSet::new();
    let mut running = FuturesUnordered::new();
    // Set when the top agent stops the task: nothing new starts after it.
    let mut stopped: Option<String> = None;
    // Subtasks the top has stepped in on (once each).
    let mut stepped_in: HashSet<SubtaskId> = HashSet::new();
    // Conflicts reported (the subtask at work, the one waiting for it).
    let mut conflicts: HashSet<(SubtaskId, SubtaskId)> = HashSet::new();
    // And with other tasks' work (its task and position, the subtask waiting for it).
    let mut peer_conflicts: HashSet<((TaskId, usize), SubtaskId)> = HashSet::new();
    // The claims on their files of the subtasks at work, released when they end.
    let mut claimed: HashMap<SubtaskId, Uuid> = HashMap::new();
    // Subtasks held back for another task's work: the claim they wait for, since when.
    let mut held: HashMap<SubtaskId, (Claim, Instant)> = HashMap::new();
    let longest_wait = Duration::from_millis(s.config.recovery.subtask_timeout_ms.max(1));
    let mut releases = claims.releases();
    loop {
        releases.borrow_and_update();
        let Some(task) = s.tasks.get(task_id) else {
            return;
        };
        let mut waiting_until: Option<Instant> = None;
        let continue_on_error = task
            .options
            .continue_on_error
            .unwrap_or(s.config.recovery.continue_on_error);
        let fatal = task.errors.iter().find(|e| {
            e.failure.fatal
                && e.failure.kind != FailureKind::Cancelled
                && e.subtask_id().is_some_and(|id| {
                    task.subtask(id)
                        .is_some_and(|st| st.status == SubtaskStatus::Failed)
                })
        });
        let mut skipped = Vec::new();
        for (index, subtask) in task.subtasks.iter().enumerate() {
            if subtask.status != SubtaskStatus::Pending || started.contains(&subtask.id) {
                continue;
            }
            if let Some(fatal) = fatal {
                skipped.push(subtask.id);
                skip(
                    s,
                    task_id,
                    subtask.id,
                    format!(
                        "skipped: the task stopped at a fatal error ({}): {}",
                        fatal.failure.kind,
                        first_line(&fatal.failure.message)
                    ),
                );
                continue;
            }
            if let Some(why) = &stopped {
                skipped.push(subtask.id);
                skip(s, task_id, subtask.id, format!("skipped: {why}"));
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
                skipped.push(subtask.id);
                skip(s, task_id, subtask.id, message);
                continue;
            }
            if !broken.is_empty() {
                tracing::warn!(task = %task_id, subtask = index + 1, "running despite a failed dependency (continueOnError)");
            }
            // Two subtasks at once on one file would write over each other's work: this one
            // waits for the one at work there, and the conflict goes to the top (once).
            if let Some((running, files)) = at_work_on_the_same_files(&task, &started, subtask) {
                if conflicts.insert((running, subtask.id)) {
                    super::progress::work_conflict(ctx, s, &task, running, subtask.id, files).await;
                }
                continue;
            }
            // Nor two subtasks of two tasks, which their mids settle between them.
            let files = super::peers::files_of(subtask);
            if !files.is_empty() {
                let overdue = match held.get(&subtask.id) {
                    Some((holder, since)) if !claims.is_released(holder) => {
                        if since.elapsed() < longest_wait {
                            let until = *since + longest_wait;
                            waiting_until = Some(waiting_until.map_or(until, |u| u.min(until)));
                            continue;
                        }
                        let _ = ctx.append_own_board(&super::peers::goes_ahead(
                            index + 1,
                            &task.title,
                            holder,
                            &files,
                            longest_wait,
                        ));
                        true
                    }
                    _ => false,
                };
                let work = Work::subtask(index + 1, subtask);
                match super::peers::claim(ctx, s, claims, &task, work, files, overdue).await {
                    Claimed::Go(claim) => {
                        held.remove(&subtask.id);
                        claimed.insert(subtask.id, claim);
                    }
                    Claimed::Wait { holder, files } => {
                        let holding = (holder.task_id, holder.writing.work.position);
                        if peer_conflicts.insert((holding, subtask.id)) {
                            super::progress::peer_work_conflict(
                                ctx,
                                s,
                                &task,
                                (index + 1, first_line(&subtask.description)),
                                &holder,
                                files,
                            )
                            .await;
                        }
                        let since = match held.get(&subtask.id) {
                            Some((before, since))
                                if before.writing.claim == holder.writing.claim =>
                            {
                                *since
                            }
                            _ => Instant::now(),
                        };
                        let until = since + longest_wait;
                        waiting_until = Some(waiting_until.map_or(until, |u| u.min(until)));
                        held.insert(subtask.id, (holder, since));
                        continue;
                    }
                }
            }
            started.insert(subtask.id);
            let (ctx, s, id) = (ctx.clone(), s.clone(), subtask.id);
            running.push(async move { (id, run_subtask(&ctx, &s, task_id, id).await) });
        }
        // A skipped subtask has ended too: reported, never ruled on.
        for id in skipped {
            super::progress::subtask_ended(ctx, s, task_id, id, &RunEnd::default(), false).await;
        }
        let ended = match waiting_until {
            // Held back for another task's work: woken by its end, or when waited too long.
            Some(until) => tokio::select! {
                ended = running.next(), if !running.is_empty() => ended,
                _ = releases.changed() => continue,
                _ = tokio::time::sleep_until(until) => continue,
            },
            None => running.next().await,
        };
        match ended {
            Some((id, end)) => {
                if let Some(claim) = claimed.remove(&id) {
                    claims.release(claim);
                    super::peers::done_writing(ctx, &task.title, task_id, claim, Some(id));
                }
                let stepped_in_before = stepped_in.contains(&id);
                let evaluation =
                    super::progress::subtask_ended(ctx, s, task_id, id, &end, stepped_in_before)
                        .await;
                match evaluation.verdict {
                    Verdict::Continue => {}
                    Verdict::Stop => {
                        let top = top_name(ctx, s);
                        top_stepped_in(
                            s,
                            task_id,
                            id,
                            ctx.id(),
                            format!("{top} stopped the task: {}", evaluation.reason),
                        );
                        stopped = Some(format!("{top} stopped the task: {}", evaluation.reason));
                    }
                    Verdict::Reassign => {
                        stepped_in.insert(id);
                        if let Some(agent) = pick_bottom(ctx, s, &end.tried) {
                            top_stepped_in(
                                s,
                                task_id,
                                id,
                                agent,
                                format!(
                                    "{} gave the subtask to {}: {}",
                                    top_name(ctx, s),
                                    agent_name(s, agent),
                                    evaluation.reason
                                ),
                            );
                            s.tasks.update(task_id, |t| {
                                if let Some(st) = t.subtask_mut(id) {
                                    st.status = SubtaskStatus::Pending;
                                    st.assignee = Some(agent);
                                    st.assignee_name = Some(agent_name(s, agent));
                                }
                                t.refresh_status();
                            });
                            started.remove(&id);
                        }
                    }
                }
            }
            None => {
                // Nothing running: either all are done, or the rest were just skipped
                // (loop once more).
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
}

/// A subtask of `task` at work on files `subtask` names, and those files.
fn at_work_on_the_same_files(
    task: &TaskRecord,
    started: &HashSet<SubtaskId>,
    subtask: &Subtask,
) -> Option<(SubtaskId, Vec<String>)> {
    let mine = super::files::source_files_named(&subtask.description);
    if mine.is_empty() {
        return None;
    }
    task.subtasks
        .iter()
        .filter(|other| {
            other.id != subtask.id && started.contains(&other.id) && !other.status.is_finished()
        })
        .find_map(|other| {
            let theirs = super::files::source_files_named(&other.description);
            let shared: Vec<String> = mine
                .iter()
                .filter(|f| theirs.contains(f) || other.files.contains(f))
                .cloned()
                .collect();
            (!shared.is_empty()).then_some((other.id, shared))
        })
}

/// The top agent supervising `ctx`'s mid, by name.
fn top_name(ctx: &AgentContext, s: &Services) -> String {
    ctx.handle
        .config()
        .supervisor
        .map(|top| agent_name(s, s.current_agent(top)))
        .unwrap_or_else(|| "the top layer".into())
}

/// A step the top layer took in the task, as a recovery step the editors show.
fn top_stepped_in(s: &Services, task: TaskId, subtask: SubtaskId, agent: AgentId, message: String) {
    s.recovery(recovery_event(
        Whose {
            task,
            subtask: Some(subtask),
            agent,
        },
        RecoveryAction::EscalateToTop,
        Severity::High,
        (1, 1),
        message,
    ));
}

/// Marks a subtask that never ran as skipped (status failed, error kind `skipped`).
fn skip(s: &Services, task_id: TaskId, subtask_id: SubtaskId, message: String) {
    s.tasks.update(task_id, |t| {
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = SubtaskStatus::Failed;
        }
        t.errors.push(TaskError::now(
            Failure::new(FailureKind::Skipped, message).with_scope(Scope::Subtask {
                task_id,
                subtask_id,
            }),
        ));
    });
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
) -> RunEnd {
    let Some(task) = s.tasks.get(task_id) else {
        return RunEnd::default();
    };
    let Some(subtask) = task.subtask(subtask_id).cloned() else {
        return RunEnd::default();
    };
    let assignee = match subtask
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
                    Failure::new(
                        FailureKind::AgentUnavailable,
                        "no bottom agent is available",
                    ),
                );
                return RunEnd::default();
            }
        },
    };
    let run = SubtaskRun {
        ctx,
        s,
        task_id,
        subtask_id,
        policy: LadderPolicy::from_config(
            &s.config.recovery,
            task.options
                .max_retries
                .or(s.config.llm.for_layer(TeamLayer::Bottom).max_retries),
        ),
        history: History::default(),
        as_found: files_as_found(s, &task, &subtask.description),
        description: subtask.description,
        assignee,
        tried: Vec::new(),
        // `recovery.subtaskTimeoutMs` bounds all attempts together; waits between them
        // (backoff, the provider, a person) are not work and do not count.
        limit: Duration::from_millis(s.config.recovery.subtask_timeout_ms.max(1)),
        spent: Duration::ZERO,
        after_wait: false,
        task,
    };
    run.run().await
}

/// One subtask on its way up the ladder: the interpreter of the ladder's steps
/// (`recovery::ladder::decide`), one method a step, and what it keeps between them.
struct SubtaskRun<'a> {
    ctx: &'a AgentContext,
    s: &'a Arc<Services>,
    task: TaskRecord,
    task_id: TaskId,
    subtask_id: SubtaskId,
    policy: LadderPolicy,
    history: History,
    /// The subtask as its agent reads it (a supervisor or a person may rewrite it).
    description: String,
    assignee: AgentId,
    /// Agents that ran out of retries on it.
    tried: Vec<AgentId>,
    /// The files it names as it found them, put back before a retry of work that
    /// failed its checks.
    as_found: Vec<(String, String)>,
    limit: Duration,
    /// Time its attempts spent working (not waiting).
    spent: Duration,
    /// The next dispatch follows a wait for the provider: the same attempt, not a new one.
    after_wait: bool,
}

impl SubtaskRun<'_> {
    async fn run(mut self) -> RunEnd {
        let mut next = self.resume_escalation().await;
        loop {
            next = match next {
                Step::Attempt => match self.attempt().await {
                    Some(step) => step,
                    None => return self.end(),
                },
                Step::Retry {
                    attempt,
                    max,
                    delay,
                } => {
                    self.retry(attempt, max, delay).await;
                    Step::Attempt
                }
                Step::WaitForProvider {
                    provider,
                    reason,
                    delay,
                    waited,
                    patience,
                } => {
                    self.wait_for_provider(&provider, &reason, delay, waited, patience)
                        .await;
                    Step::Attempt
                }
                Step::AskPeer => {
                    let outcome = self.ask_peer().await;
                    self.decide(outcome)
                }
                Step::EscalateToSupervisor => {
                    let outcome = self.escalate_to_supervisor().await;
                    self.decide(outcome)
                }
                Step::EscalateToTop => {
                    self.escalate_to_top();
                    let outcome = self.ask_person().await;
                    self.decide(outcome)
                }
                Step::AskPerson => {
                    let outcome = self.ask_person().await;
                    self.decide(outcome)
                }
                Step::GiveUp(failure) => {
                    give_up(
                        self.s,
                        self.task_id,
                        self.subtask_id,
                        self.assignee,
                        failure,
                    );
                    return self.end();
                }
                Step::Stop => return self.end(),
            };
        }
    }

    /// How the run ended, for the mid's report.
    fn end(&self) -> RunEnd {
        let mut tried = self.tried.clone();
        if !tried.contains(&self.assignee) {
            tried.push(self.assignee);
        }
        RunEnd {
            person_decided: self.history.person_escalations() > 0,
            tried,
        }
    }

    /// The ladder's next step after `outcome`.
    fn decide(&mut self, outcome: Outcome) -> Step {
        decide(&self.policy, &mut self.history, outcome, rand::random())
    }

    /// The failure the ladder is climbing for.
    fn last_failure(&self) -> Failure {
        self.history
            .last_failure()
            .cloned()
            .unwrap_or_else(|| Failure::new(FailureKind::Other, "the subtask kept failing"))
    }

    fn files(&self) -> Vec<String> {
        subtask_files(self.s, self.task_id, self.subtask_id)
    }

    /// The files its work concerns: those it wrote, and those its description names.
    fn concerns(&self) -> Vec<String> {
        let mut files = self.files();
        for path in super::files::files_named(self.s.sandbox.root(), &self.description) {
            if !files.contains(&path) {
                files.push(path);
            }
        }
        files
    }

    /// An escalation that was waiting for a person when the last run stopped: its
    /// answer decides how this subtask goes on.
    async fn resume_escalation(&mut self) -> Step {
        let Some(answered) = self.s.approvals.take_restored(self.subtask_id) else {
            return Step::Attempt;
        };
        set_subtask_status(
            self.s,
            self.task_id,
            self.subtask_id,
            SubtaskStatus::Escalated,
        );
        self.history.restored_person_escalation();
        let answer = answered.await.ok();
        let outcome = self.apply_answer(answer);
        match outcome {
            Outcome::PersonAnswered(Some(PersonAnswer::GoOn)) => Step::Attempt,
            _ => Step::GiveUp(Failure::new(
                FailureKind::Cancelled,
                "the person aborted the subtask",
            )),
        }
    }

    /// Waits `delay` before the next attempt on the same agent, saying so.
    async fn retry(&mut self, attempt: u32, max: u32, delay: Duration) {
        let (s, task_id, subtask_id) = (self.s, self.task_id, self.subtask_id);
        let failure = self.history.last_failure().cloned();
        let (kind, severity, message) = failure
            .as_ref()
            .map(|f| (f.kind, f.severity, first_line(&f.message)))
            .unwrap_or((FailureKind::Other, Severity::Medium, String::new()));
        let mut event = recovery_event(
            Whose {
                task: task_id,
                subtask: Some(subtask_id),
                agent: self.assignee,
            },
            RecoveryAction::Retry,
            severity,
            (attempt, max),
            format!(
                "{} failed ({kind}): {message}; retry {attempt}/{max} in {}",
                agent_name(s, self.assignee),
                human_duration(delay)
            ),
        );
        event.delay_ms = Some(delay.as_millis() as u64);
        event.files = Some(self.files());
        s.recovery(event);
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Recovering);
        tokio::time::sleep(delay).await;
    }

    /// Waits for the provider, costing no attempt; the agent shows as blocked meanwhile.
    async fn wait_for_provider(
        &mut self,
        provider: &str,
        reason: &str,
        delay: Duration,
        waited: Duration,
        patience: Duration,
    ) {
        let (s, task_id, subtask_id) = (self.s, self.task_id, self.subtask_id);
        let mut event = recovery_event(
            Whose {
                task: task_id,
                subtask: Some(subtask_id),
                agent: self.assignee,
            },
            RecoveryAction::WaitForProvider,
            Severity::Medium,
            (0, 0),
            format!(
                "waiting for {provider} ({reason}), next try in {} (waited {} of {})",
                human_duration(delay),
                human_duration(waited),
                human_duration(patience)
            ),
        );
        event.delay_ms = Some(delay.as_millis() as u64);
        event.provider = Some(provider.to_string());
        event.files = Some(self.files());
        s.recovery(event);
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Recovering);
        set_agent(
            s,
            self.assignee,
            AgentStatus::Blocked,
            &format!("waiting for {provider}"),
        );
        tokio::time::sleep(delay).await;
        set_agent(
            s,
            self.assignee,
            AgentStatus::Idle,
            &format!("{provider} may answer again"),
        );
        self.after_wait = true;
    }

    /// The agent ran out of retries: an idle peer takes the subtask over, if there is one.
    async fn ask_peer(&mut self) -> Outcome {
        let (ctx, s) = (self.ctx, self.s);
        let assignee = self.assignee;
        self.tried.push(assignee);
        let failure = self.last_failure();
        // Failed until it is replaced (unless it is busy with other work, which it goes
        // on with).
        if s.runtime
            .pool
            .get(s.current_agent(assignee))
            .is_some_and(|a| a.status() == AgentStatus::Idle)
        {
            set_agent(s, assignee, AgentStatus::Failed, "ran out of retries");
        }
        match peer_takeover(
            ctx,
            s,
            &self.task,
            self.subtask_id,
            assignee,
            &self.tried,
            &failure,
        )
        .await
        {
            Some(peer) => {
                let mut event = recovery_event(
                    Whose {
                        task: self.task_id,
                        subtask: Some(self.subtask_id),
                        agent: peer,
                    },
                    RecoveryAction::PeerTakeover,
                    failure.severity,
                    (1, 1),
                    format!(
                        "{} handed the subtask to idle peer {}",
                        agent_name(s, assignee),
                        agent_name(s, peer)
                    ),
                );
                event.files = Some(self.files());
                s.recovery(event);
                replace_in_background(
                    s,
                    assignee,
                    "ran out of retries on a subtask",
                    (self.task_id, Some(self.subtask_id)),
                );
                self.assignee = peer;
                Outcome::HandedOver
            }
            None => {
                let _ = ctx.append_own_board(&format!(
                    "- no idle peer could take over from {}; escalating",
                    agent_name(s, assignee)
                ));
                Outcome::NoPeer
            }
        }
    }

    /// The supervisor (this mid) decides: replace the agent, reassign or rewrite the
    /// subtask, or pass it up.
    async fn escalate_to_supervisor(&mut self) -> Outcome {
        let (ctx, s, task_id, subtask_id) = (self.ctx, self.s, self.task_id, self.subtask_id);
        let failure = &self.last_failure();
        let files = self.files();
        let proposal = propose_solution(
            ctx,
            s,
            self.task_id,
            &self.description,
            self.assignee,
            failure,
        )
        .await;
        let notice = EscalationNotice {
            metrics: s.runtime.pool.get(self.assignee).map(|a| a.metrics()),
            proposed_solution: Some(proposal.clone()),
            ..EscalationNotice::of(task_id, subtask_id, failure)
        };
        let escalation =
            Message::carrying(self.assignee, ctx.id(), &notice).with_task(task_id.to_string());
        if let Err(e) = ctx.bus.send(escalation) {
            tracing::warn!("escalation message not delivered: {e}");
        }
        let mut event = recovery_event(
            Whose {
                task: task_id,
                subtask: Some(subtask_id),
                agent: self.assignee,
            },
            RecoveryAction::EscalateToSupervisor,
            failure.severity,
            (1, 1),
            format!(
                "escalated to supervisor {}: proposed {} ({})",
                ctx.handle.name(),
                proposal.action.as_str(),
                proposal.reason
            ),
        );
        event.files = Some(files);
        s.recovery(event);
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Escalated);
        match proposal.action {
            ProposedAction::ReplaceAgent => {
                match super::replace::replace_agent(
                    s,
                    self.assignee,
                    &failure.message,
                    Some((task_id, Some(subtask_id))),
                )
                .await
                {
                    Ok(new) => {
                        self.assignee = new;
                        return Outcome::HandedOver;
                    }
                    Err(e) => tracing::warn!("replacement failed: {e}"),
                }
            }
            ProposedAction::Reassign => {
                if let Some(other) = pick_bottom(ctx, s, &self.tried) {
                    self.assignee = other;
                    return Outcome::HandedOver;
                }
            }
            ProposedAction::Modify => {
                if let Some(modified) = proposal
                    .modified_description
                    .clone()
                    .filter(|m| !m.trim().is_empty())
                {
                    self.description = modified;
                    record_description(s, task_id, subtask_id, &self.description);
                    return Outcome::HandedOver;
                }
            }
            ProposedAction::Pause => {}
        }
        Outcome::SupervisorCouldNotHelp
    }

    /// A fatal or critical failure goes to the top layer (and then the person).
    fn escalate_to_top(&mut self) {
        let (ctx, s, task_id, subtask_id) = (self.ctx, self.s, self.task_id, self.subtask_id);
        let failure = self.last_failure();
        let notice = EscalationNotice {
            fatal: Some(failure.fatal),
            ..EscalationNotice::of(task_id, subtask_id, &failure)
        };
        let notice = Message::carrying_to(ctx.id(), Recipient::Layer(Layer::Top), &notice)
            .with_task(task_id.to_string());
        let _ = ctx.bus.send(notice);
        let mut event = recovery_event(
            Whose {
                task: task_id,
                subtask: Some(subtask_id),
                agent: self.assignee,
            },
            RecoveryAction::EscalateToTop,
            failure.severity,
            (
                self.history.person_escalations(),
                crate::recovery::ladder::MAX_PERSON_ESCALATIONS,
            ),
            format!(
                "{} {} escalated to the top layer and the user: {}",
                if failure.fatal { "fatal" } else { "critical" },
                failure.kind,
                first_line(&failure.message)
            ),
        );
        event.files = Some(self.files());
        s.recovery(event);
    }

    /// The person decides how the subtask goes on.
    async fn ask_person(&mut self) -> Outcome {
        let (s, task_id, subtask_id) = (self.s, self.task_id, self.subtask_id);
        let failure = self.last_failure();
        set_subtask_status(s, task_id, subtask_id, SubtaskStatus::Escalated);
        // A subtask held up by a person's decision is a blocker the top layer hears of.
        if let Some(top) = self.ctx.handle.config().supervisor {
            let notice = EscalationNotice {
                message: format!(
                    "\"{}\" waits for a person's decision after {}: {}",
                    first_line(&self.description),
                    failure.kind,
                    first_line(&failure.message)
                ),
                waiting_for: Some("person".into()),
                ..EscalationNotice::of(task_id, subtask_id, &failure)
            };
            let notice = Message::carrying(self.ctx.id(), s.current_agent(top), &notice)
                .with_task(task_id.to_string());
            let _ = self.ctx.bus.send(notice);
        }
        set_agent(
            s,
            self.assignee,
            AgentStatus::WaitingApproval,
            "waiting for a person's decision",
        );
        let answer = ask_person(
            s,
            &self.task,
            subtask_id,
            self.assignee,
            &self.description,
            &failure,
        )
        .await;
        set_agent(s, self.assignee, AgentStatus::Idle, "the person answered");
        self.apply_answer(answer)
    }

    /// Carries out a person's answer (reassign, modify) and says what it means to the
    /// ladder.
    fn apply_answer(&mut self, answer: Option<ApprovalAnswer>) -> Outcome {
        let Some(answer) = answer else {
            return Outcome::PersonAnswered(None);
        };
        match answer.decision {
            ApprovalChoice::Retry => {}
            ApprovalChoice::Reassign => {
                let mut exclude = self.tried.clone();
                exclude.push(self.assignee);
                if let Some(other) = pick_bottom(self.ctx, self.s, &exclude) {
                    self.assignee = other;
                }
            }
            ApprovalChoice::Modify => {
                if let Some(modified) = answer.modified_description.filter(|m| !m.trim().is_empty())
                {
                    self.description = modified;
                    record_description(self.s, self.task_id, self.subtask_id, &self.description);
                }
            }
            _ => return Outcome::PersonAnswered(Some(PersonAnswer::Abort)),
        }
        Outcome::PersonAnswered(Some(PersonAnswer::GoOn))
    }

    /// The subtask's time used up: it ends as a timeout caused by its first failure
    /// (or by `last`, the failure that used it up).
    fn timed_out(&self, last: Option<&Failure>) -> Failure {
        let message = match last {
            Some(last) => format!(
                "the subtask's attempts used up its {} (recovery.subtaskTimeoutMs); last error: {}",
                human_duration(self.limit),
                first_line(&last.message)
            ),
            None => format!(
                "the subtask's attempts used up its {} (recovery.subtaskTimeoutMs)",
                human_duration(self.limit)
            ),
        };
        let timeout = Failure::new(FailureKind::Timeout, message);
        match (self.history.first_failure(), last) {
            (Some(first), _) => timeout.caused_by(first),
            (None, Some(last)) if last.kind != FailureKind::Timeout => timeout.caused_by(last),
            _ => timeout,
        }
    }

    /// Sends the subtask to its assignee and waits for the report, following a
    /// replacement.
    async fn dispatch(
        &self,
        earlier_failure: Option<(&Failure, &[String])>,
        attempt: u32,
        time_left: Duration,
    ) -> Attempt {
        let (ctx, s, task, subtask_id) = (self.ctx, self.s, &self.task, self.subtask_id);
        let assignee = s.current_agent(self.assignee);
        let shared = knowledge::shared_with(s, task.id, subtask_id, assignee, &self.concerns());
        if let Some((_, from)) = &shared
            && !from.is_empty()
        {
            let _ = ctx.append_own_board(&format!(
                "- shared what {} learned with {}",
                from.join(", "),
                agent_name(s, assignee)
            ));
        }
        let assignment = SubtaskAssignment {
            task_id: task.id,
            subtask_id,
            description: as_the_agent_reads_it(s, task.id, &self.description),
            attempt,
            context: context_for(
                s,
                task.id,
                earlier_failure,
                shared.as_ref().map(|(text, _)| text.as_str()),
            ),
            time_limit_ms: Some(time_left.as_millis().max(1) as u64),
        };
        let message =
            Message::carrying(ctx.id(), assignee, &assignment).with_task(task.id.to_string());
        // The bottom agent enforces the time limit itself; this margin only catches an
        // agent that stopped answering altogether.
        let patience = time_left + Duration::from_secs(10);
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
        let lost = |failure: Failure| SubtaskReport::Failed {
            failure,
            files: Vec::new(),
            partial_results: Vec::new(),
            learned: Box::default(),
        };
        loop {
            tokio::select! {
                reply = &mut request => {
                    return Attempt::Done(match reply {
                        Ok(reply) => reply.body::<SubtaskReport>().unwrap_or_else(|e| lost(
                            Failure::new(FailureKind::Internal, format!("{} answered: {e}", agent_name(s, assignee))).with_severity(Severity::Medium),
                        )),
                        Err(BusError::ReplyTimeout { after, .. }) => lost(Failure::new(
                            FailureKind::Timeout,
                            format!("{} did not report within {}", agent_name(s, assignee), human_duration(after)),
                        )),
                        Err(e) => lost(Failure::new(FailureKind::AgentUnavailable, e.to_string()).with_severity(Severity::Medium)),
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

    /// One attempt by the assignee. `None` when the subtask is done (completed, or
    /// given up); otherwise the ladder's next step.
    async fn attempt(&mut self) -> Option<Step> {
        let (ctx, s, task_id, subtask_id) = (self.ctx, self.s, self.task_id, self.subtask_id);
        if self.spent >= self.limit {
            give_up(s, task_id, subtask_id, self.assignee, self.timed_out(None));
            return None;
        }
        let (assignee, after_wait, errored) =
            (self.assignee, self.after_wait, self.history.errored());
        let attempts = s
            .tasks
            .update(task_id, |t| {
                let st = t.subtask_mut(subtask_id)?;
                if !after_wait || st.attempts == 0 {
                    st.attempts += 1;
                }
                st.assignee = Some(assignee);
                st.assignee_name = Some(agent_name(s, assignee));
                st.status = if errored {
                    SubtaskStatus::Recovering
                } else {
                    SubtaskStatus::Running
                };
                let attempts = st.attempts;
                t.refresh_status();
                Some(attempts)
            })
            .flatten()
            .unwrap_or(1);
        self.after_wait = false;
        // The quality ladder says whether the last failure is told, and whether the
        // last attempt's changes are put back first.
        let last_failure = self.history.last_failure().cloned();
        let before = quality::before_attempt(last_failure.as_ref().map(|f| f.kind));
        let earlier_failure = last_failure.filter(|_| before.tell);
        let undone = if before.undo {
            undo_failed_attempt(ctx, s, &self.as_found).await
        } else {
            Vec::new()
        };
        let started = Instant::now();
        let with_person = s.approvals.time_with_person(subtask_id);
        let report = self
            .dispatch(
                earlier_failure.as_ref().map(|f| (f, undone.as_slice())),
                attempts,
                self.limit - self.spent,
            )
            .await;
        // Waiting for a person (approvals during the attempt) is not the subtask's time.
        let person = s
            .approvals
            .time_with_person(subtask_id)
            .saturating_sub(with_person);
        self.spent += started.elapsed().saturating_sub(person);
        let report = match report {
            Attempt::Replaced(new) => {
                self.assignee = new;
                return Some(Step::Attempt);
            }
            Attempt::Done(report) => report,
        };
        match report {
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
                    t.refresh_status();
                });
                if self.history.errored() {
                    s.recovery(recovery_event(
                        Whose {
                            task: task_id,
                            subtask: Some(subtask_id),
                            agent: self.assignee,
                        },
                        RecoveryAction::Recovered,
                        Severity::Low,
                        (attempts, attempts),
                        format!("subtask recovered on attempt {attempts}"),
                    ));
                }
                None
            }
            SubtaskReport::Failed {
                failure,
                files,
                partial_results,
                learned,
            } => {
                if !learned.is_empty() {
                    let mut about = self.concerns();
                    for path in files.iter().chain(&learned.files_read) {
                        if !about.contains(path) {
                            about.push(path.clone());
                        }
                    }
                    let lesson = knowledge::Lesson {
                        subtask: subtask_id,
                        subtask_title: first_line(&self.description),
                        agent: self.assignee,
                        agent_name: agent_name(s, self.assignee),
                        files: about,
                        failure: format!("{}: {}", failure.kind, first_line(&failure.message)),
                        learned: *learned,
                    };
                    knowledge::keep(s, task_id, lesson);
                }
                // The subtask's scope, keeping the provider or tool the failure names.
                let failure = match failure.scope {
                    Scope::Provider { .. } | Scope::Tool { .. } => failure,
                    _ => failure.with_scope(Scope::Subtask {
                        task_id,
                        subtask_id,
                    }),
                };
                // A refusal of the open breaker is no new error of the subtask: the wait
                // it causes is reported as such.
                let record = failure.kind != FailureKind::CircuitOpen;
                let task_error = TaskError::now(match failure.scope {
                    Scope::Subtask { .. } => failure.clone(),
                    _ => failure.clone().with_scope(Scope::Subtask {
                        task_id,
                        subtask_id,
                    }),
                });
                s.tasks.update(task_id, |t| {
                    if let Some(st) = t.subtask_mut(subtask_id) {
                        // What earlier attempts achieved stays: a later attempt that
                        // finds the work already done reports nothing new.
                        add_new(&mut st.partial_results, partial_results);
                        add_new(&mut st.files, files);
                    }
                    if record {
                        t.errors.push(task_error);
                    }
                });
                if failure.kind == FailureKind::Cancelled && !s.task_cancel(task_id).is_cancelled()
                {
                    // An attempt stopped by something else than the task's cancellation
                    // (its agent was replaced mid-attempt): try again.
                    return Some(self.decide(Outcome::Failed(Failure::new(
                        FailureKind::AgentUnavailable,
                        failure.message.clone(),
                    ))));
                }
                if self.spent >= self.limit {
                    // The subtask's time is used up: no retry can follow.
                    let timeout = self.timed_out(Some(&failure));
                    give_up(s, task_id, subtask_id, self.assignee, timeout);
                    return None;
                }
                Some(self.decide(Outcome::Failed(failure)))
            }
        }
    }
}

/// Moves an agent to `status` when the state table allows it from where it is.
fn set_agent(s: &Services, agent: AgentId, status: AgentStatus, reason: &str) {
    let agent = s.current_agent(agent);
    if let Some(handle) = s.runtime.pool.get(agent) {
        let now = handle.status();
        if now != status && now.can_transition_to(status) {
            let _ = handle.transition(status, reason.to_string());
        }
    }
}

/// Replaces a failed agent without holding up the subtask, which a peer now runs (its log
/// lines stay in the task's span).
fn replace_in_background(
    s: &Arc<Services>,
    agent: AgentId,
    reason: &'static str,
    cause: (TaskId, Option<SubtaskId>),
) {
    let s = s.clone();
    tokio::spawn(
        async move {
            let busy = s.attempts.iter().any(|a| a.value().0 == agent);
            let failed = s
                .runtime
                .pool
                .get(agent)
                .is_some_and(|a| a.status() == AgentStatus::Failed);
            if failed
                && !busy
                && let Err(e) = super::replace::replace_agent(&s, agent, reason, Some(cause)).await
            {
                tracing::warn!(agent = %agent, "failed agent not replaced: {e}");
            }
        }
        .in_current_span(),
    );
}

/// The files the task and the subtask name, as the subtask found them (those that
/// existed): what a retry after code that failed its checks starts again from.
fn files_as_found(s: &Services, task: &TaskRecord, description: &str) -> Vec<(String, String)> {
    let named = format!("{}\n{description}", super::files::task_text(task));
    target_files_now(&s.sandbox, &named)
        .into_iter()
        .filter_map(|file| Some((file.path, file.content?)))
        .collect()
}

/// Puts back the files an attempt left failing their checks, after its own fix turn:
/// the next attempt starts again from the files as the subtask found them, told why
/// (otherwise each retry builds on the last one's broken code, the damage piling up
/// until no attempt can save it). Returns the files put back.
async fn undo_failed_attempt(
    ctx: &AgentContext,
    s: &Services,
    as_found: &[(String, String)],
) -> Vec<String> {
    let undone = super::files::put_back(s, as_found).await;
    if !undone.is_empty() {
        let _ = ctx.append_own_board(&format!(
            "- the last attempt's code failed its checks: {} put back as the subtask found it",
            undone.join(", ")
        ));
    }
    undone
}

fn subtask_files(s: &Services, task_id: TaskId, subtask_id: SubtaskId) -> Vec<String> {
    s.tasks
        .get(task_id)
        .and_then(|t| t.subtask(subtask_id).map(|st| st.files.clone()))
        .unwrap_or_default()
}

/// The one subtask of a task, as its agent reads it: the task verbatim first, then the
/// planner's other words for the change, which can drift to a different change that
/// the agent would do instead of the task. A subtask of several, one that is the task,
/// or an answer instead of a change is read as planned (the task is in the context then).
fn as_the_agent_reads_it(s: &Services, task_id: TaskId, description: &str) -> String {
    let Some(task) = s.tasks.get(task_id) else {
        return description.to_string();
    };
    let whole = super::files::task_text(&task);
    match task.subtasks.as_slice() {
        [_] if !description.contains(whole)
            && crate::checks::intent::step_asks_for_changes(
                s.originals(task_id).intent(),
                description,
            ) =>
        {
            format!("{whole}\n\nHow the planner put it: {description}")
        }
        _ => description.to_string(),
    }
}

/// The longest account of an earlier failure put in a retry's prompt.
const EARLIER_FAILURE_MAX_CHARS: usize = 1_500;

/// The task, what earlier subtasks produced, why the last attempt at this subtask
/// failed, what the team learned that concerns it (`knowledge.rs`) and the files the
/// task names as they are now: the bottom agent's context.
fn context_for(
    s: &Services,
    task_id: TaskId,
    earlier_failure: Option<(&Failure, &[String])>,
    shared: Option<&str>,
) -> String {
    let Some(task) = s.tasks.get(task_id) else {
        return String::new();
    };
    // Every bottom agent sees the whole task verbatim, unless its subtask is the task.
    let whole = super::files::task_text(&task);
    let mut context = match task.subtasks.as_slice() {
        [only]
            if only.description.contains(whole)
                || crate::checks::intent::step_asks_for_changes(
                    s.originals(task_id).intent(),
                    &only.description,
                ) =>
        {
            String::new()
        }
        [_] => format!("This subtask is the whole task below, as the person wrote it:\n{whole}\n"),
        _ => format!(
            "This subtask is one part of the task below; do only your part.\nThe whole task:\n{whole}\n"
        ),
    };
    if let Some(background) = &task.context.background {
        if !context.is_empty() {
            context.push('\n');
        }
        context.push_str(&super::files::background_for_prompt(background));
        context.push('\n');
    }
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
    if let Some((failure, undone)) = earlier_failure {
        if !context.is_empty() {
            context.push('\n');
        }
        let how = if undone.is_empty() {
            "Start from the files as they are now.".to_string()
        } else {
            format!(
                "Its changes to {} were undone: do the subtask again from the files as they are now.",
                undone.join(", ")
            )
        };
        context.push_str(&format!(
            "An earlier attempt at this subtask failed ({}):\n{}\n{how} {}\n",
            failure.kind,
            crate::tools::truncate_text(&failure.message, EARLIER_FAILURE_MAX_CHARS),
            ErrorCategory::of_failure(failure).next_step_if(s.config.team.error_strategies)
        ));
    }
    if let Some(shared) = shared {
        if !context.is_empty() {
            context.push('\n');
        }
        context.push_str(shared);
    }
    let files = named_files_now(&s.sandbox, whole);
    if !files.is_empty() {
        if !context.is_empty() {
            context.push('\n');
        }
        context.push_str(&files);
    }
    context
}

/// An idle bottom agent, this mid's own first, never one of `exclude`; else the least
/// busy of its subordinates.
pub(super) fn pick_bottom(
    ctx: &AgentContext,
    s: &Services,
    exclude: &[AgentId],
) -> Option<AgentId> {
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

/// Ends a subtask as failed with `failure` (its root cause inside), and says so.
fn give_up(
    s: &Services,
    task_id: TaskId,
    subtask_id: SubtaskId,
    assignee: AgentId,
    failure: Failure,
) {
    let (root_kind, root_message) = failure.root();
    let because = if root_kind != failure.kind {
        format!("; first error {root_kind}: {}", first_line(root_message))
    } else {
        String::new()
    };
    let mut event = recovery_event(
        Whose {
            task: task_id,
            subtask: Some(subtask_id),
            agent: assignee,
        },
        RecoveryAction::GaveUp,
        failure.severity,
        (1, 1),
        format!(
            "gave up on the subtask ({}): {}{because}",
            failure.kind,
            first_line(&failure.message)
        ),
    );
    if let Scope::Provider { provider } = &failure.scope {
        event.provider = Some(provider.clone());
    }
    s.recovery(event);
    // Recorded against the subtask; a provider outage names its provider in the message
    // (and the step above carries it as `provider`).
    let mut as_error = failure;
    as_error.scope = Scope::Subtask {
        task_id,
        subtask_id,
    };
    s.tasks.update(task_id, |t| {
        // The last error of a failed subtask is the one it ended with: recorded when
        // it is a new kind of failure (a provider outage, the subtask's time used up).
        let last_kind = t
            .errors
            .iter()
            .rev()
            .find(|e| e.subtask_id() == Some(subtask_id))
            .map(|e| e.failure.kind);
        if last_kind != Some(as_error.kind) {
            t.errors.push(TaskError::now(as_error));
        }
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = SubtaskStatus::Failed;
        }
        t.refresh_status();
    });
}

fn fail_subtask(s: &Services, task_id: TaskId, subtask_id: SubtaskId, failure: Failure) {
    s.tasks.update(task_id, |t| {
        t.errors
            .push(TaskError::now(failure.with_scope(Scope::Subtask {
                task_id,
                subtask_id,
            })));
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = SubtaskStatus::Failed;
        }
        t.refresh_status();
    });
}

fn set_subtask_status(s: &Services, task_id: TaskId, subtask_id: SubtaskId, status: SubtaskStatus) {
    s.tasks.update(task_id, |t| {
        if let Some(st) = t.subtask_mut(subtask_id) {
            st.status = status;
        }
        t.refresh_status();
    });
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
