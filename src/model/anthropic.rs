//! The Anthropic Messages API provider (`{baseUrl}/v1/messages`).
//!
//! Tool calls are `tool_use` content blocks of the assistant; tool results are
//! `tool_result` blocks of a user message, so consecutive tool results (and a user text
//! right after them) are merged into one user message, as the API requires. Streaming
//! answers arrive as typed SSE events; text deltas go to the sink as they arrive and
//! `input_json_delta` fragments are joined per content block.

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

pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings of one Messages API endpoint.
#[derive(Clone, Debug)]
pub struct AnthropicConfig {
    /// The provider's name in logs, errors and breaker events.
    pub name: String,
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    pub stream: bool,
    /// Used when the request's `max_tokens` is 0 (the API requires a value).
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// A whole-request timeout; `None` leaves timing to the step timeout around the call.
    pub timeout: Option<Duration>,
    /// How long the server may stay silent (`None`: only the step timeout judges).
    pub silence: Option<super::http::Silence>,
}

impl AnthropicConfig {
    /// Settings without a key; set [`AnthropicConfig::api_key`] for the hosted API.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        AnthropicConfig {
            name: "anthropic".to_string(),
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            stream: true,
            max_tokens: super::openai::DEFAULT_MAX_TOKENS,
            temperature: None,
            timeout: None,
            silence: None,
        }
    }
}

/// A provider speaking the Messages API.
pub struct AnthropicProvider {
    config: AnthropicConfig,
    url: String,
    client: reqwest::Client,
}

impl AnthropicProvider {
    pub fn new(config: AnthropicConfig) -> Result<Self, ModelError> {
        let base = http::normalise_base_url(&config.base_url)?;
        // Accept a base URL given with or without the version segment.
        let url = if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        };
        Ok(AnthropicProvider {
            url,
            client: http::build_client()?,
            config,
        })
    }

    /// The JSON body for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let max_tokens = match request.max_tokens {
            0 => self.config.max_tokens,
            n => n,
        };
        let mut body = json!({
            "model": self.config.model,
            "max_tokens": max_tokens,
            "messages": messages_to_wire(&request.messages),
            "stream": self.config.stream,
        });
        if !request.system.is_empty() {
            body["system"] = json!(request.system);
        }
        if let Some(temperature) = request.temperature.or(self.config.temperature) {
            body["temperature"] = json!(temperature);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({ "name": t.name, "description": t.description, "input_schema": t.parameters })
                })
                .collect();
        }
        body
    }

    fn malformed(&self, message: impl Into<String>) -> ModelError {
        ModelError::Malformed {
            provider: self.config.name.clone(),
            message: message.into(),
        }
    }

    fn error_event(&self, value: &Value, data: &str) -> ModelError {
        let info = ErrorInfo::from_value(value);
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

    /// Reads an SSE answer to `message_stop` (or the end of the stream).
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
        let mut state = MessageState::default();
        let mut stopped = false;
        while let Some(event) = events.next_event().await.map_err(&map_err)? {
            let data = event.data.trim();
            let value: Value = serde_json::from_str(data).map_err(|e| {
                self.malformed(format!(
                    "stream event `{}` is not JSON ({e}): {}",
                    event.event,
                    http::excerpt(data, self.config.api_key.as_ref())
                ))
            })?;
            let kind = value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or(event.event.as_str());
            match kind {
                "message_start" => {
                    if let Some(usage) = value.pointer("/message/usage") {
                        state.apply_usage(usage);
                    }
                }
                "content_block_start" => {
                    let index = block_index(&value);
                    let block = value.get("content_block").unwrap_or(&Value::Null);
                    state.start_block(index, block, on_delta);
                }
                "content_block_delta" => {
                    let index = block_index(&value);
                    let delta = value.get("delta").unwrap_or(&Value::Null);
                    state.apply_delta(index, delta, on_delta);
                }
                "message_delta" => {
                    if let Some(reason) =
                        value.pointer("/delta/stop_reason").and_then(Value::as_str)
                    {
                        state.stop_reason = Some(reason.to_string());
                    }
                    if let Some(usage) = value.get("usage") {
                        state.apply_usage(usage);
                    }
                }
                "message_stop" => {
                    stopped = true;
                    break;
                }
                "error" => return Err(self.error_event(&value, data)),
                // ping, content_block_stop (blocks are finished at the end), and any
                // event type added to the API later.
                _ => {}
            }
        }
        if !stopped && state.stop_reason.is_none() {
            return Err(ModelError::Connection {
                provider: self.config.name.clone(),
                message: "the stream ended before message_stop".to_string(),
            });
        }
        state.into_response(&self.config.name)
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
        if value.get("type").and_then(Value::as_str) == Some("error") {
            return Err(self.error_event(&value, &String::from_utf8_lossy(body)));
        }
        let content = value
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.malformed("answer has no content array"))?;
        let mut state = MessageState::default();
        let mut ignore = |_: &str| {};
        for (index, block) in content.iter().enumerate() {
            state.start_block(index, block, &mut ignore);
        }
        state.stop_reason = value
            .get("stop_reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        if let Some(usage) = value.get("usage") {
            state.apply_usage(usage);
        }
        state.into_response(&self.config.name)
    }
}

