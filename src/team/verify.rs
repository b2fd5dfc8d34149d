//! Code and tests together: once a task's subtasks are done, the mid checks the code
//! (`check/`: syntax, stubs, then `verify.command` or the tests found) and carries out
//! the fix loop the quality ladder decides (`recovery::quality::FixLoop`): the versions
//! of files coders showed and never wrote, a coder's fix with its tools, the files asked
//! for whole (JSON, or a task file whole in a code block), the person asked about a fix
//! rated under `verify.minConfidence`, and the files put back when the loop ends failing.
//! Before the first check, the task's files are claimed from the other mids, as a
//! subtask's are (`peers`), so no other task writes them while they are checked.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::time::Instant;
use uuid::Uuid;

use super::files::{keep_proposed, put_back};
use super::peers::{Claim, Claimed, Claims, Work};
use super::{Services, Whose, acceptance, check, first_line, recovery_event};
use crate::config::{OnFailure, TeamLayer};
use crate::executor::{SubtaskSpec, TargetFile, code_answer};
use crate::model::structured::{FileContent, Fix, ask_json_or, noting_repairs};
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::quality::{FixEvent, FixLoop, FixStep, Verdict};
use crate::recovery::strategy::ErrorCategory;
use crate::recovery::{Failure, FailureKind};
use crate::recovery::{RecoveryAction, Severity};
use crate::runtime::{
    AgentContext, ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest, FileDiff, TaskId,
};
use crate::tools::WorkspaceWriter;

