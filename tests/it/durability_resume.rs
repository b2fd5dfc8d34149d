//! Resume after an abrupt stop: the runtime of the first engine is dropped mid-task (its
//! agents never shut down, as when the process is killed); a second engine on the same
//! store brings back the team, the task and the pending approval.

use std::sync::Arc;

use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::model::scripted::ScriptedProvider;
use conclave::runtime::{
    AgentId, ApprovalAnswer, ApprovalChoice, Layer, RuntimeEvent, SubtaskStatus, TaskStatus,
};
use conclave::store::Store;
use serde_json::{Value, json};

use crate::support::team::{config, plan, writes};

async fn engine(dir: &std::path::Path, script: Value) -> Arc<Engine> {
    let mut setup = EngineSetup::new(dir, config());
    setup.store = Some(Store::open(&Store::default_path(dir)).unwrap());
    setup.model = Some(Arc::new(
        ScriptedProvider::from_json(&script.to_string()).unwrap(),
    ));
    Engine::start(setup).await.unwrap()
}

#[test]
fn a_killed_run_resumes_its_task_team_and_pending_approval() {
    let dir = tempfile::tempdir().unwrap();
    let [a1, a2] = writes("Create first.txt", "first.txt", "1\n");

    // First run: the first subtask completes, the second hits a 401 and waits for a person.
    let first = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (task, approval, team_before, board_before, first_store) = first.block_on(async {
        let engine = engine(dir.path(), json!([plan(&["Create first.txt", "Create second.txt"]), a1, a2, { "match": "Create second.txt", "error": "unauthorized" }])).await;
        let mut events = engine.subscribe();
        let task = engine.submit(SubmitTask { description: "Two files, one needs a key".into(), ..SubmitTask::default() }).unwrap();
        // The subtasks run side by side: wait for both the escalation and the first file.
        let (mut approval, mut first_done) = (None, false);
        let approval = loop {
            match events.recv().await.unwrap() {
                RuntimeEvent::ApprovalRequested(request) => approval = Some(request),
                RuntimeEvent::TaskUpdated(record) if record.id == task => {
                    first_done = record
                        .subtasks
                        .first()
                        .is_some_and(|s| s.status == SubtaskStatus::Completed);
                }
                _ => {}
            }
            if let (Some(request), true) = (&approval, first_done) {
                break request.clone();
            }
        };
        // Let the store catch up, as it would have in the time before a kill.
        engine.runtime().store.as_ref().unwrap().flush().await.unwrap();
        let mut team: Vec<AgentId> = engine.agents().iter().map(|a| a.agent_id).collect();
        team.sort();
        let board = engine.whiteboard("global").unwrap();
        let store = engine.runtime().store.clone().unwrap();
        (task, approval, team, board, store)
    });
    // The process "dies": every task of the runtime is dropped, nothing shuts down. The
    // workers are let finish their current poll so that no record is queued after this
    // point; a real kill would have lost what was still queued, here the writer thread
    // outlives the runtime, so drain it before reading what "survived".
    first.shutdown_timeout(std::time::Duration::from_secs(10));
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(first_store.flush())
        .unwrap();
    drop(first_store);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("first.txt")).unwrap(),
        "1\n"
    );

    // Second run on the same workspace.
    let [b1, b2] = writes("Create second.txt", "second.txt", "2\n");
    let second = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    second.block_on(async {
        let recorded = Store::open(&Store::default_path(dir.path()))
            .unwrap()
            .latest_boards()
            .await
            .unwrap();
        let global = recorded
            .iter()
            .find(|b| b.0 == "global")
            .expect("the global board was recorded")
            .clone();
        let engine = engine(dir.path(), json!([b1, b2])).await;
        let mut team: Vec<AgentId> = engine.agents().iter().map(|a| a.agent_id).collect();
        team.sort();
        assert_eq!(team, team_before, "the same agents came back");
        // Boards come back as last recorded: at least what was flushed before the kill.
        let board = engine.whiteboard("global").unwrap();
        assert!(global.1 >= board_before.version && board_before.version >= 1);
        assert_eq!(
            (board.version, &*board.content),
            (global.1, global.2.as_str()),
            "boards restored"
        );

        let pending = engine.approvals();
        assert_eq!(pending.len(), 1);
        assert_eq!(
            pending[0].approval_id, approval.approval_id,
            "the same approval is still pending"
        );
        let resumed = engine.task(&task.to_string()).unwrap();
        assert!(!resumed.summary.status.is_finished());
        assert_eq!(
            resumed.summary.subtasks[0].status,
            SubtaskStatus::Completed,
            "completed work is kept"
        );

        engine
            .resolve_approval(
                &approval.approval_id.to_string(),
                ApprovalAnswer::new(ApprovalChoice::Retry),
            )
            .unwrap();
        let summary = engine.wait_for(task).await.unwrap();
        assert_eq!(
            summary.status,
            TaskStatus::Completed,
            "{:?}",
            engine.task(&task.to_string())
        );
        assert_eq!(
            summary.subtasks[0].attempts, 1,
            "the completed subtask did not run again"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("second.txt")).unwrap(),
            "2\n"
        );
        assert_eq!(engine.runtime().pool.by_layer(Layer::Bottom).len(), 4);
        engine.shutdown().await;
    });
}

