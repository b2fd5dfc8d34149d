//! Each executor's own circuit breaker.
//!
//! The built-in executor's model calls are judged by the provider's breaker
//! (`model/resilient.rs`); an executor that runs a process of its own (pi) can fail in
//! ways no provider breaker sees: the process crashes, never becomes ready, or goes
//! silent, and pi's model calls never pass through Conclave's model wrapper at all. So
//! such an executor is wrapped in [`BreakerExecutor`]: one execution is one call to its
//! breaker. While the breaker is open no process is started; the execution ends at once
//! with [`ExecutorError::CircuitOpen`], which the ladder treats like a provider's open
//! breaker (a visible wait that costs no attempt).

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{ExecutionOutcome, Executor, ExecutorError, OutputSink, SubtaskSpec};
use crate::config::BreakerConfig;
use crate::model::ModelError;
use crate::recovery::Classify;
use crate::recovery::breaker::{BreakerListener, CallOutcome, CircuitBreaker};

/// An executor behind a circuit breaker of its own.
pub struct BreakerExecutor {
    inner: Arc<dyn Executor>,
    breaker: CircuitBreaker,
}

impl BreakerExecutor {
    /// Wraps `inner`; the breaker is called `name` (`pi`). One execution is one call,
    /// so a half-open breaker lets a single execution through as its probe.
    pub fn new(
        inner: Arc<dyn Executor>,
        name: &str,
        config: &BreakerConfig,
        listener: Option<BreakerListener>,
    ) -> Self {
        let config = BreakerConfig {
            half_open_probes: 1,
            ..config.clone()
        };
        let mut breaker = CircuitBreaker::new(name, config).with_subject("executor");
        if let Some(listener) = listener {
            breaker = breaker.with_listener(listener);
        }
        BreakerExecutor { inner, breaker }
    }

