//! What to try next after a failure, by its kind: the one table of next steps.
//!
//! A retry that is only told "that failed, try again" tends to repeat itself. A missing
//! file, code that does not parse, a failing test, a refusal, a timeout and an attempt
//! that changed nothing each call for a different next step, and the prompt that follows
//! a failure says which. The executor uses it after a failed tool call, the subtask's fix
//! turn after failed checks, a retry of the subtask after a failed attempt, and the
//! task's fix rounds after its checks failed.

use super::{Failure, FailureKind};

/// The code of an incomplete attempt that changed files: it is told to go on from them,
/// not that nothing changed.
pub const CHANGED_FILES: &str = "changed_files";

/// The code of a failed check whose run was stopped at its time limit (in place of the
/// check's kind): the code never finished.
pub const NEVER_ENDS: &str = "never_ends";

/// The next step told after any failure when `team.errorStrategies` is off.
pub const GENERIC_NEXT_STEP: &str =
    "Try again with different parameters or another approach, and avoid that mistake.";

/// What went wrong, in the terms that decide what to try next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// A file or directory that does not exist.
    MissingFile,
    /// An edit whose text to replace is not in the file (or is there more than once).
    EditNotMatched,
    /// A whole-file write that held only part of the file it would replace.
    PartialFile,
    /// Code that does not parse or compile.
    SyntaxError,
    /// Code that runs and gives wrong results: a test fails.
    FailingTest,
    /// Code whose test was stopped because it did not finish: it loops forever or waits
    /// for input.
    NeverEnds,
    /// Code that leaves out something the task asks for (a name, a flag, an entry point).
    Unmet,
    /// Functions left as placeholders.
    Unwritten,
    /// A command that exited with an error.
    CommandFailed,
    /// A tool, a command or the attempt ran out of time.
    Timeout,
    /// The attempt ended without changing anything a change was asked of.
    NoChange,
    /// The attempt stopped before its work was done, after changing files.
    Unfinished,
    /// A person or the editor said no. Final: never tried again another way.
    Refused,
    /// A malformed tool call: an unknown tool, missing or wrong arguments.
    BadCall,
    /// Anything else.
    Other,
}

impl ErrorCategory {
    /// What the model is told to do next: the one table of next steps.
    pub fn next_step(self) -> &'static str {
        match self {
            ErrorCategory::MissingFile => {
                "That path does not exist. List the directory or search for the file to find the right path; if the task asks for a new file, create it with file_write."
            }
            ErrorCategory::EditNotMatched => {
                "Read the file again before the next edit and copy the text to replace from it exactly, or write the whole file with file_write."
            }
            ErrorCategory::PartialFile => {
                "Keep the rest of the file: change only the part the task is about with file_edit, or write the whole file with every other part as it is."
            }
            ErrorCategory::SyntaxError => {
                "The code does not parse. Go to the line the error names and fix the syntax there (brackets, quotes, indentation, prose left in code); make sure the whole file is valid code."
            }
            ErrorCategory::FailingTest => {
                "The code runs but gives a wrong result. Compare the expected and the actual value in the failure, find the logic that produces the difference and change it; do not change a test to fit the code."
            }
            ErrorCategory::NeverEnds => {
                "The code never finished and was stopped. Find the loop or call that does not end (a loop whose condition never changes, a recursion with no base case, a read of input) and make it end; keep the rest."
            }
            ErrorCategory::Unmet => {
                "The code leaves out something the task asks for; the failure names it. Add it, and keep what already works."
            }
            ErrorCategory::Unwritten => {
                "Some functions are still placeholders (pass, ..., TODO, NotImplementedError). Write their full bodies."
            }
            ErrorCategory::CommandFailed => {
                "The command exited with an error. Read its output for the first error, fix its cause, and do not run the same command again unchanged."
            }
            ErrorCategory::Timeout => {
                "It ran out of time. Work in smaller steps (one file, one edit at a time) and do not run commands that wait for input or never end."
            }
            ErrorCategory::NoChange => {
                "Nothing was changed, but a change is asked for. Make the change in the files now with file_edit or file_write; describing it is not enough."
            }
            ErrorCategory::Unfinished => {
                "The attempt changed files but stopped before the work was done. Start from the files as they are now: keep what is right, make only what is still missing, and do not repeat a call that already did its part."
            }
            ErrorCategory::Refused => {
                "This was refused. Do not try it again or get the same effect another way: go on without it, or stop and say that the work cannot be done without it."
            }
            ErrorCategory::BadCall => {
                "The tool call was malformed. Use one of the tools offered, with each required argument, and call it again."
            }
            ErrorCategory::Other => "Try a different approach rather than the same step again.",
        }
    }

    /// What the model is told to do next with `team.errorStrategies` set as `by_category`:
    /// off, every kind gets the same words, except a refusal, which is final either way.
    pub fn next_step_if(self, by_category: bool) -> &'static str {
        if by_category || self == ErrorCategory::Refused {
            self.next_step()
        } else {
            GENERIC_NEXT_STEP
        }
    }

    /// The category of a failed tool call, from its error's kind (`Classify::kind`).
    pub fn of_tool_error(kind: &str) -> ErrorCategory {
        match kind {
            "not_found" => ErrorCategory::MissingFile,
            "no_match" | "ambiguous_match" => ErrorCategory::EditNotMatched,
            "partial_write" => ErrorCategory::PartialFile,
            "command_failed" | "mcp_tool_failed" => ErrorCategory::CommandFailed,
            "timeout" => ErrorCategory::Timeout,
            "command_denied" | "write_rejected" | "refused_before" | "read_refused"
            | "tool_denied" => ErrorCategory::Refused,
            "unknown_tool" | "invalid_arguments" => ErrorCategory::BadCall,
            _ => ErrorCategory::Other,
        }
    }

    /// The category of a failed check, from its code: its kind (`CheckResult.kind`), or
    /// [`NEVER_ENDS`] for a run stopped at its limit (`check::Checks::failure_code`).
    pub fn of_check(kind: &str) -> ErrorCategory {
        match kind {
            "syntax" => ErrorCategory::SyntaxError,
            "stubs" => ErrorCategory::Unwritten,
            "tests" => ErrorCategory::FailingTest,
            NEVER_ENDS => ErrorCategory::NeverEnds,
            "contracts" => ErrorCategory::Unmet,
            _ => ErrorCategory::Other,
        }
    }

    /// The category of a failed attempt at a subtask. A failed check carries the
    /// check's code; a failed tool call the tool error's kind.
    pub fn of_failure(failure: &Failure) -> ErrorCategory {
        match failure.kind {
            FailureKind::CheckFailed => ErrorCategory::of_check(&failure.code),
            FailureKind::Timeout => ErrorCategory::Timeout,
            FailureKind::Refused => ErrorCategory::Refused,
            FailureKind::Incomplete if failure.code == CHANGED_FILES => ErrorCategory::Unfinished,
            FailureKind::Incomplete | FailureKind::NoProgress => ErrorCategory::NoChange,
            FailureKind::Tool => ErrorCategory::of_tool_error(&failure.code),
            _ => ErrorCategory::Other,
        }
    }
}

