//! AgentReplacementManager: an agent that hangs (two missed heartbeats) or keeps
//! failing is replaced by a new agent with a new id, which carries on with its current
//! task, its queued messages, its whiteboard and its place in the team.

use std::sync::Arc;

use super::{Services, TaskAssignment, Whose, recovery_event};
use crate::recovery::{RecoveryAction, Severity};
use crate::runtime::{
    Accessor, AgentConfig, AgentError, AgentId, Layer, Message, SubtaskId, TaskId, Warning,
    WhiteboardId,
};

/// Replaces `old`, returning the new agent's id. `cause` is the task (and subtask) whose
/// failures led to it: the replacement is a recovery step of that task even when the
/// old agent no longer holds any of its work (a peer took the subtask over first).
pub async fn replace_agent(
    s: &Arc<Services>,
    old: AgentId,
    reason: &str,
    cause: Option<(TaskId, Option<SubtaskId>)>,
) -> Result<AgentId, AgentError> {
    let handle = s.runtime.pool.get(old).ok_or(AgentError::NotFound(old))?;
    let config = handle.config();
    let current_task = handle.current_task();
    let board = s
        .runtime
        .whiteboards
        .read(&Accessor::System, WhiteboardId::Agent(old))
        .map(|b| b.content.to_string())
        .unwrap_or_default();

    let new_config = AgentConfig {
        id: AgentId::new(),
        name: replacement_name(&config.name),
        ..config.clone()
    };
    let new = new_config.id;
    // Anyone waiting on the old agent follows the map from now on, and every message
    // for it (queued now, or arriving during the swap) goes to the new one, waiting for
    // its mailbox if need be.
    s.replaced.insert(old, new);
    s.runtime.bus.forward(old, new);

    // The old agent goes first, so the team never needs a slot above maxAgents.
    s.runtime.pool.destroy(old).await?;
    // A mid's successor keeps what it knew of the files being written: the claims its
    // running coordinators hold and wait on, and the news its peers sent.
    if let Some((_, claims)) = s.mid_claims.remove(&old) {
        s.mid_claims.insert(new, claims);
    }
    let behavior = (s.behaviors)(&new_config, s);
    let replacement = s.runtime.pool.create(new_config.clone(), behavior)?;

    if let Some(supervisor) = config.supervisor.and_then(|id| s.runtime.pool.get(id)) {
        supervisor.update_config(|c| {
            for sub in c.subordinates.iter_mut().filter(|sub| **sub == old) {
                *sub = new;
            }
        });
    }
    for sub in config
        .subordinates
        .iter()
        .filter_map(|id| s.runtime.pool.get(*id))
    {
        sub.update_config(|c| c.supervisor = Some(new));
    }
    let note = format!("\n\n_Took over from {}: {reason}_\n", config.name);
    if let Err(e) = s.runtime.whiteboards.replace(
        &Accessor::System,
        WhiteboardId::Agent(new),
        &format!("{}{note}", board.trim_end()),
    ) {
        tracing::warn!("the replaced agent's whiteboard was not carried over: {e}");
    }
    replacement.set_current_task(current_task.clone());
    // Work the old agent may still be running is stopped; its coordinators re-send it.
    for attempt in s.attempts.iter().filter(|a| a.value().0 == old) {
        attempt.value().1.cancel();
    }
    let coordinated = if config.layer == Layer::Mid {
        take_over_coordination(s, old, new)
    } else {
        Vec::new()
    };
    s.replacements.send_modify(|n| *n += 1);
    let _ = s.runtime.bus.send(Message::carrying(
        AgentId::SYSTEM,
        new,
        &Warning {
            message: format!("you replace {} ({reason})", config.name),
        },
    ));
    // Report the step on every unfinished subtask the old agent held (its own idea of
    // its current task may be missing when it hung before recording it).
    let message = format!("replaced {} by {}: {reason}", config.name, new_config.name);
    let report = |task: TaskId, subtask: Option<SubtaskId>| {
        s.recovery(recovery_event(
            Whose {
                task,
                subtask,
                agent: old,
            },
            RecoveryAction::ReplaceAgent,
            Severity::High,
            (1, 1),
            message.clone(),
        ));
    };
    let mut reported = false;
    for task in s
        .tasks
        .records()
        .into_iter()
        .filter(|t| !t.status.is_finished())
    {
        for subtask in task
            .subtasks
            .iter()
            .filter(|st| st.assignee == Some(old) && !st.status.is_finished())
        {
            report(task.id, Some(subtask.id));
            reported = true;
        }
    }
    // A supervisor's replacement is a step of each task it coordinated.
    for task in coordinated {
        report(task, None);
        reported = true;
    }
    let cause = cause.or_else(|| current_task.and_then(|t| t.parse().ok()).map(|t| (t, None)));
    if !reported && let Some((task, subtask)) = cause {
        report(task, subtask);
        reported = true;
    }
    if !reported {
        tracing::info!(old = %old, new = %new, "{message}");
    }
    Ok(new)
}

/// The unfinished tasks `old` (a mid agent) coordinated are `new`'s now; one it never
/// took up (it hung on the assignment) is assigned to `new` again. One it took up goes
/// on where it is. Returns the tasks taken over.
fn take_over_coordination(s: &Services, old: AgentId, new: AgentId) -> Vec<TaskId> {
    let mut taken = Vec::new();
    for task in s
        .tasks
        .records()
        .into_iter()
        .filter(|t| !t.status.is_finished() && t.coordinator == Some(old))
    {
        s.tasks.update(task.id, |t| t.coordinator = Some(new));
        let taken_up = s.task_state.get(&task.id).is_some_and(|st| st.coordinating);
        if !taken_up {
            let assignment =
                Message::carrying(AgentId::SYSTEM, new, &TaskAssignment { task_id: task.id })
                    .with_task(task.id.to_string());
            if let Err(e) = s.runtime.bus.send(assignment) {
                tracing::warn!(task = %task.id, "the task was not assigned again: {e}");
            }
        }
        taken.push(task.id);
    }
    taken
}

/// `bottom-1-1` → `bottom-1-1.r1` → `bottom-1-1.r2`.
fn replacement_name(name: &str) -> String {
    match name
        .rsplit_once(".r")
        .and_then(|(base, n)| n.parse::<u32>().ok().map(|n| (base, n)))
    {
        Some((base, n)) => format!("{base}.r{}", n + 1),
        None => format!("{name}.r1"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn replacement_names_count_up() {
        assert_eq!(super::replacement_name("bottom-1-1"), "bottom-1-1.r1");
        assert_eq!(super::replacement_name("bottom-1-1.r1"), "bottom-1-1.r2");
    }
}
