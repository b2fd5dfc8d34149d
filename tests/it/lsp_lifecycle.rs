//! No dead window: `conclave serve` ends when its editor is gone, an orphaned server's
//! workspace is taken over, and a live second server is named in the 1007 error. Real
//! processes throughout: the binary, a stand-in editor process, signals.

use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::lsp::{self, DEADLINE, Server, Workspace, bare_capabilities};

/// A process standing in for the editor: alive until the test kills it.
fn stand_in_editor() -> std::process::Child {
    std::process::Command::new("sleep")
        .arg("600")
        .stdin(Stdio::null())
        .spawn()
        .expect("sleep runs")
}

/// `initialize` as an editor with process `editor` and name `name` sends it.
async fn initialize_as(server: &mut Server, editor: u32, name: &str) -> Result<Value, Value> {
    let root = server.workspace.canonicalize().unwrap();
    server
        .request(
            "initialize",
            json!({
                "processId": editor,
                "clientInfo": { "name": name, "version": "9.9" },
                "rootUri": format!("file://{}", root.display()),
                "capabilities": bare_capabilities(),
            }),
        )
        .await
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: sending a signal to a child process this test started.
    assert_eq!(unsafe { libc::kill(pid as libc::pid_t, signal) }, 0);
}

#[tokio::test]
async fn the_server_ends_when_the_editor_process_that_started_it_is_gone() {
    let ws = Workspace::empty();
    let mut editor = stand_in_editor();
    let mut server = Server::spawn(ws.path()).await;
    initialize_as(&mut server, editor.id(), "Stand-in")
        .await
        .expect("initialize");
    server.notify("initialized", json!({})).await;
    server.call("conclave/listTasks", json!({})).await;

    // The editor dies; its pipe to the server stays open (the test holds it).
    editor.kill().unwrap();
    editor.wait().unwrap();
    let status = server.exit_status().await;
    assert_eq!(status.code(), Some(0), "{}", server.stderr_text());
    assert!(
        server.stderr_text().contains("is gone; the server stops"),
        "{}",
        server.stderr_text()
    );
}

#[tokio::test]
async fn a_live_second_server_is_refused_with_the_holder_named_and_what_to_do() {
    let ws = Workspace::empty();
    let mut first = Server::spawn(ws.path()).await;
    initialize_as(&mut first, std::process::id(), "First Editor")
        .await
        .expect("the first server initializes");

    let mut second = Server::spawn(ws.path()).await;
    let error = initialize_as(&mut second, std::process::id(), "Second Editor")
        .await
        .expect_err("the workspace is taken");
    assert_eq!(error["code"], 1007);
    let holder = &error["data"]["holder"];
    assert_eq!(holder["pid"], first.pid(), "{error}");
    assert_eq!(holder["client"]["name"], "First Editor", "{error}");
    assert_eq!(holder["client"]["version"], "9.9", "{error}");
    assert_eq!(holder["editorPid"], std::process::id(), "{error}");
    assert!(holder["since"].is_string(), "{error}");
    assert!(error["data"]["workspace"].is_string(), "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("for First Editor 9.9"), "{message}");
    assert!(
        message.contains(&format!("kill {}", first.pid())),
        "{message}"
    );
    assert_eq!(second.exit_status().await.code(), Some(1));

    // The first one serves on, undisturbed.
    first.notify("initialized", json!({})).await;
    first.call("conclave/listTasks", json!({})).await;
    assert_eq!(first.shutdown_and_exit().await.code(), Some(0));
}

#[tokio::test]
async fn a_server_whose_editor_is_gone_is_taken_over_by_the_next_one() {
    let ws = Workspace::empty();
    let mut editor = stand_in_editor();
    let mut orphan = Server::spawn(ws.path()).await;
    initialize_as(&mut orphan, editor.id(), "Old Window")
        .await
        .expect("initialize");
    // Wedged (it cannot notice by itself that its editor is gone), then orphaned.
    signal(orphan.pid(), libc::SIGSTOP);
    editor.kill().unwrap();
    editor.wait().unwrap();

    let mut next = Server::spawn(ws.path()).await;
    initialize_as(&mut next, std::process::id(), "New Window")
        .await
        .expect("the new server takes the workspace over");
    next.notify("initialized", json!({})).await;
    next.call("conclave/listTasks", json!({})).await;
    assert!(
        next.stderr_text().contains("taking the workspace over"),
        "{}",
        next.stderr_text()
    );
    // The orphan was asked to stop and stopped cleanly.
    let status = tokio::time::timeout(DEADLINE, orphan.exit_status())
        .await
        .expect("the orphan ends");
    assert_eq!(status.code(), Some(0), "{}", orphan.stderr_text());
    assert!(
        orphan.stderr_text().contains("SIGTERM"),
        "{}",
        orphan.stderr_text()
    );
    assert_eq!(next.shutdown_and_exit().await.code(), Some(0));
}

#[tokio::test]
async fn creating_the_state_directory_is_announced_once_with_a_gitignore_line() {
    let ws = Workspace::empty();
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), Value::Null).await;
    let shown = server
        .notification("window/showMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains(".conclave/"))
        })
        .await;
    assert!(
        shown["message"].as_str().unwrap().contains(".gitignore"),
        "{shown}"
    );
    assert_eq!(server.shutdown_and_exit().await.code(), Some(0));

    // The next server in the same folder does not say it again.
    let mut again = Server::spawn(ws.path()).await;
    again.initialize(bare_capabilities(), Value::Null).await;
    again.call("conclave/listTasks", json!({})).await;
    assert_eq!(again.call("shutdown", Value::Null).await, Value::Null);
    again.notify("exit", Value::Null).await;
    let rest = again.rest().await;
    assert!(
        !rest.iter().any(|m| m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains(".gitignore"))),
        "{rest:?}"
    );
}

