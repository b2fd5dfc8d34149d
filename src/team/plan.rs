//! Planning a task and having the top layer sign the plan.
//!
//! The mid asks the model for a plan that fits the task: a task one agent can do in one
//! go stays one subtask carrying the task verbatim. What the model answers is tidied
//! before anyone reviews it (empty subtasks dropped, duplicates merged, assignee hints
//! resolved to agents). The top layer signs or vetoes; a veto's reasons go into the
//! re-plan, and after the second veto the person decides (approve anyway, edit, cancel):
//! the task never fails for a veto alone. When top agents disagree under a weighted
//! quorum, `Governance::arbitrate` settles it.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use super::files::{background_for_prompt, task_text};
use super::{Services, first_line};
use crate::checks::intent::{only_looks, step_asks_for_changes};
use crate::config::PlanQuorum;
use crate::config::TeamLayer;
use crate::model::structured::{Plan, ask_json, noting_repairs};
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::Severity;
use crate::recovery::quality::{self, AfterVeto};
use crate::recovery::{Failure, FailureKind, Scope};
use crate::runtime::{
    AgentContext, AgentId, ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest, Conflict,
    DecisionStatus, Layer, Proposal, Quorum, Signer, Subtask, TaskError, TaskId, TaskRecord,
    TaskStatus, Vote, voters,
};

/// Why coordination stopped early.
pub(super) enum Stop {
    Cancelled,
    Failed(Failure),
}

/// When not to split, said to the planner in as few words as a small model follows.
const PLANNING_RULES: &str = "Split only when the task has large parts that can each be done and checked on their own. \
A task one agent can do in one go (one or two files, one function or feature, a fix) is ONE subtask: write the task itself as its description. \
Do not make subtasks that only test, review or check: the team checks the code itself. No two subtasks may do the same work.";

