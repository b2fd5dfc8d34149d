//! The quality ladder, as pure decisions: what the team does when its checks find the
//! code wrong. Like the subtask ladder ([`super::ladder`]) it decides and never acts: no
//! runtime, no files, no model. `team/` runs the checks, the fix turns and the rounds,
//! asks the person, and feeds back what came of each step.
//!
//! The policy, in order:
//! - within an attempt, a conversation too long for the provider's context window is
//!   compacted and sent again ([`OVERFLOW_RETRIES`] times), and a coder that stops with
//!   the work unfinished is told it is not done ([`UNFINISHED_NUDGES`] time) before the
//!   attempt ends;
//! - after a subtask's coder finishes, its code is checked; a failure gets
//!   [`FIX_TURNS_PER_ATTEMPT`] fix turn from the same coder with its tools; still
//!   failing, the attempt fails as `check_failed` and the subtask ladder decides what
//!   comes next (retry, peer, supervisor, person);
//! - an attempt after one that failed its checks starts from the files as the subtask
//!   found them (the failed attempt's changes are put back) and is told why; an
//!   attempt after other trouble with the work (left incomplete, no progress, a tool
//!   error, a timeout) is told why and keeps what was written;
//! - the team's own acceptance test, when broken itself, says nothing of the code: it is
//!   written again [`TEST_REWRITES`] time; still broken, the task is unverified (never
//!   completed, and never failed for the code's sake);
//! - when the task's subtasks are done, a failing check starts the fix loop of
//!   `verify.maxRounds` rounds. Each round tries first the versions of a file a coder
//!   showed and never wrote (the checks choose, no model call); then a coder fixes the
//!   files with its tools; when that changes nothing, the model is asked for the files
//!   whole. With `verify.freshStart`, round [`FRESH_START_ROUND`] starts afresh instead:
//!   the files the task names are put back as they were before it, and a coder does the
//!   task anew, told what failed (a small model asked to mend its own wrong code tends
//!   to write the same mistake back; a new attempt does not start from it). A fix rated
//!   under `verify.minConfidence` goes to the person first, and
//!   their no is final: the fix is not kept and the task fails as refused. An answer
//!   that cannot be used costs its round, not the task;
//! - a loop that ends failing puts the files back as the subtasks left them;
//! - a plan the top layer vetoes is made again with the vetoes' reasons, for
//!   [`PLAN_ROUNDS`] rounds in all; after the last veto the person decides (approve the
//!   plan anyway, edit it, cancel): a task never fails for a veto alone.

use super::FailureKind;

/// Times, within one attempt, a conversation the provider found too long for its
/// context window is compacted and sent again.
pub const OVERFLOW_RETRIES: u32 = 2;

/// Times, within one attempt, a coder that stops with the work unfinished (nothing
/// changed when the subtask asks for changes, or its last file change failed) is told
/// it is not done, before the attempt ends as `no_progress` or unsuccessful.
pub const UNFINISHED_NUDGES: u32 = 1;

/// Whether a call the provider refused as too long for its context window, after
/// `overflows` such refusals in this attempt, is compacted and sent again.
pub fn compact_after_overflow(overflows: u32) -> bool {
    overflows < OVERFLOW_RETRIES
}

/// Whether a coder that stopped with the work unfinished, told so `nudges` times
/// already in this attempt, is told once more (else the attempt ends).
pub fn nudge_unfinished(nudges: u32) -> bool {
    nudges < UNFINISHED_NUDGES
}

/// Plans made for a task before a veto goes to the person.
pub const PLAN_ROUNDS: u32 = 2;

/// What to do after the top layer vetoed plan round `round` (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterVeto {
    /// Plan again, answering the vetoes' reasons.
    Replan,
    /// The person decides about the last plan.
    AskPerson,
}

/// After the top layer vetoed plan round `round`.
pub fn after_veto(round: u32) -> AfterVeto {
    if round < PLAN_ROUNDS {
        AfterVeto::Replan
    } else {
        AfterVeto::AskPerson
    }
}

