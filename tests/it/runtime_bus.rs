//! The message bus: priorities, FIFO, broadcast, request/reply, errors, recording.

use std::time::Duration;

use conclave::config::Config;
use conclave::runtime::{
    AgentConfig, AgentId, Bus, BusError, EventBus, Layer, Message, MessageKind, Priority, Recipient,
};
use serde_json::json;

use crate::support::common::{runtime, spawn_probe};

fn msg(to: AgentId, priority: Priority, n: u32) -> Message {
    Message::to_agent(
        AgentId::SYSTEM,
        to,
        MessageKind::ProgressReport,
        json!({ "n": n }),
    )
    .with_priority(priority)
}

#[tokio::test]
async fn urgent_comes_first_and_each_priority_is_fifo() {
    let bus = Bus::new(EventBus::default(), None);
    let agent = AgentId::new();
    let mailbox = bus.register(agent, Layer::Bottom).unwrap();
    let sent = [
        (Priority::Low, 1),
        (Priority::Normal, 2),
        (Priority::Urgent, 3),
        (Priority::High, 4),
        (Priority::Low, 5),
        (Priority::Urgent, 6),
        (Priority::Normal, 7),
        (Priority::High, 8),
    ];
    for (priority, n) in sent {
        bus.send(msg(agent, priority, n)).unwrap();
    }
    let mut order = Vec::new();
    while let Some(m) = mailbox.try_recv() {
        order.push(m.payload["n"].as_u64().unwrap());
    }
    assert_eq!(order, [3, 6, 4, 8, 2, 7, 1, 5]);
}

#[tokio::test]
async fn sending_to_an_unknown_agent_is_an_error_not_a_silent_drop() {
    let bus = Bus::new(EventBus::default(), None);
    let nobody = AgentId::new();
    assert_eq!(
        bus.send(msg(nobody, Priority::Normal, 1)),
        Err(BusError::UnknownAgent(nobody))
    );
    let gone = AgentId::new();
    bus.register(gone, Layer::Mid).unwrap();
    bus.unregister(gone);
    assert_eq!(
        bus.send(msg(gone, Priority::Normal, 1)),
        Err(BusError::AgentTerminated(gone))
    );
}

