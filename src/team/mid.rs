//! Mid agents: take a task and coordinate it (see [`super::coordinate`]), note what
//! their bottom agents report and escalate, and answer status queries.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tracing::Instrument;

use super::Services;
use crate::model::metered;
use crate::runtime::{AgentBehavior, AgentContext, AgentError, Message, MessageKind, TaskId};

pub struct MidBehavior {
    services: Arc<Services>,
}

impl MidBehavior {
    pub fn new(services: Arc<Services>) -> Self {
        MidBehavior { services }
    }
}

#[async_trait]
impl AgentBehavior for MidBehavior {
    fn responsibilities(&self) -> String {
        super::roles::MID.to_string()
    }

    async fn initialize(&mut self, ctx: &AgentContext) -> Result<(), AgentError> {
        let extra = String::new();
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
        match message.kind {
            MessageKind::TaskAssign => {
                let task: Option<TaskId> = message.payload["taskId"]
                    .as_str()
                    .and_then(|s| s.parse().ok());
                match task {
                    Some(task) => {
                        let (ctx, services) = (ctx.clone(), self.services.clone());
                        // Usage hook: the coordinator's model calls count for this task.
                        let scope = metered::UsageScope {
                            task: Some(task),
                            agent: Some(ctx.id()),
                            subtask: None,
                        };
                        // Every line logged while coordinating says which task it is about.
                        let span =
                            tracing::info_span!("task", id = %task, agent = %ctx.handle.name());
                        tokio::spawn(
                            metered::scoped(scope, async move {
                                super::coordinate::run(ctx, services, task).await
                            })
                            .instrument(span),
                        );
                    }
                    None => {
                        let from = super::roles::agent_name(&self.services, message.from);
                        let _ = ctx
                            .append_own_board(&format!("- unreadable task assignment from {from}"));
                    }
                }
            }
            MessageKind::IssueEscalation => {
                let _ = ctx.append_own_board(&format!(
                    "- escalation from {}: {}",
                    super::roles::agent_name(&self.services, message.from),
                    message.payload["message"]
                        .as_str()
                        .unwrap_or("(no message)")
                ));
            }
            MessageKind::PeerHelpRequest => {
                let _ = ctx.reply(
                    &message,
                    MessageKind::PeerHelpResponse,
                    json!({ "accepted": false, "reason": "mid agents coordinate; they do not take over subtasks" }),
                );
            }
            MessageKind::StatusQuery => {
                if let Ok(info) = serde_json::to_value(ctx.handle.info()) {
                    let _ = ctx.reply(&message, MessageKind::ProgressReport, info);
                }
            }
            other => {
                let from = super::roles::agent_name(&self.services, message.from);
                let _ = ctx.append_own_board(&format!("- {} from {from}", other.as_str()));
            }
        }
        Ok(())
    }
}
