//! A tolerant parser for the lines pi prints on stdout in RPC mode.
//!
//! pi writes one JSON object per line: either a `response` to a command (carrying the
//! command's `id`, `success` and `error`) or an event of the agent's run (`agent_start`,
//! `message_update`, `tool_execution_end`, `agent_end`, `auto_retry_start`, ...).
//! [`parse_line`] turns one line into a [`PiLine`], keeping only what the executor
//! needs. Event types it does not know are returned as [`PiEvent::Other`] so that a
//! newer pi never breaks a run; a line that is not a JSON object with a `type` is a
//! [`PiParseError`] that the caller logs and skips.

use serde_json::Value;

/// The longest excerpt of an offending line kept in a [`PiParseError`].
const EXCERPT_CHARS: usize = 200;

/// One line of pi's stdout.
#[derive(Clone, Debug, PartialEq)]
pub enum PiLine {
    /// The answer to a command sent on stdin.
    Response(PiResponse),
    /// Something that happened in the agent's run.
    Event(PiEvent),
}

/// pi's answer to one command.
#[derive(Clone, Debug, PartialEq)]
pub struct PiResponse {
    /// The `id` sent with the command, if any.
    pub id: Option<String>,
    /// The command's `type`, e.g. `prompt` or `get_state` (`parse` for unreadable input).
    pub command: String,
    pub success: bool,
    /// pi's message when `success` is false.
    pub error: Option<String>,
}

/// An event of the agent's run, reduced to what the executor acts on.
#[derive(Clone, Debug, PartialEq)]
pub enum PiEvent {
    AgentStart,
    /// The agent stopped. With an error it may still be retried (see `AutoRetryStart`).
    AgentEnd {
        /// The last assistant message of the run, if there was one.
        last_assistant: Option<AssistantMessage>,
    },
    TurnStart,
    TurnEnd,
    /// A chunk of the assistant's visible answer.
    TextDelta(String),
    ToolStart {
        call_id: String,
        tool: String,
        args: Value,
    },
    ToolEnd {
        call_id: String,
        tool: String,
        /// The text content of the tool's result.
        output: String,
        is_error: bool,
    },
    /// pi will run the agent again after a transient model error.
    AutoRetryStart {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        error_message: String,
    },
    /// pi's automatic retries ended; with `success: false` the last error is final.
    AutoRetryEnd {
        success: bool,
        attempt: u32,
        final_error: Option<String>,
    },
    CompactionStart {
        /// `manual`, `threshold` or `overflow`; an overflow compaction may retry the run.
        reason: String,
    },
    CompactionEnd {
        will_retry: bool,
        aborted: bool,
        error_message: Option<String>,
    },
    /// An extension asks the client something; dialog methods block until answered.
    ExtensionUiRequest {
        id: String,
        method: String,
    },
    ExtensionError {
        error: String,
    },
    /// Any other event type, known but not needed here or new in a later pi.
    Other(String),
}

/// Why the model stopped producing an assistant message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    Stop,
    Length,
    ToolUse,
    Error,
    Aborted,
    Other(String),
}

impl StopReason {
    fn from_wire(value: &str) -> StopReason {
        match value {
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            other => StopReason::Other(other.to_string()),
        }
    }
}

/// The parts of an assistant message the executor needs.
#[derive(Clone, Debug, PartialEq)]
pub struct AssistantMessage {
    pub stop_reason: StopReason,
    /// The text blocks joined together (thinking and tool calls left out).
    pub text: String,
    /// pi's description of a failed model call, e.g. `401 Incorrect API key provided`.
    pub error_message: Option<String>,
}

/// A line that is not a pi message at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PiParseError {
    #[error("pi printed a line that is not JSON ({reason}): {excerpt}")]
    NotJson { reason: String, excerpt: String },
    #[error("pi printed JSON that is not an object with a \"type\": {excerpt}")]
    NoType { excerpt: String },
}

/// Parses one line of pi's stdout. Blank lines give `Ok(None)`.
pub fn parse_line(line: &str) -> Result<Option<PiLine>, PiParseError> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|e| PiParseError::NotJson {
        reason: e.to_string(),
        excerpt: excerpt(line),
    })?;
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Err(PiParseError::NoType {
            excerpt: excerpt(line),
        });
    };
    if kind == "response" {
        return Ok(Some(PiLine::Response(PiResponse {
            id: string_field(&value, "id"),
            command: string_field(&value, "command").unwrap_or_default(),
            success: bool_field(&value, "success"),
            error: string_field(&value, "error"),
        })));
    }
    Ok(Some(PiLine::Event(parse_event(kind, &value))))
}