#[tokio::test]
async fn broadcast_reaches_everyone_or_one_layer_but_never_the_sender() {
    let bus = Bus::new(EventBus::default(), None);
    let top = AgentId::new();
    let mids = [AgentId::new(), AgentId::new()];
    let bottom = AgentId::new();
    let top_box = bus.register(top, Layer::Top).unwrap();
    let mid_boxes: Vec<_> = mids
        .iter()
        .map(|m| bus.register(*m, Layer::Mid).unwrap())
        .collect();
    let bottom_box = bus.register(bottom, Layer::Bottom).unwrap();

    let to_mids = Message::new(
        top,
        Recipient::Layer(Layer::Mid),
        MessageKind::Warning,
        json!("slow down"),
    );
    assert_eq!(bus.send(to_mids).unwrap(), 2);
    assert!(mid_boxes.iter().all(|b| b.len() == 1));
    assert!(bottom_box.is_empty() && top_box.is_empty());

    let to_all = Message::new(
        mids[0],
        Recipient::All,
        MessageKind::PeerCoordination,
        json!({}),
    );
    assert_eq!(bus.send(to_all).unwrap(), 3);
    assert_eq!(
        mid_boxes[0].len(),
        1,
        "the sender does not receive its own broadcast"
    );
    assert_eq!(
        (mid_boxes[1].len(), top_box.len(), bottom_box.len()),
        (2, 1, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_gets_its_reply_and_times_out_without_one() {
    let runtime = runtime(Config::default());
    let (agent, _seen) = spawn_probe(&runtime, AgentConfig::new("b", Layer::Bottom, "coder")).await;
    let asker = AgentId::new();
    runtime.bus.register(asker, Layer::Mid).unwrap();

    let query = Message::to_agent(asker, agent.id(), MessageKind::StatusQuery, json!(null));
    let query_id = query.id;
    let reply = runtime
        .bus
        .request(query, Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(reply.in_reply_to, Some(query_id));
    assert_eq!(reply.from, agent.id());

    // A progress report is not answered by the probe: the request times out on the paused clock.
    let unanswered = Message::to_agent(asker, agent.id(), MessageKind::ProgressReport, json!(null));
    let unanswered_id = unanswered.id;
    let started = tokio::time::Instant::now();
    let err = runtime
        .bus
        .request(unanswered, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        BusError::ReplyTimeout {
            request: unanswered_id,
            to: Recipient::Agent(agent.id()),
            after: Duration::from_secs(30)
        }
    );
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    runtime.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn every_delivered_message_is_recorded() {
    let runtime = runtime(Config::default());
    let a = AgentId::new();
    let b = AgentId::new();
    let _a_box = runtime.bus.register(a, Layer::Mid).unwrap();
    let _b_box = runtime.bus.register(b, Layer::Bottom).unwrap();
    for n in 0..25 {
        runtime
            .bus
            .send(
                Message::to_agent(a, b, MessageKind::TaskAssign, json!({ "n": n }))
                    .with_task("task-7"),
            )
            .unwrap();
    }
    let _ = runtime.bus.send(Message::to_agent(
        a,
        AgentId::new(),
        MessageKind::TaskAssign,
        json!({}),
    ));
    let store = runtime.store.as_ref().unwrap();
    let recorded = store.messages(Some("task-7".into())).await.unwrap();
    assert_eq!(recorded.len(), 25);
    assert!(
        recorded
            .iter()
            .enumerate()
            .all(|(n, m)| m.payload["n"] == n && m.from == a)
    );
    assert_eq!(
        store.message_count().await.unwrap(),
        25,
        "the undeliverable message was refused, not recorded"
    );
}

fn drain(mailbox: &conclave::runtime::Mailbox) -> Vec<u64> {
    std::iter::from_fn(|| mailbox.try_recv())
        .map(|m| m.payload["n"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn a_replacement_gets_what_waited_and_what_arrives_during_the_swap() {
    let bus = Bus::new(EventBus::default(), None);
    let (old, new) = (AgentId::new(), AgentId::new());
    let _old_mailbox = bus.register(old, Layer::Bottom).unwrap();
    bus.send(msg(old, Priority::Normal, 1)).unwrap();

    bus.forward(old, new);
    // The new agent has no mailbox yet: these wait for it.
    bus.send(msg(old, Priority::Normal, 2)).unwrap();
    bus.send(Message::new(
        AgentId::SYSTEM,
        Recipient::Layer(Layer::Bottom),
        MessageKind::ProgressReport,
        json!({ "n": 3 }),
    ))
    .unwrap();
    let heartbeat = Message::to_agent(AgentId::SYSTEM, old, MessageKind::Heartbeat, json!({}));
    assert_eq!(
        bus.send(heartbeat),
        Ok(0),
        "a probe of the old agent is dropped"
    );
    bus.unregister(old);
    let mailbox = bus.register(new, Layer::Bottom).unwrap();
    // After the swap, the old id still reaches the new agent.
    bus.send(msg(old, Priority::Normal, 4)).unwrap();

    let received: Vec<_> = std::iter::from_fn(|| mailbox.try_recv()).collect();
    let numbers: Vec<u64> = received
        .iter()
        .map(|m| m.payload["n"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert!(
        received
            .iter()
            .filter(|m| m.payload["n"] != 3)
            .all(|m| m.to == Recipient::Agent(new)),
        "direct messages are readdressed to the new agent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_message_is_lost_while_an_agent_is_swapped_under_load() {
    const SENDERS: u64 = 4;
    const EACH: u64 = 500;
    let bus = Bus::new(EventBus::default(), None);
    let (old, new) = (AgentId::new(), AgentId::new());
    let _old_mailbox = bus.register(old, Layer::Bottom).unwrap();
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let bus = bus.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    bus.send(msg(old, Priority::Normal, (s * EACH + i) as u32))
                        .expect("a message for a replaced agent is never refused");
                    if i % 50 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    tokio::task::yield_now().await;
    // The swap, as `team/replace.rs` does it: forward, the old one goes, the new comes.
    bus.forward(old, new);
    tokio::task::yield_now().await;
    assert!(
        bus.unregister(old).is_empty(),
        "what was left for the old agent went on"
    );
    tokio::task::yield_now().await;
    let new_mailbox = bus.register(new, Layer::Bottom).unwrap();
    for sender in senders {
        sender.await.unwrap();
    }

    let mut all = drain(&new_mailbox);
    all.sort_unstable();
    let expected: Vec<u64> = (0..SENDERS * EACH).collect();
    assert_eq!(
        all.len(),
        expected.len(),
        "every message arrived exactly once"
    );
    assert_eq!(all, expected);
}