/// Checks the task's code and runs the fix loop, carrying out the steps of the quality
/// ladder ([`FixLoop`]). `Err` when the checks still fail at the end, nothing could
/// check the code, or the person refused a fix. The task's files are first claimed from
/// the other mids, as a subtask's are: no other task writes them while they are checked
/// and fixed.
pub async fn run(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    claims: &Claims,
) -> Result<(), Failure> {
    if !s.config.verify.checks && s.config.verify.command.is_none() {
        return Ok(());
    }
    claim_for_checking(ctx, s, claims, task_id, files_checked(s, task_id)).await;
    let rounds = s.config.verify.max_rounds;
    let cancel = s.task_cancel(task_id).child_token();
    let bench = check::Bench::of_task(s, task_id, None, cancel, true);
    let mut fix_loop = FixLoop::new(rounds, s.config.verify.min_confidence)
        .starting_afresh(s.config.verify.fresh_start);
    let mut step = fix_loop.start();
    let mut last_output = String::new();
    let mut last_failed = String::new();
    // What the last failure calls for, from the one table of next steps.
    let mut next_step = "";
    let mut unverified_because = String::new();
    // The files as the subtasks left them, before any fix: what a failed loop restores.
    let mut before_fixes: Vec<(String, String)> = Vec::new();
    // The files as they were before the last fix, and the fix the model gave whole: what
    // a refusal puts back, and what an approval writes.
    let mut before_this_fix: Vec<(String, String)> = Vec::new();
    let mut pending: Option<Fix> = None;
    // The other version of a file that passed the checks and was kept, and whose it was.
    let mut kept_proposed: Option<(String, Candidate)> = None;
    // The first failing checks, of the files as the subtasks left them: what a failed
    // loop that puts those files back reports, not the failure of a fix it undid.
    let mut first_failure: Option<check::Checks> = None;
    let fix_round = |round: u32, what: &str, how: String| {
        s.recovery(recovery_event(
            Whose {
                task: task_id,
                subtask: None,
                agent: ctx.id(),
            },
            RecoveryAction::Retry,
            Severity::Medium,
            (round, rounds),
            format!("{what} failed; fix round {round} of {rounds} {how}"),
        ));
    };
    loop {
        step = match step {
            FixStep::Check => {
                let checks = check_all(ctx, s, task_id, &bench).await;
                check::record(s, task_id, None, &checks.results);
                let _ = ctx.append_own_board(&format!(
                    "- checks (round {}): {}",
                    fix_loop.round(),
                    checks.summary()
                ));
                // Code no working test ran is not done, whatever the other checks say.
                let verdict = if let Some(unchecked) =
                    checks.results.iter().find(|r| acceptance::unverified(r))
                {
                    unverified_because = acceptance::why_unverified(unchecked);
                    Verdict::Unverified
                } else if checks.passed() {
                    Verdict::Passed
                } else {
                    last_failed = checks
                        .failed()
                        .map(|r| format!("`{}`", r.name))
                        .collect::<Vec<_>>()
                        .join(", ");
                    last_output = checks.failure_text().unwrap_or_default();
                    next_step = ErrorCategory::of_check(&checks.failure_code())
                        .next_step_if(s.config.team.error_strategies);
                    if first_failure.is_none() {
                        first_failure = Some(checks);
                    }
                    Verdict::Failed
                };
                fix_loop.next(FixEvent::Checked(verdict))
            }
            FixStep::Accept { rounds: 0 } => return Ok(()),
            FixStep::Accept { rounds: done } => {
                s.recovery(recovery_event(
                    Whose {
                        task: task_id,
                        subtask: None,
                        agent: ctx.id(),
                    },
                    RecoveryAction::Recovered,
                    Severity::Medium,
                    (done, rounds),
                    match &kept_proposed {
                        Some((path, whose)) => format!(
                            "{last_failed} failed; {} passes, and is kept",
                            whose.describe(path)
                        ),
                        None => format!("{last_failed} passes after {done} fix round(s)"),
                    },
                ));
                return Ok(());
            }
            FixStep::Unverified => {
                return Err(check_failed(unverified_message(
                    &unverified_because,
                    on_failure(s, task_id),
                )));
            }
            FixStep::TryProposed => {
                // A version of a file a coder showed in its answer and never wrote, or
                // the second solution the acceptance test was run beside: the checks
                // choose, before any model call.
                let kept = try_proposed(ctx, s, task_id, &bench, &mut before_fixes).await;
                if let Some((path, whose, passed)) = &kept {
                    check::record(s, task_id, None, &passed.results);
                    kept_proposed = Some((path.clone(), *whose));
                }
                fix_loop.next(FixEvent::ProposedTried {
                    passes: kept.is_some(),
                })
            }
            FixStep::FixWithTools { round } | FixStep::StartAfresh { round } => {
                let mend = match step {
                    FixStep::StartAfresh { .. } => Mend::Afresh,
                    _ => Mend::Fix,
                };
                before_this_fix = files_now(s, task_id).await;
                let fixed = fix_with_tools(
                    ctx,
                    s,
                    task_id,
                    (&last_output, next_step),
                    &mut before_fixes,
                    mend,
                )
                .await;
                if fixed.written.is_empty() {
                    // A fresh start that wrote nothing leaves the team's code, not the
                    // files as they were before the task, for the next step to work on.
                    let restored = put_back(s, &before_this_fix).await;
                    if !restored.is_empty() {
                        let _ = ctx.append_own_board(&format!(
                            "- the fresh start wrote nothing: {} put back as the team wrote it",
                            restored.join(", ")
                        ));
                    }
                } else if fixed.put_back.is_empty() {
                    fix_round(
                        round,
                        &last_failed,
                        format!("with tools wrote {}", fixed.written.join(", ")),
                    );
                } else {
                    fix_round(
                        round,
                        &last_failed,
                        format!(
                            "started afresh from {} as before the task, and wrote {}",
                            fixed.put_back.join(", "),
                            fixed.written.join(", ")
                        ),
                    );
                }
                fix_loop.next(FixEvent::ToolFix {
                    wrote: !fixed.written.is_empty(),
                    confidence: fixed.confidence,
                })
            }
            FixStep::AskForFiles { round } => {
                // A fix that gives no file changes nothing: an answer that cannot be used.
                let answer = ask_for_fix(ctx, s, task_id, &last_failed, (&last_output, next_step))
                    .await
                    .and_then(|fix| {
                        if fix.files.is_empty() {
                            Err(format!(
                                "it gives no file ({})",
                                first_line(&fix.explanation)
                            ))
                        } else {
                            Ok(fix)
                        }
                    });
                let said = match &answer {
                    Ok(fix) => format!(
                        "(confidence {}): {}",
                        fix.confidence,
                        first_line(&fix.explanation)
                    ),
                    Err(problem) => format!("gave no usable fix: {}", first_line(problem)),
                };
                fix_round(round, &last_failed, said);
                let confidence = answer.as_ref().ok().map(|fix| fix.confidence);
                pending = answer.ok();
                fix_loop.next(FixEvent::FilesFix { confidence })
            }
            FixStep::AskPerson { confidence } => {
                let approved = match &pending {
                    Some(fix) => approved_by_person(s, task_id, ctx, fix).await,
                    None => approved_tool_fix(s, task_id, ctx, confidence, &before_this_fix).await,
                };
                fix_loop.next(FixEvent::PersonAnswered { approved })
            }
            FixStep::Apply { approved } => {
                if let Some(fix) = pending.take() {
                    apply_fix(ctx, s, task_id, &fix, approved, &mut before_fixes).await;
                }
                fix_loop.next(FixEvent::Applied)
            }
            FixStep::Refused => {
                // A no is final for that fix: a fix already written by the tools is put
                // back, and no other fix is tried in its place.
                let confidence = pending.as_ref().map(|fix| fix.confidence);
                if pending.is_none() {
                    put_back(s, &before_this_fix).await;
                }
                return Err(Failure::new(
                    FailureKind::Refused,
                    format!(
                        "{last_failed} fails and the person did not approve the proposed fix{}",
                        confidence.map_or(String::new(), |c| format!(" (confidence {c})"))
                    ),
                ));
            }
            FixStep::GiveUp => {
                let restored = restore(ctx, s, &before_fixes).await;
                // Put back, the files fail as they did before the fixes, and that is
                // what the task reports.
                if let (false, Some(first)) = (restored.is_empty(), &first_failure) {
                    check::restate(s, task_id, None, &first.results);
                    last_output = first.failure_text().unwrap_or_default();
                }
                return Err(check_failed(format!(
                    "the checks still fail after {rounds} fix round(s){restored}:\n{}",
                    tail(&last_output, 40)
                )));
            }
        };
        if !matches!(step, FixStep::AskPerson { .. } | FixStep::Apply { .. }) {
            pending = None;
        }
    }
}

