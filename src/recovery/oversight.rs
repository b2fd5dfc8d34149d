//! The top layer's oversight of a running task: what it does when its mid reports a
//! subtask that failed for good (a blocker). Decided here, from the facts of the report
//! alone; the team carries the verdict out (`team/progress.rs`).
//!
//! The subtask ladder has already retried, asked a peer, the supervisor and maybe a
//! person by the time a subtask fails for good, so the top does not climb it again. It
//! judges the task as a whole: whether the work still to start is worth doing, and
//! whether the subtask deserves one more agent when it failed for want of one (none was
//! free, or its agent's executor died), as long as no person decided its end. A subtask
//! that used up its time (`recovery.subtaskTimeoutMs`) is not given more: that limit is
//! the person's.

use super::FailureKind;
use crate::records::{Body, MessageKind};

/// What the top knows when a mid reports a subtask that failed for good.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocker {
    /// Why the subtask ended.
    pub kind: FailureKind,
    /// A person answered an escalation of this subtask, or refused a change in it: their
    /// word ends it, and nobody tries it again.
    pub person_decided: bool,
    /// The top stepped in on this subtask once already.
    pub stepped_in_before: bool,
    /// Bottom agents idle now that have not tried the subtask.
    pub untried_agents: usize,
    /// Subtasks of the task not started yet that would still run (those waiting on a
    /// failed subtask are skipped anyway).
    pub not_started: usize,
    /// `recovery.continueOnError` (or the task's option): the person asked the team to
    /// push on whatever fails.
    pub continue_on_error: bool,
    /// A failed task's changes are put back (`undo.onFailure = "restore"`).
    pub restore_on_failure: bool,
}

/// What the top decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The task goes on as the mid runs it.
    Continue,
    /// Nothing new starts; the task ends failed when what runs has finished.
    Stop,
    /// The subtask runs once more, on a bottom agent that has not tried it.
    Reassign,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Continue => "continue",
            Verdict::Stop => "stop",
            Verdict::Reassign => "reassign",
        }
    }
}

/// A verdict and the reason the boards and the task's log show for it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Evaluation {
    pub verdict: Verdict,
    pub reason: String,
}

impl Body for Evaluation {
    const NAME: &'static str = "a verdict";
    const KINDS: &'static [MessageKind] = &[MessageKind::ArbitrationResult];
}

/// Failures of the agent rather than of the work: another agent may well get through.
fn agent_trouble(kind: FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::AgentUnavailable | FailureKind::ExecutorCrashed
    )
}

/// Failures nobody may work around: a refusal, a cancellation, work never started.
fn final_by_nature(kind: FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::Refused | FailureKind::Cancelled | FailureKind::Skipped
    )
}

/// The top's verdict on a blocker.
pub fn evaluate(blocker: &Blocker) -> Evaluation {
    let settled = blocker.person_decided || final_by_nature(blocker.kind);
    if !settled
        && !blocker.stepped_in_before
        && agent_trouble(blocker.kind)
        && blocker.untried_agents > 0
    {
        return Evaluation {
            verdict: Verdict::Reassign,
            reason: format!(
                "it failed for want of an agent ({}), and one that has not tried it is free now",
                blocker.kind
            ),
        };
    }
    if blocker.continue_on_error {
        return Evaluation {
            verdict: Verdict::Continue,
            reason: "continueOnError: the rest of the task goes on".into(),
        };
    }
    if blocker.not_started == 0 {
        return Evaluation {
            verdict: Verdict::Continue,
            reason: "no other subtask is left to run".into(),
        };
    }
    if blocker.restore_on_failure {
        let n = blocker.not_started;
        return Evaluation {
            verdict: Verdict::Stop,
            reason: format!(
                "the task can no longer complete and its changes will be put back (undo.onFailure = \"restore\"), so the {n} subtask{} not started would be work thrown away",
                if n == 1 { "" } else { "s" }
            ),
        };
    }
    Evaluation {
        verdict: Verdict::Continue,
        reason: "the task can no longer complete, but what the other subtasks do is kept (undo.onFailure = \"keep\")".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocker(kind: FailureKind) -> Blocker {
        Blocker {
            kind,
            person_decided: false,
            stepped_in_before: false,
            untried_agents: 1,
            not_started: 2,
            continue_on_error: false,
            restore_on_failure: true,
        }
    }

    #[test]
    fn a_subtask_no_agent_could_take_goes_to_one_free_now() {
        let verdict = evaluate(&blocker(FailureKind::AgentUnavailable)).verdict;
        assert_eq!(verdict, Verdict::Reassign);
        assert_eq!(
            evaluate(&blocker(FailureKind::ExecutorCrashed)).verdict,
            Verdict::Reassign
        );
        // Once only, and only with someone to give it to.
        let again = Blocker {
            stepped_in_before: true,
            ..blocker(FailureKind::AgentUnavailable)
        };
        assert_eq!(evaluate(&again).verdict, Verdict::Stop);
        let nobody = Blocker {
            untried_agents: 0,
            ..blocker(FailureKind::AgentUnavailable)
        };
        assert_eq!(evaluate(&nobody).verdict, Verdict::Stop);
    }

    #[test]
    fn a_persons_decision_or_a_refusal_is_never_worked_around() {
        let decided = Blocker {
            person_decided: true,
            ..blocker(FailureKind::ExecutorCrashed)
        };
        assert_ne!(evaluate(&decided).verdict, Verdict::Reassign);
        // Nor is a limit the person set: a subtask that used up its time gets no more.
        assert_ne!(
            evaluate(&blocker(FailureKind::Timeout)).verdict,
            Verdict::Reassign
        );
        for kind in [
            FailureKind::Refused,
            FailureKind::Cancelled,
            FailureKind::Skipped,
        ] {
            assert_ne!(
                evaluate(&blocker(kind)).verdict,
                Verdict::Reassign,
                "{kind}"
            );
        }
    }

    #[test]
    fn work_that_would_be_put_back_is_not_started() {
        let stop = evaluate(&blocker(FailureKind::CheckFailed));
        assert_eq!(stop.verdict, Verdict::Stop);
        assert!(
            stop.reason.contains("2 subtasks not started"),
            "{}",
            stop.reason
        );
        let kept = Blocker {
            restore_on_failure: false,
            ..blocker(FailureKind::CheckFailed)
        };
        assert_eq!(evaluate(&kept).verdict, Verdict::Continue);
        let pushing_on = Blocker {
            continue_on_error: true,
            ..blocker(FailureKind::CheckFailed)
        };
        assert_eq!(evaluate(&pushing_on).verdict, Verdict::Continue);
        let nothing_left = Blocker {
            not_started: 0,
            ..blocker(FailureKind::CheckFailed)
        };
        assert_eq!(evaluate(&nothing_left).verdict, Verdict::Continue);
    }
}