    pub fn breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

/// What one execution says about the executor's health. Work that went wrong (a model
/// that made no progress, a refused change) says nothing about the executor; a process
/// that died, hung or could not reach its model does.
fn judge(result: &Result<ExecutionOutcome, ExecutorError>) -> CallOutcome {
    match result {
        Ok(_) => CallOutcome::Success,
        Err(
            ExecutorError::Crashed(_)
            | ExecutorError::Unresponsive(_)
            | ExecutorError::StepTimeout(_),
        ) => CallOutcome::Failure,
        // A rate limit is the provider asking to wait, not a failure (as for providers).
        Err(ExecutorError::Model(ModelError::RateLimited { .. })) => CallOutcome::Ignored,
        Err(ExecutorError::Model(e)) if e.is_transient() => CallOutcome::Failure,
        Err(_) => CallOutcome::Ignored,
    }
}

#[async_trait]
impl Executor for BreakerExecutor {
    async fn execute(
        &self,
        spec: &SubtaskSpec,
        cancel: CancellationToken,
        on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, ExecutorError> {
        let permit = self
            .breaker
            .try_acquire()
            .map_err(|rejected| ExecutorError::CircuitOpen {
                executor: self.breaker.name().to_string(),
                retry_in: rejected.retry_in,
            })?;
        let result = self.inner.execute(spec, cancel, on_output).await;
        permit.record(judge(&result));
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::recovery::{Failure, FailureKind};

    /// Crashes the first `crashes` times, then succeeds.
    struct Flaky {
        crashes: u32,
        runs: AtomicU32,
    }

    #[async_trait]
    impl Executor for Flaky {
        async fn execute(
            &self,
            _spec: &SubtaskSpec,
            _cancel: CancellationToken,
            _on_output: OutputSink<'_>,
        ) -> Result<ExecutionOutcome, ExecutorError> {
            if self.runs.fetch_add(1, Ordering::SeqCst) < self.crashes {
                Err(ExecutorError::Crashed(
                    "pi exited during the run (signal 9)".into(),
                ))
            } else {
                Ok(ExecutionOutcome {
                    success: true,
                    ..ExecutionOutcome::default()
                })
            }
        }
    }

    fn config() -> BreakerConfig {
        BreakerConfig {
            window: 10,
            min_calls: 3,
            failure_rate: 0.5,
            open_ms: 30_000,
            half_open_probes: 3,
        }
    }

    async fn run(executor: &BreakerExecutor) -> Result<ExecutionOutcome, ExecutorError> {
        let mut sink = |_: &str| {};
        executor
            .execute(&SubtaskSpec::default(), CancellationToken::new(), &mut sink)
            .await
    }

    #[tokio::test(start_paused = true)]
    async fn repeated_crashes_pause_the_executor_and_one_probe_resumes_it() {
        let flaky = Arc::new(Flaky {
            crashes: 3,
            runs: AtomicU32::new(0),
        });
        let messages = Arc::new(Mutex::new(Vec::new()));
        let sink = messages.clone();
        let listener: BreakerListener =
            Arc::new(move |event| sink.lock().unwrap().push(event.to_string()));
        let executor = BreakerExecutor::new(flaky.clone(), "pi", &config(), Some(listener));

        for _ in 0..3 {
            let error = run(&executor).await.unwrap_err();
            assert_eq!(Failure::of(&error).kind, FailureKind::ExecutorCrashed);
        }
        // Open: no process is started, and the wait is the breaker's.
        let error = run(&executor).await.unwrap_err();
        let failure = Failure::of(&error);
        assert_eq!(failure.kind, FailureKind::CircuitOpen);
        assert!(
            failure
                .retry_after
                .is_some_and(|d| d > Duration::from_secs(29))
        );
        assert!(crate::recovery::ladder::provider_trouble(&failure) == Some("pi"));
        assert_eq!(flaky.runs.load(Ordering::SeqCst), 3);
        assert_eq!(
            messages.lock().unwrap().as_slice(),
            ["executor pi paused for 30 s after 3 failures in its last 3 calls"]
        );

        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(run(&executor).await.unwrap().success, "the probe runs");
        assert!(run(&executor).await.is_ok(), "closed again after one probe");
        assert_eq!(
            messages.lock().unwrap().last().map(String::as_str),
            Some("executor pi answers again; calls resume")
        );
    }

    #[test]
    fn only_the_executors_own_trouble_counts() {
        let crash = Err(ExecutorError::Crashed("exit 137".into()));
        assert_eq!(judge(&crash), CallOutcome::Failure);
        let silent = Err(ExecutorError::StepTimeout(Duration::from_secs(30)));
        assert_eq!(judge(&silent), CallOutcome::Failure);
        let no_progress = Err(ExecutorError::NoProgress(
            "nothing written".into(),
            Box::default(),
        ));
        assert_eq!(judge(&no_progress), CallOutcome::Ignored);
        let limited = Err(ExecutorError::Model(ModelError::RateLimited {
            provider: "openai".into(),
            retry_after: None,
        }));
        assert_eq!(judge(&limited), CallOutcome::Ignored);
        let unfinished = Ok(ExecutionOutcome::default());
        assert_eq!(judge(&unfinished), CallOutcome::Success);
    }

    #[test]
    fn pi_failures_are_classified_by_their_type() {
        let cases = [
            (
                ExecutorError::NotInstalled("cannot start pi".into()),
                FailureKind::InvalidConfig,
                false,
                true,
            ),
            (
                ExecutorError::Crashed("pi exited".into()),
                FailureKind::ExecutorCrashed,
                true,
                false,
            ),
            (
                ExecutorError::Unresponsive("no answer in 30 s".into()),
                FailureKind::Timeout,
                true,
                false,
            ),
        ];
        for (error, kind, transient, fatal) in cases {
            let failure = Failure::of(&error);
            assert_eq!(failure.kind, kind, "{error}");
            assert_eq!(failure.transient, transient, "{error}");
            assert_eq!(failure.fatal, fatal, "{error}");
        }
    }
}
