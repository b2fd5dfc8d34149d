//! Agents: the transition table, their lifecycle as tokio tasks, the pool and the team.

use AgentStatus::*;
use conclave::config::{Config, TeamConfig};
use conclave::runtime::{
    AgentConfig, AgentError, AgentHandle, AgentStatus, CoreBehavior, EventBus, Layer, Message,
    MessageKind, RuntimeEvent,
};
use proptest::prelude::*;

use crate::support::common::{next_event, runtime, spawn_probe};

/// The table as the design states it, written out independently of the implementation.
const ALLOWED: &[(AgentStatus, AgentStatus)] = &[
    (Initializing, Idle),
    (Initializing, Failed),
    (Idle, Working),
    (Idle, WaitingApproval),
    // Between attempts: waiting for the provider, or out of retries (issue 13).
    (Idle, Blocked),
    (Idle, Failed),
    (Idle, ShuttingDown),
    (Working, Idle),
    (Working, Blocked),
    (Working, Failed),
    (Working, WaitingApproval),
    (WaitingApproval, Working),
    (WaitingApproval, Idle),
    (WaitingApproval, Blocked),
    (Blocked, Working),
    (Blocked, Idle),
    (Blocked, Failed),
    (Failed, Working),
    (Failed, Terminated),
    (ShuttingDown, Terminated),
];

/// A handle standing at `status`, reached through allowed steps.
fn handle_at(status: AgentStatus) -> AgentHandle {
    let handle = AgentHandle::new(
        AgentConfig::new("probe", Layer::Bottom, "test"),
        EventBus::default(),
        None,
    );
    let path: &[AgentStatus] = match status {
        Initializing => &[],
        Idle => &[Idle],
        Working => &[Idle, Working],
        WaitingApproval => &[Idle, WaitingApproval],
        Blocked => &[Idle, Working, Blocked],
        Failed => &[Failed],
        ShuttingDown => &[Idle, ShuttingDown],
        Terminated => &[Idle, ShuttingDown, Terminated],
    };
    for &step in path {
        handle.transition(step, "setup").unwrap();
    }
    assert_eq!(handle.status(), status);
    handle
}

#[test]
fn every_pair_of_the_transition_table_is_allowed_or_refused_as_listed() {
    for from in AgentStatus::ALL {
        for to in AgentStatus::ALL {
            let handle = handle_at(from);
            let result = handle.transition(to, "checked");
            if ALLOWED.contains(&(from, to)) {
                let t = result.unwrap_or_else(|e| panic!("{from} -> {to} refused: {e}"));
                assert_eq!((t.from, t.to, t.reason.as_str()), (from, to, "checked"));
                assert_eq!(handle.status(), to);
            } else {
                assert_eq!(
                    result,
                    Err(AgentError::InvalidTransition {
                        agent: handle.id(),
                        from,
                        to
                    }),
                    "{from} -> {to} should be refused"
                );
                assert_eq!(
                    handle.status(),
                    from,
                    "a refused transition changes nothing"
                );
            }
        }
    }
}

fn any_status() -> impl Strategy<Value = AgentStatus> {
    proptest::sample::select(AgentStatus::ALL.to_vec())
}

proptest! {
    /// Whatever is asked, the status only ever moves along the table, and the recorded
    /// transitions are exactly the accepted steps.
    #[test]
    fn random_transition_sequences_follow_the_table(targets in proptest::collection::vec(any_status(), 0..60)) {
        let events = EventBus::default();
        let mut stream = events.subscribe();
        let handle = AgentHandle::new(AgentConfig::new("p", Layer::Mid, "t"), events, None);
        let mut accepted = Vec::new();
        for to in targets {
            let from = handle.status();
            match handle.transition(to, "random") {
                Ok(t) => {
                    prop_assert!(ALLOWED.contains(&(from, to)));
                    accepted.push((t.from, t.to));
                }
                Err(_) => {
                    prop_assert!(!ALLOWED.contains(&(from, to)));
                    prop_assert_eq!(handle.status(), from);
                }
            }
        }
        let mut published = Vec::new();
        while let Ok(RuntimeEvent::AgentStatus(t)) = stream.try_recv() {
            published.push((t.from, t.to));
        }
        prop_assert_eq!(published, accepted);
    }
}

