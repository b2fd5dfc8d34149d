//! Heartbeats: acks and misses go into metrics; two misses in a row mean hung.

use std::time::Duration;

use conclave::config::Config;
use conclave::runtime::{
    AgentConfig, AgentId, HeartbeatScheduler, Layer, Message, MessageKind, RuntimeEvent,
};
use serde_json::json;

use crate::support::common::{next_event, runtime, spawn_probe};

#[tokio::test(start_paused = true)]
async fn an_agent_that_stops_acking_is_reported_hung_after_two_missed_beats() {
    let runtime = runtime(Config {
        heartbeat_ms: 4000,
        ..Config::default()
    });
    let mut events = runtime.events.subscribe();
    let (healthy, _h) = spawn_probe(&runtime, AgentConfig::new("ok", Layer::Bottom, "c")).await;
    let (stuck, mut stuck_seen) =
        spawn_probe(&runtime, AgentConfig::new("stuck", Layer::Bottom, "c")).await;
    runtime.start_heartbeats();
    let start = tokio::time::Instant::now();

    // Two healthy rounds.
    tokio::time::sleep(Duration::from_millis(8_500)).await;
    assert_eq!(stuck.metrics().heartbeats_responded, 2);
    assert_eq!(stuck.metrics().heartbeats_missed, 0);

    // The agent wedges inside a handler and stops taking beats from its mailbox.
    runtime
        .bus
        .send(Message::to_agent(
            AgentId::SYSTEM,
            stuck.id(),
            MessageKind::Warning,
            json!({ "hang": true }),
        ))
        .unwrap();
    stuck_seen.recv().await.unwrap();

    let hung = next_event(&mut events, |e| matches!(e, RuntimeEvent::AgentHung { .. })).await;
    let RuntimeEvent::AgentHung {
        agent_id, missed, ..
    } = hung
    else {
        unreachable!()
    };
    assert_eq!((agent_id, missed), (stuck.id(), 2));
    // Beat 3 went unanswered (settled at 16 s), beat 4 too (settled at 20 s).
    assert_eq!(start.elapsed(), Duration::from_secs(20));
    let metrics = stuck.metrics();
    assert_eq!(
        (metrics.heartbeats_responded, metrics.heartbeats_missed),
        (2, 2)
    );
    assert!(metrics.performance_score < 100.0);
    // The same round already sent beat 5, which the healthy agent may have taken by now.
    assert_eq!(healthy.metrics().heartbeats_missed, 0);
    assert!(healthy.metrics().heartbeats_responded >= 4);

    // Level-triggered: while it stays hung it is reported again every round, so a
    // watcher that missed one report gets the next, and its state can be read any time.
    let again = next_event(&mut events, |e| matches!(e, RuntimeEvent::AgentHung { .. })).await;
    let RuntimeEvent::AgentHung {
        agent_id, missed, ..
    } = again
    else {
        unreachable!()
    };
    assert_eq!((agent_id, missed), (stuck.id(), 3));
    assert_eq!(stuck.missed_heartbeats(), 3);
    assert_eq!(healthy.missed_heartbeats(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_round_settles_the_previous_beat_for_every_agent() {
    let runtime = runtime(Config::default());
    let (a, _a) = spawn_probe(&runtime, AgentConfig::new("a", Layer::Mid, "c")).await;
    let scheduler = HeartbeatScheduler::new(
        runtime.pool.clone(),
        runtime.bus.clone(),
        runtime.events.clone(),
    );
    let first = scheduler.round();
    assert_eq!((first.beat, first.sent, first.missed.len()), (1, 1, 0));
    // Let the agent take its beat.
    while a.last_acked_beat() < 1 {
        tokio::task::yield_now().await;
    }
    let second = scheduler.round();
    assert_eq!(
        (second.beat, second.missed.len(), second.hung.len()),
        (2, 0, 0)
    );
}