/// Fix turns a subtask's coder gets, within one attempt, for code that fails its checks.
pub const FIX_TURNS_PER_ATTEMPT: u32 = 1;

/// Times the team writes its acceptance test again when the last one was broken, or
/// when the model gave no usable test.
pub const TEST_REWRITES: u32 = 1;

/// What the checks said of the code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Passed,
    Failed,
    /// No working test could say whether the code does what the task asks (the team's
    /// own test was broken, also when written again).
    Unverified,
}

/// What to do after a subtask's code was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubtaskStep {
    /// The attempt's code stands (the task's end checks it again, with its tests).
    Accept,
    /// The coder fixes its code with its tools, told what failed; then it is checked again.
    FixTurn,
    /// The attempt failed its checks (`check_failed`): the subtask ladder takes over.
    Fail,
}

/// After a subtask's checks: `fix_turns` is how many fix turns this attempt had.
pub fn after_subtask_checks(verdict: Verdict, fix_turns: u32) -> SubtaskStep {
    match verdict {
        Verdict::Passed | Verdict::Unverified => SubtaskStep::Accept,
        Verdict::Failed if fix_turns < FIX_TURNS_PER_ATTEMPT => SubtaskStep::FixTurn,
        Verdict::Failed => SubtaskStep::Fail,
    }
}

/// How an attempt starts, given why the one before it failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BeforeAttempt {
    /// The failure is about the work: the attempt is told what went wrong.
    pub tell: bool,
    /// The last attempt's code failed its checks: its changes are put back first.
    pub undo: bool,
}

/// Before an attempt at a subtask whose last attempt ended in `last` (none: the first).
pub fn before_attempt(last: Option<FailureKind>) -> BeforeAttempt {
    let Some(kind) = last else {
        return BeforeAttempt::default();
    };
    BeforeAttempt {
        tell: about_the_work(kind),
        undo: kind == FailureKind::CheckFailed,
    }
}

/// Failures that say something about the work (what a check found, what was left
/// undone), worth telling the next attempt; not provider or team trouble.
fn about_the_work(kind: FailureKind) -> bool {
    matches!(
        kind,
        FailureKind::CheckFailed
            | FailureKind::Incomplete
            | FailureKind::NoProgress
            | FailureKind::Tool
            | FailureKind::Timeout
    )
}

/// What came of running the team's acceptance test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestOutcome {
    Passed,
    /// The code failed the test.
    Failed,
    /// The code failed comparisons of the test that a second solution of the task,
    /// written apart from the team's code and test, could settle (the runner's
    /// `::disputable`).
    Disputable,
    /// The test is broken itself (a rule of `acceptance.*` said so).
    Broken,
    /// The model gave no usable test.
    NotWritten,
    /// The provider failed the call for the test past its retries (rate limits, time-outs,
    /// server errors, an open breaker): there was no answer to judge.
    Unserved,
}

/// What to do with an acceptance test's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TestStep {
    /// The outcome counts against (or for) the code.
    Count(Verdict),
    /// Write the test again, told what was wrong with the last one.
    WriteAgain,
    /// The model could not write a test: the check is skipped, like any check with
    /// nothing to run.
    Skip,
    /// Have a second solution of the task written from the task alone, and run the test
    /// again beside it: a comparison both solutions fail with the same value is disputed.
    AskSecondSolution,
}

/// After the team's acceptance test ran: `rewrites` is how many times it was written
/// again already; `second_asked`, whether a second solution was asked for already (once
/// a task: later fix rounds run the test beside the same one).
pub fn acceptance_test(outcome: TestOutcome, rewrites: u32, second_asked: bool) -> TestStep {
    match outcome {
        TestOutcome::Passed => TestStep::Count(Verdict::Passed),
        TestOutcome::Disputable if !second_asked => TestStep::AskSecondSolution,
        TestOutcome::Failed | TestOutcome::Disputable => TestStep::Count(Verdict::Failed),
        TestOutcome::Broken | TestOutcome::NotWritten | TestOutcome::Unserved
            if rewrites < TEST_REWRITES =>
        {
            TestStep::WriteAgain
        }
        // A provider that would not serve the test is not a model that cannot write one:
        // the check was possible and did not happen, so the code is not done, as with a
        // test broken twice.
        TestOutcome::Broken | TestOutcome::Unserved => TestStep::Count(Verdict::Unverified),
        TestOutcome::NotWritten => TestStep::Skip,
    }
}

