//! Top agents: review plans and sign or veto them (a model review, or fixed rules with
//! `governance.review = "rules"`), oversee the tasks under way (progress reports,
//! blockers, the final report: [`super::progress`]), take note of critical escalations,
//! and keep the global picture on their whiteboards.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tracing::Instrument;

use super::Services;
use super::coordinate::TaskEnded;
use super::escalate::EscalationNotice;
use super::progress::{SubtaskEnded, TopOversight, WorkConflict};
use crate::config::ReviewMode;
use crate::config::TeamLayer;
use crate::model::metered;
use crate::model::structured::{Review, ask_json, noting_repairs};
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::oversight::{Evaluation, Verdict};
use crate::runtime::{
    AgentBehavior, AgentContext, AgentError, Message, MessageKind, SignatureRequest,
};

pub struct TopBehavior {
    services: Arc<Services>,
    oversight: TopOversight,
}

impl TopBehavior {
    pub fn new(services: Arc<Services>) -> Self {
        TopBehavior {
            services,
            oversight: TopOversight,
        }
    }
}

#[async_trait]
impl AgentBehavior for TopBehavior {
    fn responsibilities(&self) -> String {
        super::roles::TOP.to_string()
    }

    async fn initialize(&mut self, ctx: &AgentContext) -> Result<(), AgentError> {
        let extra = ctx
            .handle
            .config()
            .power
            .map(|p| format!("{:?}, vote weight {}\n", p.power_type, p.vote_weight))
            .unwrap_or_default();
        ctx.write_intro_board(&extra)
            .map_err(|e| AgentError::Behavior {
                agent: ctx.id(),
                message: e.to_string(),
            })
    }

    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        let note = |text: String| {
            let _ = ctx.append_own_board(&text);
        };
        match message.kind {
            MessageKind::SignatureRequest => {
                let decision_id = match message.body::<SignatureRequest>() {
                    Ok(request) => request.decision_id,
                    Err(e) => {
                        note(format!("- from {}: {e}", message.from));
                        return Ok(());
                    }
                };
                let (ctx, services) = (ctx.clone(), self.services.clone());
                // Usage hook: the review's model calls count for the plan's task.
                let scope = metered::UsageScope {
                    task: ctx
                        .governance
                        .get(decision_id)
                        .and_then(|d| d.content["taskId"].as_str().and_then(|id| id.parse().ok())),
                    agent: Some(ctx.id()),
                    subtask: None,
                };
                let span = tracing::info_span!(
                    "plan_review",
                    decision = %decision_id,
                    agent = %ctx.handle.name()
                );
                // Reviews call the model: keep the mailbox loop free for heartbeats.
                tokio::spawn(
                    metered::scoped(scope, async move {
                        review_and_vote(&ctx, &services, decision_id).await
                    })
                    .instrument(span),
                );
            }
            MessageKind::IssueEscalation if message.payload.get("blocker").is_some() => {
                let verdict = match message.body::<SubtaskEnded>() {
                    Ok(report) => self.oversight.blocker(ctx, &self.services, &report),
                    Err(e) => Evaluation {
                        verdict: Verdict::Continue,
                        reason: e.to_string(),
                    },
                };
                let _ = ctx.reply_body(&message, &verdict);
            }
            MessageKind::ConflictReport => match message.body::<WorkConflict>() {
                Ok(conflict) => {
                    let ruling = self.oversight.conflict(ctx, &self.services, &conflict);
                    let _ = ctx.reply_body(&message, &ruling);
                }
                Err(e) => note(format!("- {e}")),
            },
            MessageKind::IssueEscalation => {
                let said = match message.body::<EscalationNotice>() {
                    Ok(notice) => notice.message,
                    Err(e) => e.to_string(),
                };
                let text = format!(
                    "- escalation from {}: {said}",
                    super::roles::agent_name(&self.services, message.from),
                );
                note(text.clone());
                let _ = ctx.append_global(&text);
            }
            MessageKind::ProgressReport if message.payload.get("subtaskId").is_some() => {
                match message.body::<SubtaskEnded>() {
                    Ok(report) => self.oversight.progress(ctx, &self.services, &report),
                    Err(e) => note(format!("- {e}")),
                }
            }
            MessageKind::ProgressReport if message.payload.get("subtasks").is_some() => {
                // A mid's last report on a task: the task ended, the top reports on it.
                match message.body::<TaskEnded>() {
                    Ok(end) => self.oversight.finished(ctx, &self.services, end.task_id),
                    Err(e) => note(format!("- {e}")),
                }
            }
            MessageKind::StatusQuery => {
                let _ = ctx.reply_body(&message, &ctx.handle.info());
            }
            other => {
                let from = super::roles::agent_name(&self.services, message.from);
                note(format!("- {} from {from}", other.as_str()))
            }
        }
        Ok(())
    }
}

