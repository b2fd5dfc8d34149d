//! The store on disk: what was recorded is there after the file is reopened.

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

/// A store that cannot be opened is named, with what to do, and left as it was: never
/// replaced by a fresh one.
#[test]
fn a_damaged_or_newer_store_is_refused_with_what_to_do_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::default_path(dir.path());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();

    std::fs::write(&path, "not sqlite at all, but someone's data\n").unwrap();
    let err = Store::open(&path)
        .err()
        .expect("a damaged store is refused")
        .to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("move it aside"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "not sqlite at all, but someone's data\n",
        "nothing was written over it"
    );

    std::fs::remove_file(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 999).unwrap();
    }
    let err = Store::open(&path)
        .err()
        .expect("a newer schema is refused")
        .to_string();
    assert!(
        err.contains("newer Conclave") && err.contains("999"),
        "{err}"
    );
    assert!(err.contains("Run the Conclave that wrote it"), "{err}");
}

/// Another process holding the database longer than the store waits delays its writes
/// but loses none of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_locked_by_another_process_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::default_path(dir.path());
    let store = Store::open(&path).unwrap();
    let runtime = Runtime::new(Config::default(), Some(store.clone()));
    store.flush().await.unwrap();
    // Another process takes the write lock for 7 s: longer than the 5 s busy wait.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(7));
        holder.execute_batch("ROLLBACK").unwrap();
    });
    let agent = runtime
        .pool
        .create(
            AgentConfig::new("mid-9", Layer::Mid, "coordinator"),
            Box::new(CoreBehavior::new("coordinate")),
        )
        .unwrap();
    agent.wait_for_status(|s| *s == AgentStatus::Idle).await;
    store.flush().await.unwrap();
    release.join().unwrap();
    let reopened = Store::open(&path).unwrap();
    let agents = reopened.agents().await.unwrap();
    assert!(
        agents.iter().any(|a| a.name == "mid-9"),
        "the record written while the store was locked is there: {agents:?}"
    );
}

/// A task saved by a newer Conclave (a checkpoint encoding this build does not know) stops
/// the engine with what to do, and stays as it was: read in part and saved again, it would
/// lose what this build does not understand.
#[tokio::test]
async fn a_task_saved_by_a_newer_conclave_is_refused_and_left_as_it_was() {
    use conclave::engine::{Engine, EngineSetup};
    use conclave::runtime::{TaskContext, TaskOptions, TaskRecord};
    use conclave::store::Record;
    use conclave::store::checkpoint::ENCODING;

    let dir = tempfile::tempdir().unwrap();
    let path = Store::default_path(dir.path());
    let task = TaskRecord::new(
        "Add a flag".into(),
        "Add --verbose to cli.py".into(),
        TaskContext::default(),
        TaskOptions::default(),
    );
    {
        let store = Store::open(&path).unwrap();
        store.record(Record::TaskCheckpoint(std::sync::Arc::new(task.clone())));
        store.flush().await.unwrap();
        // This build reads what it writes.
        assert_eq!(store.tasks().await.unwrap(), std::slice::from_ref(&task));
    }
    let newer = ENCODING + 1;
    let stored_body = {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE tasks SET encoding = ?1, body = json_set(body, '$.meaningOfNewField', 42)",
            [newer],
        )
        .unwrap();
        conn.query_row("SELECT body FROM tasks", [], |row| row.get::<_, String>(0))
            .unwrap()
    };

    let mut setup = EngineSetup::new(dir.path(), Config::default());
    setup.store = Some(Store::open(&path).unwrap());
    let err = Engine::start(setup)
        .await
        .err()
        .expect("the engine does not start over a checkpoint it cannot read whole")
        .to_string();
    assert!(
        err.contains(&format!(
            "task {} was saved by a newer Conclave (checkpoint encoding {newer}; this one reads up to {ENCODING})",
            task.id
        )) && err.contains("move .conclave/ aside"),
        "{err}"
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    let (encoding, body): (u32, String) = conn
        .query_row("SELECT encoding, body FROM tasks", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!((encoding, body), (newer, stored_body), "left as it was");
}
