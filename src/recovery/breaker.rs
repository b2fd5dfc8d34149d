//! A circuit breaker per provider (or tool): when most recent calls fail, stop calling
//! for a while instead of letting every agent hammer a service that is down.
//!
//! Closed: calls go through and their outcomes fill a sliding window of the last
//! `window` calls; with at least `min_calls` in it and a failure share of at least
//! `failure_rate`, the breaker opens. Open: calls are refused at once for `open_ms`.
//! Half-open: up to `half_open_probes` probe calls are let through; when that many
//! succeed the breaker closes, and any failure opens it again.
//!
//! Outcomes are the caller's judgement ([`CallOutcome`]): a rate limit or a cancelled
//! call is [`CallOutcome::Ignored`], neither success nor failure. Permits carry the
//! breaker's epoch, so a slow call admitted before a transition cannot skew the state
//! after it. Time is `tokio::time::Instant`, so tests run on tokio's paused clock.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::BreakerConfig;

/// What a finished call means for the breaker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    Success,
    Failure,
    /// Says nothing about the service's health (rate limit, cancellation, a bad request).
    Ignored,
}

/// The breaker's state, for display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open { retry_in: Duration },
    HalfOpen,
}

/// A state change, reported to the [`BreakerListener`].
#[derive(Clone, Debug, PartialEq)]
pub struct BreakerEvent {
    /// The breaker's name: the provider or executor it guards.
    pub name: String,
    /// What it guards, for people: `provider` or `executor`.
    pub subject: &'static str,
    pub transition: BreakerTransition,
}

#[derive(Clone, Debug, PartialEq)]
pub enum BreakerTransition {
    /// Calls are refused for `open_for`. `failures` of the last `calls` failed (for a
    /// failed half-open probe: 1 of the probes so far).
    Opened {
        failures: usize,
        calls: usize,
        open_for: Duration,
    },
    /// The open period is over; probe calls are let through.
    HalfOpen,
    /// Probes succeeded; calls flow again.
    Closed,
}

impl std::fmt::Display for BreakerEvent {
    /// What a person reads: "provider openai paused for 30 s after 6 failures in its
    /// last 10 calls".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (subject, name) = (self.subject, &self.name);
        match &self.transition {
            BreakerTransition::Opened {
                failures,
                calls,
                open_for,
            } => write!(
                f,
                "{subject} {name} paused for {} after {failures} failure{} in its last {calls} call{}",
                super::ladder::human_duration(*open_for),
                if *failures == 1 { "" } else { "s" },
                if *calls == 1 { "" } else { "s" },
            ),
            BreakerTransition::HalfOpen => {
                write!(f, "{subject} {name}: trying again with a few probe calls")
            }
            BreakerTransition::Closed => write!(f, "{subject} {name} answers again; calls resume"),
        }
    }
}

/// Receives every state change. Called outside the breaker's lock.
pub type BreakerListener = Arc<dyn Fn(&BreakerEvent) + Send + Sync>;

/// The breaker refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// When asking again may succeed.
    pub retry_in: Duration,
}

/// How long a caller refused in half-open state (all probes in flight) should wait:
/// the probes' verdict usually comes within one call.
const HALF_OPEN_RETRY_HINT: Duration = Duration::from_secs(1);

#[derive(Debug)]
enum State {
    Closed {
        /// `true` = failure, oldest first.
        window: VecDeque<bool>,
    },
    Open {
        until: Instant,
    },
    HalfOpen {
        /// Probes let through and not yet answered or ignored.
        in_flight: u32,
        succeeded: u32,
    },
}

#[derive(Debug)]
struct Inner {
    state: State,
    /// Bumped on every transition.
    epoch: u64,
}

/// A circuit breaker. Share it with `Arc`.
pub struct CircuitBreaker {
    name: String,
    subject: &'static str,
    config: BreakerConfig,
    inner: Mutex<Inner>,
    listener: Option<BreakerListener>,
}

impl std::fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("state", &self.state())
            .finish()
    }
}

/// Admission to make one call. Report its outcome with [`Permit::record`]; a permit
/// dropped without a record (the call was cancelled) counts as [`CallOutcome::Ignored`].
#[must_use = "record the call's outcome on the permit"]
pub struct Permit<'a> {
    breaker: &'a CircuitBreaker,
    epoch: u64,
    probe: bool,
    recorded: bool,
}

impl Permit<'_> {
    pub fn record(mut self, outcome: CallOutcome) {
        self.recorded = true;
        self.breaker.record(self.epoch, self.probe, outcome);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.recorded {
            self.breaker
                .record(self.epoch, self.probe, CallOutcome::Ignored);
        }
    }
}