#[tokio::test]
async fn a_cleanly_stopped_run_resumes_with_a_new_team() {
    let dir = tempfile::tempdir().unwrap();
    let [w1, w2] = writes("Create w.txt", "w.txt", "w\n");
    let engine_a = engine(
        dir.path(),
        json!([plan(&["Create w.txt", "Create x.txt"]), w1, w2, { "match": "Create x.txt", "error": "unauthorized" }]),
    )
    .await;
    let mut events = engine_a.subscribe();
    let task = engine_a
        .submit(SubmitTask {
            description: "x".into(),
            ..SubmitTask::default()
        })
        .unwrap();
    let (mut asked, mut w_done) = (false, false);
    while !(asked && w_done) {
        match events.recv().await.unwrap() {
            RuntimeEvent::ApprovalRequested(_) => asked = true,
            RuntimeEvent::TaskUpdated(record) if record.id == task => {
                w_done = record
                    .subtasks
                    .first()
                    .is_some_and(|s| s.status == SubtaskStatus::Completed);
            }
            _ => {}
        }
    }
    let before: Vec<AgentId> = engine_a.agents().iter().map(|a| a.agent_id).collect();
    let w_by = engine_a.task(&task.to_string()).unwrap().summary.subtasks[0]
        .assignee
        .expect("w.txt was assigned");
    let w_by_name = engine_a
        .agents()
        .into_iter()
        .find(|a| a.agent_id == w_by)
        .unwrap()
        .name;
    engine_a.shutdown().await;
    drop(engine_a);

    let [x1, x2] = writes("Create x.txt", "x.txt", "x\n");
    let engine_b = engine(dir.path(), json!([x1, x2])).await;
    assert!(
        engine_b
            .agents()
            .iter()
            .all(|a| !before.contains(&a.agent_id)),
        "a shut-down team does not come back"
    );
    // The completed subtask still says who did it, by name, though that agent is gone.
    let w = engine_b.task(&task.to_string()).unwrap().summary.subtasks[0].clone();
    assert_eq!(w.status, SubtaskStatus::Completed);
    assert_eq!(
        (w.assignee, w.assignee_name.as_deref()),
        (Some(w_by), Some(w_by_name.as_str()))
    );
    let approval = engine_b
        .approvals()
        .pop()
        .expect("the escalation is still pending");
    engine_b
        .resolve_approval(
            &approval.approval_id.to_string(),
            ApprovalAnswer::new(ApprovalChoice::Retry),
        )
        .unwrap();
    assert_eq!(
        engine_b.wait_for(task).await.unwrap().status,
        TaskStatus::Completed
    );
    // The top's final report counts what the first team's top read too: w.txt's
    // report went to it before the stop, x.txt's to the new one.
    let mut report = None;
    for _ in 0..200 {
        report = engine_b.task(&task.to_string()).unwrap().final_report;
        if report.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let report = report.expect("the new top writes the final report").text;
    assert!(report.contains("- progress reports read: 2"), "{report}");
    engine_b.shutdown().await;
}

#[tokio::test]
async fn a_task_with_an_owner_stays_parked_after_a_restart_until_its_owner_claims_it() {
    let dir = tempfile::tempdir().unwrap();
    let owner = "acp:session-one";
    let engine_a = engine(
        dir.path(),
        json!([plan(&["Create p.txt"]), { "match": "Create p.txt", "error": "unauthorized" }]),
    )
    .await;
    let mut events = engine_a.subscribe();
    let task = engine_a
        .submit(SubmitTask {
            description: "Create p.txt".into(),
            owner: Some(owner.into()),
            ..SubmitTask::default()
        })
        .unwrap();
    while !matches!(
        events.recv().await.unwrap(),
        RuntimeEvent::ApprovalRequested(_)
    ) {}
    engine_a.shutdown().await;
    drop(engine_a);

    let [p1, p2] = writes("Create p.txt", "p.txt", "p\n");
    let engine_b = engine(dir.path(), json!([p1, p2])).await;
    let parked = engine_b.task(&task.to_string()).unwrap().summary;
    assert!(!parked.status.is_finished());
    assert_eq!(
        parked.parked.as_deref(),
        Some("waiting for the ACP session session-one to be loaded again"),
        "listed as parked"
    );
    assert!(
        parked
            .subtasks
            .iter()
            .all(|s| s.status != SubtaskStatus::Running),
        "nothing runs for it"
    );
    assert!(
        engine_b.claim("acp:another-session").is_empty(),
        "only its owner can claim it"
    );
    assert!(!dir.path().join("p.txt").exists());

    assert_eq!(engine_b.claim(owner), vec![task]);
    assert!(
        engine_b
            .task(&task.to_string())
            .unwrap()
            .summary
            .parked
            .is_none()
    );
    if let Some(approval) = engine_b.approvals().pop() {
        engine_b
            .resolve_approval(
                &approval.approval_id.to_string(),
                ApprovalAnswer::new(ApprovalChoice::Retry),
            )
            .unwrap();
    }
    assert_eq!(
        engine_b.wait_for(task).await.unwrap().status,
        TaskStatus::Completed
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("p.txt")).unwrap(),
        "p\n"
    );
    engine_b.shutdown().await;
}

