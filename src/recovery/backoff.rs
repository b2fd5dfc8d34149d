//! Call-level retry: a few quick retries of one transient model or tool call.
//!
//! The delay before retry `n` (0-based) is full jitter,
//! `random(0, min(maxDelay, base * 2^n))`. A server's `Retry-After` is a floor: the
//! wait is at least that long. It is capped by `recovery.call.maxDelayMs` (8 s by
//! default): when a server asks for a longer wait than that, the call is not retried
//! here at all and the error (which still carries its `retry_after`) goes up to the
//! subtask-level ladder, where the subtask waits for the provider visibly, instead of
//! blocking an agent silently or retrying before the server is ready.
//!
//! The arithmetic is pure ([`RetryPolicy::delay`], [`full_jitter`]); randomness comes in
//! as a number in `[0, 1)` from an injectable [`Jitter`]. Every scheduled retry is
//! reported to a [`RetryListener`] before the wait starts, so the runtime can show it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Classify, Severity};
use crate::config::CallRetryConfig;

/// The numbers of call-level retry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
    pub base_delay: Duration,
    /// The jitter ceiling never exceeds this.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured at this level; longer ones end call-level retry.
    pub max_retry_after: Duration,
}

impl RetryPolicy {
    /// From `recovery.call`. A `Retry-After` longer than `call.maxDelayMs` is waited
    /// out by the ladder, visibly, not here.
    pub fn from_config(call: &CallRetryConfig) -> Self {
        RetryPolicy {
            max_attempts: call.max_attempts.max(1),
            base_delay: Duration::from_millis(call.base_delay_ms),
            max_delay: Duration::from_millis(call.max_delay_ms),
            max_retry_after: Duration::from_millis(call.max_delay_ms),
        }
    }

    /// Whether an attempt after `failures` failed ones is still allowed.
    pub fn allows_retry_after(&self, failures: u32) -> bool {
        failures < self.max_attempts
    }

    /// `min(max_delay, base * 2^retry)`, saturating.
    pub fn ceiling(&self, retry: u32) -> Duration {
        ceiling(self.base_delay, self.max_delay, retry)
    }

    /// The wait before retry number `retry` (0 for the first retry), given the server's
    /// `Retry-After` and a uniform random `unit` in `[0, 1)`; `None` when the server
    /// asks for longer than [`RetryPolicy::max_retry_after`].
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>, unit: f64) -> Option<Duration> {
        match retry_after {
            Some(floor) if floor > self.max_retry_after => None,
            _ => Some(backoff_delay(
                self.base_delay,
                self.max_delay,
                retry,
                retry_after,
                unit,
            )),
        }
    }
}

/// `min(max, base * 2^n)`, saturating.
pub fn ceiling(base: Duration, max: Duration, n: u32) -> Duration {
    let factor = 1u32.checked_shl(n).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(max)
}

/// The one backoff formula of Conclave, for call-level retries, subtask retries and
/// waits for a provider alike: full jitter, `random(0, min(max, base * 2^n))`, and never
/// shorter than the server's `Retry-After`.
pub fn backoff_delay(
    base: Duration,
    max: Duration,
    n: u32,
    retry_after: Option<Duration>,
    unit: f64,
) -> Duration {
    let jittered = full_jitter(ceiling(base, max, n), unit);
    match retry_after {
        Some(floor) => jittered.max(floor),
        None => jittered,
    }
}

/// `ceiling * unit`, with `unit` clamped to `[0, 1]` (NaN counts as 0).
pub fn full_jitter(ceiling: Duration, unit: f64) -> Duration {
    let unit = if unit.is_nan() {
        0.0
    } else {
        unit.clamp(0.0, 1.0)
    };
    ceiling.mul_f64(unit)
}

/// A source of uniform random numbers in `[0, 1)`.
pub type Jitter = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The thread-local RNG.
pub fn random_jitter() -> Jitter {
    Arc::new(rand::random::<f64>)
}

/// Call-level retries shared by every caller of one provider (or tool): a token
/// bucket. A retry costs one token; a successful call earns `per_success` back, up to
/// `capacity`. At a steady fault rate `p` with `n` attempts a call, retries cost about
/// `p + p² + …` tokens per call and successes earn `per_success × (1 − pⁿ)`, so the
/// default (capacity 10, 1 a success) never runs dry below ~50% faults, while the team
/// never retries more than it succeeds plus `capacity`, and a dead provider gets at
/// most `capacity` retries from the whole team in all: the bound on amplification.
#[derive(Debug)]
pub struct RetryBudget {
    capacity: f64,
    per_success: f64,
    tokens: std::sync::Mutex<f64>,
}

impl RetryBudget {
    pub fn new(capacity: f64, per_success: f64) -> RetryBudget {
        let capacity = capacity.max(0.0);
        RetryBudget {
            capacity,
            per_success: per_success.max(0.0),
            tokens: std::sync::Mutex::new(capacity),
        }
    }