async fn review_and_vote(ctx: &AgentContext, services: &Arc<Services>, decision_id: uuid::Uuid) {
    let Some(decision) = ctx.governance.get(decision_id) else {
        return;
    };
    let verdict = match (
        services.config.governance.review,
        services.model(TeamLayer::Top),
    ) {
        // A plan that is the task itself, undivided, has nothing to review: it is what
        // the person asked for, and a model call would only risk a baseless veto.
        _ if is_the_task_itself(&decision.content) => Review {
            approve: true,
            reason: "the plan is the task itself, in one subtask".into(),
        },
        (ReviewMode::Model, Some(model)) => {
            let request = ModelRequest {
                system: ctx.system_prompt(super::roles::TOP),
                messages: vec![ChatMessage::user(review_prompt(&decision.content))],
                tools: Vec::new(),
                max_tokens: 512,
                temperature: services.temperature(TeamLayer::Top),
            };
            let (review, repairs) =
                noting_repairs(ask_json::<Review>(model.as_ref(), &request)).await;
            if let Some(task) = decision.content["taskId"]
                .as_str()
                .and_then(|id| id.parse().ok())
            {
                super::check::record_repairs(services, task, &repairs);
            }
            match review {
                Ok(review) => review,
                Err(e) => {
                    tracing::warn!(agent = %ctx.id(), "model review failed, reviewing by rules: {e}");
                    rules_review(&decision.content, services.config.governance.max_subtasks)
                }
            }
        }
        _ => rules_review(&decision.content, services.config.governance.max_subtasks),
    };
    let result = if verdict.approve {
        ctx.governance.sign(decision_id, ctx.id())
    } else {
        ctx.governance
            .veto(decision_id, ctx.id(), verdict.reason.clone())
    };
    let line = match &result {
        Ok(_) if verdict.approve => format!("- signed \"{}\": {}", decision.title, verdict.reason),
        Ok(_) => format!("- vetoed \"{}\": {}", decision.title, verdict.reason),
        Err(e) => format!("- could not vote on \"{}\": {e}", decision.title),
    };
    let _ = ctx.append_own_board(&line);
}

/// Whether the plan is one subtask carrying the task verbatim.
fn is_the_task_itself(plan: &Value) -> bool {
    let subtasks = plan["subtasks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    match (subtasks, plan["task"].as_str()) {
        ([only], Some(task)) if !task.trim().is_empty() => only["description"]
            .as_str()
            .is_some_and(|d| d.contains(task.trim())),
        _ => false,
    }
}

/// The model review: the plan against the task, and a veto that says what to change.
fn review_prompt(plan: &Value) -> String {
    let subtasks: String = plan["subtasks"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .map(|(i, st)| {
            let deps = st["dependsOn"]
                .as_array()
                .filter(|d| !d.is_empty())
                .map(|d| {
                    format!(
                        " (after {})",
                        d.iter()
                            .map(|n| (n.as_u64().unwrap_or(0) + 1).to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })
                .unwrap_or_default();
            format!(
                "{}. {}{deps}\n",
                i + 1,
                st["description"].as_str().unwrap_or("")
            )
        })
        .collect();
    format!(
        "Review this plan against the task.\n\nTask:\n{}\n\nPlan:\n{subtasks}\n\
         Approve when the subtasks together do the whole task and nothing it did not ask for. \
         Veto only for a concrete problem: a part of the task missing, work not asked for, two subtasks doing the same work, \
         or a subtask that cannot be done. When you veto, the reason must say what to change.",
        plan["task"]
            .as_str()
            .or(plan["title"].as_str())
            .unwrap_or("")
    )
}

/// The cheap review: a plan needs 1..=`max_subtasks` subtasks, each with a real
/// description, and dependencies that point at earlier subtasks.
pub fn rules_review(plan: &Value, max_subtasks: usize) -> Review {
    let subtasks = plan["subtasks"].as_array().cloned().unwrap_or_default();
    let reject = |reason: String| Review {
        approve: false,
        reason,
    };
    if subtasks.is_empty() {
        return reject("the plan has no subtasks".into());
    }
    if subtasks.len() > max_subtasks {
        return reject(format!(
            "the plan has {} subtasks; at most {max_subtasks} are allowed (governance.maxSubtasks)",
            subtasks.len()
        ));
    }
    for (i, subtask) in subtasks.iter().enumerate() {
        let description = subtask["description"].as_str().unwrap_or("").trim();
        if description.len() < 3 {
            return reject(format!("subtask {} has no real description", i + 1));
        }
        let deps = subtask["dependsOn"].as_array().cloned().unwrap_or_default();
        if deps
            .iter()
            .any(|d| d.as_u64().is_none_or(|d| d as usize >= i))
        {
            return reject(format!(
                "subtask {} depends on a later or unknown subtask",
                i + 1
            ));
        }
    }
    Review {
        approve: true,
        reason: format!(
            "{} concrete subtasks, dependencies in order",
            subtasks.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_approve_sound_plans_and_veto_others_with_a_reason() {
        let good = json!({ "subtasks": [ { "description": "write lib.rs" }, { "description": "write tests", "dependsOn": [0] } ] });
        assert!(rules_review(&good, 20).approve);
        let empty = json!({ "subtasks": [] });
        assert_eq!(rules_review(&empty, 20).reason, "the plan has no subtasks");
        let forward = json!({ "subtasks": [ { "description": "a thing", "dependsOn": [1] }, { "description": "b thing" } ] });
        assert!(!rules_review(&forward, 20).approve);
        assert!(!rules_review(&good, 1).approve);
    }
}