/// Writes the files of a fix the model gave whole (`approved`: the person approved it,
/// which approves its writes).
async fn apply_fix(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    fix: &Fix,
    approved: bool,
    before_fixes: &mut Vec<(String, String)>,
) {
    let task_files = files_of(s, task_id);
    let mut targets: Vec<(String, String)> = Vec::new();
    for file in &fix.files {
        let path = match fix_path(s, &task_files, &file.path) {
            Some(path) => Some(path),
            None => file_the_content_is(s, &task_files, &file.content, fix.files.len()).await,
        };
        let Some(path) = path else {
            let _ = ctx.append_own_board(&format!(
                "- the fix's {} is not a file of the task; not written",
                file.path
            ));
            continue;
        };
        add_part(&mut targets, path, &file.content);
    }
    for (path, content) in targets {
        if !before_fixes.iter().any(|(p, _)| *p == path)
            && let Ok(absolute) = s.sandbox.resolve(&path)
            && let Ok(now) = tokio::fs::read_to_string(&absolute).await
        {
            before_fixes.push((path.clone(), now));
        }
        let content = as_written(s, task_id, &path, &content);
        match s.write_change(task_id, &path, &content, approved).await {
            Ok(outcome) => {
                let path = outcome.path.to_string_lossy().into_owned();
                s.tasks.update(task_id, |t| {
                    if !t.files_written.contains(&path) {
                        t.files_written.push(path);
                    }
                });
            }
            Err(e) => tracing::warn!("fix for {path} not written: {e}"),
        }
    }
}

/// A file's content as the model meant it (`tools::file::as_meant`), with the repairs
/// made counted on the task.
fn as_written(s: &Services, task_id: TaskId, path: &str, content: &str) -> String {
    let disabled = &s.config.verify.disabled;
    let meant =
        crate::tools::file::as_meant(path, content, &|id| !disabled.iter().any(|d| d == id));
    check::record_repairs(s, task_id, &meant.repairs);
    meant.content
}

/// The task's files and the files it names, as they are now.
async fn files_now(s: &Services, task_id: TaskId) -> Vec<(String, String)> {
    let mut paths = files_of(s, task_id);
    if let Some(task) = s.tasks.get(task_id) {
        let whole = super::files::task_text(&task);
        for target in super::files::target_files_now(&s.sandbox, whole) {
            if !paths.contains(&target.path) {
                paths.push(target.path);
            }
        }
    }
    let mut now = Vec::new();
    for path in paths {
        if let Ok(absolute) = s.sandbox.resolve(&path)
            && let Ok(content) = tokio::fs::read_to_string(&absolute).await
        {
            now.push((path, content));
        }
    }
    now
}

/// Where a coder's fix round starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mend {
    /// The team's code as it is: mend it.
    Fix,
    /// The files the task names as they were before the task: do the task anew
    /// (`verify.freshStart`). With none of them changed, there is nothing to start afresh
    /// from, and the round mends the code as it is.
    Afresh,
}

