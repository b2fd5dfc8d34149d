//! Approvals: questions for the person at the editor or terminal — escalations the team
//! cannot settle, low-confidence fixes, commands under the `ask` policy.
//!
//! An approval waits until someone answers it; nothing here decides by timeout. Pending
//! approvals are listed for any front-end that (re)connects. One that stops mattering
//! is withdrawn, with the reason, so every front-end can take it down: its task ended or
//! was cancelled ([`Approvals::withdraw_task`]), or whoever asked stopped waiting (the
//! [`Approvals::ask`] future was dropped: the subtask was cancelled, given up or taken
//! over).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use dashmap::DashMap;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::events::{EventBus, RuntimeEvent};
use super::journal::Journal;
use crate::ids::{SubtaskId, TaskId};
use crate::records::{ApprovalAnswer, ApprovalKind, ApprovalOption, ApprovalRequest};
use crate::recovery::Severity;
use crate::store::{Record, Store};

/// What an escalation says about the subtask that keeps failing.
#[derive(Clone, Debug)]
pub struct Escalation<'a> {
    pub task_id: TaskId,
    pub task_title: &'a str,
    pub subtask_id: SubtaskId,
    /// 1-based place of the subtask in the plan, and the plan's length.
    pub position: Option<(usize, usize)>,
    /// The subtask's current description.
    pub description: &'a str,
    pub agent_id: String,
    pub severity: Severity,
    pub error_kind: &'a str,
    pub error: &'a str,
}

/// How long the subtask's description may be in an escalation's title.
const TITLE_DESCRIPTION_CHARS: usize = 60;

