//! Mids coordinating different tasks keep out of each other's files: a subtask whose
//! file a peer's task is writing waits until that work is over, the waiting mid says so
//! on its board, and the top arbitrates the conflict.

use std::time::Duration;

use conclave::runtime::{
    AgentId, Message, MessageKind, Recipient, RuntimeEvent, TaskId, TaskStatus,
};
use serde_json::{Value, json};

use crate::support::team::{Team, config, start};

const ADD: &str = "Add a function add to calc.py";
const SUB: &str = "Add a function sub to calc.py";

/// Each task planned as one subtask; each coder takes `delay_ms` to think, then edits
/// calc.py. Either edit works on what the other left, so both orders end with both.
fn two_edits_of_calc(add_delay_ms: u64, sub_delay_ms: u64) -> Value {
    let plan = |task: &str| json!({ "match": ["Plan this task", task], "text": json!({ "subtasks": [ { "description": task } ] }).to_string() });
    let edit = |task: &str, delay: u64, function: &str| {
        json!({ "match": task, "delayMs": delay, "toolCalls": [ { "name": "file_edit", "arguments": {
            "path": "calc.py",
            "old_text": "# calc\n",
            "new_text": format!("# calc\n{function}\n")
        } } ] })
    };
    json!([
        plan(ADD),
        plan(SUB),
        edit(ADD, add_delay_ms, "def add(a, b):\n    return a + b\n"),
        edit(SUB, sub_delay_ms, "def sub(a, b):\n    return a - b\n"),
        { "match": "updated calc.py", "text": "Done.", "times": 2 }
    ])
}

async fn team_with_calc(script: Value) -> Team {
    team_with_calc_and(script, config()).await
}

async fn team_with_calc_and(script: Value, config: conclave::config::Config) -> Team {
    let team = start(script, config).await;
    std::fs::write(team.workspace.path().join("calc.py"), "# calc\n").unwrap();
    team
}

/// The name of the mid coordinating `task`: the one the engine assigned it to.
async fn coordinator(team: &Team, task: TaskId) -> String {
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let assigned = messages
        .iter()
        .find(|m| m.kind == MessageKind::TaskAssign && m.from == AgentId::SYSTEM)
        .expect("the task was assigned to a mid");
    team.engine
        .agents()
        .into_iter()
        .find(|a| assigned.to == Recipient::Agent(a.agent_id))
        .unwrap()
        .name
}

fn title(team: &Team, task: TaskId) -> String {
    team.engine.task(&task.to_string()).unwrap().summary.title
}

/// Where in `messages` a bottom agent was given `task`'s subtask, and where it
/// answered that its work was done.
fn assigned_and_done(messages: &[Message], task: TaskId) -> (usize, usize) {
    let of_task = |m: &Message| m.task_id.as_deref() == Some(&task.to_string());
    let assigned = messages
        .iter()
        .position(|m| {
            of_task(m) && m.kind == MessageKind::TaskAssign && m.payload.get("subtaskId").is_some()
        })
        .expect("the subtask was assigned");
    let done = messages
        .iter()
        .position(|m| {
            of_task(m)
                && m.kind == MessageKind::ProgressReport
                && m.payload["outcome"] == "completed"
        })
        .expect("the subtask's work was reported done");
    (assigned, done)
}

