//! The store on disk: what was recorded is there after the file is reopened.

mod common;

use conclave::config::Config;
use conclave::runtime::{
    AgentConfig, AgentStatus, CoreBehavior, Layer, Message, MessageKind, Proposal, Quorum, Runtime,
    Signer,
};
use conclave::store::Store;
use serde_json::json;

#[tokio::test(start_paused = true)]
async fn what_the_store_recorded_is_there_after_reopening_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::default_path(dir.path());
    let (agent_id, decision_id, board);
    {
        let store = Store::open(&path).unwrap();
        let runtime = Runtime::new(Config::default(), Some(store.clone()));
        let agent = runtime
            .pool
            .create(
                AgentConfig::new("mid-1", Layer::Mid, "coordinator"),
                Box::new(CoreBehavior::new("coordinate")),
            )
            .unwrap();
        agent.wait_for_status(|s| *s == AgentStatus::Idle).await;
        agent_id = agent.id();
        board = format!("agent:{agent_id}");
        runtime
            .bus
            .send(
                Message::to_agent(
                    agent_id,
                    agent_id,
                    MessageKind::Warning,
                    json!("disk almost full"),
                )
                .with_task("t1"),
            )
            .unwrap();
        while agent.metrics().messages_processed < 1 {
            tokio::task::yield_now().await;
        }
        let decision = runtime
            .governance
            .propose(Proposal {
                proposer: agent_id,
                title: "split".into(),
                content: json!({}),
                signers: vec![Signer {
                    agent: agent_id,
                    weight: 1.0,
                }],
                quorum: Quorum::All,
                ttl: None,
            })
            .unwrap();
        runtime.governance.sign(decision.id, agent_id).unwrap();
        decision_id = decision.id;
        runtime.shutdown().await;
    }

    let reopened = Store::open(&path).unwrap();
    let agents = reopened.agents().await.unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!((agents[0].id, agents[0].name.as_str()), (agent_id, "mid-1"));
    let steps: Vec<(AgentStatus, AgentStatus)> = reopened
        .transitions(Some(agent_id))
        .await
        .unwrap()
        .iter()
        .map(|t| (t.from, t.to))
        .collect();
    assert_eq!(
        steps,
        [
            (AgentStatus::Initializing, AgentStatus::Idle),
            (AgentStatus::Idle, AgentStatus::ShuttingDown),
            (AgentStatus::ShuttingDown, AgentStatus::Terminated)
        ]
    );
    let messages = reopened.messages(Some("t1".into())).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].payload, json!("disk almost full"));
    let decisions = reopened.decisions().await.unwrap();
    assert_eq!(
        (decisions[0].id, decisions[0].signatures.len()),
        (decision_id, 1)
    );
    let history = reopened.whiteboard_history(board).await.unwrap();
    assert!(
        history.last().unwrap().1.contains("disk almost full"),
        "{history:?}"
    );
}