#[async_trait]
impl ModelProvider for AnthropicProvider {
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
            "sending messages request"
        );
        let mut builder = self
            .client
            .post(&self.url)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .json(&self.request_body(request));
        if let Some(key) = &self.config.api_key {
            let mut value = reqwest::header::HeaderValue::from_str(key.expose()).map_err(|_| {
                ModelError::NotConfigured {
                    message: "the Anthropic API key contains characters not allowed in a header"
                        .to_string(),
                }
            })?;
            value.set_sensitive(true);
            builder = builder.header("x-api-key", value);
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

impl http::AnswerReader for AnthropicProvider {
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
        AnthropicProvider::read_stream(self, bytes, on_delta, map_err).await
    }

    fn parse_body(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        AnthropicProvider::parse_body(self, body)
    }
}

/// Maps the conversation to Messages API turns, merging consecutive messages of the
/// same role (tool results are user turns) into one turn with several blocks.
fn messages_to_wire(messages: &[ChatMessage]) -> Vec<Value> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            ChatMessage::User { content } => ("user", text_block(content)),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let mut blocks = text_block(content);
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({ "type": "tool_use", "id": call.id, "name": call.name,
                            "input": input_to_wire(&call.arguments) })
                }));
                ("assistant", blocks)
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut block = json!({ "type": "tool_result", "tool_use_id": tool_call_id, "content": content });
                if *is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue; // the API refuses empty turns and empty text blocks
        }
        match turns.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({ "role": role, "content": content }))
        .collect()
}

fn text_block(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({ "type": "text", "text": text })]
    }
}

/// `tool_use.input` must be an object; arguments kept as text (invalid JSON from a
/// model) are wrapped so that the conversation can still be sent.
fn input_to_wire(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        other => json!({ "arguments": other }),
    }
}

fn block_index(event: &Value) -> usize {
    event
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0)
}

/// One content block being assembled.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// The input given whole in `content_block_start` (non-streaming answers).
        input: Value,
        /// `input_json_delta` fragments, joined.
        partial_json: String,
    },
    /// Thinking and other block types we do not surface.
    Other,
}

#[derive(Debug, Default)]
struct MessageState {
    blocks: BTreeMap<usize, Block>,
    stop_reason: Option<String>,
    usage: Usage,
}