/// A fix made by the executor with its tools, as a subtask's own fix turn is
/// (`check::after_subtask`): the task, the failure and the files as they are now (for a
/// fresh start, the files the task names put back as they were before it first). The
/// files it may change are kept first, for [`restore`]; what it writes counts as the
/// task's files, and is checked by the next round like any fix. Returns the files it
/// put back and wrote, and the rating the coder gave its fix.
async fn fix_with_tools(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    (output, next_step): (&str, &str),
    before_fixes: &mut Vec<(String, String)>,
    mend: Mend,
) -> ToolFix {
    let (Some(executor), Some(task)) = (s.executor.clone(), s.tasks.get(task_id)) else {
        return ToolFix::default();
    };
    let whole = super::files::task_text(&task);
    let targets = super::files::target_files_now(&s.sandbox, whole);
    let mut keep: Vec<String> = files_of(s, task_id);
    keep.extend(targets.iter().map(|t| t.path.clone()));
    for path in keep {
        if !before_fixes.iter().any(|(p, _)| *p == path)
            && let Ok(absolute) = s.sandbox.resolve(&path)
            && let Ok(content) = tokio::fs::read_to_string(&absolute).await
        {
            before_fixes.push((path, content));
        }
    }
    let put_back_first = match mend {
        Mend::Afresh => put_back(s, &s.originals(task_id).files).await,
        Mend::Fix => Vec::new(),
    };
    let failure = extract_errors(output);
    let what_to_do = if put_back_first.is_empty() {
        format!(
            "The team's code for this task does not pass this check:\n{failure}\n\n\
             {next_step} Fix the team's files with your tools so that the check passes."
        )
    } else {
        let _ = ctx.append_own_board(&format!(
            "- starting afresh: {} put back as before the task",
            put_back_first.join(", ")
        ));
        format!(
            "A first solution of this task failed this check:\n{failure}\n\n\
             That solution was taken back: the files it changed ({}) are as they were before \
             the task. Do the task anew with your tools, so that the check passes.",
            put_back_first.join(", ")
        )
    };
    let spec = SubtaskSpec {
        // Writes are the last subtask's, so editors show them with the task's files.
        subtask_id: task
            .subtasks
            .last()
            .map(|st| st.id.to_string())
            .unwrap_or_default(),
        description: format!(
            "{whole}\n\n{what_to_do} \
             A test shown above is Conclave's check: never change it or copy it into a file. \
             When you are done, end your answer with `Confidence: N`, how sure you are (0 to 100) that the check now passes."
        ),
        system_prompt: ctx.system_prompt(super::roles::BOTTOM),
        context: super::files::with_files_now("", &s.sandbox, whole),
        target_files: targets,
        task_names: s.originals(task_id).intent().names.clone(),
        asks_for_changes: true,
    };
    let mut said = String::new();
    let mut sink = |text: &str| said.push_str(text);
    let cancel = s.task_cancel(task_id).child_token();
    let (written, confidence): (Vec<String>, _) =
        match executor.execute(&spec, cancel, &mut sink).await {
            Ok(outcome) => {
                check::record_repairs(s, task_id, &outcome.repairs);
                keep_proposed(s, task_id, &outcome);
                (
                    outcome
                        .files_written
                        .iter()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect(),
                    stated_confidence(&outcome.summary),
                )
            }
            Err(e) => {
                let _ = ctx.append_own_board(&format!("- the fix with tools did not run: {e}"));
                return ToolFix {
                    put_back: put_back_first,
                    ..ToolFix::default()
                };
            }
        };
    s.tasks.update(task_id, |t| {
        for path in &written {
            if !t.files_written.contains(path) {
                t.files_written.push(path.clone());
            }
        }
    });
    let _ = ctx.append_own_board(&if written.is_empty() {
        "- the fix with tools changed nothing".to_string()
    } else {
        format!("- the fix with tools wrote {}", written.join(", "))
    });
    ToolFix {
        put_back: put_back_first,
        written,
        confidence,
    }
}

/// What a fix with tools came to.
#[derive(Default)]
struct ToolFix {
    /// The files put back as they were before the task, for a fresh start.
    put_back: Vec<String>,
    /// The files it wrote.
    written: Vec<String>,
    /// The rating the coder gave its fix, when it gave one.
    confidence: Option<u8>,
}

/// Puts back the files as they were before the fix loop changed them: fixes that did
/// not make the checks pass must not leave the code worse than the team wrote it (a
/// "fix" may replace right code with something else entirely, such as the test's text).
async fn restore(ctx: &AgentContext, s: &Services, before: &[(String, String)]) -> String {
    let restored = put_back(s, before).await;
    if restored.is_empty() {
        return String::new();
    }
    let list = restored.join(", ");
    let _ = ctx.append_own_board(&format!(
        "- the fixes did not pass the checks: {list} restored as the team wrote it"
    ));
    format!(" ({list} restored as before the fixes)")
}

/// The task's checks: the code's (syntax, stubs, names), then, when they pass, its tests
/// (`verify.command`, the project's, or the team's acceptance test).
async fn check_all(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    bench: &check::Bench,
) -> check::Checks {
    let files = files_of(s, task_id);
    let mut on_board = |line: &str| {
        let _ = ctx.append_own_board(&format!("- {line}"));
    };
    check::put_back_dropped(s, task_id, bench, &files, &mut on_board).await;
    let command = s.config.verify.command.as_deref();
    let mut checks = check::run(bench, check::Stage::EndOfTask, &files, command).await;
    // No test ran: the team writes one from the task (acceptance.rs), in their place.
    let tests: Vec<_> = checks.tests().cloned().collect();
    if checks.passed() && acceptance::wanted(s, &files, &tests) {
        let accepted = acceptance::run(ctx, s, task_id, bench, &files).await;
        checks
            .results
            .retain(|r| r.kind != crate::checks::Kind::Tests.as_str());
        checks.results.push(accepted);
    }
    checks
}

