//! Everything a model call can do wrong, each variant classified for recovery.

use std::time::Duration;

use crate::recovery::{Classify, FailureKind, Severity};

/// A failed model call. Messages never contain API keys.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{provider} answered HTTP {status}: {excerpt}")]
    Http {
        provider: String,
        status: u16,
        /// The first few hundred bytes of the body, for humans.
        excerpt: String,
    },
    #[error("{provider} rate-limited the call{}", retry_after.map(|d| format!(" (retry after {} ms)", d.as_millis())).unwrap_or_default())]
    RateLimited {
        provider: String,
        retry_after: Option<Duration>,
    },
    #[error("{provider} did not answer within {} ms", timeout.as_millis())]
    Timeout { provider: String, timeout: Duration },
    /// The provider went silent: no byte for `silent` (before its answer began, or in
    /// the middle of it).
    #[error("{provider} sent nothing for {} s {waiting}", silent.as_secs_f32().round())]
    Stalled {
        provider: String,
        silent: Duration,
        waiting: &'static str,
    },
    #[error("could not reach {provider}: {message}")]
    Connection { provider: String, message: String },
    #[error("{provider} sent a response Conclave cannot read: {message}")]
    Malformed { provider: String, message: String },
    #[error(
        "{provider} refused the credentials (HTTP 401); check the API key environment variable"
    )]
    Unauthorized { provider: String },
    #[error("{provider} forbade the call (HTTP 403): {excerpt}")]
    Forbidden { provider: String, excerpt: String },
    #[error("the conversation is too long for {provider}'s context window: {message}")]
    ContextOverflow { provider: String, message: String },
    #[error("{provider} refused the call because a spend or quota limit was reached: {message}")]
    SpendLimit { provider: String, message: String },
    #[error("{provider} is paused after repeated failures (circuit breaker); next try in {}", crate::recovery::ladder::human_duration(*retry_in))]
    CircuitOpen {
        provider: String,
        retry_in: Duration,
    },
    /// A scripted model ran out of answers: a fault of the script, not of a provider,
    /// and nothing a retry or a wait can fix.
    #[error("{provider} sent a response Conclave cannot read: {message}")]
    ScriptExhausted { provider: String, message: String },
    #[error("the model's answer was not the JSON asked for: {message}")]
    InvalidStructuredOutput { message: String },
    #[error("no model is configured: {message}")]
    NotConfigured { message: String },
    #[error("the call was cancelled")]
    Cancelled,
}

impl Classify for ModelError {
    fn severity(&self) -> Severity {
        match self {
            ModelError::Unauthorized { .. }
            | ModelError::Forbidden { .. }
            | ModelError::SpendLimit { .. }
            | ModelError::NotConfigured { .. } => Severity::Critical,
            ModelError::Timeout { .. }
            | ModelError::Stalled { .. }
            | ModelError::ContextOverflow { .. } => Severity::High,
            ModelError::Http { status, .. } if *status >= 500 => Severity::Medium,
            ModelError::Http { .. } => Severity::High,
            ModelError::RateLimited { .. }
            | ModelError::Connection { .. }
            | ModelError::CircuitOpen { .. } => Severity::Medium,
            ModelError::Malformed { .. }
            | ModelError::ScriptExhausted { .. }
            | ModelError::InvalidStructuredOutput { .. } => Severity::Medium,
            ModelError::Cancelled => Severity::Low,
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            // A garbage body from a provider that usually answers well is a fault of
            // the moment, like a 500: the same call again normally succeeds.
            ModelError::RateLimited { .. }
            | ModelError::Timeout { .. }
            | ModelError::Stalled { .. }
            | ModelError::Connection { .. }
            | ModelError::Malformed { .. } => true,
            ModelError::Http { status, .. } => *status >= 500 || *status == 408,
            _ => false,
        }
    }

    fn failure_kind(&self) -> FailureKind {
        match self {
            ModelError::Http { status, .. } if *status >= 500 || *status == 408 => {
                FailureKind::Server
            }
            ModelError::Http { .. } => FailureKind::BadRequest,
            ModelError::RateLimited { .. } => FailureKind::RateLimited,
            ModelError::Timeout { .. } | ModelError::Stalled { .. } => FailureKind::Timeout,
            ModelError::Connection { .. } => FailureKind::Connection,
            ModelError::Malformed { .. }
            | ModelError::ScriptExhausted { .. }
            | ModelError::InvalidStructuredOutput { .. } => FailureKind::InvalidResponse,
            ModelError::Unauthorized { .. } => FailureKind::Auth,
            ModelError::Forbidden { .. } => FailureKind::Permission,
            ModelError::ContextOverflow { .. } => FailureKind::ContextOverflow,
            ModelError::SpendLimit { .. } => FailureKind::QuotaExceeded,
            ModelError::CircuitOpen { .. } => FailureKind::CircuitOpen,
            ModelError::NotConfigured { .. } => FailureKind::InvalidConfig,
            ModelError::Cancelled => FailureKind::Cancelled,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ModelError::Http { .. } => "http_status",
            ModelError::RateLimited { .. } => "rate_limited",
            ModelError::Timeout { .. } => "timeout",
            ModelError::Stalled { .. } => "stalled",
            ModelError::Connection { .. } => "connection",
            ModelError::Malformed { .. } => "malformed_response",
            ModelError::ScriptExhausted { .. } => "script_exhausted",
            ModelError::Unauthorized { .. } => "unauthorized",
            ModelError::Forbidden { .. } => "forbidden",
            ModelError::ContextOverflow { .. } => "context_overflow",
            ModelError::SpendLimit { .. } => "spend_limit",
            ModelError::CircuitOpen { .. } => "circuit_open",
            ModelError::InvalidStructuredOutput { .. } => "invalid_structured_output",
            ModelError::NotConfigured { .. } => "llm_not_configured",
            ModelError::Cancelled => "cancelled",
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after, .. } => *retry_after,
            ModelError::CircuitOpen { retry_in, .. } => Some(*retry_in),
            _ => None,
        }
    }

    fn provider(&self) -> Option<&str> {
        match self {
            ModelError::Http { provider, .. }
            | ModelError::RateLimited { provider, .. }
            | ModelError::Timeout { provider, .. }
            | ModelError::Stalled { provider, .. }
            | ModelError::Connection { provider, .. }
            | ModelError::Malformed { provider, .. }
            | ModelError::ScriptExhausted { provider, .. }
            | ModelError::Unauthorized { provider }
            | ModelError::Forbidden { provider, .. }
            | ModelError::ContextOverflow { provider, .. }
            | ModelError::SpendLimit { provider, .. }
            | ModelError::CircuitOpen { provider, .. } => Some(provider),
            ModelError::InvalidStructuredOutput { .. }
            | ModelError::NotConfigured { .. }
            | ModelError::Cancelled => None,
        }
    }
}
