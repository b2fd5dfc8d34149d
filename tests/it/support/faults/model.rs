//! The in-process twin of the fault server: an obedient model with seeded faults, for
//! tests and the reliability benchmark on tokio's paused clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use conclave::model::{
    ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage,
};
use serde_json::json;
use tokio::time::Instant;

/// How the model misbehaves.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub seed: u64,
    /// Share of calls that fail transiently.
    pub rate: f64,
    /// Which faults (picked at random); empty: a 500, a 503, a 429 with Retry-After 1 s
    /// or an unreadable answer.
    pub kinds: Vec<Transient>,
    /// Every call in this window (after the first call) fails with a 503.
    pub outage: Option<(Duration, Duration)>,
    /// Every call after the first (the plan) fails with this.
    pub dead_after_plan: Option<fn() -> ModelError>,
    /// Every call after the first never answers.
    pub hang_after_plan: bool,
}

/// One kind of random transient fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transient {
    Http500,
    Http503,
    RateLimited,
    Garbage,
    Reset,
    /// No answer until the step timeout ends the call.
    Stall,
}

// The tests inject single faults; benches/faults.rs runs each kind in turn.
#[allow(dead_code)]
impl Transient {
    pub const ALL: [Transient; 6] = [
        Transient::Http500,
        Transient::Http503,
        Transient::RateLimited,
        Transient::Garbage,
        Transient::Reset,
        Transient::Stall,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Transient::Http500 => "500",
            Transient::Http503 => "503",
            Transient::RateLimited => "429 + Retry-After",
            Transient::Garbage => "garbage 200",
            Transient::Reset => "connection reset",
            Transient::Stall => "stall past the step timeout",
        }
    }
}

/// An obedient model with seeded faults (the in-process twin of `faults_support`).
pub struct FaultModel {
    plan: Plan,
    rng: Mutex<u64>,
    started: Mutex<Option<Instant>>,
    pub calls: AtomicU64,
    pub faults: AtomicU64,
    /// Calls answered: the logical calls the team needed.
    pub answers: AtomicU64,
}

impl FaultModel {
    pub fn new(plan: Plan) -> Arc<FaultModel> {
        Arc::new(FaultModel {
            rng: Mutex::new(plan.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
            plan,
            started: Mutex::new(None),
            calls: AtomicU64::new(0),
            faults: AtomicU64::new(0),
            answers: AtomicU64::new(0),
        })
    }

    fn unit(&self) -> f64 {
        let mut x = self.rng.lock().unwrap();
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `Some(None)`: stall; `Some(Some(e))`: fail with `e`.
    fn fault(&self, call: u64) -> Option<Option<ModelError>> {
        let provider = "faulty".to_string();
        let now = Instant::now();
        let started = *self.started.lock().unwrap().get_or_insert(now);
        if call > 1
            && let Some(dead) = self.plan.dead_after_plan
        {
            return Some(Some(dead()));
        }
        if let Some((from, length)) = self.plan.outage
            && call > 1
            && now >= started + from
            && now < started + from + length
        {
            return Some(Some(http(503)));
        }
        if self.unit() < self.plan.rate {
            let kinds = if self.plan.kinds.is_empty() {
                &[
                    Transient::Http500,
                    Transient::Http503,
                    Transient::RateLimited,
                    Transient::Garbage,
                ][..]
            } else {
                &self.plan.kinds[..]
            };
            let which = ((self.unit() * kinds.len() as f64) as usize).min(kinds.len() - 1);
            return Some(match kinds[which] {
                Transient::Http500 => Some(http(500)),
                Transient::Http503 => Some(http(503)),
                Transient::RateLimited => Some(ModelError::RateLimited {
                    provider,
                    retry_after: Some(Duration::from_secs(1)),
                }),
                Transient::Garbage => Some(ModelError::Malformed {
                    provider,
                    message: "expected value at line 1 column 1".into(),
                }),
                Transient::Reset => Some(ModelError::Connection {
                    provider,
                    message: "connection reset by peer".into(),
                }),
                Transient::Stall => None,
            });
        }
        None
    }
}

pub fn http(status: u16) -> ModelError {
    ModelError::Http {
        provider: "faulty".into(),
        status,
        excerpt: "upstream trouble".into(),
    }
}

pub fn unauthorized() -> ModelError {
    ModelError::Unauthorized {
        provider: "faulty".into(),
    }
}

fn answer(text: &str, tool_calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        text: text.into(),
        stop_reason: if tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        },
        tool_calls,
        usage: Usage::default(),
    }
}

#[async_trait]
impl ModelProvider for FaultModel {
    fn name(&self) -> &str {
        "faulty"
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        _on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call > 1 && self.plan.hang_after_plan {
            std::future::pending::<()>().await;
        }
        match self.fault(call) {
            Some(Some(error)) => {
                self.faults.fetch_add(1, Ordering::SeqCst);
                return Err(error);
            }
            Some(None) => {
                self.faults.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
            }
            None => {}
        }
        self.answers.fetch_add(1, Ordering::SeqCst);
        let first = request
            .messages
            .iter()
            .find_map(|m| match m {
                ChatMessage::User { content } => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or("");
        if first.starts_with("Plan this task for") {
            let files = first
                .split("Write the files:")
                .nth(1)
                .and_then(|rest| rest.lines().next())
                .unwrap_or("");
            let subtasks: Vec<_> = files
                .split(',')
                .filter_map(|pair| pair.trim().split_once('='))
                .map(
                    |(p, c)| json!({ "description": format!("Write {p} containing exactly: {c}") }),
                )
                .collect();
            return Ok(answer(
                &json!({ "subtasks": subtasks }).to_string(),
                Vec::new(),
            ));
        }
        if first.contains("Propose what to do") {
            return Ok(answer(
                r#"{"action": "reassign", "reason": "try another"}"#,
                Vec::new(),
            ));
        }
        if let Some(rest) = first.lines().next().and_then(|l| l.strip_prefix("Write "))
            && let Some((path, content)) = rest.split_once(" containing exactly: ")
        {
            if request
                .messages
                .iter()
                .any(|m| matches!(m, ChatMessage::Tool { .. }))
            {
                return Ok(answer(&format!("{path} is written."), Vec::new()));
            }
            return Ok(answer(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "file_write".into(),
                    arguments: json!({ "path": path, "content": content }),
                }],
            ));
        }
        Ok(answer("Done.", Vec::new()))
    }
}
