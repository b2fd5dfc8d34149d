//! Helpers shared by the `models_*` integration tests.

use std::sync::{Arc, Mutex};

use conclave::config::{CallRetryConfig, RecoveryConfig};
use conclave::model::{ModelProvider, ResilientModel};
use conclave::recovery::backoff::{RetryEvent, RetryListener};
use conclave::recovery::breaker::{BreakerEvent, BreakerListener};

/// Recovery numbers small enough for real-HTTP tests on the normal clock.
pub fn fast_recovery() -> RecoveryConfig {
    RecoveryConfig {
        step_timeout_ms: 10_000,
        call: CallRetryConfig {
            max_attempts: 3,
            base_delay_ms: 1,
            // Retry-After up to 100 ms is waited out here; longer ones go to the ladder.
            max_delay_ms: 100,
        },
        max_delay_ms: 1_000,
        ..RecoveryConfig::default()
    }
}

/// Collects what a listener receives.
#[derive(Clone)]
pub struct Recorder<T>(Arc<Mutex<Vec<T>>>);

impl<T> Default for Recorder<T> {
    fn default() -> Self {
        Recorder(Arc::new(Mutex::new(Vec::new())))
    }
}

impl<T: Clone + Send + 'static> Recorder<T> {
    pub fn take(&self) -> Vec<T> {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, item: T) {
        self.0.lock().unwrap().push(item);
    }
}

impl Recorder<RetryEvent> {
    pub fn listener(&self) -> RetryListener {
        let me = self.clone();
        Arc::new(move |e: &RetryEvent| me.push(e.clone()))
    }
}

impl Recorder<BreakerEvent> {
    pub fn listener(&self) -> BreakerListener {
        let me = self.clone();
        Arc::new(move |e: &BreakerEvent| me.push(e.clone()))
    }
}

/// `provider` behind recovery with `recovery`, the jitter pinned to half the ceiling,
/// and its retry events recorded.
pub fn resilient(
    provider: Arc<dyn ModelProvider>,
    recovery: &RecoveryConfig,
) -> (ResilientModel, Recorder<RetryEvent>) {
    let retries = Recorder::<RetryEvent>::default();
    let model = ResilientModel::new(provider, recovery)
        .with_jitter(Arc::new(|| 0.5))
        .with_retry_listener(retries.listener());
    (model, retries)
}

/// Calls `model`, collecting the streamed text.
pub async fn complete_collect(
    model: &dyn ModelProvider,
    request: &conclave::model::ModelRequest,
) -> (
    Result<conclave::model::ModelResponse, conclave::model::ModelError>,
    String,
) {
    let mut streamed = String::new();
    let mut sink = |d: &str| streamed.push_str(d);
    let result = model.complete(request, &mut sink).await;
    (result, streamed)
}

/// Wraps a provider, counting calls and keeping each request.
pub struct Recording {
    inner: Arc<dyn ModelProvider>,
    requests: Mutex<Vec<conclave::model::ModelRequest>>,
}

impl Recording {
    pub fn new(inner: Arc<dyn ModelProvider>) -> Arc<Self> {
        Arc::new(Recording {
            inner,
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<conclave::model::ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl ModelProvider for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &conclave::model::ModelRequest,
        on_delta: conclave::model::DeltaSink<'_>,
    ) -> Result<conclave::model::ModelResponse, conclave::model::ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.complete(request, on_delta).await
    }
}

/// A scripted provider from inline JSON.
pub fn scripted(json: serde_json::Value) -> Arc<conclave::model::ScriptedProvider> {
    Arc::new(conclave::model::ScriptedProvider::from_json(&json.to_string()).unwrap())
}
