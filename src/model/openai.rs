//! The OpenAI-compatible chat completions provider (`{baseUrl}/chat/completions`).
//!
//! One wire format serves OpenAI itself and the local servers that imitate it (Ollama,
//! vLLM, llama.cpp server, LM Studio). Calls stream by default: text deltas go to the
//! sink as they arrive, and tool calls, which arrive as fragments keyed by `index`
//! (id and name first, then pieces of the argument string), are put back together.
//! A server that answers a streaming request with plain JSON is understood too.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::Stream;
use serde_json::{Value, json};

use super::http::{self, ApiKey, ErrorInfo};
use super::sse::SseStream;
use super::{
    ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage,
};

pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Used when neither the request nor the configuration sets `max_tokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// An answer that ends with one unit written over and over is a model caught in a loop,
/// which would otherwise run on until the token limit: `\u0020` written over and over
/// into a tool call's arguments, or a paragraph and a code block written again and
/// again. The stream is then stopped and the call fails as malformed, which the
/// call-level retry sends again. A short unit (at most [`LOOPING_SHORT_UNIT_BYTES`])
/// counts once the answer's last [`LOOPING_TAIL_BYTES`] are nothing else; a longer one,
/// up to [`LOOPING_UNIT_MAX_BYTES`], once the answer ends with it
/// [`LOOPING_LONG_REPEATS`] times (no answer writes the same long block three times
/// running).
const LOOPING_TAIL_BYTES: usize = 2_400;
const LOOPING_SHORT_UNIT_BYTES: usize = 400;
const LOOPING_UNIT_MAX_BYTES: usize = 4_000;
const LOOPING_LONG_REPEATS: usize = 3;
/// Looked for each time the answer has grown by this much.
const LOOP_CHECK_EVERY_BYTES: usize = 256;

/// The unit `text` ends repeating, when it ends with one unit over and over (see
/// [`LOOPING_TAIL_BYTES`]).
fn looping_unit(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let period = (1..=LOOPING_UNIT_MAX_BYTES).find(|&p| {
        let window = if p <= LOOPING_SHORT_UNIT_BYTES {
            LOOPING_TAIL_BYTES
        } else {
            p * LOOPING_LONG_REPEATS
        };
        bytes.len() >= window && {
            let tail = &bytes[bytes.len() - window..];
            tail[p..] == tail[..window - p]
        }
    })?;
    // A long period may be a short unit many times over (`\u0020` × 67): the unit is the
    // shortest one that makes it up.
    let unit = &bytes[bytes.len() - period..];
    let shortest = (1..period)
        .find(|&q| period % q == 0 && unit[q..] == unit[..period - q])
        .unwrap_or(period);
    Some(String::from_utf8_lossy(&unit[period - shortest..]).into_owned())
}

/// Settings of one OpenAI-compatible endpoint.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// The provider's name in logs, errors and breaker events.
    pub name: String,
    pub base_url: String,
    pub model: String,
    /// Sent as a bearer token when present; local servers need none.
    pub api_key: Option<ApiKey>,
    pub stream: bool,
    /// Ask for a final usage chunk (`stream_options.include_usage`). Answers without it
    /// are fine either way.
    pub include_usage: bool,
    /// Used when the request's `max_tokens` is 0.
    pub max_tokens: u32,
    /// Used when the request sets no temperature.
    pub temperature: Option<f32>,
    /// A whole-request timeout; `None` leaves timing to the step timeout around the call.
    pub timeout: Option<Duration>,
    /// How long the server may stay silent (`None`: only the step timeout judges).
    pub silence: Option<super::http::Silence>,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiConfig {
            name: "openai".to_string(),
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            stream: true,
            include_usage: true,
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: None,
            timeout: None,
            silence: None,
        }
    }
}

/// A provider speaking the chat completions API.
pub struct OpenAiProvider {
    config: OpenAiConfig,
    url: String,
    client: reqwest::Client,
}

impl OpenAiProvider {
    pub fn new(config: OpenAiConfig) -> Result<Self, ModelError> {
        let base = http::normalise_base_url(&config.base_url)?;
        Ok(OpenAiProvider {
            url: format!("{base}/chat/completions"),
            client: http::build_client()?,
            config,
        })
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(json!({ "role": "system", "content": request.system }));
        }
        messages.extend(request.messages.iter().map(message_to_wire));
        let max_tokens = match request.max_tokens {
            0 => self.config.max_tokens,
            n => n,
        };
        let mut body = json!({
            "model": self.config.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "stream": self.config.stream,
        });
        if let Some(temperature) = request.temperature.or(self.config.temperature) {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({ "type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters } })
                })
                .collect();
        }
        if self.config.stream && self.config.include_usage {
            body["stream_options"] = json!({ "include_usage": true });
        }
        body
    }

    fn malformed(&self, message: impl Into<String>) -> ModelError {
        ModelError::Malformed {
            provider: self.config.name.clone(),
            message: message.into(),
        }
    }

    /// Reads an SSE answer to the end (`[DONE]` or end of stream).
    pub async fn read_stream<S, E>(
        &self,
        bytes: S,
        on_delta: DeltaSink<'_>,
        map_err: impl Fn(E) -> ModelError,
    ) -> Result<ModelResponse, ModelError>
    where
        S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    {
        let mut events = SseStream::new(bytes);
        let mut state = StreamState::default();
        let mut saw_done = false;
        while let Some(event) = events.next_event().await.map_err(&map_err)? {
            let data = event.data.trim();
            if data == "[DONE]" {
                saw_done = true;
                break;
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                self.malformed(format!(
                    "stream chunk is not JSON ({e}): {}",
                    http::excerpt(data, self.config.api_key.as_ref())
                ))
            })?;
            if chunk.get("error").is_some() {
                return Err(self.stream_error(&chunk, data));
            }
            state.apply(&chunk, on_delta);
            if let Some(unit) = state.looping() {
                let shown: String = unit.chars().take(120).collect();
                let more = if shown.len() < unit.len() { "…" } else { "" };
                return Err(self.malformed(format!(
                    "the model was caught in a loop, writing {shown:?}{more} over and over; its answer was stopped"
                )));
            }
            // Calls that began repeating end the answer here: what is left would only
            // repeat them until the token limit (the calls are cut in `into_response`).
            if state.calls_repeat() {
                tracing::info!(
                    provider = %self.config.name,
                    "the model began repeating its tool calls; its answer was stopped"
                );
                return state.into_response(&self.config.name);
            }
        }
        if !saw_done && state.finish_reason.is_none() {
            return Err(ModelError::Connection {
                provider: self.config.name.clone(),
                message: "the stream ended before the answer was complete".to_string(),
            });
        }
        state.into_response(&self.config.name)
    }

    fn stream_error(&self, chunk: &Value, data: &str) -> ModelError {
        let info = ErrorInfo::from_value(chunk);
        let status = http::status_for_stream_error(&info);
        http::classify(
            &self.config.name,
            status,
            &info,
            None,
            data,
            self.config.api_key.as_ref(),
        )
    }

    /// Parses a non-streaming answer.
    pub fn parse_body(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            let text = String::from_utf8_lossy(body);
            self.malformed(format!(
                "answer is not JSON ({e}): {}",
                http::excerpt(&text, self.config.api_key.as_ref())
            ))
        })?;
        if value.get("error").is_some() {
            return Err(self.stream_error(&value, &String::from_utf8_lossy(body)));
        }
        let choice = value
            .get("choices")
            .and_then(|c| c.get(0))
            .ok_or_else(|| self.malformed("answer has no choices"))?;
        let message = choice
            .get("message")
            .ok_or_else(|| self.malformed("answer's choice has no message"))?;
        let mut state = StreamState {
            text: content_text(message.get("content")),
            finish_reason: choice
                .get("finish_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..StreamState::default()
        };
        if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
            state.apply_tool_call_deltas(calls);
        }
        if let Some(usage) = value.get("usage") {
            state.apply_usage(usage);
        }
        state.into_response(&self.config.name)
    }
}

#[async_trait]
impl ModelProvider for OpenAiProvider {
    fn name(&self) -> &str {
        &self.config.name
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let name = self.config.name.as_str();
        tracing::debug!(
            provider = name,
            model = %self.config.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "sending chat completion"
        );
        let mut builder = self
            .client
            .post(&self.url)
            .json(&self.request_body(request));
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        http::send_and_read(
            self,
            name,
            builder,
            self.config.timeout,
            self.config.api_key.as_ref(),
            self.config
                .silence
                .map(|s| (s.first_byte_for(request), s.idle)),
            on_delta,
        )
        .await
    }
}

impl http::AnswerReader for OpenAiProvider {
    fn stream_requested(&self) -> bool {
        self.config.stream
    }

    async fn read_stream<S, E>(
        &self,
        bytes: S,
        on_delta: DeltaSink<'_>,
        map_err: impl Fn(E) -> ModelError,
    ) -> Result<ModelResponse, ModelError>
    where
        S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    {
        OpenAiProvider::read_stream(self, bytes, on_delta, map_err).await
    }

    fn parse_body(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        OpenAiProvider::parse_body(self, body)
    }
}

fn message_to_wire(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::User { content } => json!({ "role": "user", "content": content }),
        ChatMessage::Assistant {
            content,
            tool_calls,
        } => {
            let mut wire = json!({ "role": "assistant", "content": content });
            if !tool_calls.is_empty() {
                if content.is_empty() {
                    wire["content"] = Value::Null;
                }
                wire["tool_calls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({ "id": call.id, "type": "function", "function": {
                            "name": call.name, "arguments": arguments_to_wire(&call.arguments) } })
                    })
                    .collect();
            }
            wire
        }
        ChatMessage::Tool {
            tool_call_id,
            content,
            is_error,
            ..
        } => {
            // The API has no error flag for tool results; say it in the text.
            let content = if *is_error {
                format!("Error: {content}")
            } else {
                content.clone()
            };
            json!({ "role": "tool", "tool_call_id": tool_call_id, "content": content })
        }
    }
}

/// Arguments go back as the string the model sent: a kept-as-text invalid argument
/// string is sent verbatim, anything else serialised.
fn arguments_to_wire(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// Message content is a string, null, or (some servers) an array of text parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// One tool call being assembled from its fragments.
#[derive(Debug, Default)]
struct ToolCallParts {
    id: String,
    name: String,
    arguments: String,
}

/// Everything accumulated from the chunks so far.
#[derive(Debug, Default)]
struct StreamState {
    text: String,
    calls: BTreeMap<usize, ToolCallParts>,
    finish_reason: Option<String>,
    usage: Usage,
    /// How long the answer was when it was last looked at for a loop.
    loop_checked_at: usize,
    /// How many calls had begun when the complete ones were last looked at for a repeat.
    calls_checked_at: usize,
}

impl StreamState {
    /// The unit the text or a tool call's arguments end repeating, looked at each time
    /// the answer has grown by [`LOOP_CHECK_EVERY_BYTES`].
    fn looping(&mut self) -> Option<String> {
        let length = self.text.len()
            + self
                .calls
                .values()
                .map(|c| c.arguments.len())
                .sum::<usize>();
        if length < self.loop_checked_at + LOOP_CHECK_EVERY_BYTES {
            return None;
        }
        self.loop_checked_at = length;
        std::iter::once(self.text.as_str())
            .chain(self.calls.values().map(|c| c.arguments.as_str()))
            .find_map(looping_unit)
    }

    /// Whether the complete tool calls (all but the one still arriving) began repeating
    /// ([`super::repetition_starts`]), looked at each time a new call begins.
    fn calls_repeat(&mut self) -> bool {
        if self.calls.len() <= self.calls_checked_at.max(1) {
            return false;
        }
        self.calls_checked_at = self.calls.len();
        let complete: Vec<(String, Value)> = self
            .calls
            .values()
            .take(self.calls.len() - 1)
            .map(|c| (c.name.clone(), http::parse_tool_arguments(&c.arguments)))
            .collect();
        let complete: Vec<(&str, &Value)> = complete.iter().map(|(n, a)| (n.as_str(), a)).collect();
        super::repetition_starts(&complete).is_some()
    }

    fn apply(&mut self, chunk: &Value, on_delta: DeltaSink<'_>) {
        if let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) {
            if let Some(delta) = choice.get("delta") {
                let text = content_text(delta.get("content"));
                if !text.is_empty() {
                    on_delta(&text);
                    self.text.push_str(&text);
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    self.apply_tool_call_deltas(calls);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        }
        if let Some(usage) = chunk.get("usage") {
            self.apply_usage(usage);
        }
    }

    fn apply_tool_call_deltas(&mut self, deltas: &[Value]) {
        for delta in deltas {
            let id = delta.get("id").and_then(Value::as_str).unwrap_or_default();
            let index = self.index_for(delta, id);
            let parts = self.calls.entry(index).or_default();
            if parts.id.is_empty() {
                parts.id = id.to_string();
            }
            let function = delta.get("function");
            // The name comes once, whole; servers that repeat it must not double it.
            if parts.name.is_empty() {
                if let Some(name) = function.and_then(|f| f.get("name")).and_then(Value::as_str) {
                    parts.name = name.to_string();
                }
            }
            match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(fragment)) => parts.arguments.push_str(fragment),
                // Some servers send the arguments as an object, whole.
                Some(object @ Value::Object(_)) => parts.arguments = object.to_string(),
                _ => {}
            }
        }
    }

    /// The accumulation slot of a tool-call delta: its `index`, or for servers that omit
    /// it, the call with the same id, a new slot for a new id, or the latest call.
    fn index_for(&self, delta: &Value, id: &str) -> usize {
        if let Some(index) = delta.get("index").and_then(Value::as_u64) {
            return usize::try_from(index).unwrap_or(usize::MAX);
        }
        let next = self.calls.keys().next_back().map_or(0, |k| k + 1);
        if id.is_empty() {
            return next.saturating_sub(1);
        }
        self.calls
            .iter()
            .find(|(_, parts)| parts.id == id)
            .map_or(next, |(index, _)| *index)
    }

    fn apply_usage(&mut self, usage: &Value) {
        let field = |name| usage.get(name).and_then(Value::as_u64);
        if let Some(input) = field("prompt_tokens") {
            self.usage.input_tokens = input;
        }
        if let Some(output) = field("completion_tokens") {
            self.usage.output_tokens = output;
        }
    }

    fn into_response(self, provider: &str) -> Result<ModelResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, parts) in self.calls {
            if parts.name.is_empty() {
                return Err(ModelError::Malformed {
                    provider: provider.to_string(),
                    message: format!("tool call #{index} has no function name"),
                });
            }
            let id = if parts.id.is_empty() {
                format!("call_{}", uuid::Uuid::new_v4().simple())
            } else {
                parts.id
            };
            tool_calls.push(ToolCall {
                id,
                name: parts.name,
                arguments: http::parse_tool_arguments(&parts.arguments),
            });
        }
        let stop_reason = match self.finish_reason.as_deref() {
            // Some local servers say "stop" even when they called tools.
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
        };
        let mut response = ModelResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
            stop_reason,
        };
        super::cut_repeated_calls(&mut response);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolSpec;
    use bytes::Bytes;

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1/", "m")).unwrap()
    }

    async fn read_bytewise(sse: &str) -> (Result<ModelResponse, ModelError>, Vec<String>) {
        let chunks: Vec<Result<Bytes, std::io::Error>> = sse
            .as_bytes()
            .chunks(3)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut deltas = Vec::new();
        let mut sink = |d: &str| deltas.push(d.to_string());
        let result = provider()
            .read_stream(futures_util::stream::iter(chunks), &mut sink, |e| {
                ModelError::Connection {
                    provider: "t".into(),
                    message: e.to_string(),
                }
            })
            .await;
        (result, deltas)
    }

    #[tokio::test]
    async fn assembles_tool_calls_split_across_chunks() {
        let sse = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"Let me \"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"look.\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"file_read\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"function\":{\"name\":\"glob\",\"arguments\":\"{\\\"pat\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.rs\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"tern\\\":\\\"*.rs\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":7}}\n\n",
            "data: [DONE]\n\n",
        );
        let (result, deltas) = read_bytewise(sse).await;
        let answer = result.unwrap();
        assert_eq!(deltas.concat(), "Let me look.");
        assert_eq!(answer.text, "Let me look.");
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(answer.usage.input_tokens, 11);
        assert_eq!(answer.tool_calls.len(), 2);
        assert_eq!(answer.tool_calls[0].id, "call_a");
        assert_eq!(answer.tool_calls[0].arguments, json!({"path": "a.rs"}));
        assert_eq!(answer.tool_calls[1].name, "glob");
        assert_eq!(answer.tool_calls[1].arguments, json!({"pattern": "*.rs"}));
    }

    #[tokio::test]
    async fn invalid_arguments_are_kept_as_a_string() {
        let sse = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"bash\",\"arguments\":\"{command: ls\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let answer = read_bytewise(sse).await.0.unwrap();
        assert_eq!(answer.tool_calls[0].arguments, json!("{command: ls"));
    }

    #[tokio::test]
    async fn a_stream_cut_short_or_garbled_is_an_error() {
        let cut = "data: {\"choices\":[{\"delta\":{\"content\":\"hal\"}}]}\n\n";
        let err = read_bytewise(cut).await.0.unwrap_err();
        assert!(matches!(err, ModelError::Connection { .. }), "{err}");
        let garbled = "data: {\"choices\":\n\n";
        let err = read_bytewise(garbled).await.0.unwrap_err();
        assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
        let mid_stream = "data: {\"error\":{\"type\":\"server_error\",\"message\":\"boom\"}}\n\n";
        let err = read_bytewise(mid_stream).await.0.unwrap_err();
        assert!(matches!(err, ModelError::Http { status: 500, .. }), "{err}");
    }

    /// A `write a.py` call at `index`, as a stream chunk.
    fn write_call(index: usize, content: &str) -> String {
        format!(
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"id\":\"c{index}\",\"function\":{{\"name\":\"file_write\",\"arguments\":\"{{\\\"path\\\": \\\"a.py\\\", \\\"content\\\": \\\"{content}\\\"}}\"}}}}]}}}}]}}\n\n"
        )
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_begins_repeating_its_tool_calls_is_stopped_there() {
        // Two writes, then the first again and again: a stream that would run on to the
        // token limit (here: never ends). The answer ends at the repetition, with the
        // calls before it.
        let mut sse: String = [
            write_call(0, "x = 1"),
            write_call(1, "x = 2"),
            write_call(2, "x = 1"),
            write_call(3, "x = 2"),
        ]
        .concat();
        sse.push_str(&write_call(4, "x = 1"));
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![Ok(Bytes::from(sse))];
        let endless = futures_util::StreamExt::chain(
            futures_util::stream::iter(chunks),
            futures_util::stream::pending(),
        );
        let mut sink = |_: &str| {};
        let provider = provider();
        let read = provider.read_stream(Box::pin(endless), &mut sink, |e: std::io::Error| {
            ModelError::Connection {
                provider: "t".into(),
                message: e.to_string(),
            }
        });
        let answer = tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .expect("the stream was stopped at the repetition, not read to its end")
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::RepeatedToolCalls);
        let contents: Vec<&Value> = answer
            .tool_calls
            .iter()
            .map(|c| &c.arguments["content"])
            .collect();
        assert_eq!(contents, [&json!("x = 1"), &json!("x = 2")]);

        // Calls that differ are all kept, up to the most an answer may have.
        let distinct: String = (0..3).map(|i| write_call(i, &format!("x = {i}"))).collect();
        let answer = read_bytewise(&format!("{distinct}data: [DONE]\n\n"))
            .await
            .0
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(answer.tool_calls.len(), 3);
        let many: String = (0..40)
            .map(|i| write_call(i, &format!("x = {i}")))
            .collect();
        let answer = read_bytewise(&format!("{many}data: [DONE]\n\n"))
            .await
            .0
            .unwrap();
        assert_eq!(answer.stop_reason, StopReason::RepeatedToolCalls);
        assert_eq!(
            answer.tool_calls.len(),
            crate::model::MOST_TOOL_CALLS_IN_AN_ANSWER
        );
    }

    #[tokio::test]
    async fn an_answer_caught_in_a_loop_is_stopped_as_malformed() {
        // A file_write whose content repeats `\u0020` up to the token limit.
        let start = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"file_write\",\"arguments\":\"{\\\"content\\\": \\\"def f():\\\\n\"}}]}}]}\n\n";
        let again = "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\\u0020\\\\u0020\\\\u0020\\\\u0020\"}}]}}]}\n\n";
        let mut sse = start.to_string();
        for _ in 0..200 {
            sse.push_str(again);
        }
        sse.push_str("data: [DONE]\n\n");
        let err = read_bytewise(&sse).await.0.unwrap_err();
        assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
        assert!(err.to_string().contains("caught in a loop"), "{err}");
        assert!(err.to_string().contains(r#""\\u0020""#), "{err}");

        // A paragraph and a code block, about 700 bytes, written again and again in the
        // text: stopped at the third time running.
        let block = "Here is the corrected code:\\n\\n```python\\ndef is_happy(s):\\n    \\\"\\\"\\\"Whether every 3 consecutive letters of s are distinct.\\\"\\\"\\\"\\n    if len(s) < 3:\\n        return False\\n    for i in range(len(s) - 2):\\n        if s[i] == s[i + 1] or s[i] == s[i + 2] or s[i + 1] == s[i + 2]:\\n            return False\\n    return True\\n```\\n\\nThis checks the length first, then each window of three letters; if any two letters of a window are the same, the string is not happy, and otherwise it is.\\n\\n";
        let chunk = |text: &str| {
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
        };
        let mut sse: String = (0..40).map(|_| chunk(block)).collect();
        sse.push_str("data: [DONE]\n\n");
        let err = read_bytewise(&sse).await.0.unwrap_err();
        assert!(err.to_string().contains("caught in a loop"), "{err}");
        assert!(
            err.to_string().contains("Here is the corrected code"),
            "{err}"
        );
        // Twice is not a loop: an answer may show a block again.
        let twice = format!("{}{}data: [DONE]\n\n", chunk(block), chunk(block));
        assert!(read_bytewise(&twice).await.0.is_ok());

        // Long text that is not one unit over and over goes through.
        let lines: String = (0..300)
            .map(|i| {
                format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"line {i}\\n\"}}}}]}}\n\n")
            })
            .collect();
        let answer = read_bytewise(&format!("{lines}data: [DONE]\n\n"))
            .await
            .0
            .unwrap();
        assert!(answer.text.ends_with("line 299\n"));
    }

    #[test]
    fn request_body_maps_every_message_kind() {
        let request = ModelRequest {
            system: "be brief".into(),
            messages: vec![
                ChatMessage::user("read a.rs"),
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "file_read".into(),
                        arguments: json!({"path": "a.rs"}),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    name: "file_read".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "file_read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: 0,
            temperature: Some(0.5),
        };
        let body = provider().request_body(&request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"a.rs\"}"
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: no such file"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "file_read");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        config.api_key = Some(ApiKey::new("sk-live-verysecretvalue"));
        assert!(!format!("{config:?}").contains("verysecret"));
    }

    #[test]
    fn parses_a_plain_json_answer() {
        let body = br#"{"choices":[{"message":{"role":"assistant","content":"hi","tool_calls":[{"id":"x","type":"function","function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
        let answer = provider().parse_body(body).unwrap();
        assert_eq!(answer.text, "hi");
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(answer.tool_calls[0].arguments, json!({"pattern": "*"}));
        assert_eq!(answer.usage.output_tokens, 2);
    }
}