    pub fn from_config(config: &crate::config::RetryBudgetConfig) -> RetryBudget {
        RetryBudget::new(config.capacity, config.per_success)
    }

    /// Takes a token for one retry; `false` when the budget is spent.
    pub fn try_spend(&self) -> bool {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// A call succeeded.
    pub fn earn(&self) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        *tokens = (*tokens + self.per_success).min(self.capacity);
    }

    pub fn tokens(&self) -> f64 {
        *self.tokens.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One scheduled retry, reported before the wait begins.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryEvent {
    /// What is retried: the provider or tool name.
    pub source: String,
    /// The attempt about to be made after the wait (2 for the first retry).
    pub attempt: u32,
    pub max_attempts: u32,
    /// The wait chosen, `Retry-After` included.
    pub delay: Duration,
    /// What the server asked for, if it did.
    pub retry_after: Option<Duration>,
    /// [`Classify::kind`] of the failure, e.g. `rate_limited`.
    pub error_kind: &'static str,
    pub severity: Severity,
    /// The failure's message (never contains keys).
    pub message: String,
}

/// Receives every scheduled retry.
pub type RetryListener = Arc<dyn Fn(&RetryEvent) + Send + Sync>;

/// The wait was cut short by cancellation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

/// The bookkeeping of one retried call: count attempts, decide, report.
///
/// Use it in a loop when the attempt needs mutable borrows a closure cannot lend (as
/// the model call does with its delta sink); [`retry`] wraps it for simple closures.
pub struct Retrier<'a> {
    policy: &'a RetryPolicy,
    source: &'a str,
    jitter: &'a (dyn Fn() -> f64 + Send + Sync),
    listener: Option<&'a RetryListener>,
    failures: u32,
}

impl<'a> Retrier<'a> {
    /// Whether another failure could still be retried (attempts are left).
    pub fn has_attempts_left(&self) -> bool {
        self.policy.allows_retry_after(self.failures + 1)
    }

    pub fn new(
        policy: &'a RetryPolicy,
        source: &'a str,
        jitter: &'a (dyn Fn() -> f64 + Send + Sync),
        listener: Option<&'a RetryListener>,
    ) -> Self {
        Retrier {
            policy,
            source,
            jitter,
            listener,
            failures: 0,
        }
    }

    /// Records a failed attempt. Returns the wait before the next attempt (already
    /// reported to the listener), or `None` when the error must be returned as it is:
    /// not transient, attempts used up, or a `Retry-After` beyond the cap.
    pub fn on_failure<E: Classify + std::fmt::Display>(&mut self, error: &E) -> Option<Duration> {
        self.failures += 1;
        if !error.is_transient() || self.failures >= self.policy.max_attempts {
            return None;
        }
        let retry_after = error.retry_after();
        let Some(delay) = self
            .policy
            .delay(self.failures - 1, retry_after, (self.jitter)())
        else {
            tracing::info!(
                source = self.source,
                retry_after_ms = retry_after.map(|d| d.as_millis() as u64),
                "server asks to wait longer than the call-level cap; not retrying here"
            );
            return None;
        };
        let event = RetryEvent {
            source: self.source.to_string(),
            attempt: self.failures + 1,
            max_attempts: self.policy.max_attempts,
            delay,
            retry_after,
            error_kind: error.kind(),
            severity: error.severity(),
            message: error.to_string(),
        };
        tracing::warn!(
            source = self.source,
            attempt = event.attempt,
            max_attempts = event.max_attempts,
            delay_ms = delay.as_millis() as u64,
            kind = event.error_kind,
            "retrying a transient failure"
        );
        if let Some(listener) = self.listener {
            listener(&event);
        }
        Some(delay)
    }
}

/// Sleeps for `delay` unless `cancel` fires first.
pub async fn wait(delay: Duration, cancel: &CancellationToken) -> Result<(), Cancelled> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(Cancelled),
        _ = tokio::time::sleep(delay) => Ok(()),
    }
}

