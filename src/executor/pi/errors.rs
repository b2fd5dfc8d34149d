//! Turning pi's error strings into typed errors.
//!
//! pi reports a failed model call as the assistant message's `errorMessage`, which is
//! the provider SDK's message: `<HTTP status> <body message>` when the server answered
//! (`401 Incorrect API key provided`, `429 Rate limit reached`, `500 boom`), or a
//! transport message (`Connection error.`, `Request timed out.`) when it did not. The
//! status, when present, decides the [`ModelError`] variant; words are only consulted
//! where the status alone cannot (quota versus rate limit, context overflow) or where
//! there is no status at all. Anything unrecognised stays pi's own message in
//! [`ExecutorError::Process`].

use std::time::Duration;

use crate::executor::ExecutorError;
use crate::model::ModelError;

/// How much of a provider's message is kept in an error.
const EXCERPT_CHARS: usize = 300;

/// What the mapping needs to know besides the message.
#[derive(Clone, Debug)]
pub struct ErrorContext {
    /// The provider as Conclave names it (`openai`, `anthropic`).
    pub provider: String,
    /// Reported as the timeout of a model call that timed out inside pi.
    pub step_timeout: Duration,
    /// The API key pi was given, scrubbed from every message (providers echo keys).
    secret: Option<String>,
}

impl ErrorContext {
    pub fn new(provider: impl Into<String>, step_timeout: Duration, secret: Option<&str>) -> Self {
        ErrorContext {
            provider: provider.into(),
            step_timeout,
            secret: secret.filter(|s| !s.is_empty()).map(str::to_string),
        }
    }

    /// The message with the API key, if it appears, replaced.
    pub fn redact(&self, message: &str) -> String {
        match &self.secret {
            Some(secret) => message.replace(secret.as_str(), "[redacted]"),
            None => message.to_string(),
        }
    }

    /// The typed error for pi's description of a failed model call.
    pub fn model_failure(&self, message: &str) -> ExecutorError {
        let message = self.redact(message.trim());
        let provider = self.provider.clone();
        let (status, rest) = split_status(&message);
        let lower = message.to_lowercase();
        let error = match status {
            Some(401) => ModelError::Unauthorized { provider },
            Some(403) => ModelError::Forbidden {
                provider,
                excerpt: excerpt(rest),
            },
            Some(402) => ModelError::SpendLimit {
                provider,
                message: excerpt(rest),
            },
            Some(429) if mentions_quota(&lower) => ModelError::SpendLimit {
                provider,
                message: excerpt(rest),
            },
            Some(429) => ModelError::RateLimited {
                provider,
                retry_after: None,
            },
            Some(413) => ModelError::ContextOverflow {
                provider,
                message: excerpt(rest),
            },
            Some(400 | 422) if mentions_overflow(&lower) => ModelError::ContextOverflow {
                provider,
                message: excerpt(rest),
            },
            Some(status) => ModelError::Http {
                provider,
                status,
                excerpt: excerpt(rest),
            },
            None if mentions_overflow(&lower) => ModelError::ContextOverflow {
                provider,
                message: excerpt(&message),
            },
            None if mentions_timeout(&lower) => ModelError::Timeout {
                provider,
                timeout: self.step_timeout,
            },
            None if mentions_connection(&lower) => ModelError::Connection {
                provider,
                message: excerpt(&message),
            },
            None if lower.contains("no api key") => ModelError::NotConfigured {
                message: excerpt(&message),
            },
            None => return ExecutorError::Process(message),
        };
        ExecutorError::Model(error)
    }
}

/// Splits `"429 Too many requests"` into `(Some(429), "Too many requests")`.
fn split_status(message: &str) -> (Option<u16>, &str) {
    let digits = message.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 3 {
        return (None, message);
    }
    let (code, rest) = message.split_at(digits);
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return (None, message);
    }
    match code.parse::<u16>() {
        Ok(status) if (400..600).contains(&status) => (Some(status), rest.trim_start()),
        _ => (None, message),
    }
}

fn mentions_quota(lower: &str) -> bool {
    ["quota", "billing", "insufficient", "credit"]
        .iter()
        .any(|w| lower.contains(w))
}

fn mentions_overflow(lower: &str) -> bool {
    [
        "context window",
        "context length",
        "context_length",
        "prompt is too long",
        "too many tokens",
        "maximum context",
        "token limit",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn mentions_timeout(lower: &str) -> bool {
    lower.contains("timed out") || lower.contains("timeout")
}

fn mentions_connection(lower: &str) -> bool {
    [
        "connection error",
        "connection refused",
        "connection reset",
        "econnrefused",
        "econnreset",
        "fetch failed",
        "socket hang up",
        "network error",
        "other side closed",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

fn excerpt(text: &str) -> String {
    let mut chars = text.chars();
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
    use crate::recovery::{Classify, Severity};

    fn context() -> ErrorContext {
        ErrorContext::new("openai", Duration::from_secs(30), Some("sk-secret"))
    }

    fn model(message: &str) -> ModelError {
        match context().model_failure(message) {
            ExecutorError::Model(e) => e,
            other => panic!("expected a model error for {message:?}, got {other:?}"),
        }
    }

    #[test]
    fn statuses_pick_the_variant() {
        assert!(matches!(
            model("401 Incorrect API key provided"),
            ModelError::Unauthorized { .. }
        ));
        assert!(matches!(
            model("403 forbidden region"),
            ModelError::Forbidden { .. }
        ));
        assert!(matches!(
            model("429 Rate limit reached"),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(
            model("429 You exceeded your current quota"),
            ModelError::SpendLimit { .. }
        ));
        assert!(matches!(
            model("400 This model's maximum context length is 8192 tokens"),
            ModelError::ContextOverflow { .. }
        ));
        let ModelError::Http {
            status, excerpt, ..
        } = model("503 upstream unavailable")
        else {
            panic!("expected Http");
        };
        assert_eq!((status, excerpt.as_str()), (503, "upstream unavailable"));
        assert!(matches!(
            model("404 status code (no body)"),
            ModelError::Http { status: 404, .. }
        ));
    }

    #[test]
    fn transport_failures_without_status() {
        assert!(matches!(
            model("Connection error."),
            ModelError::Connection { .. }
        ));
        assert!(matches!(
            model("Request timed out."),
            ModelError::Timeout { .. }
        ));
    }

    #[test]
    fn unknown_messages_stay_pi_messages() {
        let err = context().model_failure("Extension failed, blocking execution");
        assert!(
            matches!(&err, ExecutorError::Process(m) if m.contains("Extension failed")),
            "{err:?}"
        );
        // A number that is not an HTTP status is not taken for one.
        assert!(matches!(
            context().model_failure("1234 widgets"),
            ExecutorError::Process(_)
        ));
    }

    #[test]
    fn an_unauthorized_model_is_critical() {
        let err = context().model_failure("401 Incorrect API key provided");
        assert_eq!(err.severity(), Severity::Critical);
        assert!(!err.is_transient());
    }

    #[test]
    fn the_api_key_never_survives_into_an_error() {
        let err = context().model_failure("403 key sk-secret is not allowed here");
        let text = err.to_string();
        assert!(!text.contains("sk-secret"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
