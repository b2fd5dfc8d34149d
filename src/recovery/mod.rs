//! Recovery: how every failure in Conclave is classified, retried and escalated.
//!
//! This module is the one place that decides what a failure means. Errors from models,
//! tools and agents implement [`Classify`]; call-level retry ([`backoff`]) and the
//! circuit breakers ([`breaker`]) read that classification, and so does the subtask-level
//! severity ladder ([`ladder`]). Every failure, whatever its source, becomes one
//! [`Failure`]. What the team does when its checks find the code wrong (fix turns, undo
//! before a retry, the fix rounds, a broken acceptance test, a fix the person must see)
//! is the quality ladder ([`quality`]). What the top layer does when a subtask fails for
//! good is its oversight ([`oversight`]).

pub mod backoff;
pub mod breaker;
pub mod ladder;
mod meaning;
pub mod oversight;
pub mod quality;
pub mod strategy;

/// Defined with the configuration, whose severity ladder is set by it.
pub use crate::config::Severity;
/// The failure and the recovery step are records (tasks and the store keep them), so
/// they live below the store with the other records; what a failure means is decided
/// here (`meaning.rs`).
pub use crate::records::{
    EventScope, Failure, FailureKind, RecoveryAction, RecoveryEvent, RootCause, Scope,
};

/// What recovery needs to know about an error, decided by its type and never by
/// scanning its message when the type already says it.
pub trait Classify {
    /// Severity on the ladder (auth, permission and spend-limit failures are critical).
    fn severity(&self) -> Severity;
    /// Whether trying the same thing again may succeed (rate limits, 5xx, timeouts, resets).
    fn is_transient(&self) -> bool;
    /// A short stable name from the source, finer than the kind, e.g. `http_status`.
    fn kind(&self) -> &'static str;
    /// What kind of failure this is; decides whether it is fatal.
    fn failure_kind(&self) -> FailureKind;
    /// The provider the failure is about, when it is about one.
    fn provider(&self) -> Option<&str> {
        None
    }
    /// A server-requested wait before the next attempt (HTTP Retry-After), if any.
    fn retry_after(&self) -> Option<std::time::Duration> {
        None
    }
}