/// Whether an attempt that failed this way is worth the agent's own account of it (a
/// reflection: one small call, `team.reflect`): a failure of the work (its checks, a
/// tool, nothing done), not of the provider, the time, a person's decision or the
/// configuration, where the agent has nothing of its own to say and a slow or failing
/// provider would only be asked once more.
pub fn worth_a_reflection(failure: &Failure) -> bool {
    matches!(
        failure.kind,
        FailureKind::CheckFailed
            | FailureKind::Tool
            | FailureKind::Incomplete
            | FailureKind::NoProgress
    )
}

/// What the executor does after a tool call failed, by how often the same call (tool,
/// arguments and error) failed before (`failed_before`) and `executor.maxRetriesPerTool`
/// (`max`). A refusal never comes here: it is final, with no retry count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolStep {
    /// The model may try the call again (this is try `attempt` of `max`), told the next
    /// step for the error's kind.
    Retry { attempt: u32, max: u32 },
    /// The call has failed `failed_before + 1` times: the model is told this approach
    /// is not working and to try a different tool or method.
    ChangeCourse,
    /// Told to change course and still repeating it: the execution ends.
    Stuck,
}

pub fn after_tool_failure(failed_before: u32, max: u32) -> ToolStep {
    if failed_before < max {
        ToolStep::Retry {
            attempt: failed_before + 1,
            max,
        }
    } else if failed_before == max {
        ToolStep::ChangeCourse
    } else {
        ToolStep::Stuck
    }
}