#[tokio::test(start_paused = true)]
async fn an_agent_initialises_to_idle_and_shuts_down_to_terminated_and_unregistered() {
    let runtime = runtime(Config::default());
    let mut events = runtime.events.subscribe();
    let (agent, _seen) = spawn_probe(&runtime, AgentConfig::new("b", Layer::Bottom, "coder")).await;
    let id = agent.id();
    assert_eq!(agent.status(), Idle);
    assert!(runtime.bus.is_registered(id));

    runtime.pool.destroy(id).await.unwrap();
    assert_eq!(agent.status(), Terminated);
    assert!(runtime.pool.get(id).is_none());
    assert!(!runtime.bus.is_registered(id));
    let late = runtime.bus.send(Message::to_agent(
        conclave::runtime::AgentId::SYSTEM,
        id,
        MessageKind::StatusQuery,
        serde_json::Value::Null,
    ));
    assert_eq!(late, Err(conclave::runtime::BusError::AgentTerminated(id)));

    let mut steps = Vec::new();
    while steps.last() != Some(&(ShuttingDown, Terminated)) {
        if let RuntimeEvent::AgentStatus(t) = next_event(
            &mut events,
            |e| matches!(e, RuntimeEvent::AgentStatus(t) if t.agent_id == id),
        )
        .await
        {
            steps.push((t.from, t.to));
        }
    }
    assert_eq!(
        steps,
        vec![
            (Initializing, Idle),
            (Idle, ShuttingDown),
            (ShuttingDown, Terminated)
        ]
    );

    let recorded = runtime
        .store
        .as_ref()
        .unwrap()
        .transitions(Some(id))
        .await
        .unwrap();
    let reasons: Vec<&str> = recorded.iter().map(|t| t.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "initialization complete",
            "shutdown requested",
            "shutdown complete"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn an_agent_wakes_on_its_mailbox_and_counts_its_work() {
    let runtime = runtime(Config::default());
    let (agent, mut seen) =
        spawn_probe(&runtime, AgentConfig::new("b", Layer::Bottom, "coder")).await;
    runtime
        .bus
        .send(
            Message::to_agent(
                conclave::runtime::AgentId::SYSTEM,
                agent.id(),
                MessageKind::TaskAssign,
                serde_json::json!({}),
            )
            .with_task("t-1"),
        )
        .unwrap();
    let handled = seen.recv().await.unwrap();
    assert_eq!(handled.kind, MessageKind::TaskAssign);
    agent.wait_for_status(|s| *s == Idle).await;
    let metrics = agent.metrics();
    assert_eq!(metrics.tasks_completed, 1);
    assert_eq!(metrics.messages_processed, 1);
    runtime.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_pool_refuses_agents_past_max_agents() {
    let runtime = runtime(Config {
        team: TeamConfig {
            max_agents: 2,
            ..TeamConfig::default()
        },
        ..Config::default()
    });
    for i in 0..2 {
        runtime
            .pool
            .create(
                AgentConfig::new(format!("b{i}"), Layer::Bottom, "c"),
                Box::new(CoreBehavior::default()),
            )
            .unwrap();
    }
    let third = runtime.pool.create(
        AgentConfig::new("b3", Layer::Bottom, "c"),
        Box::new(CoreBehavior::default()),
    );
    assert_eq!(third.err(), Some(AgentError::PoolFull { max: 2 }));
    assert_eq!(runtime.pool.len(), 2);

    // A destroyed agent frees its slot.
    let first = runtime.pool.by_layer(Layer::Bottom)[0].id();
    runtime.pool.destroy(first).await.unwrap();
    runtime
        .pool
        .create(
            AgentConfig::new("b4", Layer::Bottom, "c"),
            Box::new(CoreBehavior::default()),
        )
        .unwrap();
    runtime.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_agent_with_a_capability_outside_its_layer_is_refused() {
    let runtime = runtime(Config::default());
    let mut config = AgentConfig::new("m", Layer::Mid, "coordinator");
    config
        .capabilities
        .push(conclave::runtime::Capability::CodeGen);
    let refused = runtime
        .pool
        .create(config, Box::new(CoreBehavior::default()));
    assert!(matches!(
        refused,
        Err(AgentError::CapabilityNotAllowed { .. })
    ));
    assert!(runtime.pool.is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_default_team_is_built_and_wired_both_ways() {
    let runtime = runtime(Config::default());
    let team = runtime
        .build_team(|_| Box::new(CoreBehavior::default()))
        .unwrap();
    assert_eq!(
        (team.top.len(), team.mid.len(), team.bottom.len()),
        (3, 2, 4)
    );
    for (i, top) in team.top.iter().enumerate() {
        let config = runtime.pool.get(*top).unwrap().config();
        let power = config.power.expect("top agents hold a power");
        assert_eq!(power.seniority, i);
        assert_eq!(power.vote_weight, 1.0);
    }
    for mid in &team.mid {
        let config = runtime.pool.get(*mid).unwrap().config();
        let supervisor = config.supervisor.expect("each mid has a top supervisor");
        assert!(team.top.contains(&supervisor));
        assert!(
            runtime
                .pool
                .get(supervisor)
                .unwrap()
                .config()
                .subordinates
                .contains(mid)
        );
        assert_eq!(config.subordinates.len(), 2);
        for bottom in &config.subordinates {
            assert_eq!(
                runtime.pool.get(*bottom).unwrap().config().supervisor,
                Some(*mid)
            );
        }
    }
    for id in team.top.iter().chain(&team.mid).chain(&team.bottom) {
        runtime
            .pool
            .get(*id)
            .unwrap()
            .wait_for_status(|s| *s == Idle)
            .await;
    }
    runtime.shutdown().await;
    assert!(runtime.pool.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_team_that_does_not_fit_is_refused_before_anyone_is_created() {
    let runtime = runtime(Config {
        team: TeamConfig {
            top: 3,
            mid: 4,
            bottom_per_mid: 4,
            max_agents: 20,
            ..TeamConfig::default()
        },
        ..Config::default()
    });
    let refused = runtime.build_team(|_| Box::new(CoreBehavior::default()));
    assert_eq!(refused.err(), Some(AgentError::PoolFull { max: 20 }));
    assert!(runtime.pool.is_empty());
}
