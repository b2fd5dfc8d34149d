//! Models: one provider trait, the message types every provider speaks, and the
//! errors a model call can produce.
//!
//! Providers translate [`ModelRequest`] into their wire format (OpenAI-compatible chat
//! completions, Anthropic Messages, or a scripted replay) and back into
//! [`ModelResponse`]. Everything above this module (executors, planners, reviewers) only
//! sees these types.
//!
//! Map of the module:
//! - [`openai`], [`anthropic`], [`scripted`]: the providers; [`sse`] and [`http`] are
//!   what the HTTP ones share (event-stream parsing, error classification, key hygiene).
//! - [`resilient`]: [`ResilientModel`], a provider wrapped in step timeout, circuit
//!   breaker and call-level retry (`crate::recovery::{backoff, breaker}`).
//! - [`factory`]: [`from_config`], the provider the `llm` configuration describes.
//! - [`structured`]: [`ask_json`] and the plan / review / fix shapes.

pub mod anthropic;
mod error;
pub mod factory;
pub mod http;
pub mod metered;
pub mod openai;
pub mod redacting;
pub mod resilient;
pub mod scripted;
pub mod sse;
pub mod structured;

pub use anthropic::{AnthropicConfig, AnthropicProvider};
pub use error::ModelError;
pub use factory::from_config;
pub use http::ApiKey;
pub use openai::{OpenAiConfig, OpenAiProvider};
pub use resilient::ResilientModel;
pub use scripted::{Script, ScriptedProvider};
pub use structured::{Fix, Plan, Review, StructuredOutput, ask_json};

/// The models of the team's layers (`[llm.top]`, `[llm.mid]`, `[llm.bottom]` over `[llm]`);
/// layers with the same settings share one model, its breaker and its retries.
#[derive(Clone)]
pub struct TeamModels {
    pub top: std::sync::Arc<dyn ModelProvider>,
    pub mid: std::sync::Arc<dyn ModelProvider>,
    pub bottom: std::sync::Arc<dyn ModelProvider>,
}

impl TeamModels {
    /// One model for every layer.
    pub fn same(model: std::sync::Arc<dyn ModelProvider>) -> TeamModels {
        TeamModels {
            top: model.clone(),
            mid: model.clone(),
            bottom: model,
        }
    }

    pub fn of(&self, layer: crate::config::TeamLayer) -> &std::sync::Arc<dyn ModelProvider> {
        match layer {
            crate::config::TeamLayer::Top => &self.top,
            crate::config::TeamLayer::Mid => &self.mid,
            crate::config::TeamLayer::Bottom => &self.bottom,
        }
    }
}

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One message of a conversation with a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    User {
        content: String,
    },
    Assistant {
        #[serde(default)]
        content: String,
        #[serde(default, rename = "toolCalls", skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering the assistant's call with the same id.
    Tool {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        name: String,
        content: String,
        #[serde(default, rename = "isError")]
        is_error: bool,
    },
}

impl ChatMessage {
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::User {
            content: content.into(),
        }
    }
}

/// A tool call the model asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model sent them (a JSON object when the model behaves).
    pub arguments: serde_json::Value,
}

/// A tool offered to the model: its name, what it does, and a JSON schema of its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Everything a provider needs for one call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    pub system: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
}

impl ModelRequest {
    /// The characters of the request as the model sees them (system, messages, tool
    /// schemas): about four to a token.
    pub fn chars(&self) -> usize {
        let messages: usize = self
            .messages
            .iter()
            .map(|m| match m {
                ChatMessage::User { content } => content.len(),
                ChatMessage::Assistant {
                    content,
                    tool_calls,
                } => {
                    content.len()
                        + tool_calls
                            .iter()
                            .map(|c| c.name.len() + c.arguments.to_string().len())
                            .sum::<usize>()
                }
                ChatMessage::Tool { content, .. } => content.len(),
            } + 8)
            .sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.name.len() + t.description.len() + t.parameters.to_string().len())
            .sum();
        self.system.len() + messages + tools
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    /// The answer began calling its tools over again (a model caught in a loop): it was
    /// cut where the repetition began, and the calls before it are kept
    /// ([`cut_repeated_calls`]).
    RepeatedToolCalls,
    Other(String),
}

