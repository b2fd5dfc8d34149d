//! The scripted provider: replays a JSON script, deterministically, for demos and tests.
//!
//! A script is a list of steps. Each call takes the first usable step: steps with a
//! `match` whose every substring appears in the request's system prompt or latest
//! user/tool message come first (in file order), then steps without `match` (in file
//! order). Matching by content lets several agents share one script whatever order
//! their calls arrive in. A step answers with text and/or tool calls, or injects an
//! error, `times` times (default 1) or forever with `repeat`. The format is documented
//! in `docs/scripted-model.md`.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::http::{self, ErrorInfo};
use super::{
    ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage,
};

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptStep {
    /// Substrings that must all appear in the system prompt or the latest user/tool message.
    #[serde(default, rename = "match", deserialize_with = "one_or_many")]
    pub matches: Vec<String>,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// An error to return instead of an answer.
    #[serde(default, deserialize_with = "error_spec")]
    pub error: Option<ScriptedError>,
    /// How many calls this step answers (default 1). Ignored with `repeat`.
    #[serde(default = "one")]
    pub times: u32,
    /// Answer any number of calls.
    #[serde(default)]
    pub repeat: bool,
    /// Wait this long before answering (tokio time, so paused-clock tests can skip it).
    #[serde(default)]
    pub delay_ms: u64,
    /// `end_turn`, `tool_use`, `max_tokens` or anything else; default from the content.
    #[serde(default)]
    pub stop_reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Defaults to `call_<step>_<use>_<n>`.
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

/// An injected failure, mapped to the same [`ModelError`] a real provider would give.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ScriptedError {
    /// Classified like a real answer with this status (so 429 is a rate limit, 401 unauthorized).
    Http {
        status: u16,
        #[serde(default)]
        body: String,
    },
    RateLimited {
        #[serde(default, rename = "retryAfterMs")]
        retry_after_ms: Option<u64>,
    },
    Timeout {
        #[serde(default, rename = "timeoutMs")]
        timeout_ms: Option<u64>,
    },
    Connection,
    Unauthorized,
    Forbidden,
    Malformed {
        #[serde(default)]
        message: Option<String>,
    },
    ContextOverflow,
    SpendLimit,
}

fn one() -> u32 {
    1
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// `"error": "timeout"` is short for `"error": {"kind": "timeout"}`.
fn error_spec<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<ScriptedError>, D::Error> {
    let value = Value::deserialize(d)?;
    let value = match value {
        Value::Null => return Ok(None),
        Value::String(kind) => serde_json::json!({ "kind": kind }),
        other => other,
    };
    ScriptedError::deserialize(value)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

/// A parsed script.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// The provider name it answers as (default `scripted`).
    pub name: String,
    pub steps: Vec<ScriptStep>,
}

impl Script {
    /// Parses a script: `{"name"?, "steps": [...]}` or just the array of steps.
    pub fn parse(text: &str) -> Result<Script, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let (name, steps) = match value {
            Value::Array(steps) => (None, steps),
            Value::Object(mut object) => {
                let name = object.remove("name");
                let steps = match object.remove("steps") {
                    Some(Value::Array(steps)) => steps,
                    _ => return Err("expected a `steps` array".to_string()),
                };
                if let Some(key) = object.keys().next() {
                    return Err(format!("unknown top-level field `{key}`"));
                }
                (name, steps)
            }
            _ => return Err("expected an object with `steps`, or an array of steps".to_string()),
        };
        let name = match name {
            None => "scripted".to_string(),
            Some(Value::String(name)) => name,
            Some(_) => return Err("`name` must be a string".to_string()),
        };
        let steps = steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                let step: ScriptStep =
                    serde_json::from_value(step).map_err(|e| format!("step {i}: {e}"))?;
                if step.error.is_some() && (!step.text.is_empty() || !step.tool_calls.is_empty()) {
                    return Err(format!(
                        "step {i}: a step injects an error or answers, not both"
                    ));
                }
                if step.times == 0 && !step.repeat {
                    return Err(format!("step {i}: `times` must be at least 1"));
                }
                if step.matches.iter().any(String::is_empty) {
                    return Err(format!("step {i}: an empty `match` would match everything"));
                }
                Ok(step)
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Script { name, steps })
    }
}

/// A provider answering from a [`Script`].
#[derive(Debug)]
pub struct ScriptedProvider {
    script: Script,
    /// Where the script came from, for error messages.
    origin: String,
    /// How many calls each step has answered.
    used: Mutex<Vec<u32>>,
}

impl ScriptedProvider {
    pub fn new(script: Script, origin: impl Into<String>) -> Self {
        let used = Mutex::new(vec![0; script.steps.len()]);
        ScriptedProvider {
            script,
            origin: origin.into(),
            used,
        }
    }

    pub fn from_json(text: &str) -> Result<Self, String> {
        Ok(Self::new(Script::parse(text)?, "inline script"))
    }

