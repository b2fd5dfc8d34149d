//! Behaviour every agent shares before its layer's logic is plugged in: answering status
//! queries and keeping its whiteboard current with what it was told.

use std::sync::Arc;

use async_trait::async_trait;

use super::task::{AgentBehavior, AgentContext};
use crate::records::{AgentError, Message, MessageKind, PeerHelpAnswer};

/// Answers `status_query` with the agent's info, notes warnings and progress on its own
/// whiteboard, and acknowledges anything else it cannot act on in its board.
#[derive(Clone, Debug, Default)]
pub struct CoreBehavior {
    responsibilities: String,
}

impl CoreBehavior {
    pub fn new(responsibilities: impl Into<String>) -> Self {
        CoreBehavior {
            responsibilities: responsibilities.into(),
        }
    }
}

#[async_trait]
impl AgentBehavior for CoreBehavior {
    fn responsibilities(&self) -> String {
        self.responsibilities.clone()
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
        let failed = |e: &dyn std::fmt::Display| AgentError::Behavior {
            agent: ctx.id(),
            message: e.to_string(),
        };
        match message.kind {
            MessageKind::StatusQuery => {
                ctx.reply_body(&message, &ctx.handle.info())
                    .map_err(|e| failed(&e))?;
            }
            MessageKind::Warning | MessageKind::ProgressReport | MessageKind::ErrorReport => {
                let line = format!(
                    "- {} from {}: {}",
                    message.kind.as_str(),
                    message.from,
                    message.payload
                );
                ctx.append_own_board(&line).map_err(|e| failed(&e))?;
            }
            other => {
                ctx.append_own_board(&format!(
                    "- received {} from {} (no handler at this layer yet)",
                    other.as_str(),
                    message.from
                ))
                .map_err(|e| failed(&e))?;
                if message.kind == MessageKind::SignatureRequest
                    || message.kind == MessageKind::PeerHelpRequest
                {
                    // Answer requests so a waiting requester is never left to time out.
                    ctx.reply_body(
                        &message,
                        &PeerHelpAnswer::declined("not handled by this agent"),
                    )
                    .map_err(|e| failed(&e))?;
                }
            }
        }
        Ok(())
    }
}