/// More tool calls than this in one answer is a model caught in a loop: no task needs
/// them at once, and the answer would otherwise run on to its token limit.
pub const MOST_TOOL_CALLS_IN_AN_ANSWER: usize = 32;

/// Where `calls` (one answer's, in order) stop being new: the first call that repeats an
/// earlier one exactly (same tool, same arguments), or the call past
/// [`MOST_TOOL_CALLS_IN_AN_ANSWER`]. A model looping on its tool calls repeats a call of
/// the same answer within a few calls; running it again would do nothing new.
pub fn repetition_starts(calls: &[(&str, &serde_json::Value)]) -> Option<usize> {
    let repeat = calls
        .iter()
        .enumerate()
        .position(|(i, call)| calls[..i].contains(call));
    match repeat {
        Some(at) if at < MOST_TOOL_CALLS_IN_AN_ANSWER => Some(at),
        _ if calls.len() > MOST_TOOL_CALLS_IN_AN_ANSWER => Some(MOST_TOOL_CALLS_IN_AN_ANSWER),
        _ => None,
    }
}

/// Cuts `response`'s tool calls where they begin repeating ([`repetition_starts`]); the
/// stop reason then says so.
pub fn cut_repeated_calls(response: &mut ModelResponse) {
    let calls: Vec<(&str, &serde_json::Value)> = response
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), &c.arguments))
        .collect();
    if let Some(at) = repetition_starts(&calls) {
        response.tool_calls.truncate(at);
        response.stop_reason = StopReason::RepeatedToolCalls;
    }
}

/// Tokens of one call as the provider reported them (both 0 when it reported none):
/// OpenAI's `usage` (streamed as the last chunk with `stream_options.include_usage`),
/// Anthropic's `message_start` / `message_delta` usage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Usage {
    pub fn is_reported(&self) -> bool {
        self.input_tokens + self.output_tokens > 0
    }
}

/// The assistant's answer to one call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

impl ModelResponse {
    /// The response as a message to append to the conversation.
    pub fn to_message(&self) -> ChatMessage {
        ChatMessage::Assistant {
            content: self.text.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Receives streamed text as it arrives, so whiteboards can show live output.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(&str) + Send);

/// One model behind one interface. Implementations do a single HTTP exchange (or a
/// scripted step) per call; retries and the circuit breaker wrap them from outside.
#[async_trait]
pub trait ModelProvider: Send + Sync {
    /// A short name for logs, errors and breaker events, e.g. `openai` or `anthropic`.
    fn name(&self) -> &str;

    /// Waits until a call may be made: a task paused at its token limit waits here for
    /// the person. Callers that bound a call by a step timeout await this first, outside
    /// the timeout, since waiting for a person is never bound by one.
    async fn ready(&self) -> Result<(), ModelError> {
        Ok(())
    }

    /// Sends one request and returns the assistant's answer, streaming text deltas to `on_delta`.
    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_stop_being_new_at_the_first_exact_repeat_or_past_the_most() {
        let (a, b) = (json!({"path": "a.py"}), json!({"path": "b.py"}));
        // The same call again, even after another: a loop from there.
        assert_eq!(
            repetition_starts(&[("file_read", &a), ("file_read", &b), ("file_read", &a)]),
            Some(2)
        );
        // Another tool, or other arguments, is a new call.
        assert_eq!(
            repetition_starts(&[("file_read", &a), ("file_write", &a), ("file_read", &b)]),
            None
        );
        let many: Vec<serde_json::Value> = (0..40).map(|i| json!({ "n": i })).collect();
        let calls: Vec<(&str, &serde_json::Value)> = many.iter().map(|v| ("bash", v)).collect();
        assert_eq!(
            repetition_starts(&calls[..MOST_TOOL_CALLS_IN_AN_ANSWER]),
            None
        );
        assert_eq!(
            repetition_starts(&calls),
            Some(MOST_TOOL_CALLS_IN_AN_ANSWER)
        );
    }
}