impl CircuitBreaker {
    pub fn new(name: impl Into<String>, config: BreakerConfig) -> Self {
        let config = BreakerConfig {
            window: config.window.max(1),
            half_open_probes: config.half_open_probes.max(1),
            ..config
        };
        CircuitBreaker {
            name: name.into(),
            subject: "provider",
            inner: Mutex::new(Inner {
                state: State::Closed {
                    window: VecDeque::with_capacity(config.window),
                },
                epoch: 0,
            }),
            config,
            listener: None,
        }
    }

    /// Names what the breaker guards in its messages (`provider` unless told).
    pub fn with_subject(mut self, subject: &'static str) -> Self {
        self.subject = subject;
        self
    }

    pub fn with_listener(mut self, listener: BreakerListener) -> Self {
        self.listener = Some(listener);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn state(&self) -> BreakerState {
        match &self.lock().state {
            State::Closed { .. } => BreakerState::Closed,
            State::Open { until } => BreakerState::Open {
                retry_in: until.saturating_duration_since(Instant::now()),
            },
            State::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }

    /// Asks to make a call: a permit, or how long to wait while the breaker is open.
    pub fn try_acquire(&self) -> Result<Permit<'_>, Rejected> {
        let mut events = Vec::new();
        let result = {
            let mut inner = self.lock();
            let now = Instant::now();
            if let State::Open { until } = inner.state {
                if now < until {
                    return Err(Rejected {
                        retry_in: until - now,
                    });
                }
                inner.state = State::HalfOpen {
                    in_flight: 0,
                    succeeded: 0,
                };
                inner.epoch += 1;
                events.push(BreakerTransition::HalfOpen);
            }
            let epoch = inner.epoch;
            match &mut inner.state {
                State::Closed { .. } => Ok((epoch, false)),
                State::HalfOpen {
                    in_flight,
                    succeeded,
                } => {
                    if *in_flight + *succeeded < self.config.half_open_probes {
                        *in_flight += 1;
                        Ok((epoch, true))
                    } else {
                        Err(Rejected {
                            retry_in: HALF_OPEN_RETRY_HINT,
                        })
                    }
                }
                State::Open { .. } => unreachable!("an expired open state was just replaced"),
            }
        };
        self.emit(events);
        result.map(|(epoch, probe)| Permit {
            breaker: self,
            epoch,
            probe,
            recorded: false,
        })
    }

    fn record(&self, epoch: u64, probe: bool, outcome: CallOutcome) {
        let mut events = Vec::new();
        {
            let mut inner = self.lock();
            if inner.epoch != epoch {
                return; // admitted before the last transition: its verdict is stale
            }
            let open_for = Duration::from_millis(self.config.open_ms);
            match (&mut inner.state, outcome) {
                (State::Closed { .. }, CallOutcome::Ignored) => {}
                (State::Closed { window }, outcome) => {
                    if window.len() == self.config.window {
                        window.pop_front();
                    }
                    window.push_back(outcome == CallOutcome::Failure);
                    let calls = window.len();
                    let failures = window.iter().filter(|failed| **failed).count();
                    let rate = failures as f64 / calls as f64;
                    if outcome == CallOutcome::Failure
                        && calls >= self.config.min_calls
                        && rate >= self.config.failure_rate
                    {
                        self.open(&mut inner, open_for);
                        events.push(BreakerTransition::Opened {
                            failures,
                            calls,
                            open_for,
                        });
                    }
                }
                (State::HalfOpen { in_flight, .. }, CallOutcome::Ignored) if probe => {
                    // The probe told us nothing; free its slot for another.
                    *in_flight = in_flight.saturating_sub(1);
                }
                (
                    State::HalfOpen {
                        in_flight,
                        succeeded,
                    },
                    CallOutcome::Success,
                ) if probe => {
                    *in_flight = in_flight.saturating_sub(1);
                    *succeeded += 1;
                    if *succeeded >= self.config.half_open_probes {
                        inner.state = State::Closed {
                            window: VecDeque::with_capacity(self.config.window),
                        };
                        inner.epoch += 1;
                        events.push(BreakerTransition::Closed);
                    }
                }
                (State::HalfOpen { succeeded, .. }, CallOutcome::Failure) if probe => {
                    let calls = *succeeded as usize + 1;
                    self.open(&mut inner, open_for);
                    events.push(BreakerTransition::Opened {
                        failures: 1,
                        calls,
                        open_for,
                    });
                }
                _ => {}
            }
        }
        self.emit(events);
    }

    fn open(&self, inner: &mut Inner, open_for: Duration) {
        inner.state = State::Open {
            until: Instant::now() + open_for,
        };
        inner.epoch += 1;
    }

    fn emit(&self, transitions: Vec<BreakerTransition>) {
        for transition in transitions {
            match &transition {
                BreakerTransition::Opened {
                    failures, calls, ..
                } => tracing::warn!(
                    breaker = %self.name,
                    failures,
                    calls,
                    "circuit opened"
                ),
                other => {
                    tracing::info!(breaker = %self.name, transition = ?other, "circuit changed")
                }
            }
            if let Some(listener) = &self.listener {
                listener(&BreakerEvent {
                    name: self.name.clone(),
                    subject: self.subject,
                    transition,
                });
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent even if a holder panicked: every update is a
        // single assignment.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BreakerConfig {
        BreakerConfig {
            window: 10,
            min_calls: 4,
            failure_rate: 0.5,
            open_ms: 1000,
            half_open_probes: 2,
        }
    }

    fn recorder() -> (BreakerListener, Arc<Mutex<Vec<BreakerTransition>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let listener: BreakerListener =
            Arc::new(move |e: &BreakerEvent| sink.lock().unwrap().push(e.transition.clone()));
        (listener, seen)
    }

    fn call(breaker: &CircuitBreaker, outcome: CallOutcome) {
        breaker.try_acquire().expect("admitted").record(outcome);
    }

    #[tokio::test(start_paused = true)]
    async fn opens_at_the_failure_rate_once_min_calls_are_reached() {
        let breaker = CircuitBreaker::new("p", config());
        call(&breaker, CallOutcome::Failure);
        call(&breaker, CallOutcome::Failure);
        call(&breaker, CallOutcome::Failure);
        assert_eq!(breaker.state(), BreakerState::Closed, "below min_calls");
        call(&breaker, CallOutcome::Success);
        assert_eq!(
            breaker.state(),
            BreakerState::Closed,
            "a success never opens"
        );
        call(&breaker, CallOutcome::Failure);
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));
        let rejected = breaker.try_acquire().err().expect("refused while open");
        assert_eq!(rejected.retry_in, Duration::from_millis(1000));
    }

    #[tokio::test(start_paused = true)]
    async fn ignored_outcomes_do_not_count() {
        let breaker = CircuitBreaker::new("p", config());
        for _ in 0..20 {
            call(&breaker, CallOutcome::Ignored);
        }
        call(&breaker, CallOutcome::Success);
        call(&breaker, CallOutcome::Success);
        call(&breaker, CallOutcome::Failure);
        call(&breaker, CallOutcome::Failure);
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    }

    #[tokio::test(start_paused = true)]
    async fn half_open_probes_close_or_reopen() {
        let (listener, seen) = recorder();
        let breaker = CircuitBreaker::new("p", config()).with_listener(listener);
        for _ in 0..4 {
            call(&breaker, CallOutcome::Failure);
        }
        tokio::time::advance(Duration::from_millis(999)).await;
        assert!(breaker.try_acquire().is_err());
        tokio::time::advance(Duration::from_millis(1)).await;

        // First half-open round: one probe fails, the breaker reopens.
        let first = breaker.try_acquire().expect("probe");
        assert_eq!(breaker.state(), BreakerState::HalfOpen);
        let second = breaker.try_acquire().expect("second probe");
        assert!(breaker.try_acquire().is_err(), "only two probes at a time");
        second.record(CallOutcome::Failure);
        first.record(CallOutcome::Success); // stale: the breaker already reopened
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));

