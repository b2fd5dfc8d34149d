//! [`ResilientModel`]: any provider behind a step timeout, a circuit breaker and
//! call-level retry, itself a [`ModelProvider`].
//!
//! One logical call = breaker admission once, then attempts: the inner call under the
//! step timeout (this is the step timeout's one owner, so a timed-out call is retried
//! here), raced against cancellation. Transient failures are retried with the one
//! backoff formula (full jitter, honouring `Retry-After`) while the shared
//! [`RetryBudget`] has tokens, and every scheduled retry is reported to the retry
//! listener. The breaker judges the logical call, after its retries: random transient
//! faults that a retry gets past never open it, a provider that fails every call opens
//! it within its window. No call is made while the breaker is open except its
//! half-open probes; a retry that finds the breaker opened meanwhile stops there.
//! Text deltas of a failed attempt have already reached the sink; the retry event
//! tells the consumer that a new answer starts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::{DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse};
use crate::config::{BreakerConfig, RecoveryConfig};
use crate::recovery::Classify;
use crate::recovery::backoff::{
    self, Cancelled, Jitter, Retrier, RetryBudget, RetryListener, RetryPolicy,
};
use crate::recovery::breaker::{BreakerListener, BreakerState, CallOutcome, CircuitBreaker};

impl From<Cancelled> for ModelError {
    fn from(_: Cancelled) -> Self {
        ModelError::Cancelled
    }
}

/// What a call's result means for the provider's breaker: rate limits, cancellation and
/// errors caused by the request or the configuration (auth, quota, context length, 4xx)
/// say nothing about the provider's health; transient failures and unreadable answers do.
pub fn breaker_outcome<T>(result: &Result<T, ModelError>) -> CallOutcome {
    match result {
        Ok(_) => CallOutcome::Success,
        Err(ModelError::RateLimited { .. } | ModelError::Cancelled) => CallOutcome::Ignored,
        Err(ModelError::Malformed { .. }) => CallOutcome::Failure,
        Err(e) if e.is_transient() => CallOutcome::Failure,
        Err(_) => CallOutcome::Ignored,
    }
}

/// A provider with recovery built in. Cheap to clone; clones share the breaker.
#[derive(Clone)]
pub struct ResilientModel {
    inner: Arc<dyn ModelProvider>,
    breaker: Arc<CircuitBreaker>,
    breaker_config: BreakerConfig,
    policy: RetryPolicy,
    step_timeout: Option<Duration>,
    cancel: CancellationToken,
    retry_listener: Option<RetryListener>,
    jitter: Jitter,
    budget: Arc<RetryBudget>,
}

impl std::fmt::Debug for ResilientModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResilientModel")
            .field("provider", &self.inner.name())
            .field("policy", &self.policy)
            .field("step_timeout", &self.step_timeout)
            .field("breaker", &self.breaker)
            .finish()
    }
}

impl ResilientModel {
    /// Wraps `inner` with the numbers of `recovery` (step timeout, `call`, `maxDelayMs`,
    /// `breaker`). The breaker is named after the provider.
    pub fn new(inner: Arc<dyn ModelProvider>, recovery: &RecoveryConfig) -> Self {
        let breaker = Arc::new(CircuitBreaker::new(inner.name(), recovery.breaker.clone()));
        ResilientModel {
            inner,
            breaker,
            breaker_config: recovery.breaker.clone(),
            policy: RetryPolicy::from_config(&recovery.call),
            step_timeout: (recovery.step_timeout_ms > 0)
                .then(|| Duration::from_millis(recovery.step_timeout_ms)),
            cancel: CancellationToken::new(),
            retry_listener: None,
            jitter: backoff::random_jitter(),
            budget: Arc::new(RetryBudget::from_config(&recovery.retry_budget)),
        }
    }

    /// Shares a retry budget with other wrappers (clones share theirs already).
    pub fn with_retry_budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = budget;
        self
    }

    pub fn retry_budget(&self) -> &Arc<RetryBudget> {
        &self.budget
    }

    /// Replaces the breaker with a fresh one reporting to `listener`. Call it before
    /// cloning: clones made earlier keep the old breaker.
    pub fn with_breaker_listener(mut self, listener: BreakerListener) -> Self {
        self.breaker = Arc::new(
            CircuitBreaker::new(self.inner.name(), self.breaker_config.clone())
                .with_listener(listener),
        );
        self
    }

    /// Uses a breaker shared with other wrappers of the same provider.
    pub fn with_breaker(mut self, breaker: Arc<CircuitBreaker>) -> Self {
        self.breaker = breaker;
        self
    }

    pub fn with_retry_listener(mut self, listener: RetryListener) -> Self {
        self.retry_listener = Some(listener);
        self
    }

    /// Replaces the random source of the jitter (tests pin it).
    pub fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    pub fn with_step_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.step_timeout = timeout;
        self
    }

    /// Calls made through the result end with [`ModelError::Cancelled`] as soon as
    /// `cancel` fires, whether they are waiting for the model or for a retry.
    pub fn with_cancellation(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    pub fn inner(&self) -> &Arc<dyn ModelProvider> {
        &self.inner
    }

    /// One attempt: the inner call under the step timeout, raced against cancellation.
    async fn attempt(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let call = self.inner.complete(request, on_delta);
        let timed = async {
            match self.step_timeout {
                Some(limit) => tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
                    Err(ModelError::Timeout {
                        provider: self.inner.name().to_string(),
                        timeout: limit,
                    })
                }),
                None => call.await,
            }
        };
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ModelError::Cancelled),
            result = timed => result,
        }
    }
}

#[async_trait]
impl ModelProvider for ResilientModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let name = self.inner.name();
        let open = |retry_in: Duration| ModelError::CircuitOpen {
            provider: name.to_string(),
            retry_in,
        };
        if self.cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        // One admission per logical call: the breaker judges the call after its retries.
        let permit = self
            .breaker
            .try_acquire()
            .map_err(|rejected| open(rejected.retry_in))?;
        let mut retrier = Retrier::new(
            &self.policy,
            name,
            &*self.jitter,
            self.retry_listener.as_ref(),
        );
        loop {
            let result = self.attempt(request, &mut *on_delta).await;
            let error = match result {
                Ok(answer) => {
                    permit.record(CallOutcome::Success);
                    self.budget.earn();
                    return Ok(answer);
                }
                Err(error) => error,
            };
            let verdict = breaker_outcome::<()>(&Err(error.clone()));
            if !error.is_transient() || !retrier.has_attempts_left() {
                permit.record(verdict);
                return Err(error);
            }
            if !self.budget.try_spend() {
                tracing::info!(
                    provider = name,
                    "the shared retry budget is spent; not retrying"
                );
                permit.record(verdict);
                return Err(error);
            }
            let Some(delay) = retrier.on_failure(&error) else {
                permit.record(verdict);
                return Err(error);
            };
            if let Err(cancelled) = backoff::wait(delay, &self.cancel).await {
                permit.record(CallOutcome::Ignored);
                return Err(cancelled.into());
            }
            // Other calls may have opened the breaker while this one waited: no more
            // calls to a provider judged down.
            if let BreakerState::Open { retry_in } = self.breaker.state() {
                permit.record(verdict);
                return Err(open(retry_in));
            }
        }
    }
}