/// Whose another version of a task file is, tried in its place before a fix round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Candidate {
    /// A coder showed it in its final answer and did not write it.
    CoderAnswer,
    /// The second solution the acceptance test was run beside (`acceptance.rs`),
    /// written from the task alone.
    SecondSolution,
}

impl Candidate {
    fn describe(self, path: &str) -> String {
        match self {
            Candidate::CoderAnswer => {
                format!("the version of {path} a coder gave in its answer and did not write")
            }
            Candidate::SecondSolution => {
                format!("the second solution of {path}, written from the task alone,")
            }
        }
    }
}

/// Tries each kept version of a task file (see [`keep_proposed`]), then the second
/// solution the acceptance test was run beside, each once, in place of the file: the
/// first with which every check passes stays, and is returned with those checks; any
/// other is put back. A model may write one version and then show another in its
/// answer (`split(" ")` written, `split()` shown), or solve the task asked afresh where
/// its first code failed, and only the checks can tell which is right. The writes go
/// through the same approval as any change of the task.
async fn try_proposed(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    bench: &check::Bench,
    before_fixes: &mut Vec<(String, String)>,
) -> Option<(String, Candidate, check::Checks)> {
    let mut candidates: Vec<(TargetFile, Candidate)> = Vec::new();
    if let Some(mut state) = s.task_state.get_mut(&task_id) {
        let proposed = std::mem::take(&mut state.proposed_files);
        candidates.extend(proposed.into_iter().map(|f| (f, Candidate::CoderAnswer)));
        if !state.second_solution_tried
            && let Some(Some((path, content))) = state.second_solution.clone()
        {
            state.second_solution_tried = true;
            let file = TargetFile {
                path,
                content: Some(content),
            };
            candidates.push((file, Candidate::SecondSolution));
        }
    }
    let task_files = files_of(s, task_id);
    for (file, whose) in candidates {
        let (Some(content), Some(path)) = (file.content, fix_path(s, &task_files, &file.path))
        else {
            continue;
        };
        let Ok(absolute) = s.sandbox.resolve(&path) else {
            continue;
        };
        let Ok(now) = tokio::fs::read_to_string(&absolute).await else {
            continue;
        };
        let content = as_written(s, task_id, &path, &content);
        if now == content {
            continue;
        }
        if !before_fixes.iter().any(|(p, _)| *p == path) {
            before_fixes.push((path.clone(), now.clone()));
        }
        let shown = std::path::Path::new(&path);
        if let Err(e) = s.write_change(task_id, &path, &content, false).await {
            tracing::info!("{} is not written: {e}", whose.describe(&path));
            continue;
        }
        let checks = check_all(ctx, s, task_id, bench).await;
        let checked = !checks.results.iter().any(acceptance::unverified);
        if checks.passed() && checked {
            s.tasks.update(task_id, |t| {
                if !t.files_written.contains(&path) {
                    t.files_written.push(path.clone());
                }
            });
            let _ = ctx.append_own_board(&format!(
                "- {} passes the checks: kept",
                whose.describe(&path)
            ));
            return Some((path, whose, checks));
        }
        let _ = ctx.append_own_board(&format!(
            "- {} fails the checks too: put back",
            whose.describe(&path)
        ));
        let _ = s.writer.write_file(shown, &now).await;
    }
    None
}