impl ApprovalRequest {
    /// The approval asked when a subtask keeps failing: its title names the subtask
    /// (`[2/4] Write cli.py … keeps failing`), and it carries the subtask's current
    /// description for "Modify the subtask" to start from.
    pub fn escalation(facts: Escalation<'_>) -> ApprovalRequest {
        let place = facts
            .position
            .map(|(index, count)| format!("[{index}/{count}]"))
            .unwrap_or_default();
        let label = if place.is_empty() {
            "**Subtask**".to_string()
        } else {
            format!("**Subtask {place}**")
        };
        let line = facts
            .description
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let short = match line.char_indices().nth(TITLE_DESCRIPTION_CHARS) {
            Some((end, _)) => format!("{}…", line[..end].trim_end()),
            None => line.to_string(),
        };
        let critical = facts.severity == Severity::Critical;
        ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind: ApprovalKind::Escalation,
            task_id: facts.task_id,
            subtask_id: Some(facts.subtask_id),
            agent_id: facts.agent_id,
            severity: facts.severity,
            title: format!("{place} {short} keeps failing")
                .trim_start()
                .to_string(),
            detail: format!(
                "**Task**: {}\n\n{label}: {}\n\n**Error** ({}, {}):\n\n```\n{}\n```\n\nThe team retried{}. Choose how to go on; \"Modify the subtask\" starts from its current description.",
                facts.task_title,
                facts.description,
                facts.error_kind,
                facts.severity,
                facts.error,
                if critical {
                    ""
                } else {
                    ", tried a peer and its supervisor"
                }
            ),
            proposed_solution: Some(if critical {
                "Fix the cause (credentials, quota, permissions), then retry.".into()
            } else {
                "Modify the subtask to something the agents can do, or reassign it.".into()
            }),
            diff: None,
            command: None,
            subtask_description: Some(facts.description.to_string()),
            options: ApprovalOption::escalation(),
            created_at: Utc::now(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApprovalError {
    #[error("no pending approval {0}")]
    NotFound(Uuid),
    #[error("`{decision}` is not an option of approval {approval}")]
    InvalidDecision { approval: Uuid, decision: String },
}

struct Pending {
    request: Arc<ApprovalRequest>,
    answer: oneshot::Sender<ApprovalAnswer>,
    /// When it started waiting for a person.
    since: tokio::time::Instant,
}

/// A time limit ran out (not counting time spent waiting for a person).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the time limit ran out")]
pub struct TimeLimitReached;

/// The pending approvals, cheap to clone.
#[derive(Clone)]
pub struct Approvals {
    pending: Arc<DashMap<Uuid, Pending>>,
    /// Answers to approvals restored after a restart, by subtask, until the resumed
    /// subtask picks them up.
    restored: Arc<DashMap<SubtaskId, oneshot::Receiver<ApprovalAnswer>>>,
    /// Per subtask, the time its settled approvals waited for a person.
    waited: Arc<DashMap<SubtaskId, Duration>>,
    /// Approvals of other kinds than escalations that were pending when the process
    /// stopped: pending again under their ids, and the answer's channel, until the step
    /// that asked asks the same again and takes them over ([`Approvals::ask`]).
    carried: Arc<DashMap<Sameness, (Uuid, oneshot::Receiver<ApprovalAnswer>)>>,
    journal: Journal,
}

/// What makes two approval requests the same question: their task, subtask, kind and
/// what they show (title, command, the change).
type Sameness = (TaskId, Option<SubtaskId>, ApprovalKind, u64);

fn sameness(request: &ApprovalRequest) -> Sameness {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        &request.title,
        &request.command,
        request.diff.as_ref().map(|d| (&d.uri, &d.after)),
    )
        .hash(&mut hasher);
    (
        request.task_id,
        request.subtask_id,
        request.kind,
        hasher.finish(),
    )
}

impl Approvals {
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        Approvals {
            pending: Arc::new(DashMap::new()),
            restored: Arc::new(DashMap::new()),
            waited: Arc::new(DashMap::new()),
            carried: Arc::new(DashMap::new()),
            journal: Journal::new(events, store),
        }
    }

    /// Publishes `request` and waits for its answer. `None` means it was withdrawn
    /// (its task was cancelled); callers treat that as abort. Dropping the future before
    /// an answer withdraws the approval: nobody would use a late answer.
    pub async fn ask(&self, request: ApprovalRequest) -> Option<ApprovalAnswer> {
        // The same question, pending since before a restart: it keeps its id, and an
        // answer given meanwhile is the answer.
        if let Some((_, (id, answered))) = self.carried.remove(&sameness(&request)) {
            let mut unanswered = WithdrawOnDrop {
                approvals: self.clone(),
                id: Some(id),
            };
            let answer = answered.await.ok();
            unanswered.id = None;
            return answer;
        }
        let (answer, answered) = oneshot::channel();
        let request = Arc::new(request);
        let mut unanswered = WithdrawOnDrop {
            approvals: self.clone(),
            id: Some(request.approval_id),
        };
        self.pending.insert(
            request.approval_id,
            Pending {
                request: request.clone(),
                answer,
                since: tokio::time::Instant::now(),
            },
        );
        self.journal
            .keep(Record::ApprovalRequested(request.clone()));
        let answer = answered.await.ok();
        unanswered.id = None;
        answer
    }

    /// Makes an approval that was pending when the process stopped pending again, with
    /// its original id, so a reconnecting editor can still answer it. The subtask it
    /// belongs to collects the answer with [`Approvals::take_restored`].
    pub fn restore(&self, request: ApprovalRequest) {
        let subtask = request.subtask_id;
        let answered = self.pending_again(request);
        if let Some(subtask) = subtask {
            self.restored.insert(subtask, answered);
        }
    }

    /// Makes a command, file-change or decision approval that was pending when the
    /// process stopped pending again, under its id: listed, answerable, asked of the
    /// editors; the step that asked it takes it over when it asks the same again.
    pub fn carry(&self, request: ApprovalRequest) {
        let key = sameness(&request);
        let id = request.approval_id;
        let answered = self.pending_again(request);
        self.carried.insert(key, (id, answered));
    }

    /// Makes `request` pending (it was before the restart, so it is not stored again)
    /// and tells the front-ends; returns where its answer will come.
    fn pending_again(&self, request: ApprovalRequest) -> oneshot::Receiver<ApprovalAnswer> {
        let (answer, answered) = oneshot::channel();
        let request = Arc::new(request);
        self.pending.insert(
            request.approval_id,
            Pending {
                request: request.clone(),
                answer,
                since: tokio::time::Instant::now(),
            },
        );
        self.journal
            .announce(RuntimeEvent::ApprovalRequested(request));
        answered
    }

    /// The answer channel of a restored approval of `subtask`, if there is one.
    pub fn take_restored(&self, subtask: SubtaskId) -> Option<oneshot::Receiver<ApprovalAnswer>> {
        self.restored.remove(&subtask).map(|(_, answered)| answered)
    }

    /// Answers a pending approval with one of its options.
    pub fn resolve(&self, id: Uuid, answer: ApprovalAnswer) -> Result<(), ApprovalError> {
        {
            let pending = self.pending.get(&id).ok_or(ApprovalError::NotFound(id))?;
            if !pending
                .request
                .options
                .iter()
                .any(|o| o.id == answer.decision)
            {
                return Err(ApprovalError::InvalidDecision {
                    approval: id,
                    decision: answer.decision.as_str().to_string(),
                });
            }
        }
        let (_, pending) = self
            .pending
            .remove(&id)
            .ok_or(ApprovalError::NotFound(id))?;
        self.count_wait(&pending);
        self.settled(&pending.request, Some(&answer), None);
        let _ = pending.answer.send(answer);
        Ok(())
    }

    /// Withdraws every pending approval of `task` (it was cancelled or finished).
    pub fn withdraw_task(&self, task: TaskId) {
        self.carried.retain(|(t, ..), _| *t != task);
        let ids: Vec<Uuid> = self
            .pending
            .iter()
            .filter(|p| p.request.task_id == task)
            .map(|p| *p.key())
            .collect();
        for id in ids {
            self.withdraw(id, TASK_ENDED);
        }
    }

    /// Withdraws one pending approval, saying why; a no-op once it is settled.
    pub fn withdraw(&self, id: Uuid, reason: &str) {
        if let Some((_, pending)) = self.pending.remove(&id) {
            self.count_wait(&pending);
            tracing::info!(approval = %id, "approval withdrawn: {reason}");
            self.settled(&pending.request, None, Some(reason));
        }
    }

    /// Withdraws an approval whose asker stopped waiting, for the front-ends only: the
    /// store keeps it pending, because the asker also stops when the process does, and
    /// then the approval must come back with the next run (escalations are restored;
    /// other kinds are carried, and taken over when their step asks again).
    fn abandon(&self, id: Uuid) {
        if let Some((_, pending)) = self.pending.remove(&id) {
            self.count_wait(&pending);
            tracing::info!(approval = %id, "approval withdrawn: {ASKER_GONE}");
            self.journal.announce(RuntimeEvent::ApprovalResolved {
                approval_id: id,
                task_id: pending.request.task_id,
                decision: None,
                reason: Some(ASKER_GONE.to_string()),
            });
        }
    }

    fn count_wait(&self, pending: &Pending) {
        if let Some(subtask) = pending.request.subtask_id {
            *self.waited.entry(subtask).or_default() += pending.since.elapsed();
        }
    }

    /// How long `subtask`'s approvals have waited for a person, the ones still pending
    /// included.
    pub fn time_with_person(&self, subtask: SubtaskId) -> Duration {
        let settled = self.waited.get(&subtask).map(|d| *d).unwrap_or_default();
        let ongoing = self
            .pending
            .iter()
            .filter(|p| p.request.subtask_id == Some(subtask))
            .map(|p| p.since.elapsed())
            .max()
            .unwrap_or_default();
        settled + ongoing
    }

    /// Runs `work` under `limit`, not counting the time `subtask` spends waiting for a
    /// person meanwhile: waiting for a person is never bound by a time limit of the
    /// work (docs/protocol.md, section 6). This is how the subtask timeout is kept.
    pub async fn timeout_besides_person<F: Future>(
        &self,
        subtask: SubtaskId,
        limit: Duration,
        work: F,
    ) -> Result<F::Output, TimeLimitReached> {
        let start = tokio::time::Instant::now();
        let before = self.time_with_person(subtask);
        tokio::pin!(work);
        loop {
            let person = self.time_with_person(subtask).saturating_sub(before);
            let deadline = start + limit + person;
            if tokio::time::Instant::now() >= deadline {
                return Err(TimeLimitReached);
            }
            tokio::select! {
                output = &mut work => return Ok(output),
                () = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// Everything still pending, oldest first.
    pub fn pending(&self) -> Vec<Arc<ApprovalRequest>> {
        let mut all: Vec<Arc<ApprovalRequest>> =
            self.pending.iter().map(|p| p.request.clone()).collect();
        all.sort_by_key(|r| (r.created_at, r.approval_id));
        all
    }

    pub fn get(&self, id: Uuid) -> Option<Arc<ApprovalRequest>> {
        self.pending.get(&id).map(|p| p.request.clone())
    }

    fn settled(
        &self,
        request: &Arc<ApprovalRequest>,
        answer: Option<&ApprovalAnswer>,
        reason: Option<&str>,
    ) {
        self.journal.keep(Record::ApprovalResolved {
            approval_id: request.approval_id,
            task_id: request.task_id,
            answer: answer.cloned(),
            reason: reason.map(str::to_string),
        });
    }
}

/// Why the approvals of a finished or cancelled task are withdrawn.
pub const TASK_ENDED: &str = "its task has ended (it finished or was cancelled)";
/// Why an approval is withdrawn when whoever asked stops waiting for the answer.
pub const ASKER_GONE: &str = "the agent that asked stopped waiting for it (its subtask was cancelled, \
given up or taken over); if that work goes on, it asks again";

/// Withdraws an approval whose [`Approvals::ask`] future is dropped before the answer.
struct WithdrawOnDrop {
    approvals: Approvals,
    id: Option<Uuid>,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.approvals.abandon(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::ApprovalChoice;

    fn escalation(position: Option<(usize, usize)>, description: &str) -> ApprovalRequest {
        ApprovalRequest::escalation(Escalation {
            task_id: TaskId::new(),
            task_title: "Build a converter",
            subtask_id: SubtaskId::new(),
            position,
            description,
            agent_id: "a".into(),
            severity: Severity::High,
            error_kind: "timeout",
            error: "the call timed out",
        })
    }

    #[test]
    fn an_escalation_names_its_subtask_and_carries_its_description() {
        let request = escalation(Some((2, 4)), "Write cli.py: a command line");
        assert_eq!(
            request.title,
            "[2/4] Write cli.py: a command line keeps failing"
        );
        assert!(
            request.detail.contains("**Subtask [2/4]**: Write cli.py"),
            "{}",
            request.detail
        );
        assert!(
            request.detail.contains("Build a converter"),
            "{}",
            request.detail
        );
        assert_eq!(
            request.subtask_description.as_deref(),
            Some("Write cli.py: a command line")
        );
        let long = escalation(None, &"x".repeat(200));
        assert!(
            long.title.starts_with(&format!("{}…", "x".repeat(60))),
            "{}",
            long.title
        );
        assert!(long.detail.contains("**Subtask**:"), "{}", long.detail);
    }

    #[tokio::test(start_paused = true)]
    async fn a_time_limit_does_not_count_the_time_a_person_takes() {
        let approvals = Approvals::new(EventBus::new(16), None);
        let request = escalation(Some((1, 1)), "Write a.py");
        let (id, subtask) = (request.approval_id, request.subtask_id.unwrap());
        let limit = Duration::from_secs(60);
        // Ten seconds of work, then a person who answers after an hour, then ten more.
        let work = {
            let approvals = approvals.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                let answer = approvals.ask(request).await;
                tokio::time::sleep(Duration::from_secs(10)).await;
                answer
            }
        };
        let person = {
            let approvals = approvals.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                approvals
                    .resolve(id, ApprovalAnswer::new(ApprovalChoice::Retry))
                    .unwrap();
            })
        };
        let answer = approvals
            .timeout_besides_person(subtask, limit, work)
            .await
            .expect("an hour with the person does not count");
        assert_eq!(answer.unwrap().decision, ApprovalChoice::Retry);
        person.await.unwrap();
        assert!(approvals.time_with_person(subtask) >= Duration::from_secs(3590));

        // Work alone still runs out of time.
        let slow = tokio::time::sleep(Duration::from_secs(61));
        assert_eq!(
            approvals.timeout_besides_person(subtask, limit, slow).await,
            Err(TimeLimitReached)
        );
    }

    #[tokio::test]
    async fn an_approval_whose_asker_stops_waiting_is_withdrawn_with_the_reason() {
        let events = EventBus::new(16);
        let mut stream = events.subscribe();
        let approvals = Approvals::new(events, None);
        let request = escalation(Some((1, 1)), "Write a.py");
        let id = request.approval_id;
        let asking = tokio::spawn({
            let approvals = approvals.clone();
            async move { approvals.ask(request).await }
        });
        while approvals.get(id).is_none() {
            tokio::task::yield_now().await;
        }
        asking.abort();
        let _ = asking.await;
        assert!(approvals.get(id).is_none(), "no longer pending");
        loop {
            if let RuntimeEvent::ApprovalResolved {
                approval_id,
                decision,
                reason,
                ..
            } = stream.recv().await.unwrap()
            {
                assert_eq!(approval_id, id);
                assert_eq!(decision, None);
                assert_eq!(reason.as_deref(), Some(ASKER_GONE));
                break;
            }
        }
    }
}