/// Waits for the first message of `kind` about `task`.
async fn message_of(
    events: &mut conclave::runtime::EventStream,
    kind: MessageKind,
    task: TaskId,
    wanted: impl Fn(&Message) -> bool,
) -> std::sync::Arc<Message> {
    let wait = async {
        loop {
            match events.recv().await {
                Ok(RuntimeEvent::Message(m))
                    if m.kind == kind
                        && m.task_id.as_deref() == Some(&task.to_string())
                        && wanted(&m) =>
                {
                    return m;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                    panic!("the event stream closed")
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(120), wait)
        .await
        .unwrap_or_else(|_| panic!("no {} about the task", kind.as_str()))
}

/// Submits "add", and once its coder is at work, "sub", which waits for it: returns both
/// once the conflict went to the top.
async fn sub_waiting_for_add(team: &Team) -> (TaskId, TaskId) {
    let mut events = team.engine.subscribe();
    let add = team.submit(ADD);
    message_of(&mut events, MessageKind::TaskAssign, add, |m| {
        m.payload.get("subtaskId").is_some()
    })
    .await;
    let sub = team.submit(SUB);
    message_of(&mut events, MessageKind::ConflictReport, sub, |_| true).await;
    (add, sub)
}

#[tokio::test(start_paused = true)]
async fn two_tasks_on_one_file_take_turns_and_both_changes_are_kept() {
    let team = team_with_calc(two_edits_of_calc(5000, 5000)).await;
    let began = tokio::time::Instant::now();
    let add = team.submit(ADD);
    let sub = team.submit(SUB);
    for task in [add, sub] {
        let summary = team.engine.wait_for(task).await.unwrap();
        assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    }
    assert!(
        began.elapsed() < Duration::from_secs(60),
        "the second went on when the first was done, not after waiting its most ({:?})",
        began.elapsed()
    );
    assert_ne!(
        coordinator(&team, add).await,
        coordinator(&team, sub).await,
        "two mids, one task each"
    );
    let calc = team.read("calc.py");
    assert!(
        calc.contains("def add(a, b):\n    return a + b\n")
            && calc.contains("def sub(a, b):\n    return a - b\n"),
        "{calc}"
    );

    // One coder worked, then the other: the second was given its subtask only after the
    // first had done its writing.
    let messages = team.store.messages(None).await.unwrap();
    let (add_assigned, add_done) = assigned_and_done(&messages, add);
    let (sub_assigned, sub_done) = assigned_and_done(&messages, sub);
    let ((first, first_done), (second, second_assigned)) = if add_assigned < sub_assigned {
        ((add, add_done), (sub, sub_assigned))
    } else {
        ((sub, sub_done), (add, add_assigned))
    };
    assert!(
        first_done < second_assigned,
        "the second coder started while the first was writing"
    );

    // The waiting mid said why on its board.
    let board = team.board_of(&coordinator(&team, second).await);
    let waits = format!(
        "- subtask 1 of \"{}\" waits for {}'s task \"{}\": both work on calc.py",
        title(&team, second),
        coordinator(&team, first).await,
        title(&team, first)
    );
    assert!(board.contains(&waits), "{board}");
    assert!(
        !team
            .board_of(&coordinator(&team, first).await)
            .contains("waits for"),
        "only one waited"
    );

    // The top heard of the conflict and ruled on it.
    let conflict = messages
        .iter()
        .find(|m| m.kind == MessageKind::ConflictReport)
        .expect("the conflict went to the top");
    assert_eq!(conflict.task_id, Some(second.to_string()));
    assert_eq!(conflict.payload["files"], json!(["calc.py"]));
    assert_eq!(
        conflict.payload["runningTask"]["taskId"],
        json!(first.to_string())
    );
    assert!(
        messages
            .iter()
            .any(|m| m.kind == MessageKind::ArbitrationResult
                && m.in_reply_to == Some(conflict.id))
    );
    assert!(
        board.contains(&format!(
            "ruled: subtask 1 of \"{}\" finishes first and subtask 1 of \"{}\" starts after it",
            title(&team, first),
            title(&team, second)
        )),
        "{board}"
    );
    let global = team
        .engine
        .whiteboard("global")
        .unwrap()
        .content
        .to_string();
    assert!(
        global.contains("## Arbitration Result") && global.contains("both work on calc.py"),
        "{global}"
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_peer_task_that_is_cancelled_lets_the_waiting_subtask_go() {
    // The coder of "add" would think for an hour; "sub"'s would be quick.
    let team = team_with_calc(two_edits_of_calc(3_600_000, 10)).await;
    let (add, sub) = sub_waiting_for_add(&team).await;
    let board = team.board_of(&coordinator(&team, sub).await);
    assert!(
        board.contains(&format!(
            "waits for {}'s task",
            coordinator(&team, add).await
        )),
        "{board}"
    );

    tokio::time::sleep(Duration::from_secs(30)).await;
    let cancelled = tokio::time::Instant::now();
    team.engine.cancel(&add.to_string()).unwrap();
    let summary = team.engine.wait_for(sub).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert!(
        cancelled.elapsed() < Duration::from_secs(60),
        "the waiting subtask went on when the peer's task ended, not after waiting its most ({:?})",
        cancelled.elapsed()
    );
    assert_eq!(
        team.engine.task(&add.to_string()).unwrap().summary.status,
        TaskStatus::Cancelled
    );
    assert_eq!(
        team.read("calc.py"),
        "# calc\ndef sub(a, b):\n    return a - b\n\n"
    );
    team.engine.shutdown().await;
}

// Real time: the checks run a real command.
#[tokio::test]
async fn a_task_s_checks_and_fix_rounds_keep_another_task_out_of_its_files() {
    // "add" is written wrong and fixed in the checks' fix round; "sub", planned a moment
    // later, names the same file. It must not be written while "add" is being fixed.
    let mut config = config();
    config.verify.command = Some(
        "if grep -q 'return a \\* b' calc.py; then echo 'calc.py:2:1: add multiplies'; exit 1; fi"
            .into(),
    );
    let plan = |task: &str, delay: u64| json!({ "match": ["Plan this task", task], "delayMs": delay, "text": json!({ "subtasks": [ { "description": task } ] }).to_string() });
    let edit = |task: &str, function: &str| {
        json!({ "match": task, "toolCalls": [ { "name": "file_edit", "arguments": {
            "path": "calc.py", "old_text": "# calc\n", "new_text": format!("# calc\n{function}\n")
        } } ] })
    };
    let team = team_with_calc_and(
        json!([
        plan(ADD, 0),
        plan(SUB, 300),
        edit(ADD, "def add(a, b):\n    return a * b\n"),
        edit(SUB, "def sub(a, b):\n    return a - b\n"),
        { "match": ["does not pass this check", "add multiplies"], "delayMs": 1500,
          "toolCalls": [ { "name": "file_edit", "arguments": {
              "path": "calc.py", "old_text": "return a * b", "new_text": "return a + b" } } ] },
        { "match": "updated calc.py", "text": "Done.", "times": 3 }
        ]),
        config,
    )
    .await;
    let add = team.submit(ADD);
    let sub = team.submit(SUB);
    for task in [add, sub] {
        let summary = team.engine.wait_for(task).await.unwrap();
        assert_eq!(
            summary.status,
            TaskStatus::Completed,
            "{:?}",
            team.engine.task(&task.to_string())
        );
    }
    let calc = team.read("calc.py");
    assert!(
        calc.contains("def add(a, b):\n    return a + b\n")
            && calc.contains("def sub(a, b):\n    return a - b\n"),
        "{calc}"
    );
    let steps = team
        .store
        .recovery_steps(Some(add.to_string()))
        .await
        .unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s.message.contains("passes after 1 fix round")),
        "add was fixed by its checks: {steps:?}"
    );

    // "sub"'s coder was given its subtask only once "add" had ended, fix round included.
    let messages = team.store.messages(None).await.unwrap();
    let (sub_assigned, _) = assigned_and_done(&messages, sub);
    let add_ended = messages
        .iter()
        .position(|m| {
            m.task_id.as_deref() == Some(&add.to_string())
                && m.kind == MessageKind::PeerCoordination
                && m.payload["event"] == "taskEnded"
        })
        .expect("add's mid told its peers the task ended");
    assert!(
        add_ended < sub_assigned,
        "sub's coder started while add's checks could still write calc.py"
    );
    let claim = messages
        .iter()
        .find(|m| {
            m.task_id.as_deref() == Some(&add.to_string())
                && m.payload["event"] == "writing"
                && m.payload["position"] == 0
        })
        .expect("add's checks claimed its files");
    assert_eq!(claim.payload["files"], json!(["calc.py"]));
    assert!(
        claim.payload.get("subtaskId").is_none(),
        "{:?}",
        claim.payload
    );

    // The waiting mid said what it waits for, and the top ruled on it.
    let board = team.board_of(&coordinator(&team, sub).await);
    assert!(
        board.contains(&format!(
            "- subtask 1 of \"{}\" waits for {}'s task \"{}\": both work on calc.py",
            title(&team, sub),
            coordinator(&team, add).await,
            title(&team, add)
        )),
        "{board}"
    );
    assert!(
        board.contains(&format!(
            "ruled: the checking of \"{}\" finishes first and subtask 1 of \"{}\" starts after it",
            title(&team, add),
            title(&team, sub)
        )),
        "{board}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.kind == MessageKind::ConflictReport
                && m.task_id == Some(sub.to_string())
                && m.payload["running"] == json!([0, "the task's checks and fix rounds"])),
        "the conflict with add's checks went to the top"
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_replaced_mid_s_waiting_subtask_goes_when_the_peer_s_work_ends() {
    // "add"'s coder thinks for a minute; "sub" waits for it, and its mid is replaced
    // while it waits. Its successor hears the end of "add"'s work and lets "sub" go.
    let team = team_with_calc(two_edits_of_calc(60_000, 10)).await;
    let began = tokio::time::Instant::now();
    let (add, sub) = sub_waiting_for_add(&team).await;
    let waiting_mid = coordinator(&team, sub).await;
    let old = team
        .engine
        .agents()
        .into_iter()
        .find(|a| a.name == waiting_mid)
        .unwrap();
    team.engine
        .replace_agent(&old.agent_id.to_string(), "unresponsive")
        .await
        .unwrap();

    for task in [add, sub] {
        let summary = team.engine.wait_for(task).await.unwrap();
        assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    }
    assert!(
        began.elapsed() < Duration::from_secs(300),
        "sub went on when add's work ended, not after waiting its most ({:?})",
        began.elapsed()
    );
    let calc = team.read("calc.py");
    assert!(
        calc.contains("def add(a, b):") && calc.contains("def sub(a, b):"),
        "{calc}"
    );
    team.engine.shutdown().await;
}