/// What came of the fix loop's last step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixEvent {
    /// The task's checks ran.
    Checked(Verdict),
    /// The versions of files coders showed and never wrote were tried; `passes`: one of
    /// them passes every check and was kept.
    ProposedTried { passes: bool },
    /// A coder fixed the files with its tools; `wrote`: it changed something;
    /// `confidence`: the rating it gave its fix, if any.
    ToolFix { wrote: bool, confidence: Option<u8> },
    /// The model was asked for the files whole; `None`: its answer could not be used.
    FilesFix { confidence: Option<u8> },
    /// The person answered about a fix rated under the threshold.
    PersonAnswered { approved: bool },
    /// A fix's files were written.
    Applied,
}

/// The fix loop's next step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixStep {
    /// Run the task's checks.
    Check,
    /// Done: the checks pass, after `rounds` fix rounds.
    Accept { rounds: u32 },
    /// Nothing could check the code: the task is not done; the code stays as written.
    Unverified,
    /// Try the versions of files coders showed and never wrote, and the second solution
    /// the acceptance test was run beside, each once.
    TryProposed,
    /// Fix round `round` (from 1): a coder fixes the files with its tools.
    FixWithTools { round: u32 },
    /// Fix round `round`: the files the task names are put back as they were before the
    /// task, and a coder does the task anew with its tools, told what failed. Its outcome
    /// is a [`FixEvent::ToolFix`], as a fix with tools.
    StartAfresh { round: u32 },
    /// Fix round `round`: the model gives the files to change whole.
    AskForFiles { round: u32 },
    /// Ask the person whether to keep a fix rated `confidence`.
    AskPerson { confidence: u8 },
    /// Write the fix the model gave (`approved`: by the person, whose yes approves its
    /// writes).
    Apply { approved: bool },
    /// The person refused the fix: it is not kept, and the task fails as refused.
    Refused,
    /// The rounds are spent and the checks still fail: put the files back as the
    /// subtasks left them, and fail.
    GiveUp,
}

/// The fix round that starts afresh under `verify.freshStart`: the second, after one fix
/// of the team's own code (which mends a slip) has failed.
pub const FRESH_START_ROUND: u32 = 2;

/// The fix loop of one task, at the task's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixLoop {
    max_rounds: u32,
    min_confidence: u8,
    /// `verify.freshStart`: round [`FRESH_START_ROUND`] starts afresh.
    fresh_start: bool,
    /// Fix rounds begun.
    round: u32,
    /// The last fix came from the tools (whose writes are already made).
    by_tools: bool,
}

impl FixLoop {
    /// `verify.maxRounds` and `verify.minConfidence`.
    pub fn new(max_rounds: u32, min_confidence: u8) -> FixLoop {
        FixLoop {
            max_rounds,
            min_confidence,
            fresh_start: false,
            round: 0,
            by_tools: false,
        }
    }

    /// `verify.freshStart`: whether round [`FRESH_START_ROUND`] starts afresh.
    pub fn starting_afresh(mut self, fresh_start: bool) -> FixLoop {
        self.fresh_start = fresh_start;
        self
    }

    /// Fix rounds begun so far.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// The first step: check the code.
    pub fn start(&self) -> FixStep {
        FixStep::Check
    }

