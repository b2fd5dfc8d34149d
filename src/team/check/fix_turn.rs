//! The subtask's own fix turn: right after a coder finishes, the code checks run on what
//! it wrote, and a failure goes back to the same executor once, with the failure and the
//! next step for its kind in the prompt. What happens then is the quality ladder's
//! (`recovery::quality`); this carries it out.

use tokio_util::sync::CancellationToken;

use super::{Bench, Stage, record, record_repairs, run};
use crate::executor::{ExecutionOutcome, Executor, SubtaskSpec};
use crate::recovery::quality::{self, SubtaskStep, Verdict};
use crate::recovery::strategy::ErrorCategory;
use crate::recovery::{Failure, FailureKind};
use crate::runtime::{SubtaskId, TaskId};
use crate::team::Services;

/// The attempt whose work [`after_subtask`] checks: which subtask, the executor that did
/// the work and was asked what, and how to stop it.
pub struct CheckedAttempt<'a> {
    pub task_id: TaskId,
    pub subtask_id: SubtaskId,
    pub executor: &'a dyn Executor,
    pub spec: &'a SubtaskSpec,
    pub cancel: CancellationToken,
}

/// Right after a subtask's executor succeeded: checks the files it wrote, and on a
/// failure gives the same executor one turn to fix its own work with the failure in
/// the prompt. `Err` carries the `check_failed` failure, its code the failed check's kind.
pub async fn after_subtask(
    s: &Services,
    attempt: CheckedAttempt<'_>,
    mut outcome: ExecutionOutcome,
    sink: &mut (dyn FnMut(&str) + Send),
) -> Result<ExecutionOutcome, (ExecutionOutcome, Failure)> {
    let CheckedAttempt {
        task_id,
        subtask_id,
        executor,
        spec,
        cancel,
    } = attempt;
    if !s.config.verify.checks {
        return Ok(outcome);
    }
    let whole_task = spec.description.contains(s.originals(task_id).task.trim());
    let bench = Bench::of_task(s, task_id, Some(subtask_id), cancel.clone(), whole_task);
    // What earlier attempts of this subtask wrote counts too: a retry that finds the
    // work "already done" must not pass a file a previous attempt left broken.
    let earlier: Vec<String> = s
        .tasks
        .get(task_id)
        .and_then(|t| t.subtask(subtask_id).map(|st| st.files.clone()))
        .unwrap_or_default();
    let files = |o: &ExecutionOutcome| -> Vec<String> {
        let mut files = earlier.clone();
        for path in &o.files_written {
            let path = path.to_string_lossy().into_owned();
            if !files.contains(&path) {
                files.push(path);
            }
        }
        files
    };
    // The quality ladder decides: a fix turn with the coder's tools, then the attempt
    // fails its checks and the subtask ladder takes over.
    let mut fix_turns = 0;
    loop {
        let mut on_sink = |line: &str| sink(&format!("{line}\n"));
        super::put_back_dropped(s, task_id, &bench, &files(&outcome), &mut on_sink).await;
        let checks = run(&bench, Stage::AfterSubtask, &files(&outcome), None).await;
        record(s, task_id, Some(subtask_id), &checks.results);
        let failure = checks.failure_text();
        let verdict = if failure.is_some() {
            Verdict::Failed
        } else {
            Verdict::Passed
        };
        let failure_code = checks.failure_code();
        match quality::after_subtask_checks(verdict, fix_turns) {
            SubtaskStep::Accept => return Ok(outcome),
            SubtaskStep::Fail => {
                let failure = Failure::new(
                    FailureKind::CheckFailed,
                    format!(
                        "the code does not pass its checks:\n{}",
                        failure.unwrap_or_default()
                    ),
                )
                .with_code(failure_code);
                return Err((outcome, failure));
            }
            SubtaskStep::FixTurn => {}
        }
        fix_turns += 1;
        let fix = SubtaskSpec {
            description: format!(
                "{}\n\nYou wrote the code, but it fails this check:\n{}\n\n{} Fix the files with your tools so the check passes.",
                spec.description,
                failure.unwrap_or_default(),
                ErrorCategory::of_check(&failure_code).next_step_if(s.config.team.error_strategies)
            ),
            context: crate::team::files::with_files_now(
                &spec.context,
                &s.sandbox,
                &bench.originals.task,
            ),
            target_files: crate::team::files::target_files_now(&s.sandbox, &bench.originals.task),
            ..spec.clone()
        };
        sink(&format!("check failed, fixing: {}\n", checks.summary()));
        match executor.execute(&fix, cancel.clone(), sink).await {
            Ok(fixed) => {
                record_repairs(s, task_id, &fixed.repairs);
                crate::team::files::keep_proposed(s, task_id, &fixed);
                for path in fixed.files_written {
                    if !outcome.files_written.contains(&path) {
                        outcome.files_written.push(path);
                    }
                }
                outcome.partial_results.extend(fixed.partial_results);
                if fixed.success {
                    outcome.summary = fixed.summary;
                }
            }
            Err(e) => tracing::info!("the fix turn after a failed check did not run: {e}"),
        }
    }
}
