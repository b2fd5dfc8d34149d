//! The subtask-level ladder (ErrorRecoveryManager): classify a failure, retry it per
//! severity with full-jitter backoff, and say when retrying is over and the failure must
//! climb (peer takeover, supervisor, top layer).

use std::collections::HashMap;
use std::time::Duration;

use super::Severity;
use super::backoff::{Jitter, full_jitter, random_jitter};
use crate::config::RecoveryConfig;

/// What a failure is, as recovery sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// A short stable name (`rate_limited`, `timeout`, ...), for reports.
    pub kind: String,
    pub severity: Severity,
    pub transient: bool,
    pub message: String,
    pub retry_after: Option<Duration>,
}

/// The ladder's next step for a failure.
#[derive(Clone, Debug, PartialEq)]
pub enum LadderStep {
    /// Try again after `delay`; this is retry `attempt` of `max` at this severity.
    Retry {
        attempt: u32,
        max: u32,
        delay: Duration,
    },
    /// Retries at this severity are used up: hand over or escalate.
    Exhausted { retries: u32 },
}

/// Retry bookkeeping for one subtask. Each severity has its own budget
/// (`recovery.severity`), so a rate limit after a timeout does not eat the timeout's.
pub struct Ladder {
    config: RecoveryConfig,
    max_retries_override: Option<u32>,
    used: HashMap<Severity, u32>,
    jitter: Jitter,
}

impl Ladder {
    /// `max_retries` (a task's `options.maxRetries`) replaces every non-critical limit.
    pub fn new(config: &RecoveryConfig, max_retries: Option<u32>) -> Ladder {
        Ladder {
            config: config.clone(),
            max_retries_override: max_retries,
            used: HashMap::new(),
            jitter: random_jitter(),
        }
    }

    pub fn with_jitter(mut self, jitter: Jitter) -> Ladder {
        self.jitter = jitter;
        self
    }

    /// The retry limit at `severity`. Critical failures are never retried.
    pub fn limit(&self, severity: Severity) -> u32 {
        if severity == Severity::Critical {
            return 0;
        }
        self.max_retries_override
            .unwrap_or(self.config.severity.step(severity).max_retries)
    }

    /// The ceiling of the delay before retry `attempt` (1-based) at `severity`:
    /// `min(maxDelay, base × 2^attempt)`.
    pub fn ceiling(&self, severity: Severity, attempt: u32) -> Duration {
        let base = self.config.severity.step(severity).base_delay_ms;
        let ms = base.saturating_mul(1u64 << attempt.min(32));
        Duration::from_millis(ms.min(self.config.max_delay_ms))
    }

    /// Decides what to do about `failure`: a retry with a full-jitter delay (at least the
    /// server's Retry-After), or exhausted.
    pub fn on_failure(&mut self, failure: &Failure) -> LadderStep {
        let max = self.limit(failure.severity);
        let used = self.used.entry(failure.severity).or_insert(0);
        if *used >= max {
            return LadderStep::Exhausted { retries: *used };
        }
        *used += 1;
        let attempt = *used;
        let ceiling = self.ceiling(failure.severity, attempt);
        let mut delay = full_jitter(ceiling, (self.jitter)());
        if let Some(after) = failure.retry_after {
            delay = delay.max(after.min(Duration::from_millis(self.config.max_delay_ms)));
        }
        LadderStep::Retry {
            attempt,
            max,
            delay,
        }
    }

    /// Starts over, after a handover or a person's "retry".
    pub fn reset(&mut self) {
        self.used.clear();
    }
}

/// Classifies an error known only by its text (a process's stderr, a peer's report):
/// the last resort when no typed error is available.
pub fn classify_message(message: &str) -> (Severity, bool) {
    let text = message.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    if has(&[
        "401",
        "403",
        "unauthorized",
        "forbidden",
        "permission denied",
        "invalid api key",
        "quota",
        "billing",
    ]) {
        (Severity::Critical, false)
    } else if has(&["timed out", "timeout", "deadline"]) {
        (Severity::High, true)
    } else if has(&[
        "429",
        "rate limit",
        "overloaded",
        "503",
        "502",
        "500",
        "connection reset",
        "connection refused",
        "temporarily",
    ]) {
        (Severity::Medium, true)
    } else {
        (Severity::Low, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn failure(severity: Severity) -> Failure {
        Failure {
            kind: "x".into(),
            severity,
            transient: true,
            message: "boom".into(),
            retry_after: None,
        }
    }

    #[test]
    fn each_severity_has_its_own_budget_and_critical_has_none() {
        let mut ladder = Ladder::new(&RecoveryConfig::default(), None);
        for attempt in 1..=3 {
            assert!(
                matches!(ladder.on_failure(&failure(Severity::Low)), LadderStep::Retry { attempt: a, max: 3, .. } if a == attempt)
            );
        }
        assert_eq!(
            ladder.on_failure(&failure(Severity::Low)),
            LadderStep::Exhausted { retries: 3 }
        );
        assert!(matches!(
            ladder.on_failure(&failure(Severity::High)),
            LadderStep::Retry { max: 1, .. }
        ));
        assert_eq!(
            ladder.on_failure(&failure(Severity::High)),
            LadderStep::Exhausted { retries: 1 }
        );
        assert_eq!(
            ladder.on_failure(&failure(Severity::Critical)),
            LadderStep::Exhausted { retries: 0 }
        );
        ladder.reset();
        assert!(matches!(
            ladder.on_failure(&failure(Severity::Low)),
            LadderStep::Retry { attempt: 1, .. }
        ));
    }

    #[test]
    fn a_medium_attempt_one_never_waits_more_than_ten_seconds() {
        for unit in [0.0, 0.25, 0.5, 0.999_999] {
            let mut ladder =
                Ladder::new(&RecoveryConfig::default(), None).with_jitter(Arc::new(move || unit));
            let LadderStep::Retry {
                attempt: 1, delay, ..
            } = ladder.on_failure(&failure(Severity::Medium))
            else {
                panic!("medium failures are retried");
            };
            assert!(delay <= Duration::from_secs(10), "{delay:?}");
        }
    }

    #[test]
    fn retry_after_is_honoured_and_max_delay_caps_everything() {
        let mut ladder =
            Ladder::new(&RecoveryConfig::default(), None).with_jitter(Arc::new(|| 0.0));
        let mut slow = failure(Severity::Medium);
        slow.retry_after = Some(Duration::from_secs(7));
        assert!(
            matches!(ladder.on_failure(&slow), LadderStep::Retry { delay, .. } if delay == Duration::from_secs(7))
        );
        assert_eq!(
            ladder.ceiling(Severity::High, 10),
            Duration::from_millis(60_000)
        );
    }

    #[test]
    fn a_tasks_max_retries_replaces_the_limits_except_critical() {
        let ladder = Ladder::new(&RecoveryConfig::default(), Some(5));
        assert_eq!(ladder.limit(Severity::High), 5);
        assert_eq!(ladder.limit(Severity::Critical), 0);
    }

    #[test]
    fn messages_are_classified_only_as_a_last_resort_but_sensibly() {
        assert_eq!(
            classify_message("HTTP 401 Unauthorized").0,
            Severity::Critical
        );
        assert_eq!(
            classify_message("request timed out after 30s"),
            (Severity::High, true)
        );
        assert_eq!(
            classify_message("503 Service Unavailable"),
            (Severity::Medium, true)
        );
        assert_eq!(classify_message("no such file"), (Severity::Low, false));
    }
}
