//! The last thing before a prompt leaves: every secret in it redacted
//! ([`crate::redact`]), whatever put it there (a test's output quoting the environment,
//! a file the model read, a check's failure).

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;

use super::{ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse};
use crate::redact;

/// Wraps the provider that talks to the network.
pub struct RedactingModel {
    inner: Arc<dyn ModelProvider>,
}

impl RedactingModel {
    pub fn new(inner: Arc<dyn ModelProvider>) -> RedactingModel {
        RedactingModel { inner }
    }
}

/// `request` with every secret redacted; borrowed when there was none.
pub fn redacted(request: &ModelRequest) -> Cow<'_, ModelRequest> {
    let clean = |text: &str| matches!(redact::text(text), Cow::Borrowed(_));
    let all_clean = clean(&request.system)
        && request.messages.iter().all(|m| match m {
            ChatMessage::User { content } | ChatMessage::Tool { content, .. } => clean(content),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => clean(content) && tool_calls.iter().all(|c| clean(&c.arguments.to_string())),
        });
    if all_clean {
        return Cow::Borrowed(request);
    }
    let mut request = request.clone();
    request.system = redact::string(std::mem::take(&mut request.system));
    for message in &mut request.messages {
        match message {
            ChatMessage::User { content } | ChatMessage::Tool { content, .. } => {
                *content = redact::string(std::mem::take(content));
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                *content = redact::string(std::mem::take(content));
                for call in tool_calls {
                    let text = call.arguments.to_string();
                    if let Ok(value) = serde_json::from_str(&redact::text(&text)) {
                        call.arguments = value;
                    }
                }
            }
        }
    }
    Cow::Owned(request)
}

#[async_trait]
impl ModelProvider for RedactingModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn ready(&self) -> Result<(), ModelError> {
        self.inner.ready().await
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        self.inner.complete(&redacted(request), on_delta).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_tool_result_does_not_reach_the_prompt() {
        redact::register("sk-live-0011223344556677");
        let request = ModelRequest {
            system: "You write code.".into(),
            messages: vec![
                ChatMessage::user("Fix the test"),
                ChatMessage::Tool {
                    tool_call_id: "1".into(),
                    name: "bash".into(),
                    content: "FAILED: env OPENAI_API_KEY=sk-live-0011223344556677".into(),
                    is_error: true,
                },
            ],
            ..ModelRequest::default()
        };
        let sent = redacted(&request);
        assert!(matches!(sent, Cow::Owned(_)));
        let ChatMessage::Tool { content, .. } = &sent.messages[1] else {
            unreachable!()
        };
        assert_eq!(content, "FAILED: env OPENAI_API_KEY=[REDACTED]");
        let clean = ModelRequest {
            messages: vec![ChatMessage::user("hello")],
            ..ModelRequest::default()
        };
        assert!(matches!(redacted(&clean), Cow::Borrowed(_)));
    }
}
