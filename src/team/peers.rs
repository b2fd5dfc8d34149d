//! Mids keep out of each other's files. Before a subtask that names files starts, its mid
//! claims them from every mid, its own [`Claims`] included, one after the other in the
//! order of their ids (a `peer_coordination` request, `writing`): a mid that knows of
//! another task's subtask at work on one of them answers "wait", and the subtask is held
//! back until that work is over. When the subtask ends, or its task does, its mid tells
//! its peers (`doneWriting`, `taskEnded`), and each wakes what it held back for it. The
//! task's checking (its checks and fix rounds) claims the task's files the same way, and
//! holds them until the task ends.
//!
//! Asking in one order for all makes two claims made at the same moment meet first at
//! the same mid, which grants one and refuses the other: they never both go, and do not
//! keep refusing each other. A mid that does not answer within the answer patience is no
//! reason to wait, and no subtask is held back longer than `recovery.subtaskTimeoutMs`
//! for one piece of work, the most a subtask may work: a mid that stopped without saying
//! so holds nothing up for good.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::join_all;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use uuid::Uuid;

use super::Services;
use crate::recovery::ladder::human_duration;
use crate::runtime::{
    AgentContext, Body, Layer, Message, MessageKind, Recipient, Subtask, SubtaskId, TaskId,
    TaskRecord,
};

/// What a mid tells its peers (`peer_coordination`): about one of its tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PeerNews {
    pub(super) task_id: TaskId,
    pub(super) title: String,
    /// The mid coordinating the task, by name.
    pub(super) coordinator: String,
    #[serde(flatten)]
    pub(super) event: PeerEvent,
}

impl Body for PeerNews {
    const NAME: &'static str = "news from a peer mid";
    const KINDS: &'static [MessageKind] = &[MessageKind::PeerCoordination];
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub(super) enum PeerEvent {
    /// The mid took the task up, so the others spread new work elsewhere.
    TaskTaken,
    /// A subtask is about to write files: a request, answered with a [`WriteAnswer`].
    Writing(Writing),
    /// The work is done with the files it claimed (it ended, or it never started).
    DoneWriting {
        claim: Uuid,
        /// Absent for the task's checking.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subtask_id: Option<SubtaskId>,
    },
    /// The task ended, whatever way: none of its subtasks writes any more.
    TaskEnded,
}

/// One piece of work's claim on the files it is about to write: a subtask's, or the
/// task's checking (its checks and fix rounds, once its subtasks are done).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Writing {
    /// This claim, new at each start of the work (its `doneWriting` names it).
    pub(super) claim: Uuid,
    #[serde(flatten)]
    pub(super) work: Work,
    pub(super) files: Vec<String>,
}

/// What a claim is for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Work {
    /// Absent for the task's checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) subtask_id: Option<SubtaskId>,
    /// 1-based, in the task; 0 for its checking.
    pub(super) position: usize,
    /// The first line of the subtask's description, or what the checking does.
    pub(super) description: String,
}

/// The description of the task's checking in a claim.
pub(super) const CHECKING: &str = "the task's checks and fix rounds";

impl Work {
    pub(super) fn subtask(position: usize, subtask: &Subtask) -> Work {
        Work {
            subtask_id: Some(subtask.id),
            position,
            description: super::first_line(&subtask.description),
        }
    }

    pub(super) fn checking() -> Work {
        Work {
            subtask_id: None,
            position: 0,
            description: CHECKING.into(),
        }
    }
}

/// The work at `position` of the task titled `title`, in a line: `subtask 2 of "…"`, or
/// `the checking of "…"`.
pub(super) fn work_in(position: usize, title: &str) -> String {
    if position == 0 {
        format!("the checking of \"{title}\"")
    } else {
        format!("subtask {position} of \"{title}\"")
    }
}

/// A mid's answer to a `writing` request: go, or wait for the work it names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WriteAnswer {
    pub(super) go: bool,
    /// Without `go`: the `writing` of another task on the same files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) wait_for: Option<PeerNews>,
}

impl Body for WriteAnswer {
    const NAME: &'static str = "an answer to a claim on files";
    const KINDS: &'static [MessageKind] = &[MessageKind::PeerCoordination];
}