fn parse_event(kind: &str, value: &Value) -> PiEvent {
    match kind {
        "agent_start" => PiEvent::AgentStart,
        "agent_end" => PiEvent::AgentEnd {
            last_assistant: value
                .get("messages")
                .and_then(Value::as_array)
                .and_then(|messages| {
                    messages
                        .iter()
                        .rev()
                        .find(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
                })
                .map(assistant_message),
        },
        "turn_start" => PiEvent::TurnStart,
        "turn_end" => PiEvent::TurnEnd,
        "message_update" => {
            let update = value.get("assistantMessageEvent");
            let update_kind = update.and_then(|u| u.get("type")).and_then(Value::as_str);
            match (update_kind, update.and_then(|u| u.get("delta"))) {
                (Some("text_delta"), Some(Value::String(delta))) => {
                    PiEvent::TextDelta(delta.clone())
                }
                _ => PiEvent::Other(kind.to_string()),
            }
        }
        "tool_execution_start" => PiEvent::ToolStart {
            call_id: string_field(value, "toolCallId").unwrap_or_default(),
            tool: string_field(value, "toolName").unwrap_or_default(),
            args: value.get("args").cloned().unwrap_or(Value::Null),
        },
        "tool_execution_end" => PiEvent::ToolEnd {
            call_id: string_field(value, "toolCallId").unwrap_or_default(),
            tool: string_field(value, "toolName").unwrap_or_default(),
            output: value
                .get("result")
                .and_then(|r| r.get("content"))
                .map(content_text)
                .unwrap_or_default(),
            is_error: bool_field(value, "isError"),
        },
        "auto_retry_start" => PiEvent::AutoRetryStart {
            attempt: u32_field(value, "attempt"),
            max_attempts: u32_field(value, "maxAttempts"),
            delay_ms: value.get("delayMs").and_then(Value::as_u64).unwrap_or(0),
            error_message: string_field(value, "errorMessage").unwrap_or_default(),
        },
        "auto_retry_end" => PiEvent::AutoRetryEnd {
            success: bool_field(value, "success"),
            attempt: u32_field(value, "attempt"),
            final_error: string_field(value, "finalError"),
        },
        "compaction_start" => PiEvent::CompactionStart {
            reason: string_field(value, "reason").unwrap_or_default(),
        },
        "compaction_end" => PiEvent::CompactionEnd {
            will_retry: bool_field(value, "willRetry"),
            aborted: bool_field(value, "aborted"),
            error_message: string_field(value, "errorMessage"),
        },
        "extension_ui_request" => PiEvent::ExtensionUiRequest {
            id: string_field(value, "id").unwrap_or_default(),
            method: string_field(value, "method").unwrap_or_default(),
        },
        "extension_error" => PiEvent::ExtensionError {
            error: string_field(value, "error").unwrap_or_default(),
        },
        other => PiEvent::Other(other.to_string()),
    }
}

fn assistant_message(message: &Value) -> AssistantMessage {
    AssistantMessage {
        stop_reason: StopReason::from_wire(
            message
                .get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or("stop"),
        ),
        text: message.get("content").map(content_text).unwrap_or_default(),
        error_message: string_field(message, "errorMessage"),
    }
}

/// The text of a message or tool-result `content`: a plain string, or the `text` of
/// its text blocks joined by newlines.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn string_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

fn bool_field(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn u32_field(value: &Value, key: &str) -> u32 {
    value
        .get(key)
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

fn excerpt(line: &str) -> String {
    let mut chars = line.chars();
    let head: String = chars.by_ref().take(EXCERPT_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_keep_id_and_error() {
        let line = r#"{"id":"p1","type":"response","command":"prompt","success":false,"error":"No model"}"#;
        assert_eq!(
            parse_line(line).unwrap(),
            Some(PiLine::Response(PiResponse {
                id: Some("p1".into()),
                command: "prompt".into(),
                success: false,
                error: Some("No model".into()),
            }))
        );
    }

    #[test]
    fn text_deltas_are_extracted_and_other_updates_ignored() {
        let delta = r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hel"}}"#;
        assert_eq!(
            parse_line(delta).unwrap(),
            Some(PiLine::Event(PiEvent::TextDelta("Hel".into())))
        );
        let thinking = r#"{"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"hmm"}}"#;
        assert_eq!(
            parse_line(thinking).unwrap(),
            Some(PiLine::Event(PiEvent::Other("message_update".into())))
        );
    }

    #[test]
    fn agent_end_reports_the_last_assistant_message() {
        let line = r#"{"type":"agent_end","messages":[
            {"role":"assistant","content":[{"type":"text","text":"first"}],"stopReason":"toolUse"},
            {"role":"toolResult","content":[{"type":"text","text":"ok"}]},
            {"role":"assistant","content":[],"stopReason":"error","errorMessage":"401 nope"}]}"#
            .replace('\n', "");
        let Some(PiLine::Event(PiEvent::AgentEnd { last_assistant })) = parse_line(&line).unwrap()
        else {
            panic!("not an agent_end");
        };
        assert_eq!(
            last_assistant,
            Some(AssistantMessage {
                stop_reason: StopReason::Error,
                text: String::new(),
                error_message: Some("401 nope".into()),
            })
        );
    }

    #[test]
    fn unknown_events_and_blank_lines_are_tolerated() {
        assert_eq!(
            parse_line(r#"{"type":"brand_new_event","x":1}"#).unwrap(),
            Some(PiLine::Event(PiEvent::Other("brand_new_event".into())))
        );
        assert_eq!(parse_line("   ").unwrap(), None);
        assert_eq!(parse_line("\r").unwrap(), None);
    }

    #[test]
    fn garbage_is_a_clear_error_with_an_excerpt() {
        let err = parse_line(r#"{"type":"agent_st"#).unwrap_err();
        assert!(matches!(err, PiParseError::NotJson { .. }), "{err:?}");
        assert!(err.to_string().contains("agent_st"), "{err}");
        let err = parse_line(r#"[1,2,3]"#).unwrap_err();
        assert!(matches!(err, PiParseError::NoType { .. }), "{err:?}");
        let long = "x".repeat(1000);
        let PiParseError::NotJson { excerpt, .. } = parse_line(&long).unwrap_err() else {
            panic!("expected NotJson");
        };
        assert_eq!(excerpt.chars().count(), EXCERPT_CHARS + 1);
    }

    #[test]
    fn tool_results_join_their_text_blocks() {
        let line = r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"a"},{"type":"image","data":""},{"type":"text","text":"b"}]},"isError":true}"#;
        assert_eq!(
            parse_line(line).unwrap(),
            Some(PiLine::Event(PiEvent::ToolEnd {
                call_id: "c1".into(),
                tool: "bash".into(),
                output: "a\nb".into(),
                is_error: true,
            }))
        );
    }
}
