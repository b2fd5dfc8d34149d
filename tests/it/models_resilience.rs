//! ResilientModel over providers that need no real IO (scripted), on tokio's paused
//! clock: the breaker's states, 429s ignored by it, the retry loop's chosen delays, the
//! step timeout and cancellation.

use std::sync::Arc;
use std::time::Duration;

use conclave::config::{BreakerConfig, CallRetryConfig, RecoveryConfig};
use conclave::model::{ChatMessage, ModelError, ModelRequest, ResilientModel};
use conclave::recovery::breaker::{BreakerEvent, BreakerState, BreakerTransition};
use conclave::recovery::{Classify, Severity};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::models::{Recorder, Recording, complete_collect, resilient, scripted};

fn request() -> ModelRequest {
    ModelRequest {
        messages: vec![ChatMessage::user("go")],
        ..ModelRequest::default()
    }
}

/// One attempt per call, so that calls and breaker outcomes correspond one to one.
fn single_attempt() -> RecoveryConfig {
    RecoveryConfig {
        step_timeout_ms: 1_000,
        call: CallRetryConfig {
            max_attempts: 1,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
        },
        breaker: BreakerConfig {
            window: 20,
            min_calls: 5,
            failure_rate: 0.5,
            open_ms: 30_000,
            half_open_probes: 3,
        },
        ..RecoveryConfig::default()
    }
}

fn with_breaker_events(model: ResilientModel) -> (ResilientModel, Recorder<BreakerEvent>) {
    let events = Recorder::<BreakerEvent>::default();
    (model.with_breaker_listener(events.listener()), events)
}