/// Runs `op` until it succeeds, fails for good, or the policy's attempts are used up.
/// `op` receives the 1-based attempt number. Cancellation ends the wait between
/// attempts with `E::from(Cancelled)`.
pub async fn retry<T, E, F, Fut>(
    policy: &RetryPolicy,
    source: &str,
    jitter: &(dyn Fn() -> f64 + Send + Sync),
    listener: Option<&RetryListener>,
    cancel: &CancellationToken,
    mut op: F,
) -> Result<T, E>
where
    E: Classify + std::fmt::Display + From<Cancelled>,
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut retrier = Retrier::new(policy, source, jitter, listener);
    let mut attempt = 1;
    loop {
        if cancel.is_cancelled() {
            return Err(E::from(Cancelled));
        }
        let error = match op(attempt).await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(delay) = retrier.on_failure(&error) else {
            return Err(error);
        };
        wait(delay, cancel).await.map_err(E::from)?;
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn policy() -> RetryPolicy {
        let mut policy = RetryPolicy::from_config(&CallRetryConfig {
            max_attempts: 4,
            base_delay_ms: 100,
            max_delay_ms: 1000,
        });
        policy.max_retry_after = Duration::from_millis(5000);
        policy
    }

    #[derive(Debug, Clone, PartialEq)]
    enum TestError {
        Transient(Option<Duration>),
        Fatal,
        Cancelled,
    }

    impl std::fmt::Display for TestError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    impl Classify for TestError {
        fn severity(&self) -> Severity {
            Severity::Medium
        }
        fn is_transient(&self) -> bool {
            matches!(self, TestError::Transient(_))
        }
        fn kind(&self) -> &'static str {
            "test"
        }
        fn failure_kind(&self) -> crate::recovery::FailureKind {
            crate::recovery::FailureKind::Server
        }
        fn retry_after(&self) -> Option<Duration> {
            match self {
                TestError::Transient(after) => *after,
                _ => None,
            }
        }
    }

    impl From<Cancelled> for TestError {
        fn from(_: Cancelled) -> Self {
            TestError::Cancelled
        }
    }

    #[test]
    fn the_retry_budget_runs_dry_without_successes_and_refills_with_them() {
        let budget = RetryBudget::new(3.0, 0.5);
        assert!(budget.try_spend() && budget.try_spend() && budget.try_spend());
        assert!(!budget.try_spend());
        budget.earn();
        assert!(!budget.try_spend());
        budget.earn();
        assert!(budget.try_spend());
        for _ in 0..100 {
            budget.earn();
        }
        assert_eq!(budget.tokens(), 3.0);
    }

    #[test]
    fn ceiling_doubles_and_saturates_at_max_delay() {
        let p = policy();
        let ceilings: Vec<u64> = (0..6).map(|n| p.ceiling(n).as_millis() as u64).collect();
        assert_eq!(ceilings, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(p.ceiling(200), Duration::from_millis(1000));
    }

    #[test]
    fn full_jitter_spans_zero_to_ceiling() {
        let ceiling = Duration::from_millis(800);
        assert_eq!(full_jitter(ceiling, 0.0), Duration::ZERO);
        assert_eq!(full_jitter(ceiling, 0.5), Duration::from_millis(400));
        assert_eq!(full_jitter(ceiling, 7.0), ceiling);
        assert_eq!(full_jitter(ceiling, f64::NAN), Duration::ZERO);
    }

    #[test]
    fn retry_after_is_a_floor_and_capped() {
        let p = policy();
        let after = Some(Duration::from_millis(3000));
        assert_eq!(p.delay(0, after, 0.9), Some(Duration::from_millis(3000)));
        assert_eq!(
            p.delay(3, Some(Duration::from_millis(10)), 0.5),
            Some(Duration::from_millis(400))
        );
        assert_eq!(p.delay(0, Some(Duration::from_millis(5001)), 0.5), None);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_failures_and_reports_each_wait() {
        let events = Arc::new(Mutex::new(Vec::new()));
        let sink = events.clone();
        let listener: RetryListener =
            Arc::new(move |e: &RetryEvent| sink.lock().unwrap().push(e.clone()));
        let calls = AtomicU32::new(0);
        let result: Result<&str, TestError> = retry(
            &policy(),
            "tool",
            &|| 0.5,
            Some(&listener),
            &CancellationToken::new(),
            |attempt| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    match attempt {
                        1 => Err(TestError::Transient(None)),
                        2 => Err(TestError::Transient(Some(Duration::from_secs(2)))),
                        _ => Ok("done"),
                    }
                }
            },
        )
        .await;
        assert_eq!(result, Ok("done"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let events = events.lock().unwrap();
        let summary: Vec<(u32, u64)> = events
            .iter()
            .map(|e| (e.attempt, e.delay.as_millis() as u64))
            .collect();
        assert_eq!(summary, vec![(2, 50), (3, 2000)]);
        assert_eq!(events[1].retry_after, Some(Duration::from_secs(2)));
    }

    #[tokio::test(start_paused = true)]
    async fn fatal_errors_and_exhaustion_end_the_loop() {
        let calls = AtomicU32::new(0);
        let result: Result<(), TestError> = retry(
            &policy(),
            "tool",
            &|| 0.0,
            None,
            &CancellationToken::new(),
            |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(TestError::Fatal) }
            },
        )
        .await;
        assert_eq!(result, Err(TestError::Fatal));
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let calls = AtomicU32::new(0);
        let result: Result<(), TestError> = retry(
            &policy(),
            "tool",
            &|| 0.99,
            None,
            &CancellationToken::new(),
            |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async { Err(TestError::Transient(None)) }
            },
        )
        .await;
        assert_eq!(result, Err(TestError::Transient(None)));
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn cancellation_interrupts_the_wait() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            trigger.cancel();
        });
        let result: Result<(), TestError> =
            retry(&policy(), "tool", &|| 0.0, None, &cancel, |_| async {
                Err(TestError::Transient(Some(Duration::from_secs(4))))
            })
            .await;
        assert_eq!(result, Err(TestError::Cancelled));
    }
}