/// Plans with the model and has the top layer sign the plan; a vetoed plan is made
/// again with the vetoes' reasons, and after the second veto the person decides.
pub(super) async fn plan_and_approve(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
) -> Result<(), Stop> {
    let model = s.model(TeamLayer::Mid).ok_or_else(|| {
        Stop::Failed(Failure::new(
            FailureKind::InvalidConfig,
            crate::model::factory::HOW_TO_CONFIGURE,
        ))
    })?;
    let bottoms: Vec<(AgentId, String)> = ctx
        .handle
        .config()
        .subordinates
        .iter()
        .filter_map(|id| s.runtime.pool.get(*id))
        .map(|a| (a.id(), a.name()))
        .collect();
    let mut feedback = String::new();
    let mut vetoes: Vec<String> = Vec::new();
    let mut round = 0;
    loop {
        round += 1;
        s.tasks.update(task.id, |t| t.status = TaskStatus::Planning);
        let mut prompt = format!(
            "Plan this task for {} bottom agent(s): {}.\n\nTask:\n{}\n\n{PLANNING_RULES}",
            bottoms.len(),
            bottoms
                .iter()
                .map(|(_, name)| name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            task_text(task),
        );
        if !task.context.files.is_empty() {
            prompt.push_str(&format!(
                "\n\nFiles in context: {}",
                task.context.files.join(", ")
            ));
        }
        if let Some(background) = &task.context.background {
            prompt.push_str(&format!("\n\n{}", background_for_prompt(background)));
        }
        prompt.push_str(&feedback);
        let request = ModelRequest {
            system: ctx.system_prompt(super::roles::MID),
            messages: vec![ChatMessage::user(prompt)],
            tools: Vec::new(),
            max_tokens: 1024,
            temperature: s.temperature(TeamLayer::Mid),
        };
        let (plan, repairs) = noting_repairs(ask_json::<Plan>(model.as_ref(), &request)).await;
        super::check::record_repairs(s, task.id, &repairs);
        let plan = match plan {
            Ok(plan) => plan,
            // A model that cannot answer with a usable plan, even when told what was
            // wrong, can still do the task: one agent with the task verbatim is always
            // a plan (a team must never do worse than one agent).
            Err(crate::model::ModelError::InvalidStructuredOutput { message }) => {
                let _ = ctx.append_own_board(&format!(
                    "- the model's plan could not be used ({}); the task is one subtask",
                    first_line(&message)
                ));
                Plan::default()
            }
            Err(e) => return Err(Stop::Failed(Failure::of(&e))),
        };
        let subtasks = fit_plan(&plan, task, &bottoms, s);
        let listing: String = subtasks
            .iter()
            .enumerate()
            .map(|(i, st)| format!("{}. {}\n", i + 1, first_line(&st.description)))
            .collect();
        let _ = ctx.append_own_board(&format!(
            "\n## Plan for \"{}\" (round {round})\n{listing}",
            task.title
        ));
        let _ = ctx.append_layer_board(&format!(
            "- {} planned \"{}\": {} subtasks",
            ctx.handle.name(),
            task.title,
            subtasks.len()
        ));
        s.tasks.update(task.id, |t| {
            t.subtasks = subtasks.clone();
            t.status = TaskStatus::AwaitingApproval;
        });
        match propose(ctx, s, task, &subtasks).await? {
            Verdict::Approved => return Ok(()),
            Verdict::Vetoed(reasons) => {
                let _ = ctx.append_own_board(&format!("- plan vetoed: {}", reasons.join("; ")));
                vetoes.extend(reasons.iter().map(|r| format!("round {round}: {r}")));
                if quality::after_veto(round) == AfterVeto::AskPerson {
                    return person_decides(ctx, s, task, &vetoes).await;
                }
                feedback = format!(
                    "\n\nThe top layer vetoed the previous plan:\n{}\nMake a new plan that answers each reason.",
                    reasons
                        .iter()
                        .map(|r| format!("- {r}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
    }
}

/// The model's plan made to fit the task: empty subtasks dropped, duplicates merged
/// (dependencies follow the one kept), a task about one or two files or a plan with
/// nothing usable kept whole, a single subtask carrying the task verbatim, and assignee
/// hints resolved to this mid's bottom agents by name (unknown names dropped).
///
/// In a task that asks for changes, a subtask that changes nothing ("Check the existing
/// logic…", "Test the new function…") beside one that does is folded away: agents read
/// before they edit, and the team checks and tests the work itself (`check/`,
/// `acceptance.rs`). Such steps only split one change apart (a rewrite that loses the
/// rest of the file, say) or send an agent off on work the task never asked for.
pub(super) fn fit_plan(
    plan: &Plan,
    task: &TaskRecord,
    bottoms: &[(AgentId, String)],
    s: &Services,
) -> Vec<Subtask> {
    // Index in the model's plan → index in the fitted plan.
    let mut kept_as: Vec<Option<usize>> = Vec::with_capacity(plan.subtasks.len());
    let mut kept: Vec<(String, Vec<usize>, Option<String>)> = Vec::new();
    let whole = task_text(task);
    // Looking is folded away only beside a change: a plan that only answers (the model
    // says why it will not change anything) is kept as it is.
    let originals = s.originals(task.id);
    let intent = originals.intent();
    let fold_looks = intent.changes
        && plan
            .subtasks
            .iter()
            .any(|p| !only_looks(p.description.trim()));
    for planned in &plan.subtasks {
        let description = planned.description.trim();
        if words(description).is_empty() || (fold_looks && only_looks(description)) {
            kept_as.push(None);
            continue;
        }
        match kept.iter().position(|(d, _, _)| same_work(d, description)) {
            Some(existing) => kept_as.push(Some(existing)),
            None => {
                kept.push((
                    description.to_string(),
                    planned.depends_on.clone(),
                    planned.assignee.clone(),
                ));
                kept_as.push(Some(kept.len() - 1));
            }
        }
    }
    let mut subtasks: Vec<Subtask> = kept
        .iter()
        .enumerate()
        .map(|(i, (description, deps, assignee))| {
            let mut depends_on: Vec<usize> = deps
                .iter()
                .filter_map(|&d| kept_as.get(d).copied().flatten())
                .filter(|&d| d < i)
                .collect();
            depends_on.sort_unstable();
            depends_on.dedup();
            let mut subtask = Subtask::new(description.clone(), depends_on);
            subtask.assignee = assignee.as_deref().and_then(|hint| {
                let hint = hint.trim();
                bottoms
                    .iter()
                    .find(|(_, name)| name.eq_ignore_ascii_case(hint))
                    .map(|(id, _)| *id)
                    .or_else(|| {
                        // A name of another mid's bottom agent is a usable hint too.
                        s.runtime
                            .pool
                            .by_layer(Layer::Bottom)
                            .into_iter()
                            .find(|a| a.name().eq_ignore_ascii_case(hint))
                            .map(|a| a.id())
                    })
            });
            subtask.assignee_name = subtask.assignee.map(|id| super::roles::agent_name(s, id));
            subtask
        })
        .collect();
    // A task about one or two files is one agent's work, as PLANNING_RULES tells the
    // planner. Small models split it anyway ("define the function" / "implement its
    // logic"), into steps that rewrite one another's file; kept whole, the one agent
    // sees the task verbatim and the files as they are. A split that gives each file
    // to one subtask of its own is kept: those steps cannot undo one another.
    let task_files = super::files::source_files_named(whole);
    let per_subtask: Vec<Vec<String>> = subtasks
        .iter()
        .map(|st| super::files::source_files_named(&st.description))
        .collect();
    let one_file_each = per_subtask.iter().all(|files| files.len() == 1)
        && per_subtask
            .iter()
            .map(|files| &files[0])
            .collect::<std::collections::HashSet<_>>()
            .len()
            == per_subtask.len();
    if subtasks.len() > 1
        && (1..=2).contains(&task_files.len())
        && per_subtask
            .iter()
            .flatten()
            .all(|file| task_files.contains(file))
        && !one_file_each
    {
        return vec![Subtask::new(whole.to_string(), Vec::new())];
    }
    match subtasks.len() {
        // Nothing usable: the whole task is the one subtask.
        0 => vec![Subtask::new(task_text(task).to_string(), Vec::new())],
        1 => {
            // One subtask is the whole task: a rewording of it, or any other change,
            // becomes the task verbatim, since a planner's rewording can drift to a
            // different change (a test of a function that does not exist, say) and the
            // agent would do that instead of the task. A description that says
            // something else (an answer instead of a change) is kept, and the agent
            // still gets the task verbatim in its context.
            let description = &subtasks[0].description;
            if covers(description, whole) || step_asks_for_changes(intent, description) {
                subtasks[0].description = whole.to_string();
            }
            subtasks
        }
        _ => subtasks,
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '.')
        .map(|w| w.trim_matches('.').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Two descriptions of the same work: the same words, or nearly (small models repeat a
/// subtask with a word changed).
fn same_work(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    if a == b {
        return true;
    }
    let a: std::collections::HashSet<&String> = a.iter().collect();
    let b: std::collections::HashSet<&String> = b.iter().collect();
    let shared = a.intersection(&b).count() as f64;
    let all = a.union(&b).count() as f64;
    all > 0.0 && shared / all >= 0.75
}

/// Whether `planned` is a rewording of `task`: it has most of the task's words (a
/// planner that writes "Write the fizzbuzz function" for "Implement the function
/// fizzbuzz" has dropped what the task said, not added anything).
fn covers(planned: &str, task: &str) -> bool {
    let planned: std::collections::HashSet<String> = words(planned).into_iter().collect();
    let task = words(task);
    if task.is_empty() {
        return false;
    }
    let shared = task.iter().filter(|w| planned.contains(*w)).count();
    shared as f64 / task.len() as f64 >= 0.6
}

enum Verdict {
    Approved,
    Vetoed(Vec<String>),
}

/// Proposes the plan to the top layer and waits for its verdict. A split vote under a
/// weighted quorum is arbitrated.
async fn propose(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    subtasks: &[Subtask],
) -> Result<Verdict, Stop> {
    let voters = voters(&s.runtime.pool);
    let signers: Vec<Signer> = voters
        .iter()
        .map(|v| Signer {
            agent: v.agent,
            weight: v.weight,
        })
        .collect();
    if signers.is_empty() {
        return Ok(Verdict::Approved);
    }
    let content = json!({
        "taskId": task.id,
        "title": task.title,
        "task": task_text(task),
        "subtasks": subtasks.iter().map(|st| json!({ "description": st.description, "dependsOn": st.depends_on })).collect::<Vec<_>>(),
    });
    let quorum = match s.config.governance.quorum {
        PlanQuorum::All => Quorum::All,
        PlanQuorum::WeightedMajority => Quorum::WeightedMajority,
    };
    let decision = ctx
        .governance
        .propose(Proposal {
            proposer: ctx.id(),
            title: format!("Plan for: {}", task.title),
            content,
            signers,
            quorum,
            ttl: Some(Duration::from_millis(s.config.governance.decision_ttl_ms)),
        })
        .map_err(|e| Stop::Failed(Failure::new(FailureKind::Internal, e.to_string())))?;
    s.tasks
        .update(task.id, |t| t.plan_decision = Some(decision.id));
    let status = ctx
        .governance
        .outcome(decision.id)
        .await
        .unwrap_or(DecisionStatus::Expired);
    let settled = ctx.governance.get(decision.id);
    let reasons: Vec<String> = settled
        .as_ref()
        .map(|d| d.vetoes.iter().map(|v| v.reason.clone()).collect())
        .unwrap_or_default();
    let status = match settled {
        Some(d)
            if quorum == Quorum::WeightedMajority
                && !d.signatures.is_empty()
                && !d.vetoes.is_empty() =>
        {
            arbitrate(ctx, task.id, &d, &voters).unwrap_or(status)
        }
        _ => status,
    };
    match status {
        DecisionStatus::Approved => {
            let _ = ctx.append_global(&format!(
                "- plan for \"{}\" approved by the top layer",
                task.title
            ));
            Ok(Verdict::Approved)
        }
        DecisionStatus::Vetoed => Ok(Verdict::Vetoed(if reasons.is_empty() {
            vec!["(no reason given)".into()]
        } else {
            reasons
        })),
        DecisionStatus::Expired | DecisionStatus::Pending => Err(Stop::Failed(Failure::new(
            FailureKind::DecisionExpired,
            "the top layer did not sign the plan in time (governance.decisionTtlMs)",
        ))),
    }
}

/// Top agents split on the plan: their votes go to `Governance::arbitrate` (weights, then
/// seniority on a tie), whose choice is the verdict.
fn arbitrate(
    ctx: &AgentContext,
    task_id: TaskId,
    decision: &crate::runtime::Decision,
    voters: &[crate::runtime::Voter],
) -> Option<DecisionStatus> {
    let votes: Vec<Vote> = decision
        .signatures
        .iter()
        .map(|s| Vote {
            voter: s.agent,
            option: 0,
            reason: None,
        })
        .chain(decision.vetoes.iter().map(|v| Vote {
            voter: v.agent,
            option: 1,
            reason: Some(v.reason.clone()),
        }))
        .collect();
    let conflict = Conflict {
        id: Uuid::new_v4(),
        task_id: Some(task_id.to_string()),
        description: format!("top agents disagree on \"{}\"", decision.title),
        parties: votes.iter().map(|v| v.voter).collect(),
        options: vec!["approve the plan".into(), "make the plan again".into()],
    };
    match ctx.governance.arbitrate(&conflict, voters, votes) {
        Ok(result) => Some(if result.chosen == 0 {
            DecisionStatus::Approved
        } else {
            DecisionStatus::Vetoed
        }),
        Err(e) => {
            tracing::warn!("arbitration of a split plan vote failed: {e}");
            None
        }
    }
}

/// After the second veto the person is a signer: approve the last plan anyway, edit it
/// (one subtask a line), or cancel the task. With no answer the task is cancelled, not
/// failed: nothing went wrong, nobody agreed on a plan.
async fn person_decides(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    vetoes: &[String],
) -> Result<(), Stop> {
    let plan: Vec<String> = s
        .tasks
        .get(task.id)
        .map(|t| t.subtasks.iter().map(|st| st.description.clone()).collect())
        .unwrap_or_default();
    let listing = plan
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{}. {d}", i + 1))
        .collect::<Vec<_>>()
        .join("\n");
    let request = ApprovalRequest {
        approval_id: Uuid::new_v4(),
        kind: ApprovalKind::Decision,
        task_id: task.id,
        subtask_id: None,
        agent_id: ctx.id().to_string(),
        severity: Severity::Medium,
        title: format!("The top layer vetoed the plan for \"{}\" twice", task.title),
        detail: format!(
            "**Plan**:\n\n{listing}\n\n**Vetoes**:\n\n{}\n\nApprove the plan anyway, edit it (one subtask a line), or cancel the task.",
            vetoes
                .iter()
                .map(|v| format!("- {v}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        proposed_solution: Some(listing.clone()),
        subtask_description: None,
        diff: None,
        command: None,
        options: vec![
            ApprovalOption::new(ApprovalChoice::Approve, "Approve the plan anyway"),
            ApprovalOption::new(ApprovalChoice::Modify, "Edit the plan"),
            ApprovalOption::new(ApprovalChoice::Abort, "Cancel the task"),
        ],
        created_at: Utc::now(),
    };
    let answer = s.approvals.ask(request).await;
    match answer.map(|a| (a.decision, a.modified_description)) {
        Some((ApprovalChoice::Approve, _)) => {
            let _ = ctx.append_global(&format!(
                "- plan for \"{}\" approved by the person after two vetoes",
                task.title
            ));
            Ok(())
        }
        Some((ApprovalChoice::Modify, Some(edited))) if !edited.trim().is_empty() => {
            let subtasks: Vec<Subtask> = edited
                .lines()
                .map(|line| {
                    line.trim()
                        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
                        .trim()
                })
                .filter(|line| !line.is_empty())
                .map(|line| Subtask::new(line.to_string(), Vec::new()))
                .collect();
            let _ = ctx.append_global(&format!(
                "- plan for \"{}\" edited by the person ({} subtasks)",
                task.title,
                subtasks.len()
            ));
            s.tasks.update(task.id, |t| t.subtasks = subtasks);
            Ok(())
        }
        _ => {
            // The report names the vetoes as the root of the cancellation.
            let vetoed = Failure::new(
                FailureKind::PlanVetoed,
                format!("the top layer vetoed the plan twice: {}", vetoes.join("; ")),
            );
            let cancelled = Failure::new(
                FailureKind::Cancelled,
                "the person cancelled the task instead of approving the vetoed plan",
            )
            .caused_by(&vetoed)
            .with_scope(Scope::Task { task_id: task.id });
            s.tasks.update(task.id, |t| {
                t.status = TaskStatus::Cancelled;
                t.errors.push(TaskError::now(cancelled));
                t.result = Some(format!(
                    "Cancelled: the plan was vetoed twice and not approved ({})",
                    vetoes.join("; ")
                ));
            });
            Err(Stop::Cancelled)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_duplicates_are_the_same_work() {
        assert!(same_work(
            "Write hello.py that prints hello world",
            "write hello.py that prints hello world."
        ));
        assert!(same_work(
            "Create the file hello.py which prints hello world",
            "Create the file hello.py that prints hello world"
        ));
        assert!(!same_work(
            "Write the parser in parser.py",
            "Write tests for the parser in test_parser.py"
        ));
        assert!(covers(
            "Write the `fizzbuzz` function in `solution.py`",
            "Implement the function fizzbuzz in solution.py."
        ));
        assert!(!covers(
            "Answer from the offline try-out: nothing to do",
            "Port my whole app to Haskell"
        ));
    }
}