    /// The step after `event`.
    pub fn next(&mut self, event: FixEvent) -> FixStep {
        match event {
            FixEvent::Checked(Verdict::Passed) => FixStep::Accept { rounds: self.round },
            FixEvent::Checked(Verdict::Unverified) => FixStep::Unverified,
            FixEvent::Checked(Verdict::Failed) if self.round >= self.max_rounds => FixStep::GiveUp,
            FixEvent::Checked(Verdict::Failed) => FixStep::TryProposed,
            FixEvent::ProposedTried { passes: true } => FixStep::Accept {
                rounds: self.round + 1,
            },
            FixEvent::ProposedTried { passes: false } => {
                self.round += 1;
                self.by_tools = true;
                if self.fresh_start && self.round == FRESH_START_ROUND {
                    FixStep::StartAfresh { round: self.round }
                } else {
                    FixStep::FixWithTools { round: self.round }
                }
            }
            FixEvent::ToolFix { wrote: false, .. } => {
                self.by_tools = false;
                FixStep::AskForFiles { round: self.round }
            }
            FixEvent::ToolFix {
                wrote: true,
                confidence,
            } => self.rated(confidence, FixStep::Check),
            // An answer that cannot be used costs its round: check and ask again.
            FixEvent::FilesFix { confidence: None } => FixStep::Check,
            FixEvent::FilesFix {
                confidence: Some(confidence),
            } => self.rated(Some(confidence), FixStep::Apply { approved: false }),
            FixEvent::PersonAnswered { approved: false } => FixStep::Refused,
            FixEvent::PersonAnswered { approved: true } if self.by_tools => FixStep::Check,
            FixEvent::PersonAnswered { approved: true } => FixStep::Apply { approved: true },
            FixEvent::Applied => FixStep::Check,
        }
    }