/// Whether an execution that ends by saying it is done made no progress: the work asked
/// for changes and none was made (no file written or edited, no command run). Both
/// executors (built-in and pi) judge an ending by it.
pub fn nothing_done(asks_for_changes: bool, changed_anything: bool) -> bool {
    asks_for_changes && !changed_anything
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_call_is_retried_then_a_new_approach_asked_then_the_execution_stops() {
        let steps: Vec<ToolStep> = (0..4).map(|before| after_tool_failure(before, 2)).collect();
        assert_eq!(
            steps,
            [
                ToolStep::Retry { attempt: 1, max: 2 },
                ToolStep::Retry { attempt: 2, max: 2 },
                ToolStep::ChangeCourse,
                ToolStep::Stuck,
            ]
        );
        // No retries allowed: the first failure asks for another way at once.
        assert_eq!(after_tool_failure(0, 0), ToolStep::ChangeCourse);
    }

    #[test]
    fn ending_with_nothing_changed_is_no_progress_only_when_changes_were_asked_for() {
        assert!(nothing_done(true, false));
        assert!(!nothing_done(true, true));
        assert!(!nothing_done(false, false));
    }

    #[test]
    fn only_failures_of_the_work_are_reflected_on() {
        for kind in [
            FailureKind::CheckFailed,
            FailureKind::Tool,
            FailureKind::Incomplete,
            FailureKind::NoProgress,
        ] {
            assert!(worth_a_reflection(&Failure::new(kind, "x")), "{kind}");
        }
        for kind in [
            FailureKind::RateLimited,
            FailureKind::Server,
            FailureKind::Timeout,
            FailureKind::Refused,
            FailureKind::Cancelled,
            FailureKind::CircuitOpen,
            FailureKind::InvalidConfig,
        ] {
            assert!(!worth_a_reflection(&Failure::new(kind, "x")), "{kind}");
        }
    }

    #[test]
    fn every_category_has_its_own_next_step() {
        let all = [
            ErrorCategory::MissingFile,
            ErrorCategory::EditNotMatched,
            ErrorCategory::SyntaxError,
            ErrorCategory::FailingTest,
            ErrorCategory::NeverEnds,
            ErrorCategory::Unmet,
            ErrorCategory::Unwritten,
            ErrorCategory::CommandFailed,
            ErrorCategory::Timeout,
            ErrorCategory::NoChange,
            ErrorCategory::Unfinished,
            ErrorCategory::Refused,
            ErrorCategory::BadCall,
            ErrorCategory::PartialFile,
            ErrorCategory::Other,
        ];
        let steps: std::collections::HashSet<&str> = all.iter().map(|c| c.next_step()).collect();
        assert_eq!(steps.len(), all.len(), "two categories share a step");
    }

    #[test]
    fn without_strategies_every_failure_is_told_the_same_but_a_refusal_stays_final() {
        for category in [
            ErrorCategory::MissingFile,
            ErrorCategory::SyntaxError,
            ErrorCategory::FailingTest,
            ErrorCategory::NoChange,
            ErrorCategory::Other,
        ] {
            assert_eq!(category.next_step_if(false), GENERIC_NEXT_STEP);
            assert_eq!(category.next_step_if(true), category.next_step());
        }
        assert_ne!(ErrorCategory::Other.next_step(), GENERIC_NEXT_STEP);
        assert!(
            ErrorCategory::Refused
                .next_step_if(false)
                .contains("Do not try it again")
        );
    }

    #[test]
    fn failures_are_sorted_by_what_went_wrong() {
        let cases = [
            (
                FailureKind::CheckFailed,
                "syntax",
                ErrorCategory::SyntaxError,
            ),
            (
                FailureKind::CheckFailed,
                "tests",
                ErrorCategory::FailingTest,
            ),
            (
                FailureKind::CheckFailed,
                NEVER_ENDS,
                ErrorCategory::NeverEnds,
            ),
            (FailureKind::CheckFailed, "contracts", ErrorCategory::Unmet),
            (FailureKind::CheckFailed, "stubs", ErrorCategory::Unwritten),
            (FailureKind::CheckFailed, "", ErrorCategory::Other),
            (FailureKind::Timeout, "", ErrorCategory::Timeout),
            (FailureKind::Refused, "", ErrorCategory::Refused),
            (FailureKind::Incomplete, "", ErrorCategory::NoChange),
            (
                FailureKind::Incomplete,
                CHANGED_FILES,
                ErrorCategory::Unfinished,
            ),
            (FailureKind::NoProgress, "", ErrorCategory::NoChange),
            (FailureKind::Tool, "not_found", ErrorCategory::MissingFile),
            (
                FailureKind::Tool,
                "command_failed",
                ErrorCategory::CommandFailed,
            ),
            (FailureKind::Server, "", ErrorCategory::Other),
        ];
        for (kind, code, expected) in cases {
            let failure = Failure::new(kind, "x").with_code(code);
            assert_eq!(
                ErrorCategory::of_failure(&failure),
                expected,
                "{kind:?} {code:?}"
            );
        }
    }

    #[test]
    fn refused_tool_calls_are_never_told_to_try_again_another_way() {
        for kind in [
            "command_denied",
            "write_rejected",
            "refused_before",
            "read_refused",
            "tool_denied",
        ] {
            let category = ErrorCategory::of_tool_error(kind);
            assert_eq!(category, ErrorCategory::Refused, "{kind}");
            assert!(category.next_step().contains("Do not try it again"));
        }
        assert_eq!(
            ErrorCategory::of_tool_error("no_match"),
            ErrorCategory::EditNotMatched
        );
        assert_eq!(
            ErrorCategory::of_tool_error("unknown_tool"),
            ErrorCategory::BadCall
        );
        assert_eq!(
            ErrorCategory::of_tool_error("partial_write"),
            ErrorCategory::PartialFile
        );
    }
}