/// A subtask's claim on files, as a mid keeps it: its own, or one a peer made.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Claim {
    pub(super) task_id: TaskId,
    pub(super) title: String,
    pub(super) coordinator: String,
    pub(super) writing: Writing,
}

impl Claim {
    fn news(&self) -> PeerNews {
        PeerNews {
            task_id: self.task_id,
            title: self.title.clone(),
            coordinator: self.coordinator.clone(),
            event: PeerEvent::Writing(self.writing.clone()),
        }
    }

    fn of(news: &PeerNews) -> Option<Claim> {
        match &news.event {
            PeerEvent::Writing(writing) => Some(Claim {
                task_id: news.task_id,
                title: news.title.clone(),
                coordinator: news.coordinator.clone(),
                writing: writing.clone(),
            }),
            _ => None,
        }
    }

    /// The files of `files` this claim holds.
    pub(super) fn shared(&self, files: &[String]) -> Vec<String> {
        files
            .iter()
            .filter(|f| self.writing.files.contains(f))
            .cloned()
            .collect()
    }
}

/// How many released claims a mid remembers: enough for any subtask still waiting on one.
const RELEASED_KEPT: usize = 1024;

/// What one mid knows of the files being written: the claims it granted (its own
/// subtasks' and its peers'), and which were released. Shared by its mailbox, which
/// answers and notes its peers' news, and its coordinators, which wait on it.
pub struct Claims {
    known: Mutex<Known>,
    /// Bumped at every release, so that held subtasks look again.
    released: watch::Sender<u64>,
}

#[derive(Default)]
struct Known {
    granted: Vec<Claim>,
    released: VecDeque<Uuid>,
    ended: HashSet<TaskId>,
}

impl Known {
    fn holder(&self, task_id: TaskId, files: &[String]) -> Option<&Claim> {
        self.granted
            .iter()
            .find(|c| c.task_id != task_id && !c.shared(files).is_empty())
    }
}

impl Default for Claims {
    fn default() -> Self {
        Claims {
            known: Mutex::default(),
            released: watch::Sender::new(0),
        }
    }
}

impl Claims {
    fn known(&self) -> std::sync::MutexGuard<'_, Known> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes at every release.
    pub(super) fn releases(&self) -> watch::Receiver<u64> {
        self.released.subscribe()
    }

    /// A claim of a task other than `task_id` on one of `files`.
    pub(super) fn holder(&self, task_id: TaskId, files: &[String]) -> Option<Claim> {
        self.known().holder(task_id, files).cloned()
    }

    /// Notes `claim` as granted, unless a claim of another task holds one of its files:
    /// then `claim` is not noted, and that one is returned.
    #[must_use]
    pub(super) fn grant(&self, claim: Claim) -> Option<Claim> {
        let mut known = self.known();
        if let Some(holder) = known.holder(claim.task_id, &claim.writing.files) {
            return Some(holder.clone());
        }
        known.ended.remove(&claim.task_id);
        known
            .granted
            .retain(|c| c.writing.claim != claim.writing.claim);
        known.granted.push(claim);
        None
    }

    /// Notes `claim` whatever holds its files (a subtask that waited too long goes ahead).
    fn grant_anyway(&self, claim: Claim) {
        let mut known = self.known();
        known.ended.remove(&claim.task_id);
        known.granted.push(claim);
    }

    /// The work `claim` was for is over (or never began).
    pub(super) fn release(&self, claim: Uuid) {
        let mut known = self.known();
        known.granted.retain(|c| c.writing.claim != claim);
        if known.released.len() >= RELEASED_KEPT {
            known.released.pop_front();
        }
        known.released.push_back(claim);
        drop(known);
        self.released.send_modify(|n| *n += 1);
    }

    /// `task_id` ended: none of its claims holds anything any more.
    pub(super) fn task_ended(&self, task_id: TaskId) {
        let mut known = self.known();
        known.granted.retain(|c| c.task_id != task_id);
        known.ended.insert(task_id);
        drop(known);
        self.released.send_modify(|n| *n += 1);
    }

    /// `task_id` was taken up (again, when it is retried): its claims count from now on.
    pub(super) fn task_taken(&self, task_id: TaskId) {
        self.known().ended.remove(&task_id);
    }

    /// Whether the work `holder` was for is over, as far as this mid has heard.
    pub(super) fn is_released(&self, holder: &Claim) -> bool {
        let known = self.known();
        known.ended.contains(&holder.task_id) || known.released.contains(&holder.writing.claim)
    }