    /// A fix rated under the threshold goes to the person; an unrated one counts as
    /// rated at the threshold.
    fn rated(&self, confidence: Option<u8>, otherwise: FixStep) -> FixStep {
        match confidence {
            Some(confidence) if confidence < self.min_confidence => {
                FixStep::AskPerson { confidence }
            }
            _ => otherwise,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps a fix loop takes for `events`, fed one after another from the start.
    fn walk(max_rounds: u32, events: &[FixEvent]) -> Vec<FixStep> {
        walk_from(FixLoop::new(max_rounds, 50), events)
    }

    fn walk_from(mut fix_loop: FixLoop, events: &[FixEvent]) -> Vec<FixStep> {
        let mut steps = vec![fix_loop.start()];
        for event in events {
            steps.push(fix_loop.next(*event));
        }
        steps
    }

    use FixEvent::*;
    use FixStep::*;

    const FAILED: FixEvent = Checked(Verdict::Failed);
    const PASSED: FixEvent = Checked(Verdict::Passed);
    const NONE_PROPOSED: FixEvent = ProposedTried { passes: false };
    const TOOLS_WROTE: FixEvent = ToolFix {
        wrote: true,
        confidence: None,
    };
    const TOOLS_WROTE_NOTHING: FixEvent = ToolFix {
        wrote: false,
        confidence: None,
    };

    #[test]
    fn code_that_passes_at_once_is_accepted_without_a_round() {
        assert_eq!(walk(3, &[PASSED]), [Check, Accept { rounds: 0 }]);
    }

    #[test]
    fn each_round_tries_shown_versions_then_tools_then_whole_files() {
        let steps = walk(
            2,
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE_NOTHING,
                FilesFix {
                    confidence: Some(80),
                },
                Applied,
                PASSED,
            ],
        );
        assert_eq!(
            steps,
            [
                Check,
                TryProposed,
                FixWithTools { round: 1 },
                Check,
                TryProposed,
                FixWithTools { round: 2 },
                AskForFiles { round: 2 },
                Apply { approved: false },
                Check,
                Accept { rounds: 2 },
            ]
        );
    }

    #[test]
    fn with_fresh_start_the_second_round_starts_afresh_and_the_third_fixes_what_it_left() {
        let fresh = FixLoop::new(3, 50).starting_afresh(true);
        let steps = walk_from(
            fresh.clone(),
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
            ],
        );
        assert_eq!(
            steps,
            [
                Check,
                TryProposed,
                FixWithTools { round: 1 },
                Check,
                TryProposed,
                StartAfresh { round: 2 },
                Check,
                TryProposed,
                FixWithTools { round: 3 },
                Check,
                GiveUp,
            ]
        );
        // A fresh start that writes nothing goes on as a fix with tools that wrote nothing:
        // the model is asked for the files whole; one rated low goes to the person.
        let steps = walk_from(
            fresh.clone(),
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE_NOTHING,
            ],
        );
        assert_eq!(steps.last(), Some(&AskForFiles { round: 2 }));
        let steps = walk_from(
            fresh,
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                FAILED,
                NONE_PROPOSED,
                ToolFix {
                    wrote: true,
                    confidence: Some(20),
                },
            ],
        );
        assert_eq!(steps.last(), Some(&AskPerson { confidence: 20 }));
        // With one round, or the switch off, no round starts afresh.
        let one = walk_from(
            FixLoop::new(1, 50).starting_afresh(true),
            &[FAILED, NONE_PROPOSED, TOOLS_WROTE, FAILED],
        );
        assert!(
            !one.iter().any(|s| matches!(s, StartAfresh { .. })),
            "{one:?}"
        );
        let off = walk(
            3,
            &[FAILED, NONE_PROPOSED, TOOLS_WROTE, FAILED, NONE_PROPOSED],
        );
        assert_eq!(off.last(), Some(&FixWithTools { round: 2 }));
    }

    #[test]
    fn a_shown_version_that_passes_ends_the_loop_in_its_round() {
        assert_eq!(
            walk(3, &[FAILED, ProposedTried { passes: true }]),
            [Check, TryProposed, Accept { rounds: 1 }]
        );
    }

    #[test]
    fn spent_rounds_give_up_and_zero_rounds_give_up_at_once() {
        assert_eq!(walk(0, &[FAILED]), [Check, GiveUp]);
        let steps = walk(1, &[FAILED, NONE_PROPOSED, TOOLS_WROTE, FAILED]);
        assert_eq!(steps.last(), Some(&GiveUp));
    }

    #[test]
    fn an_unusable_answer_costs_its_round_not_the_task() {
        let steps = walk(
            2,
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE_NOTHING,
                FilesFix { confidence: None },
                FAILED,
            ],
        );
        assert_eq!(&steps[3..], [AskForFiles { round: 1 }, Check, TryProposed]);
    }

    #[test]
    fn a_fix_rated_under_the_threshold_asks_the_person_and_a_no_is_final() {
        for (fix, after_yes) in [
            (
                FilesFix {
                    confidence: Some(30),
                },
                Apply { approved: true },
            ),
            (
                ToolFix {
                    wrote: true,
                    confidence: Some(30),
                },
                Check,
            ),
        ] {
            let before = match fix {
                FilesFix { .. } => vec![FAILED, NONE_PROPOSED, TOOLS_WROTE_NOTHING, fix],
                _ => vec![FAILED, NONE_PROPOSED, fix],
            };
            let mut no = before.clone();
            no.push(PersonAnswered { approved: false });
            let steps = walk(3, &no);
            assert_eq!(
                &steps[steps.len() - 2..],
                [AskPerson { confidence: 30 }, Refused],
                "{fix:?}"
            );
            let mut yes = before;
            yes.push(PersonAnswered { approved: true });
            assert_eq!(walk(3, &yes).last(), Some(&after_yes), "{fix:?}");
        }
        // At the threshold, or unrated, nobody is asked.
        for confidence in [Some(50), None] {
            let steps = walk(
                3,
                &[
                    FAILED,
                    NONE_PROPOSED,
                    ToolFix {
                        wrote: true,
                        confidence,
                    },
                ],
            );
            assert_eq!(steps.last(), Some(&Check));
        }
    }

    #[test]
    fn unverified_code_is_never_accepted_nor_fixed() {
        assert_eq!(
            walk(3, &[Checked(Verdict::Unverified)]),
            [Check, Unverified]
        );
        let steps = walk(
            3,
            &[
                FAILED,
                NONE_PROPOSED,
                TOOLS_WROTE,
                Checked(Verdict::Unverified),
            ],
        );
        assert_eq!(steps.last(), Some(&Unverified));
    }

    #[test]
    fn an_attempt_compacts_twice_and_nudges_once() {
        assert!(compact_after_overflow(0) && compact_after_overflow(1));
        assert!(!compact_after_overflow(2));
        assert!(nudge_unfinished(0));
        assert!(!nudge_unfinished(1));
    }

    #[test]
    fn a_second_veto_goes_to_the_person() {
        assert_eq!(after_veto(1), AfterVeto::Replan);
        assert_eq!(after_veto(2), AfterVeto::AskPerson);
    }

    #[test]
    fn a_subtask_gets_one_fix_turn_then_fails_its_attempt() {
        assert_eq!(
            after_subtask_checks(Verdict::Passed, 0),
            SubtaskStep::Accept
        );
        assert_eq!(
            after_subtask_checks(Verdict::Failed, 0),
            SubtaskStep::FixTurn
        );
        assert_eq!(after_subtask_checks(Verdict::Failed, 1), SubtaskStep::Fail);
        assert_eq!(
            after_subtask_checks(Verdict::Passed, 1),
            SubtaskStep::Accept
        );
    }

    #[test]
    fn only_failed_checks_undo_and_only_trouble_with_the_work_is_told() {
        let cases = [
            (None, false, false),
            (Some(FailureKind::CheckFailed), true, true),
            (Some(FailureKind::Incomplete), true, false),
            (Some(FailureKind::NoProgress), true, false),
            (Some(FailureKind::Tool), true, false),
            (Some(FailureKind::Timeout), true, false),
            (Some(FailureKind::RateLimited), false, false),
            (Some(FailureKind::Server), false, false),
            (Some(FailureKind::Refused), false, false),
        ];
        for (last, tell, undo) in cases {
            assert_eq!(
                before_attempt(last),
                BeforeAttempt { tell, undo },
                "{last:?}"
            );
        }
    }

    #[test]
    fn a_broken_or_unserved_test_is_asked_for_again_once_then_leaves_the_code_unverified() {
        let cases = [
            (TestOutcome::Passed, 0, TestStep::Count(Verdict::Passed)),
            (TestOutcome::Failed, 0, TestStep::Count(Verdict::Failed)),
            (TestOutcome::Failed, 1, TestStep::Count(Verdict::Failed)),
            (TestOutcome::Broken, 0, TestStep::WriteAgain),
            (TestOutcome::Broken, 1, TestStep::Count(Verdict::Unverified)),
            (TestOutcome::NotWritten, 0, TestStep::WriteAgain),
            (TestOutcome::NotWritten, 1, TestStep::Skip),
            (TestOutcome::Unserved, 0, TestStep::WriteAgain),
            (
                TestOutcome::Unserved,
                1,
                TestStep::Count(Verdict::Unverified),
            ),
        ];
        for (outcome, rewrites, step) in cases {
            assert_eq!(
                acceptance_test(outcome, rewrites, false),
                step,
                "{outcome:?} after {rewrites}"
            );
        }
    }

    #[test]
    fn a_disputable_failure_asks_for_a_second_solution_once_then_counts() {
        assert_eq!(
            acceptance_test(TestOutcome::Disputable, 0, false),
            TestStep::AskSecondSolution
        );
        assert_eq!(
            acceptance_test(TestOutcome::Disputable, 1, false),
            TestStep::AskSecondSolution
        );
        assert_eq!(
            acceptance_test(TestOutcome::Disputable, 0, true),
            TestStep::Count(Verdict::Failed)
        );
        assert_eq!(
            acceptance_test(TestOutcome::Failed, 0, false),
            TestStep::Count(Verdict::Failed)
        );
    }
}