/// Every file the task touched, also those of attempts that failed.
/// Claims the files of the task's checking (its checks and fix rounds, which read and
/// write the task's files once its subtasks are done) as a subtask claims its own: held
/// back while another task's work holds one of them, woken by its end, and going ahead
/// after `recovery.subtaskTimeoutMs` of waiting for one piece of work. The claim is
/// never released on its own: it lasts until the task ends (`peers::task_ended`), since
/// ending may put the task's files back.
async fn claim_for_checking(
    ctx: &AgentContext,
    s: &Arc<Services>,
    claims: &Claims,
    task_id: TaskId,
    files: Vec<String>,
) {
    if files.is_empty() {
        return;
    }
    let longest_wait = Duration::from_millis(s.config.recovery.subtask_timeout_ms.max(1));
    let mut releases = claims.releases();
    // The work waited for, since when.
    let mut waited: Option<(Claim, Instant)> = None;
    loop {
        releases.borrow_and_update();
        let Some(task) = s.tasks.get(task_id) else {
            return;
        };
        let overdue = match &waited {
            Some((holder, since))
                if !claims.is_released(holder) && since.elapsed() >= longest_wait =>
            {
                let _ = ctx.append_own_board(&super::peers::goes_ahead(
                    0,
                    &task.title,
                    holder,
                    &files,
                    longest_wait,
                ));
                true
            }
            _ => false,
        };
        match super::peers::claim(
            ctx,
            s,
            claims,
            &task,
            Work::checking(),
            files.clone(),
            overdue,
        )
        .await
        {
            Claimed::Go(_) => return,
            Claimed::Wait {
                holder,
                files: shared,
            } => {
                let since = match waited {
                    Some((before, since)) if before.writing.claim == holder.writing.claim => since,
                    _ => {
                        super::progress::peer_work_conflict(
                            ctx,
                            s,
                            &task,
                            (0, super::peers::CHECKING.into()),
                            &holder,
                            shared,
                        )
                        .await;
                        Instant::now()
                    }
                };
                let until = since + longest_wait;
                waited = Some((holder, since));
                tokio::select! {
                    _ = releases.changed() => {}
                    _ = tokio::time::sleep_until(until) => {}
                }
            }
        }
    }
}

/// The files the checking may write: the task's, and those the task names.
fn files_checked(s: &Services, task_id: TaskId) -> Vec<String> {
    let mut files = files_of(s, task_id);
    if let Some(task) = s.tasks.get(task_id) {
        for named in super::files::source_files_named(super::files::task_text(&task)) {
            if !files.contains(&named) {
                files.push(named);
            }
        }
    }
    files
}

fn files_of(s: &Services, task_id: TaskId) -> Vec<String> {
    s.tasks
        .get(task_id)
        .map(|t| {
            let mut files = t.files_written.clone();
            for path in t.subtasks.iter().flat_map(|st| st.files.iter()) {
                if !files.contains(path) {
                    files.push(path.clone());
                }
            }
            files
        })
        .unwrap_or_default()
}

/// Where a fix's file goes: a file the task touched, or another file of the
/// workspace. A path that is neither but ends in the name of exactly one of the task's
/// files is that file (small models write `relative/path/to/solution.py` for the
/// `solution.py` they were shown). Anything else is not written: the fix loop fixes
/// the team's code, it does not add files (such as a copy of the acceptance test
/// written into the workspace), rewrite a test of the project that
/// the team did not write, nor touch Conclave's own state.
fn fix_path(s: &Services, task_files: &[String], given: &str) -> Option<String> {
    // Inside the workspace (or nothing), relative to its root.
    let resolved = s.sandbox.resolve(given.trim()).ok()?;
    let relative = resolved.strip_prefix(s.sandbox.root()).ok()?;
    if relative.starts_with(".conclave") {
        return None;
    }
    let given = relative.to_string_lossy().into_owned();
    if task_files.contains(&given) {
        return Some(given);
    }
    // The project's own tests judge the team's code: a fix makes them pass, it does not
    // rewrite them (for instance by replacing the test file with the code under test).
    if resolved.is_file() {
        return (!check::is_test_file(&given)).then_some(given);
    }
    let name = relative.file_name()?;
    let mut same_name = task_files
        .iter()
        .filter(|f| std::path::Path::new(f.as_str()).file_name() == Some(name));
    match (same_name.next(), same_name.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    }
}

/// Adds one of a fix's files to what the round writes. Two that land in the same file
/// and define different names are parts of it, joined in order (a module's functions
/// may come as separate files under one placeholder path, and writing each over the
/// last would lose all but one); otherwise the later one is the file.
fn add_part(targets: &mut Vec<(String, String)>, path: String, content: &str) {
    let Some((_, whole)) = targets.iter_mut().find(|(p, _)| *p == path) else {
        targets.push((path, content.to_string()));
        return;
    };
    let names = |text: &str| crate::checks::defines::names_defined(&path, text);
    let (before, part) = (names(whole), names(content));
    if !before.is_empty() && !part.is_empty() && before.is_disjoint(&part) {
        *whole = format!("{}\n\n\n{}", whole.trim_end(), content);
    } else {
        *whole = content.to_string();
    }
}

/// The task's file a fix's `content` is a new version of, when the fix gave a path that
/// is none of the task's (a placeholder such as "a path as shown above", copied from
/// the answer's format, with a whole new version of a task file): the one file that defines a function or
/// class the content defines too, else the task's only file when the fix has only this
/// one.
async fn file_the_content_is(
    s: &Services,
    task_files: &[String],
    content: &str,
    files_in_fix: usize,
) -> Option<String> {
    let mut defining = Vec::new();
    for path in task_files.iter().filter(|path| !check::is_test_file(path)) {
        if let Ok(absolute) = s.sandbox.resolve(path)
            && let Ok(now) = tokio::fs::read_to_string(&absolute).await
            && !crate::checks::defines::names_defined(path, &now)
                .is_disjoint(&crate::checks::defines::names_defined(path, content))
        {
            defining.push(path.clone());
        }
    }
    match (defining.as_slice(), task_files) {
        ([only], _) => Some(only.clone()),
        ([], [only]) if files_in_fix == 1 && !check::is_test_file(only) => Some(only.clone()),
        _ => None,
    }
}

