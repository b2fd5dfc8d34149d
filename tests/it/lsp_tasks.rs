//! Tasks through `conclave serve --stdio`: every `conclave/*` method and notification
//! with the team working on a scripted model, approvals answered, dismissed and left to
//! time out, whiteboards watched live, progress and diagnostics.

use serde_json::{Value, json};

use crate::support::lsp::{
    Server, Workspace, bare_capabilities, full_capabilities, plan, script, writes,
};

/// A subtask that writes `path` and then hits a critical error (401) until answered.
fn writes_then_unauthorized(description: &str, path: &str) -> Value {
    json!([
        { "match": description, "toolCalls": [ { "name": "file_write", "arguments": { "path": path, "content": "partial\n" } } ] },
        { "match": format!("created {path}"), "error": "unauthorized", "repeat": true }
    ])
}

/// A task whose one subtask writes c.txt and then hits a 401: an escalation to the user.
fn escalating_workspace(extra: &str) -> Workspace {
    Workspace::scripted(
        script(vec![
            plan(&["Create c.txt"]),
            writes_then_unauthorized("Create c.txt", "c.txt"),
        ]),
        &format!("writes = \"disk\"\n{extra}"),
    )
}

#[tokio::test]
async fn a_task_runs_to_completion_with_notifications_progress_and_every_query() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create a.txt", "Create b.txt"]),
            json!(writes("Create a.txt", "a.txt", "a\n")),
            json!({ "match": "Create b.txt", "error": { "kind": "http", "status": 503 } }),
            json!(writes("Create b.txt", "b.txt", "b\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;

    let result = server
        .call(
            "conclave/submitTask",
            json!({ "description": "Make a.txt and b.txt", "title": "Two files",
                    "context": { "files": [ws.uri("notes.md")] },
                    "options": { "continueOnError": false },
                    "workDoneToken": "tok-1" }),
        )
        .await;
    let id = result["taskId"].as_str().unwrap().to_string();
    assert_eq!(
        result,
        json!({ "taskId": id }),
        "answered at once, with the id only"
    );

    // The 503 of b.txt is provider trouble: the subtask waits for the provider, a
    // recovery step with its scope, provider, wait and severity.
    let wait = server
        .notification("conclave/recoveryStatus", |p| {
            p["action"] == "wait_for_provider"
        })
        .await;
    assert_eq!(wait["taskId"], id);
    assert_eq!(wait["scope"], "subtask");
    assert_eq!(wait["provider"], "scripted");
    assert!(wait["delayMs"].is_u64(), "{wait}");
    assert!(
        wait["message"]
            .as_str()
            .unwrap()
            .starts_with("waiting for scripted ("),
        "{wait}"
    );
    assert!(wait["severity"].is_string() && wait["at"].is_string());

    let done = server.task_status(&id, "completed").await;
    assert_eq!(done["progress"], 100);
    assert_eq!(done["title"], "Two files");
    let mut files: Vec<Value> = done["subtasks"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["files"].as_array().unwrap().clone())
        .collect();
    files.sort_by_key(|f| f.to_string());
    assert_eq!(files, [json!(ws.uri("a.txt")), json!(ws.uri("b.txt"))]);
    assert_eq!(ws.read("a.txt").as_deref(), Some("a\n"));
    assert_eq!(ws.read("b.txt").as_deref(), Some("b\n"));

    // Work-done progress under the submitter's token: begin, then reports, then end.
    let begin = server
        .notification("$/progress", |p| {
            p["token"] == "tok-1" && p["value"]["kind"] == "begin"
        })
        .await;
    assert_eq!(begin["value"]["title"], "Conclave: Two files");
    server
        .notification("$/progress", |p| {
            p["token"] == "tok-1" && p["value"]["kind"] == "end"
        })
        .await;

    // Agents moved, and said why.
    let moved = server
        .notification("conclave/agentStatus", |p| p["to"] == "working")
        .await;
    for field in ["agentId", "from", "to", "reason", "at"] {
        assert!(moved.get(field).is_some(), "{field} in {moved}");
    }

    let listed = server.call("conclave/listTasks", json!({})).await;
    assert_eq!(listed["tasks"][0]["taskId"], id);
    assert_eq!(listed["tasks"][0]["status"], "completed");
    let detail = server
        .call("conclave/getTask", json!({ "taskId": id }))
        .await;
    assert_eq!(detail["description"], "Make a.txt and b.txt");
    let mut written = detail["filesWritten"].as_array().unwrap().clone();
    written.sort_by_key(|f| f.to_string());
    assert_eq!(
        written,
        [json!(ws.uri("a.txt")), json!(ws.uri("b.txt"))],
        "{detail:#}"
    );
    assert_eq!(
        detail["errors"].as_array().unwrap().len(),
        1,
        "the 503: {detail}"
    );

    let agents = server.call("conclave/listAgents", json!({})).await;
    let agents = agents["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 9, "3 top, 2 mid, 4 bottom");
    let metrics = &agents[0]["metrics"];
    for field in [
        "tasksCompleted",
        "tasksFailed",
        "averageTaskDurationMs",
        "messagesProcessed",
        "heartbeatsResponded",
        "heartbeatsMissed",
        "warningsReceived",
        "lastActiveAt",
        "performanceScore",
    ] {
        assert!(metrics.get(field).is_some(), "{field} in {metrics}");
    }

    let log = server
        .call("conclave/taskLog", json!({ "taskId": id }))
        .await;
    let text = log["text"].as_str().unwrap();
    assert!(
        text.contains("a.txt") && text.contains("wait_for_provider"),
        "{text}"
    );
    assert_eq!(
        log["entries"].as_array().unwrap().len(),
        text.lines().count()
    );

    // Finished: cancelling is not allowed any more.
    let error = server
        .request("conclave/cancelTask", json!({ "taskId": id }))
        .await
        .unwrap_err();
    assert_eq!(error["code"], 1007);
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_subscribed_whiteboard_is_followed_live_to_its_latest_version() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create a.txt"]),
            json!(writes("Create a.txt", "a.txt", "a\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;

    let boards = server.call("conclave/listWhiteboards", json!({})).await;
    let ids: Vec<&str> = boards["whiteboards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    for id in ["global", "layer:top", "layer:mid", "layer:bottom"] {
        assert!(ids.contains(&id), "{ids:?}");
    }
    let first = server
        .call("conclave/subscribeWhiteboard", json!({ "id": "global" }))
        .await;
    assert_eq!(first["id"], "global");
    let start = first["version"].as_u64().unwrap();

    let task = server.submit("Create a.txt").await;
    server.task_status(&task, "completed").await;
    let now = server
        .call("conclave/readWhiteboard", json!({ "id": "global" }))
        .await;
    let latest = now["version"].as_u64().unwrap();
    assert!(latest > start, "the team wrote on the global board");
    // Notifications arrive in increasing versions and end on the latest one.
    let mut seen = Vec::new();
    while seen.last() != Some(&latest) {
        let changed = server
            .notification("conclave/whiteboardChanged", |p| p["id"] == "global")
            .await;
        seen.push(changed["version"].as_u64().unwrap());
        if changed["version"] == latest {
            assert_eq!(changed["content"], now["content"]);
        }
    }
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");

    assert_eq!(
        server
            .call("conclave/unsubscribeWhiteboard", json!({ "id": "global" }))
            .await,
        Value::Null
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn an_escalation_is_asked_with_request_approval_and_the_answer_is_applied() {
    let ws = escalating_workspace("");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create c.txt").await;

    let (id, approval) = server.server_request("conclave/requestApproval").await;
    assert_eq!(approval["kind"], "escalation");
    assert_eq!(approval["severity"], "critical");
    assert_eq!(approval["taskId"], task);
    let options: Vec<&str> = approval["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["retry", "reassign", "modify", "abort"]);
    // It names the subtask, and carries what "Modify the subtask" starts from.
    assert_eq!(approval["title"], "[1/1] Create c.txt keeps failing");
    assert_eq!(approval["subtaskDescription"], "Create c.txt");

    // While it waits: the task is escalated, the file it wrote carries a warning.
    server.task_status(&task, "escalated").await;
    let warning = server
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == ws.uri("c.txt") && p["diagnostics"][0]["severity"] == 2
        })
        .await;
    assert_eq!(warning["diagnostics"][0]["source"], "conclave");

    server.respond(id, json!({ "decision": "abort" })).await;
    let failed = server.task_status(&task, "failed").await;
    assert_eq!(
        failed["progress"], 0,
        "nothing completed, so not 99 %: {failed}"
    );
    let error = server
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == ws.uri("c.txt") && p["diagnostics"][0]["severity"] == 1
        })
        .await;
    assert!(
        error["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("failed")
    );
    assert_eq!(
        server.call("conclave/listApprovals", json!({})).await,
        json!({ "approvals": [] })
    );
    // The failure report is there to read.
    let report = server
        .call("conclave/errorReport", json!({ "taskId": task }))
        .await;
    assert!(report["markdown"].as_str().unwrap().contains("c.txt"));
    let path = report["path"].as_str().unwrap();
    assert!(path.ends_with("ERROR_REPORT.md") && std::path::Path::new(path).exists());
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_dismissed_approval_stays_pending_and_is_answered_later_with_resolve_approval() {
    let ws = escalating_workspace("");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create c.txt").await;

    let (id, approval) = server.server_request("conclave/requestApproval").await;
    // The editor's user closed the dialog.
    server.respond_error(id, -32800, "dismissed").await;
    let pending = server.call("conclave/listApprovals", json!({})).await;
    assert_eq!(pending["approvals"].as_array().unwrap().len(), 1);
    assert_eq!(
        pending["approvals"][0]["approvalId"],
        approval["approvalId"]
    );
    assert_eq!(
        pending["approvals"][0], approval,
        "listed exactly as it was asked"
    );

    let answer = server
        .call(
            "conclave/resolveApproval",
            json!({ "approvalId": approval["approvalId"], "decision": "abort", "note": "later" }),
        )
        .await;
    assert_eq!(answer, json!({ "accepted": true }));
    server.task_status(&task, "failed").await;
    // Answered once: a second answer finds nothing pending.
    let again = server
        .request(
            "conclave/resolveApproval",
            json!({ "approvalId": approval["approvalId"], "decision": "abort" }),
        )
        .await
        .unwrap_err();
    assert_eq!(again["code"], 1002);

    // retryTask runs the failed subtask again; the script now lets it through.
    let retried = server
        .call("conclave/retryTask", json!({ "taskId": task }))
        .await;
    assert_eq!(retried, json!({ "taskId": task }));
    server
        .notification("conclave/taskUpdated", |p| {
            p["task"]["taskId"] == task && p["task"]["status"] != "failed"
        })
        .await;
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn an_approval_the_editor_never_answers_times_out_and_stays_pending() {
    let ws = escalating_workspace("[editor]\napprovalTimeoutMs = 200");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create c.txt").await;
    let (request_id, approval) = server.server_request("conclave/requestApproval").await;
    server
        .notification("window/logMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("did not answer an approval"))
        })
        .await;
    // The editor is told its prompt is moot, so it can take it down.
    server
        .notification("$/cancelRequest", |p| p["id"] == request_id)
        .await;
    let pending = server.call("conclave/listApprovals", json!({})).await;
    assert_eq!(
        pending["approvals"][0]["approvalId"],
        approval["approvalId"]
    );
    assert_eq!(
        server
            .call("conclave/getTask", json!({ "taskId": task }))
            .await["status"],
        "escalated",
        "nothing was decided by the timeout"
    );
    server
        .call(
            "conclave/resolveApproval",
            json!({ "approvalId": approval["approvalId"], "decision": "abort" }),
        )
        .await;
    server.task_status(&task, "failed").await;
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn an_approval_answered_elsewhere_cancels_the_editors_open_prompt() {
    let ws = escalating_workspace("");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create c.txt").await;
    // The prompt is open in the editor; the user answers from another window instead.
    let (request_id, approval) = server.server_request("conclave/requestApproval").await;
    server
        .call(
            "conclave/resolveApproval",
            json!({ "approvalId": approval["approvalId"], "decision": "abort" }),
        )
        .await;
    server
        .notification("$/cancelRequest", |p| p["id"] == request_id)
        .await;
    server.task_status(&task, "failed").await;
    // A late answer to the cancelled prompt changes nothing.
    server
        .respond(request_id, json!({ "decision": "retry" }))
        .await;
    assert!(
        server.call("conclave/listApprovals", json!({})).await["approvals"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        server
            .call("conclave/getTask", json!({ "taskId": task }))
            .await["status"],
        "failed"
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_client_without_approvals_gets_show_message_request_with_one_action_per_option() {
    let ws = escalating_workspace("");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let task = server.submit("Create c.txt").await;
    let (id, request) = server.server_request("window/showMessageRequest").await;
    assert_eq!(request["type"], 1, "critical shows as an error");
    assert!(
        request["message"]
            .as_str()
            .unwrap()
            .starts_with("Conclave: ")
    );
    let titles: Vec<&str> = request["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    let abort = titles
        .iter()
        .find(|t| t.starts_with("Abort"))
        .unwrap()
        .to_string();
    server.respond(id, json!({ "title": abort })).await;
    server.task_status(&task, "failed").await;
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn with_file_changes_on_ask_a_write_waits_for_an_approval_with_its_diff() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create d.txt"]),
            json!(writes("Create d.txt", "d.txt", "dee\n")),
        ]),
        "writes = \"disk\"\n[approvals]\nfileChanges = \"ask\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create d.txt").await;
    let (id, approval) = server.server_request("conclave/requestApproval").await;
    assert_eq!(approval["kind"], "fileChange");
    assert_eq!(
        approval["diff"],
        json!({ "uri": ws.uri("d.txt"), "before": "", "after": "dee\n" })
    );
    assert_eq!(ws.read("d.txt"), None, "nothing written before the answer");
    server.respond(id, json!({ "decision": "approve" })).await;
    server.task_status(&task, "completed").await;
    assert_eq!(ws.read("d.txt").as_deref(), Some("dee\n"));
    assert!(server.shutdown_and_exit().await.success());
}

/// `initialize` subscribes to the runtime's events and `initialized` asks every approval
/// already pending: approvals raised in between reach the bridge both ways, and each must
/// still be asked once (twice, the editor prompts again and the first answer can be lost).
#[tokio::test]
async fn approvals_raised_before_initialized_are_asked_once_each() {
    const FILES: [&str; 4] = ["e1.txt", "e2.txt", "e3.txt", "e4.txt"];
    let descriptions = FILES.map(|file| format!("Create {file}"));
    let mut parts = vec![plan(&descriptions.each_ref().map(String::as_str))];
    for (file, description) in FILES.iter().zip(&descriptions) {
        parts.push(json!(writes(description, file, "eee\n")));
    }
    let ws = Workspace::scripted(
        script(parts),
        "writes = \"disk\"\n[approvals]\nfileChanges = \"ask\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize_only(full_capabilities(), json!({})).await;
    let task = server.submit("Make the e files").await;
    // Requests before `initialized` are allowed; the writes wait for their approvals.
    loop {
        let listed = server.call("conclave/listApprovals", json!({})).await;
        if !listed["approvals"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::task::yield_now().await;
    }
    server.notify("initialized", json!({})).await;
    let mut asked = Vec::new();
    loop {
        let message = server
            .wait_for("an approval or the task's end", |m| {
                m["method"] == "conclave/requestApproval"
                    || (m["method"] == "conclave/taskUpdated"
                        && m["params"]["task"]["taskId"] == task.as_str()
                        && m["params"]["task"]["status"] == "completed")
            })
            .await;
        if message["method"] == "conclave/taskUpdated" {
            break;
        }
        asked.push(message["params"]["approvalId"].clone());
        server
            .respond(message["id"].clone(), json!({ "decision": "approve" }))
            .await;
    }
    for file in FILES {
        assert_eq!(ws.read(file).as_deref(), Some("eee\n"), "{file}");
    }
    assert_eq!(server.call("shutdown", Value::Null).await, Value::Null);
    server.notify("exit", Value::Null).await;
    asked.extend(
        server
            .rest()
            .await
            .into_iter()
            .filter(|m| m["method"] == "conclave/requestApproval")
            .map(|m| m["params"]["approvalId"].clone()),
    );
    let mut once = asked.clone();
    once.sort_by_key(Value::to_string);
    once.dedup();
    assert_eq!(once.len(), FILES.len(), "one approval per file: {asked:?}");
    assert_eq!(
        asked.len(),
        FILES.len(),
        "an approval was asked twice: {asked:?}"
    );
    assert!(server.exit_status().await.success());
}

#[tokio::test]
async fn cancel_stops_a_running_task() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create slow.txt"]),
            json!({ "match": "Create slow.txt", "delayMs": 60000, "text": "never" }),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let task = server.submit("Create slow.txt").await;
    server.task_status(&task, "running").await;
    assert_eq!(
        server
            .call("conclave/cancelTask", json!({ "taskId": task }))
            .await,
        json!({ "cancelled": true })
    );
    let cancelled = server.task_status(&task, "cancelled").await;
    assert_eq!(cancelled["subtasks"][0]["status"], "cancelled");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_restarted_server_asks_the_pending_approval_again() {
    let ws = escalating_workspace("");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    server.submit("Create c.txt").await;
    let (_, approval) = server.server_request("conclave/requestApproval").await;
    server.close_stdin();
    assert!(server.exit_status().await.success());

    let mut again = Server::spawn(ws.path()).await;
    again.initialize(full_capabilities(), json!({})).await;
    let (id, asked) = again.server_request("conclave/requestApproval").await;
    assert_eq!(asked["approvalId"], approval["approvalId"]);
    assert!(
        asked["detail"]
            .as_str()
            .unwrap()
            .contains("Asked before Conclave restarted"),
        "{asked}"
    );
    again.respond(id, json!({ "decision": "abort" })).await;
    again
        .notification("conclave/taskUpdated", |p| p["task"]["status"] == "failed")
        .await;
    assert!(again.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_task_described_under_a_markdown_heading_is_titled_by_the_heading_text() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create h.txt"]),
            json!(writes("Create h.txt", "h.txt", "h\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let task = server
        .submit("\n## Add h.txt\n\nCreate h.txt with one line.")
        .await;
    let done = server.task_status(&task, "completed").await;
    assert_eq!(done["title"], "Add h.txt");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_recovering_subtask_marks_its_file_and_the_mark_clears_when_it_completes() {
    let ws = Workspace::scripted(
        json!([
            plan(&["Create g.txt"]),
            { "match": "Create g.txt", "times": 2,
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "g.txt", "content": "g\n" } } ] },
            { "match": "created g.txt", "error": { "kind": "http", "status": 503 } },
            { "match": "g.txt unchanged", "text": "g.txt is there." }
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let task = server.submit("Create g.txt").await;
    let info = server
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == ws.uri("g.txt") && p["diagnostics"][0]["severity"] == 3
        })
        .await;
    assert_eq!(info["diagnostics"][0]["source"], "conclave");
    assert!(
        info["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("recovering"),
        "{info}"
    );
    server.task_status(&task, "completed").await;
    server
        .notification("textDocument/publishDiagnostics", |p| {
            p["uri"] == ws.uri("g.txt") && p["diagnostics"] == json!([])
        })
        .await;
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn without_a_token_the_server_creates_one_for_progress() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create h.txt"]),
            json!(writes("Create h.txt", "h.txt", "h\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create h.txt").await;
    let (id, created) = server
        .server_request("window/workDoneProgress/create")
        .await;
    let token = created["token"].clone();
    server.respond(id, Value::Null).await;
    server.task_status(&task, "completed").await;
    let end = server
        .notification("$/progress", |p| {
            p["token"] == token && p["value"]["kind"] == "end"
        })
        .await;
    assert!(
        end["value"]["message"]
            .as_str()
            .unwrap()
            .starts_with("completed"),
        "{end}"
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn task_updated_carries_the_tasks_tokens_cost_and_check_counts() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Write hello.py"]),
            json!(writes(
                "Write hello.py",
                "hello.py",
                "def greet():\n    \"\"\"Return the greeting.\"\"\"\n    return \"hello\"\n"
            )),
        ]),
        "writes = \"disk\"\n[verify]\nacceptanceTests = false\n\
         [pricing.\"scripted\"]\ninput = 1.0\noutput = 2.0",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let task = server.submit("Write hello.py with greet()").await;

    // Nothing is counted before a model call, and the field is left out until one is
    // (updates are coalesced under load, so the first one seen may already have calls).
    let first = server
        .notification("conclave/taskUpdated", |p| p["task"]["taskId"] == task)
        .await;
    assert!(
        first["task"]
            .get("usageTotal")
            .is_none_or(|usage| usage["calls"].as_u64() > Some(0)),
        "{first}"
    );

    // Live: an update while the task still runs already carries what it used so far.
    let live = server
        .notification("conclave/taskUpdated", |p| {
            p["task"]["taskId"] == task
                && p["task"]["status"] != "completed"
                && p["task"]["usageTotal"]["calls"].as_u64() > Some(0)
        })
        .await;
    let so_far = &live["task"]["usageTotal"];
    assert!(so_far["inputTokens"].as_u64() > Some(0), "{so_far}");
    assert!(so_far["costUsd"].as_f64() > Some(0.0), "priced: {so_far}");

    let done = server.task_status(&task, "completed").await;
    let detail = server
        .call("conclave/getTask", json!({ "taskId": task }))
        .await;
    assert_eq!(
        done["usageTotal"], detail["usage"]["total"],
        "the summary's figure is the task's whole usage"
    );
    let counts = &done["checkCounts"];
    let checks = detail["checks"].as_array().unwrap();
    let count = |status: &str| checks.iter().filter(|c| c["status"] == status).count() as u64;
    assert!(count("passed") > 0, "{detail:#}");
    assert_eq!(counts["passed"].as_u64(), Some(count("passed")), "{counts}");
    assert_eq!(counts["failed"], 0);
    assert_eq!(counts["skipped"].as_u64(), Some(count("skipped")));
    assert!(counts.get("failedRules").is_none(), "{counts}");
    assert!(
        checks.iter().any(|c| c["at"] == counts["at"]),
        "`at` is when the latest check ran: {counts}"
    );

    let listed = server.call("conclave/listTasks", json!({})).await;
    assert_eq!(listed["tasks"][0]["usageTotal"], done["usageTotal"]);
    assert_eq!(listed["tasks"][0]["checkCounts"], done["checkCounts"]);
    assert!(server.shutdown_and_exit().await.success());
}