    /// A peer's news: a claim answered, a release noted.
    pub(super) fn hear(&self, news: &PeerNews) -> Option<WriteAnswer> {
        match &news.event {
            PeerEvent::TaskTaken => self.task_taken(news.task_id),
            PeerEvent::Writing(_) => {
                let claim = Claim::of(news)?;
                let holder = self.grant(claim);
                return Some(WriteAnswer {
                    go: holder.is_none(),
                    wait_for: holder.map(|h| h.news()),
                });
            }
            PeerEvent::DoneWriting { claim, .. } => self.release(*claim),
            PeerEvent::TaskEnded => self.task_ended(news.task_id),
        }
        None
    }
}

/// What came of claiming a subtask's files.
pub(super) enum Claimed {
    /// It may start; its claim, to release when it ends.
    Go(Uuid),
    /// Another task's subtask is at work on `files`: wait for it.
    Wait { holder: Claim, files: Vec<String> },
}

/// The files a subtask is taken to write: those its description names (the files that
/// keep two subtasks of one task apart) and those it wrote before.
pub(super) fn files_of(subtask: &Subtask) -> Vec<String> {
    let mut files = super::files::source_files_named(&subtask.description);
    for file in &subtask.files {
        if !files.contains(file) {
            files.push(file.clone());
        }
    }
    files
}

/// Claims `files` for `work` of `task` from every mid in the order of their ids, this
/// one's own [`Claims`] in its place. `anyway`: the work waited too long and goes
/// ahead; the mids are told, whatever they answer.
pub(super) async fn claim(
    ctx: &AgentContext,
    s: &Services,
    claims: &Claims,
    task: &TaskRecord,
    work: Work,
    files: Vec<String>,
    anyway: bool,
) -> Claimed {
    let mine = Claim {
        task_id: task.id,
        title: task.title.clone(),
        coordinator: ctx.handle.name(),
        writing: Writing {
            claim: Uuid::new_v4(),
            work,
            files: files.clone(),
        },
    };
    let id = mine.writing.claim;
    if anyway {
        claims.grant_anyway(mine.clone());
        let asks = peers(ctx)
            .into_iter()
            .map(|peer| ask(ctx, s, peer, &mine))
            .collect::<Vec<_>>();
        join_all(asks).await;
        return Claimed::Go(id);
    }
    // What this mid knows already needs no question.
    if let Some(holder) = claims.holder(task.id, &files) {
        let files = holder.shared(&files);
        return Claimed::Wait { holder, files };
    }
    let mut mids = peers(ctx);
    mids.push(ctx.id());
    mids.sort();
    let mut granted_by_peers = false;
    for mid in mids {
        let refused = if mid == ctx.id() {
            claims.grant(mine.clone())
        } else {
            let refused = ask(ctx, s, mid, &mine).await;
            granted_by_peers |= refused.is_none();
            refused
        };
        if let Some(holder) = refused {
            claims.release(id);
            if granted_by_peers {
                done_writing(ctx, &mine.title, task.id, id, mine.writing.work.subtask_id);
            }
            let files = holder.shared(&files);
            return Claimed::Wait { holder, files };
        }
    }
    Claimed::Go(id)
}

/// The board line of work at `position` of the task titled `title` that waited the most
/// for `holder`'s work on `files`, and goes ahead.
pub(super) fn goes_ahead(
    position: usize,
    title: &str,
    holder: &Claim,
    files: &[String],
    waited: Duration,
) -> String {
    format!(
        "- {} goes ahead: {}'s task \"{}\" said nothing of {} for {}",
        work_in(position, title),
        holder.coordinator,
        holder.title,
        holder.shared(files).join(", "),
        human_duration(waited)
    )
}

/// The other mids on the bus.
fn peers(ctx: &AgentContext) -> Vec<crate::runtime::AgentId> {
    let mut peers = ctx.bus.agents(Some(Layer::Mid));
    peers.retain(|p| *p != ctx.id());
    peers.sort();
    peers
}