    pub fn from_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let script = Script::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self::new(script, path.display().to_string()))
    }

    /// Indexes of steps that still have uses left (`repeat` steps excluded), so a demo
    /// or test can check that its script was played to the end.
    pub fn unused_steps(&self) -> Vec<usize> {
        let used = self.lock_used();
        self.script
            .steps
            .iter()
            .enumerate()
            .filter(|(i, step)| !step.repeat && used[*i] < step.times)
            .map(|(i, _)| i)
            .collect()
    }

    /// Picks and consumes the step for `request`: its index and how often it was used before.
    fn take_step(&self, request: &ModelRequest) -> Option<(usize, u32)> {
        let latest = latest_input(request);
        let matches = |step: &ScriptStep| {
            step.matches
                .iter()
                .all(|m| request.system.contains(m.as_str()) || latest.contains(m.as_str()))
        };
        let mut used = self.lock_used();
        let available = |i: usize, step: &ScriptStep| step.repeat || used[i] < step.times;
        let steps = &self.script.steps;
        let pick = steps
            .iter()
            .enumerate()
            .find(|(i, s)| !s.matches.is_empty() && available(*i, s) && matches(s))
            .or_else(|| {
                steps
                    .iter()
                    .enumerate()
                    .find(|(i, s)| s.matches.is_empty() && available(*i, s))
            })
            .map(|(i, _)| i)?;
        let before = used[pick];
        used[pick] = before.saturating_add(1);
        Some((pick, before))
    }

    fn lock_used(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        // Counters stay meaningful after a panic elsewhere; keep serving.
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error_for(&self, error: &ScriptedError) -> ModelError {
        let provider = self.script.name.clone();
        match error {
            ScriptedError::Http { status, body } => http::classify(
                &provider,
                *status,
                &ErrorInfo::from_body(body),
                None,
                body,
                None,
            ),
            ScriptedError::RateLimited { retry_after_ms } => ModelError::RateLimited {
                provider,
                retry_after: retry_after_ms.map(Duration::from_millis),
            },
            ScriptedError::Timeout { timeout_ms } => ModelError::Timeout {
                provider,
                timeout: Duration::from_millis(timeout_ms.unwrap_or(30_000)),
            },
            ScriptedError::Connection => ModelError::Connection {
                provider,
                message: "connection reset (scripted)".to_string(),
            },
            ScriptedError::Unauthorized => ModelError::Unauthorized { provider },
            ScriptedError::Forbidden => ModelError::Forbidden {
                provider,
                excerpt: "forbidden (scripted)".to_string(),
            },
            ScriptedError::Malformed { message } => ModelError::Malformed {
                provider,
                message: message
                    .clone()
                    .unwrap_or_else(|| "malformed answer (scripted)".to_string()),
            },
            ScriptedError::ContextOverflow => ModelError::ContextOverflow {
                provider,
                message: "prompt is too long (scripted)".to_string(),
            },
            ScriptedError::SpendLimit => ModelError::SpendLimit {
                provider,
                message: "quota exhausted (scripted)".to_string(),
            },
        }
    }
}

/// The latest user or tool message's text: what a step's `match` is checked against,
/// together with the system prompt.
fn latest_input(request: &ModelRequest) -> &str {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User { content } | ChatMessage::Tool { content, .. } => {
                Some(content.as_str())
            }
            ChatMessage::Assistant { .. } => None,
        })
        .unwrap_or_default()
}

fn approx_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        &self.script.name
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let Some((index, uses_before)) = self.take_step(request) else {
            let latest = latest_input(request);
            return Err(ModelError::ScriptExhausted {
                provider: self.script.name.clone(),
                message: format!(
                    "{} has no step left for this request (latest message: \"{}\")",
                    self.origin,
                    http::excerpt(latest, None)
                ),
            });
        };
        let step = &self.script.steps[index];
        tracing::debug!(provider = %self.script.name, step = index, "scripted step");
        if step.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
        }
        if let Some(error) = &step.error {
            return Err(self.error_for(error));
        }
        for piece in step.text.split_inclusive(' ') {
            on_delta(piece);
        }
        let tool_calls: Vec<ToolCall> = step
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, call)| ToolCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{index}_{uses_before}_{n}")),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            })
            .collect();
        let stop_reason = match step.stop_reason.as_deref() {
            Some("end_turn") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some(other) => StopReason::Other(other.to_string()),
            None if tool_calls.is_empty() => StopReason::EndTurn,
            None => StopReason::ToolUse,
        };
        let input_chars = request.system.len()
            + request
                .messages
                .iter()
                .map(|m| match m {
                    ChatMessage::User { content }
                    | ChatMessage::Assistant { content, .. }
                    | ChatMessage::Tool { content, .. } => content.len(),
                })
                .sum::<usize>();
        Ok(ModelResponse {
            text: step.text.clone(),
            tool_calls,
            usage: Usage {
                input_tokens: approx_tokens(input_chars),
                output_tokens: approx_tokens(step.text.len()),
            },
            stop_reason,
        })
    }
}