        // Second round: a dropped probe frees its slot; two successes close.
        tokio::time::advance(Duration::from_millis(1000)).await;
        drop(breaker.try_acquire().expect("probe"));
        call(&breaker, CallOutcome::Success);
        call(&breaker, CallOutcome::Success);
        assert_eq!(breaker.state(), BreakerState::Closed);

        let seen = seen.lock().unwrap();
        let names: Vec<&str> = seen
            .iter()
            .map(|t| match t {
                BreakerTransition::Opened { .. } => "opened",
                BreakerTransition::HalfOpen => "half_open",
                BreakerTransition::Closed => "closed",
            })
            .collect();
        assert_eq!(
            names,
            ["opened", "half_open", "opened", "half_open", "closed"]
        );
        assert_eq!(
            seen[0],
            BreakerTransition::Opened {
                failures: 4,
                calls: 4,
                open_for: Duration::from_millis(1000)
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn only_the_last_window_counts() {
        let breaker = CircuitBreaker::new("p", config());
        for _ in 0..20 {
            call(&breaker, CallOutcome::Success);
        }
        for _ in 0..4 {
            call(&breaker, CallOutcome::Failure);
        }
        assert_eq!(breaker.state(), BreakerState::Closed, "4 of the last 10");
        // 5 of the last 10 failed (5 of all 25 would be far below the rate).
        call(&breaker, CallOutcome::Failure);
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    }
}
