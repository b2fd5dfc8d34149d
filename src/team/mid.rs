//! Mid agents: take a task and coordinate it (see [`super::coordinate`]), note what
//! their bottom agents report and escalate, answer status queries, and keep what their
//! peers tell them of the files their tasks write ([`super::peers`]).

use std::sync::Arc;

use async_trait::async_trait;
use tracing::Instrument;

use super::escalate::EscalationNotice;
use super::peers::{Claims, PeerEvent, PeerNews};
use super::{Services, TaskAssignment};
use crate::model::metered;
use crate::runtime::{
    AgentBehavior, AgentContext, AgentError, Message, MessageKind, PeerHelpAnswer,
};

pub struct MidBehavior {
    services: Arc<Services>,
    /// The files being written, as this mid knows: its tasks' claims and its peers'.
    claims: Arc<Claims>,
}

impl MidBehavior {
    /// `claims`: what this mid knows of the files being written (its predecessor's, for
    /// a replacement: [`Services::mid_claims`]).
    pub fn new(services: Arc<Services>, claims: Arc<Claims>) -> Self {
        MidBehavior { services, claims }
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
                match message.body::<TaskAssignment>() {
                    Ok(TaskAssignment { task_id: task }) => {
                        let (ctx, services, claims) =
                            (ctx.clone(), self.services.clone(), self.claims.clone());
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
                                super::coordinate::run(ctx, services, task, claims).await
                            })
                            .instrument(span),
                        );
                    }
                    Err(e) => {
                        let from = super::roles::agent_name(&self.services, message.from);
                        let _ = ctx.append_own_board(&format!("- from {from}: {e}"));
                    }
                }
            }
            MessageKind::IssueEscalation => {
                let said = match message.body::<EscalationNotice>() {
                    Ok(notice) => notice.message,
                    Err(e) => e.to_string(),
                };
                let _ = ctx.append_own_board(&format!(
                    "- escalation from {}: {said}",
                    super::roles::agent_name(&self.services, message.from),
                ));
            }
            MessageKind::PeerHelpRequest => {
                let _ = ctx.reply_body(
                    &message,
                    &PeerHelpAnswer::declined(
                        "mid agents coordinate; they do not take over subtasks",
                    ),
                );
            }
            // A late answer to a claim this mid stopped waiting for.
            MessageKind::PeerCoordination if message.in_reply_to.is_some() => {}
            MessageKind::PeerCoordination => match message.body::<PeerNews>() {
                Ok(news) => {
                    if let Some(answer) = self.claims.hear(&news) {
                        let _ = ctx.reply_body(&message, &answer);
                    } else if news.event == PeerEvent::TaskTaken {
                        let _ = ctx.append_own_board(&format!(
                            "- {} took up \"{}\"",
                            news.coordinator, news.title
                        ));
                    }
                }
                Err(e) => {
                    let from = super::roles::agent_name(&self.services, message.from);
                    let _ = ctx.append_own_board(&format!("- from {from}: {e}"));
                }
            },
            MessageKind::StatusQuery => {
                let _ = ctx.reply_body(&message, &ctx.handle.info());
            }
            other => {
                let from = super::roles::agent_name(&self.services, message.from);
                let _ = ctx.append_own_board(&format!("- {} from {from}", other.as_str()));
            }
        }
        Ok(())
    }
}
