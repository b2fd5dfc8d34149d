//! Resume: bring back what a previous run of this workspace left unfinished — its team
//! (same agent ids when the process was killed), whiteboards, unfinished tasks from their
//! last checkpoint, and escalations still waiting for a person.
//!
//! A subtask that was mid-execution starts again (at least once); completed subtasks are
//! kept. Writes are idempotent (the writer skips content that is already there), so
//! running a subtask again never writes a file twice.

use std::collections::HashMap;

use chrono::Utc;
use uuid::Uuid;

use crate::config::TeamConfig;
use crate::runtime::{
    AgentConfig, ApprovalKind, ApprovalRequest, DecisionStatus, Snapshot, SubtaskStatus,
    TaskRecord, TaskStatus, WhiteboardId, fits,
};
use crate::store::{Record, Store, StoreError};

/// How many finished tasks come back (listed, never run again).
const FINISHED_KEPT: usize = 200;

/// The note added to an escalation asked again after a restart: whatever waiting time
/// its error quoted (a paused provider, a Retry-After) has run out since.
pub const ASKED_BEFORE_RESTART: &str = "_Asked before Conclave restarted; waiting times quoted in the error (a paused provider, a Retry-After) have run out since. Retry runs the subtask again now._";

/// An escalation from the previous run, as it is asked again: its detail says it was
/// asked before the restart (once, however many restarts).
fn refreshed(mut request: ApprovalRequest) -> ApprovalRequest {
    if !request.detail.contains(ASKED_BEFORE_RESTART) {
        request.detail = format!("{}\n\n{ASKED_BEFORE_RESTART}", request.detail.trim_end());
    }
    request
}

/// What the store says was going on when the last run stopped.
#[derive(Default)]
pub struct Saved {
    /// The last team, if it was never shut down and still fits `team`.
    pub team: Vec<AgentConfig>,
    pub boards: Vec<Snapshot>,
    pub tasks: Vec<TaskRecord>,
    /// The most recent finished tasks, newest first, for editors to list and inspect.
    pub finished: Vec<TaskRecord>,
    /// Escalations to restore, pending, with their original ids.
    pub approvals: Vec<ApprovalRequest>,
    /// Pending approvals of other kinds, of unfinished tasks: pending again under their
    /// ids until their step asks them again.
    pub carried: Vec<ApprovalRequest>,
}

pub async fn load(store: &Store, team: &TeamConfig) -> Result<Saved, StoreError> {
    let agents = store.unremoved_agents().await?;
    let team_agents = if fits(&agents, team) {
        agents
    } else {
        // A team of another shape (the config changed): new agents, state from the tasks.
        store
            .mark_removed(agents.iter().map(|a| a.id).collect())
            .await?;
        Vec::new()
    };
    let decisions: HashMap<Uuid, DecisionStatus> = store
        .decisions()
        .await?
        .into_iter()
        .map(|d| (d.id, d.status))
        .collect();
    let (mut finished, unfinished): (Vec<TaskRecord>, Vec<TaskRecord>) = store
        .tasks()
        .await?
        .into_iter()
        .partition(|t| t.status.is_finished());
    finished.sort_by_key(|t| std::cmp::Reverse(t.updated_at));
    finished.truncate(FINISHED_KEPT);
    let team_ids: Vec<_> = team_agents.iter().map(|a| a.id).collect();
    let tasks: Vec<TaskRecord> = unfinished
        .into_iter()
        .map(|mut task| {
            let approved = task
                .plan_decision
                .is_some_and(|d| decisions.get(&d) == Some(&DecisionStatus::Approved));
            if !approved {
                // The plan was never signed: plan again.
                task.subtasks.clear();
                task.plan_decision = None;
            }
            for subtask in task.subtasks.iter_mut() {
                if !subtask.status.is_finished() {
                    subtask.status = SubtaskStatus::Pending;
                    // An agent of the previous team is not working on it any more; the
                    // subtask gets an assignee of this team when it runs again.
                    if subtask.assignee.is_some_and(|a| !team_ids.contains(&a)) {
                        subtask.assignee = None;
                        subtask.assignee_name = None;
                    }
                }
            }
            task.status = TaskStatus::Queued;
            task.updated_at = Utc::now();
            task
        })
        .collect();
    let mut approvals = Vec::new();
    let mut carried = Vec::new();
    for request in store.pending_approvals().await? {
        let belongs = tasks.iter().any(|t| {
            t.id == request.task_id && request.subtask_id.is_some_and(|s| t.subtask(s).is_some())
        });
        let of_unfinished = tasks.iter().any(|t| t.id == request.task_id);
        if belongs && request.kind == ApprovalKind::Escalation {
            approvals.push(refreshed(request));
        } else if of_unfinished && request.kind != ApprovalKind::Escalation {
            // Asked again by its step when it runs again, under the same id.
            carried.push(request);
        } else {
            // Read before anyone subscribes: kept, with nobody to tell.
            store.record(Record::ApprovalResolved {
                approval_id: request.approval_id,
                task_id: request.task_id,
                answer: None,
                reason: Some("nothing was waiting for it when Conclave started again".into()),
            });
        }
    }
    let kept: Vec<_> = team_agents
        .iter()
        .map(|a| WhiteboardId::Agent(a.id))
        .collect();
    let boards = store
        .latest_boards()
        .await?
        .into_iter()
        .filter_map(|(board, version, content, at)| {
            let id: WhiteboardId = board.parse().ok()?;
            let keep = !matches!(id, WhiteboardId::Agent(_)) || kept.contains(&id);
            keep.then(|| Snapshot {
                id,
                version,
                content: content.into(),
                updated_at: at,
            })
        })
        .collect();
    Ok(Saved {
        team: team_agents,
        boards,
        tasks,
        finished,
        approvals,
        carried,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::Severity;
    use crate::runtime::{Escalation, SubtaskId, TaskId};

    #[test]
    fn an_escalation_asked_again_says_its_timers_ran_out_once() {
        let request = ApprovalRequest::escalation(Escalation {
            task_id: TaskId::new(),
            task_title: "t",
            subtask_id: SubtaskId::new(),
            position: Some((1, 2)),
            description: "Write a.py",
            agent_id: "a".into(),
            severity: Severity::High,
            error_kind: "circuit_open",
            error: "provider scripted paused for 30 s after 6 failures",
        });
        let once = refreshed(request);
        assert!(
            once.detail.ends_with(ASKED_BEFORE_RESTART),
            "{}",
            once.detail
        );
        let twice = refreshed(once.clone());
        assert_eq!(twice.detail, once.detail);
    }
}