/// Asks `peer` to grant `claim`: the claim it names when it refuses. One that does not
/// answer in time is not waited for.
async fn ask(
    ctx: &AgentContext,
    s: &Services,
    peer: crate::runtime::AgentId,
    claim: &Claim,
) -> Option<Claim> {
    let request =
        Message::carrying(ctx.id(), peer, &claim.news()).with_task(claim.task_id.to_string());
    match ctx.bus.request(request, s.answer_patience()).await {
        Ok(reply) => match reply.body::<WriteAnswer>() {
            Ok(WriteAnswer {
                go: false,
                wait_for: Some(holder),
            }) => Claim::of(&holder),
            Ok(_) => None,
            Err(e) => {
                tracing::info!(task = %claim.task_id, "a peer's answer to a claim: {e}");
                None
            }
        },
        Err(e) => {
            tracing::info!(task = %claim.task_id, "a peer did not answer a claim: {e}");
            None
        }
    }
}

/// Tells the peers that the work's claim is over.
pub(super) fn done_writing(
    ctx: &AgentContext,
    title: &str,
    task_id: TaskId,
    claim: Uuid,
    subtask_id: Option<SubtaskId>,
) {
    tell_peers(
        ctx,
        &PeerNews {
            task_id,
            title: title.to_string(),
            coordinator: ctx.handle.name(),
            event: PeerEvent::DoneWriting { claim, subtask_id },
        },
    );
}

/// Tells the peers `news` of one of this mid's tasks (in the task's log too).
pub(super) fn tell_peers(ctx: &AgentContext, news: &PeerNews) {
    let message = Message::carrying_to(ctx.id(), Recipient::Layer(Layer::Mid), news)
        .with_task(news.task_id.to_string());
    if let Err(e) = ctx.bus.send(message) {
        tracing::info!(task = %news.task_id, "peers not told: {e}");
    }
}

/// The task ended: its claims are released, here and at the peers.
pub(super) fn task_ended(ctx: &AgentContext, claims: &Claims, task_id: TaskId, title: &str) {
    claims.task_ended(task_id);
    tell_peers(
        ctx,
        &PeerNews {
            task_id,
            title: title.to_string(),
            coordinator: ctx.handle.name(),
            event: PeerEvent::TaskEnded,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(task_id: TaskId, files: &[&str]) -> Claim {
        Claim {
            task_id,
            title: "T".into(),
            coordinator: "mid-1".into(),
            writing: Writing {
                claim: Uuid::new_v4(),
                work: Work {
                    subtask_id: Some(SubtaskId::new()),
                    position: 1,
                    description: "Edit a.py".into(),
                },
                files: files.iter().map(|f| f.to_string()).collect(),
            },
        }
    }

    #[test]
    fn news_travels_as_one_flat_payload() {
        let writing = claim(TaskId::new(), &["a.py"]).news();
        let payload = writing.to_payload();
        assert_eq!(payload["event"], "writing");
        assert_eq!(payload["files"], serde_json::json!(["a.py"]));
        assert!(payload["subtaskId"].is_string() && payload["claim"].is_string());
        assert_eq!(
            serde_json::from_value::<PeerNews>(payload).unwrap(),
            writing
        );
        let ended = PeerNews {
            task_id: TaskId::new(),
            title: "T".into(),
            coordinator: "mid-2".into(),
            event: PeerEvent::TaskEnded,
        };
        let payload = ended.to_payload();
        assert_eq!(payload["event"], "taskEnded");
        assert_eq!(serde_json::from_value::<PeerNews>(payload).unwrap(), ended);
    }

    #[test]
    fn a_claim_on_files_another_task_holds_is_refused_until_released() {
        let claims = Claims::default();
        let (a, b) = (TaskId::new(), TaskId::new());
        let first = claim(a, &["a.py", "b.py"]);
        assert_eq!(claims.grant(first.clone()), None);
        // The same task's other subtasks are its mid's business.
        assert_eq!(claims.grant(claim(a, &["a.py"])), None);
        let second = claim(b, &["b.py"]);
        assert_eq!(claims.grant(second.clone()), Some(first.clone()));
        assert_eq!(first.shared(&second.writing.files), ["b.py"]);
        assert!(!claims.is_released(&first));
        claims.release(first.writing.claim);
        assert!(claims.is_released(&first));
        assert_eq!(claims.grant(second.clone()), None);
        claims.task_ended(b);
        assert!(claims.is_released(&second) && claims.holder(a, &["b.py".into()]).is_none());
    }
}