#[tokio::test]
async fn a_file_change_approval_keeps_its_id_across_a_restart_and_an_answer_given_meanwhile_counts()
{
    let dir = tempfile::tempdir().unwrap();
    let mut ask = config();
    ask.approvals.file_changes = conclave::config::FileChangePolicy::Ask;
    let start = |script: Value| {
        let mut setup = EngineSetup::new(dir.path(), ask.clone());
        setup.store = Some(Store::open(&Store::default_path(dir.path())).unwrap());
        setup.model = Some(Arc::new(
            ScriptedProvider::from_json(&script.to_string()).unwrap(),
        ));
        Engine::start(setup)
    };
    let [f1, f2] = writes("Create f.txt", "f.txt", "f\n");
    let engine_a = start(json!([plan(&["Create f.txt"]), f1.clone(), f2.clone()]))
        .await
        .unwrap();
    let mut events = engine_a.subscribe();
    let task = engine_a
        .submit(SubmitTask {
            description: "Create f.txt".into(),
            ..SubmitTask::default()
        })
        .unwrap();
    let asked = loop {
        if let RuntimeEvent::ApprovalRequested(request) = events.recv().await.unwrap() {
            break request;
        }
    };
    assert_eq!(asked.kind, conclave::runtime::ApprovalKind::FileChange);
    engine_a
        .runtime()
        .store
        .as_ref()
        .unwrap()
        .flush()
        .await
        .unwrap();
    engine_a.shutdown().await;
    drop(engine_a);

    let engine_b = start(json!([f1, f2])).await.unwrap();
    let mut events = engine_b.subscribe();
    let pending = engine_b.approvals();
    assert_eq!(
        pending.iter().map(|a| a.approval_id).collect::<Vec<_>>(),
        vec![asked.approval_id],
        "pending again under its id"
    );
    // Answered before the step asks again: the answer is kept for it.
    engine_b
        .resolve_approval(
            &asked.approval_id.to_string(),
            ApprovalAnswer::new(ApprovalChoice::Approve),
        )
        .unwrap();
    assert_eq!(
        engine_b.wait_for(task).await.unwrap().status,
        TaskStatus::Completed
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "f\n"
    );
    while let Ok(event) = events.try_recv() {
        if let RuntimeEvent::ApprovalRequested(request) = event {
            panic!("asked again under a new id: {request:?}");
        }
    }
    engine_b.shutdown().await;
}