/// Nothing an editor has seen is lost to a kill: a notification goes out only once its
/// record is committed, and so does the answer that names a new task. While the store
/// cannot commit (another process holds its write lock) the team goes on in memory and
/// the editor hears nothing of it; once the store commits again everything comes, and a
/// SIGKILL right after loses none of it.
#[tokio::test]
async fn a_notification_goes_out_only_once_its_record_is_durable() {
    let ws = Workspace::scripted(
        lsp::script(vec![
            lsp::plan(&["Write a.txt"]),
            json!(lsp::writes("Write a.txt", "a.txt", "a\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    // Startup's own news (the default team of 9 ready) is out first.
    for _ in 0..9 {
        server
            .notification("conclave/agentStatus", |p| p["to"] == "idle")
            .await;
    }

    let db = ws.path().join(".conclave").join("conclave.db");
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let seen_before = server.received().len();
    let submit = server
        .send_request(
            "conclave/submitTask",
            json!({ "description": "Write a.txt" }),
        )
        .await;
    // The team does the work in memory meanwhile.
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let listed = server.call("conclave/listTasks", json!({})).await;
        if listed["tasks"][0]["status"] == "completed" {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{listed}");
        tokio::task::yield_now().await;
    }
    assert_eq!(ws.read("a.txt").as_deref(), Some("a\n"));
    let runtime_news = |m: &Value| {
        m["id"] == submit
            || [
                "conclave/taskUpdated",
                "conclave/agentStatus",
                "conclave/recoveryStatus",
            ]
            .contains(&m["method"].as_str().unwrap_or(""))
    };
    let early: Vec<&Value> = server
        .received()
        .iter()
        .skip(seen_before)
        .filter(|m| runtime_news(m))
        .collect();
    assert!(
        early.is_empty(),
        "sent before the store committed it: {early:?}"
    );

    lock.execute_batch("ROLLBACK").unwrap();
    drop(lock);
    let task = server.response(submit).await.unwrap()["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .notification("conclave/taskUpdated", |p| {
            p["task"]["taskId"] == task && p["task"]["status"] == "completed"
        })
        .await;
    let seen: Vec<Value> = server.received().iter().cloned().collect();
    signal(server.pid(), libc::SIGKILL);
    server.exit_status().await;

    let store = conclave::store::Store::open(&db).unwrap();
    let tasks = store.tasks().await.unwrap();
    let stored = tasks
        .iter()
        .find(|t| t.id.to_string() == task)
        .expect("the task the editor was told of is stored");
    assert_eq!(stored.status, conclave::runtime::TaskStatus::Completed);
    let transitions = store.transitions(None).await.unwrap();
    for status in seen
        .iter()
        .filter(|m| m["method"] == "conclave/agentStatus")
    {
        let p = &status["params"];
        assert!(
            transitions
                .iter()
                .any(|t| t.agent_id.to_string() == p["agentId"]
                    && t.to.to_string() == p["to"]
                    && t.reason == p["reason"]),
            "{p} was seen and is not stored"
        );
    }
}