/// What a failed task leaves ([`TaskOptions::failure_policy`]).
///
/// [`TaskOptions::failure_policy`]: crate::runtime::TaskOptions::failure_policy
fn on_failure(s: &Services, task_id: TaskId) -> OnFailure {
    s.tasks.get(task_id).map_or(s.config.undo.on_failure, |t| {
        t.options.failure_policy(&s.config)
    })
}

/// Why code nothing could check is not done, and where the code is now: a failed task's
/// changes are put back before the person reads this, unless the policy keeps them.
fn unverified_message(why: &str, on_failure: OnFailure) -> String {
    let the_code = match on_failure {
        OnFailure::Keep => "the code is left as the team wrote it: review it",
        OnFailure::Restore => {
            "the team's changes are put back (undo.onFailure = \"restore\"): to review them, keep a failed task's changes (`conclave run --keep-failed`, the task's onFailure option, or undo.onFailure = \"keep\")"
        }
    };
    format!(
        "nothing could check that the code does what the task asks: {why}; {the_code}, or set verify.command to a test of it"
    )
}

fn check_failed(message: String) -> Failure {
    Failure::new(FailureKind::CheckFailed, message)
}

/// `file:line:col` lines first (most useful to a model), then the tail of the output.
pub fn extract_errors(output: &str) -> String {
    let located: Vec<&str> = output
        .lines()
        .filter(|line| {
            line.split(':').collect::<Vec<_>>().windows(3).any(|w| {
                w[0].contains('.')
                    && w[1].trim().parse::<u32>().is_ok()
                    && w[2].trim().parse::<u32>().is_ok()
            })
        })
        .take(30)
        .collect();
    let mut text = String::new();
    if !located.is_empty() {
        text.push_str("Errors:\n");
        text.push_str(&located.join("\n"));
        text.push_str("\n\n");
    }
    text.push_str("End of the output:\n");
    text.push_str(&tail(output, 40));
    text
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

async fn ask_for_fix(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    command: &str,
    (output, next_step): (&str, &str),
) -> Result<Fix, String> {
    let model = s.model(TeamLayer::Bottom).ok_or("no model is configured")?;
    // The files this task wrote: other tasks' files are not this fix's business.
    let files = s
        .tasks
        .get(task_id)
        .map(|t| t.files_written)
        .unwrap_or_default();
    let mut sources = String::new();
    for path in files.iter().take(4) {
        if let Ok(absolute) = s.sandbox.resolve(path)
            && let Ok(content) = tokio::fs::read_to_string(&absolute).await
        {
            let shown: String = content.chars().take(8000).collect();
            sources.push_str(&format!("\n--- {path}\n{shown}\n"));
        }
    }
    // The team's files first, the failure after them: a small model shown the test
    // first tends to copy the test into the team's file.
    let request = ModelRequest {
        system: ctx.system_prompt(super::roles::MID),
        messages: vec![ChatMessage::user(format!(
            "The team's code fails its checks ({command}).\n\nFiles the team wrote:{sources}\n\n{}\n\n\
             {next_step} A test shown above is Conclave's check of the team's code: never change it or copy it into a file. \
             Change the team's files so that the checks pass, and give the whole new content of each file to change.",
            extract_errors(output)
        ))],
        tools: Vec::new(),
        max_tokens: 4096,
        temperature: s.temperature(TeamLayer::Bottom),
    };
    // An answer with no usable JSON that gives a task file whole in a code block (a small
    // model's way) is that fix; unrated, it counts as rated at the threshold.
    let targets: Vec<TargetFile> = files
        .iter()
        .take(4)
        .map(|path| TargetFile {
            content: s
                .sandbox
                .resolve(path)
                .ok()
                .and_then(|absolute| std::fs::read_to_string(absolute).ok()),
            path: path.clone(),
        })
        .collect();
    let threshold = s.config.verify.min_confidence;
    let from_code_blocks = |text: &str| {
        let files = code_answer::whole_files_in(text, &targets);
        (!files.is_empty()).then(|| Fix {
            files: files
                .into_iter()
                .map(|(path, content)| FileContent { path, content })
                .collect(),
            confidence: stated_confidence(text).unwrap_or(threshold),
            explanation: first_line(text.split("```").next().unwrap_or_default()),
        })
    };
    let (fix, repairs) = noting_repairs(ask_json_or::<Fix>(
        model.as_ref(),
        &request,
        &mut |_: &str| {},
        &from_code_blocks,
    ))
    .await;
    super::check::record_repairs(s, task_id, &repairs);
    fix.map_err(|e| e.to_string())
}

/// A rating the model wrote in words: "confidence: 80", "Confidence 80%".
fn stated_confidence(text: &str) -> Option<u8> {
    let lower = text.to_ascii_lowercase();
    let after = &lower[lower.find("confidence")? + "confidence".len()..];
    let digits: String = after
        .trim_start_matches(|c: char| !c.is_ascii_digit() && c != '\n')
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse::<u8>().ok().filter(|n| *n <= 100)
}

/// A low-confidence fix the model gave whole, shown to the person as a diff of its
/// first file.
async fn approved_by_person(s: &Services, task_id: TaskId, ctx: &AgentContext, fix: &Fix) -> bool {
    let Some(first) = fix.files.first() else {
        return false;
    };
    let before = match s.sandbox.resolve(&first.path) {
        Ok(path) => tokio::fs::read_to_string(path).await.unwrap_or_default(),
        Err(_) => return false,
    };
    let files = fix
        .files
        .iter()
        .map(|f| format!("`{}`", f.path))
        .collect::<Vec<_>>()
        .join(", ");
    ask_about_fix(
        s,
        task_id,
        ctx,
        fix.confidence,
        format!("{}\n\nFiles: {files}", fix.explanation),
        file_diff(s, &first.path, before, first.content.clone()),
    )
    .await
}

/// A low-confidence fix a coder already wrote with its tools, shown to the person as a
/// diff of the first file it changed (against `before`, the files before the fix).
async fn approved_tool_fix(
    s: &Services,
    task_id: TaskId,
    ctx: &AgentContext,
    confidence: u8,
    before: &[(String, String)],
) -> bool {
    let mut changed = Vec::new();
    for (path, was) in before {
        if let Ok(absolute) = s.sandbox.resolve(path)
            && let Ok(now) = tokio::fs::read_to_string(&absolute).await
            && now != *was
        {
            changed.push((path.clone(), was.clone(), now));
        }
    }
    let Some((path, was, now)) = changed.first().cloned() else {
        // Nothing changed: there is nothing to keep or refuse, and the loop checks on.
        return true;
    };
    let files = changed
        .iter()
        .map(|(p, _, _)| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ");
    ask_about_fix(
        s,
        task_id,
        ctx,
        confidence,
        format!("A coder fixed the files with its tools and rated its fix {confidence}%. Declining puts them back.\n\nFiles: {files}"),
        file_diff(s, &path, was, now),
    )
    .await
}

/// The change of the workspace file at `path` from `before` to `after`, as a person sees it.
fn file_diff(s: &Services, path: &str, before: String, after: String) -> FileDiff {
    FileDiff {
        uri: s.sandbox.root().join(path).to_string_lossy().into_owned(),
        before,
        after,
    }
}

/// Asks the person whether to keep a fix rated `confidence` (its first file's change
/// shown as `diff`); true on their yes.
async fn ask_about_fix(
    s: &Services,
    task_id: TaskId,
    ctx: &AgentContext,
    confidence: u8,
    detail: String,
    diff: FileDiff,
) -> bool {
    let request = ApprovalRequest {
        approval_id: Uuid::new_v4(),
        kind: ApprovalKind::FileChange,
        task_id,
        subtask_id: None,
        agent_id: ctx.id().to_string(),
        severity: Severity::Medium,
        title: format!("Apply a fix the model is only {confidence}% sure of?"),
        detail,
        proposed_solution: None,
        diff: Some(diff),
        command: None,
        subtask_description: None,
        options: ApprovalOption::yes_no(),
        created_at: Utc::now(),
    };
    matches!(s.approvals.ask(request).await, Some(answer) if answer.decision == ApprovalChoice::Approve)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_rating_in_words_is_read() {
        use super::stated_confidence;
        assert_eq!(stated_confidence("Fixed it.\nConfidence: 80%"), Some(80));
        assert_eq!(stated_confidence("confidence 35"), Some(35));
        assert_eq!(stated_confidence("I am confident."), None);
        assert_eq!(stated_confidence("Confidence: high\n42 lines"), None);
    }

    #[test]
    fn located_errors_come_first() {
        let output =
            "running 2 tests\nsrc/lib.rs:10:5: error: mismatched types\nnoise\ntest result: FAILED";
        let extracted = super::extract_errors(output);
        assert!(extracted.starts_with("Errors:\nsrc/lib.rs:10:5: error: mismatched types\n"));
        assert!(extracted.ends_with("test result: FAILED"));
    }
}