impl MessageState {
    fn start_block(&mut self, index: usize, block: &Value, on_delta: DeltaSink<'_>) {
        let text = |field| {
            block
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let parsed = match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let initial = text("text");
                if !initial.is_empty() {
                    on_delta(&initial);
                }
                Block::Text(initial)
            }
            Some("tool_use") => Block::ToolUse {
                id: text("id"),
                name: text("name"),
                input: block.get("input").cloned().unwrap_or(Value::Null),
                partial_json: String::new(),
            },
            _ => Block::Other,
        };
        self.blocks.insert(index, parsed);
    }

    fn apply_delta(&mut self, index: usize, delta: &Value, on_delta: DeltaSink<'_>) {
        let block = self.blocks.entry(index);
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let piece = delta
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                on_delta(piece);
                if let Block::Text(text) = block.or_insert_with(|| Block::Text(String::new())) {
                    text.push_str(piece);
                }
            }
            Some("input_json_delta") => {
                let piece = delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if let std::collections::btree_map::Entry::Occupied(mut entry) = block {
                    if let Block::ToolUse { partial_json, .. } = entry.get_mut() {
                        partial_json.push_str(piece);
                    }
                }
            }
            _ => {} // thinking_delta, signature_delta, ...
        }
    }

    fn apply_usage(&mut self, usage: &Value) {
        let field = |name| usage.get(name).and_then(Value::as_u64);
        // `input_tokens` leaves out what prompt caching wrote or read; all of it was input.
        if let Some(input) = field("input_tokens") {
            self.usage.input_tokens = input
                + field("cache_creation_input_tokens").unwrap_or(0)
                + field("cache_read_input_tokens").unwrap_or(0);
        }
        // message_delta carries the cumulative output count.
        if let Some(output) = field("output_tokens") {
            self.usage.output_tokens = output;
        }
    }

    fn into_response(self, provider: &str) -> Result<ModelResponse, ModelError> {
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for (index, block) in self.blocks {
            match block {
                Block::Text(piece) => text.push_str(&piece),
                Block::ToolUse {
                    id,
                    name,
                    input,
                    partial_json,
                } => {
                    if name.is_empty() {
                        return Err(ModelError::Malformed {
                            provider: provider.to_string(),
                            message: format!("tool_use block #{index} has no name"),
                        });
                    }
                    let arguments = if partial_json.trim().is_empty() {
                        match input {
                            Value::Null => json!({}),
                            given => given,
                        }
                    } else {
                        http::parse_tool_arguments(&partial_json)
                    };
                    tool_calls.push(ToolCall {
                        id,
                        name,
                        arguments,
                    });
                }
                Block::Other => {}
            }
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("tool_use") => StopReason::ToolUse,
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            Some("end_turn") | None => StopReason::EndTurn,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
        };
        let mut response = ModelResponse {
            text,
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
    use bytes::Bytes;

    fn provider(base: &str) -> AnthropicProvider {
        let mut config = AnthropicConfig::new(base, "claude");
        config.api_key = Some(ApiKey::new("k"));
        AnthropicProvider::new(config).unwrap()
    }

    #[test]
    fn base_url_with_or_without_version() {
        assert_eq!(
            provider("https://api.anthropic.com/").url,
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(provider("http://proxy/v1").url, "http://proxy/v1/messages");
    }

    #[test]
    fn consecutive_tool_results_become_one_user_turn() {
        let messages = vec![
            ChatMessage::user("do it"),
            ChatMessage::Assistant {
                content: "Reading.".into(),
                tool_calls: vec![
                    ToolCall {
                        id: "t1".into(),
                        name: "file_read".into(),
                        arguments: json!({"path": "a"}),
                    },
                    ToolCall {
                        id: "t2".into(),
                        name: "bash".into(),
                        arguments: json!("{bad"),
                    },
                ],
            },
            ChatMessage::Tool {
                tool_call_id: "t1".into(),
                name: "file_read".into(),
                content: "A".into(),
                is_error: false,
            },
            ChatMessage::Tool {
                tool_call_id: "t2".into(),
                name: "bash".into(),
                content: "denied".into(),
                is_error: true,
            },
        ];
        let wire = messages_to_wire(&messages);
        assert_eq!(wire.len(), 3);
        assert_eq!(wire[1]["content"][2]["input"], json!({"arguments": "{bad"}));
        assert_eq!(
            wire[2],
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "denied", "is_error": true}
            ]})
        );
    }

    #[tokio::test]
    async fn reads_a_stream_split_into_tiny_chunks() {
        let sse = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
            "event: ping\ndata: {\"type\":\"ping\"}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Okay\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"file_write\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a\"}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".rs\\\", \\\"content\\\": \\\"x\\\"}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":40}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let chunks: Vec<Result<Bytes, std::io::Error>> = sse
            .as_bytes()
            .chunks(5)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut deltas = String::new();
        let mut sink = |d: &str| deltas.push_str(d);
        let answer = provider("http://x")
            .read_stream(futures_util::stream::iter(chunks), &mut sink, |e| {
                ModelError::Connection {
                    provider: "t".into(),
                    message: e.to_string(),
                }
            })
            .await
            .unwrap();
        assert_eq!(deltas, "Okay");
        assert_eq!(answer.text, "Okay");
        assert_eq!(answer.stop_reason, StopReason::ToolUse);
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: 25,
                output_tokens: 40
            }
        );
        assert_eq!(
            answer.tool_calls,
            vec![ToolCall {
                id: "toolu_1".into(),
                name: "file_write".into(),
                arguments: json!({"path": "a.rs", "content": "x"}),
            }]
        );
    }

    #[test]
    fn cached_input_counts_as_input() {
        let body = br#"{"content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_creation_input_tokens":200,"cache_read_input_tokens":1000,"output_tokens":4}}"#;
        let answer = provider("http://x").parse_body(body).unwrap();
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: 1210,
                output_tokens: 4
            }
        );
    }

    #[test]
    fn parses_a_plain_json_answer() {
        let body = br#"{"content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"glob","input":{"pattern":"*"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#;
        let answer = provider("http://x").parse_body(body).unwrap();
        assert_eq!(answer.text, "Hi");
        assert_eq!(answer.tool_calls[0].arguments, json!({"pattern": "*"}));
        assert_eq!(answer.usage.output_tokens, 4);
    }
}