fn transitions(events: &Recorder<BreakerEvent>) -> Vec<&'static str> {
    events
        .take()
        .iter()
        .map(|e| match e.transition {
            BreakerTransition::Opened { .. } => "opened",
            BreakerTransition::HalfOpen => "half_open",
            BreakerTransition::Closed => "closed",
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_breaker_opens_half_opens_and_closes() {
    let inner = Recording::new(scripted(json!({"name": "flaky", "steps": [
        {"error": {"kind": "http", "status": 503}, "times": 5},
        {"text": "back", "repeat": true}
    ]})));
    let (model, _) = resilient(inner.clone(), &single_attempt());
    let (model, events) = with_breaker_events(model);

    for _ in 0..5 {
        let err = complete_collect(&model, &request()).await.0.unwrap_err();
        assert!(
            matches!(err, ModelError::Http { status: 503, .. }),
            "{err:?}"
        );
    }
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    match &err {
        ModelError::CircuitOpen { provider, retry_in } => {
            assert_eq!(provider, "flaky");
            assert_eq!(*retry_in, Duration::from_secs(30));
        }
        other => panic!("expected CircuitOpen, got {other:?}"),
    }
    assert!(
        !err.is_transient(),
        "an open circuit fails fast, not retried at call level"
    );
    assert_eq!(
        inner.calls(),
        5,
        "the open breaker kept the call away from the provider"
    );

    tokio::time::advance(Duration::from_secs(30)).await;
    for _ in 0..3 {
        assert_eq!(
            complete_collect(&model, &request()).await.0.unwrap().text,
            "back"
        );
    }
    assert_eq!(model.breaker().state(), BreakerState::Closed);
    assert_eq!(transitions(&events), ["opened", "half_open", "closed"]);
    let first = &events.take()[0];
    assert_eq!(first.name, "flaky");
    assert_eq!(
        first.transition,
        BreakerTransition::Opened {
            failures: 5,
            calls: 5,
            open_for: Duration::from_secs(30)
        }
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_probe_opens_the_breaker_again() {
    let inner = scripted(json!([
        {"error": "connection", "times": 5},
        {"error": {"kind": "timeout"}, "times": 1},
        {"text": "ok", "repeat": true}
    ]));
    let (model, _) = resilient(inner, &single_attempt());
    let (model, events) = with_breaker_events(model);
    for _ in 0..5 {
        complete_collect(&model, &request()).await.0.unwrap_err();
    }
    tokio::time::advance(Duration::from_secs(30)).await;
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(matches!(model.breaker().state(), BreakerState::Open { .. }));
    assert_eq!(transitions(&events), ["opened", "half_open", "opened"]);
}

#[tokio::test(start_paused = true)]
async fn rate_limits_are_neither_failures_nor_successes() {
    let inner = scripted(json!([
        {"error": {"kind": "rate_limited", "retryAfterMs": 10}, "times": 10},
        {"error": {"kind": "http", "status": 502}, "repeat": true}
    ]));
    let (model, _) = resilient(inner, &single_attempt());
    for _ in 0..10 {
        let err = complete_collect(&model, &request()).await.0.unwrap_err();
        assert!(matches!(err, ModelError::RateLimited { .. }), "{err:?}");
    }
    assert_eq!(
        model.breaker().state(),
        BreakerState::Closed,
        "429s are not failures"
    );
    // Had the 429s counted as successes, 5 failures in 15 calls would stay below 50%.
    for _ in 0..5 {
        complete_collect(&model, &request()).await.0.unwrap_err();
    }
    assert!(matches!(model.breaker().state(), BreakerState::Open { .. }));
}

#[tokio::test(start_paused = true)]
async fn the_retry_loop_reports_the_delays_it_chose() {
    let inner = Recording::new(scripted(json!([
        {"error": {"kind": "http", "status": 503}},
        {"error": "connection"},
        {"error": {"kind": "rate_limited", "retryAfterMs": 800}},
        {"text": "made it"}
    ])));
    let recovery = RecoveryConfig {
        call: CallRetryConfig {
            max_attempts: 4,
            base_delay_ms: 100,
            max_delay_ms: 1_000,
        },
        ..RecoveryConfig::default()
    };
    let (model, retries) = resilient(inner.clone(), &recovery);
    let (answer, streamed) = complete_collect(&model, &request()).await;
    assert_eq!(answer.unwrap().text, "made it");
    assert_eq!(streamed, "made it");
    assert_eq!(inner.calls(), 4);
    let events = retries.take();
    let summary: Vec<(u32, u32, u64, &str)> = events
        .iter()
        .map(|e| {
            (
                e.attempt,
                e.max_attempts,
                e.delay.as_millis() as u64,
                e.error_kind,
            )
        })
        .collect();
    // Jitter pinned at 0.5 of min(1000, 100 * 2^n); the Retry-After is a floor.
    assert_eq!(
        summary,
        vec![
            (2, 4, 50, "http_status"),
            (3, 4, 100, "connection"),
            (4, 4, 800, "rate_limited"),
        ]
    );
    assert_eq!(events[0].source, "scripted");
    assert_eq!(events[0].severity, Severity::Medium);
}

#[tokio::test(start_paused = true)]
async fn attempts_are_bounded_and_fatal_errors_are_not_retried() {
    let inner = Recording::new(scripted(
        json!([{"error": {"kind": "http", "status": 500}, "repeat": true}]),
    ));
    let (model, retries) = resilient(inner.clone(), &RecoveryConfig::default());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Http { status: 500, .. }));
    assert_eq!(
        inner.calls(),
        3,
        "recovery.call.maxAttempts attempts in all"
    );
    assert_eq!(retries.take().len(), 2);

    for (error, kind) in [
        (json!("unauthorized"), "unauthorized"),
        (json!("forbidden"), "forbidden"),
        (json!({"kind": "http", "status": 400}), "http_status"),
    ] {
        let inner = Recording::new(scripted(json!([{"error": error, "repeat": true}])));
        let (model, retries) = resilient(inner.clone(), &RecoveryConfig::default());
        let err = complete_collect(&model, &request()).await.0.unwrap_err();
        assert_eq!(err.kind(), kind);
        assert_eq!(inner.calls(), 1, "{kind} is not retried");
        assert!(retries.take().is_empty());
    }
    // A garbage answer is a fault of the moment, like a 500: retried.
    let inner = Recording::new(scripted(json!([{"error": "malformed"}, {"text": "fine"}])));
    let (model, retries) = resilient(inner.clone(), &RecoveryConfig::default());
    assert_eq!(
        complete_collect(&model, &request()).await.0.unwrap().text,
        "fine"
    );
    assert_eq!(retries.take().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_call_cap_is_left_to_the_ladder() {
    let inner = Recording::new(scripted(
        json!([{"error": {"kind": "rate_limited", "retryAfterMs": 20000}, "repeat": true}]),
    ));
    let (model, retries) = resilient(inner.clone(), &RecoveryConfig::default());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(
        matches!(err, ModelError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(20)),
        "{err:?}"
    );
    assert_eq!(
        inner.calls(),
        1,
        "the subtask waits for the provider, visibly"
    );
    assert!(retries.take().is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_breaker_judges_the_call_after_its_retries() {
    // One logical call in three fails once (a quarter of all attempts): each succeeds
    // on its retry, so the breaker, judging logical calls, sees no failure at all.
    let steps: Vec<serde_json::Value> = (0..20)
        .flat_map(|_| {
            [
                json!({"error": {"kind": "http", "status": 503}}),
                json!({"text": "ok"}),
                json!({"text": "ok"}),
                json!({"text": "ok"}),
            ]
        })
        .collect();
    let inner = Recording::new(scripted(json!(steps)));
    let (model, _) = resilient(inner.clone(), &RecoveryConfig::default());
    for _ in 0..60 {
        complete_collect(&model, &request()).await.0.unwrap();
    }
    assert_eq!(inner.calls(), 80);
    assert_eq!(model.breaker().state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn a_dead_provider_spends_the_shared_retry_budget_then_gets_one_call_per_logical_call() {
    let inner = Recording::new(scripted(
        json!([{"error": {"kind": "http", "status": 503}, "repeat": true}]),
    ));
    let mut recovery = RecoveryConfig::default();
    recovery.breaker.min_calls = 1_000; // keep the breaker out of this test
    recovery.breaker.window = 1_000;
    recovery.retry_budget.capacity = 5.0;
    let (model, _) = resilient(inner.clone(), &recovery);
    let clone = model.clone();
    for _ in 0..10 {
        complete_collect(&clone, &request()).await.0.unwrap_err();
    }
    // 10 logical calls + the budget's 5 retries, shared by the clones.
    assert_eq!(inner.calls(), 15);
}

#[tokio::test(start_paused = true)]
async fn a_step_over_the_timeout_is_a_retried_timeout() {
    let inner = scripted(json!([
        {"text": "too slow", "delayMs": 60000},
        {"text": "quick"}
    ]));
    let recovery = RecoveryConfig {
        step_timeout_ms: 2_000,
        ..RecoveryConfig::default()
    };
    let (model, retries) = resilient(inner, &recovery);
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "quick");
    let events = retries.take();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].error_kind, "timeout");
    assert!(
        events[0].message.contains("2000 ms"),
        "{}",
        events[0].message
    );
}

#[tokio::test(start_paused = true)]
async fn cancellation_ends_a_retry_wait_and_a_slow_call() {
    let cancel = CancellationToken::new();
    let inner = scripted(
        json!([{"error": {"kind": "rate_limited", "retryAfterMs": 5000}, "repeat": true}]),
    );
    let (model, retries) = resilient(inner, &RecoveryConfig::default());
    let model = model.with_cancellation(cancel.clone());
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        trigger.cancel();
    });
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err:?}");
    assert_eq!(retries.take().len(), 1, "cancelled during the first wait");

    let cancel = CancellationToken::new();
    let slow = scripted(json!([{"text": "never", "delayMs": 10000}]));
    let (model, _) = resilient(slow, &RecoveryConfig::default());
    let model = model.with_cancellation(cancel.clone());
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trigger.cancel();
    });
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Cancelled), "{err:?}");
    // A cancelled call says nothing about the provider's health.
    assert_eq!(model.breaker().state(), BreakerState::Closed);
}

#[tokio::test(start_paused = true)]
async fn clones_share_one_breaker_per_provider() {
    let inner = scripted(json!([{"error": {"kind": "http", "status": 503}, "repeat": true}]));
    let (model, _) = resilient(inner, &single_attempt());
    let agents: Vec<ResilientModel> = (0..5)
        .map(|_| model.clone().with_cancellation(CancellationToken::new()))
        .collect();
    for agent in &agents {
        complete_collect(agent, &request()).await.0.unwrap_err();
    }
    let err = complete_collect(&agents[0], &request())
        .await
        .0
        .unwrap_err();
    assert!(matches!(err, ModelError::CircuitOpen { .. }), "{err:?}");
    assert!(Arc::ptr_eq(model.breaker(), agents[4].breaker()));
}
