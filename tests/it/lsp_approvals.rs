//! File-change approvals as a person meets them, through the real binary: an approval
//! answered long after the step timeout still writes its file, and an approval that
//! stops mattering is withdrawn from the editor with a message.

use serde_json::{Value, json};

use crate::support::lsp::{Server, Workspace, plan, script, writes};

/// Approvals as requests; files written by the server itself (no applyEdit).
fn approvals_only() -> Value {
    json!({ "experimental": { "conclave": { "approvals": true } } })
}

/// A workspace whose one subtask writes `a.txt`, every change asked first, with a step
/// timeout and a subtask timeout far below the time the person takes.
fn workspace(approval_timeout_ms: u64) -> Workspace {
    Workspace::scripted(
        script(vec![
            plan(&["Write a.txt"]),
            json!(writes("Write a.txt", "a.txt", "print('a')\n")),
        ]),
        &format!(
            "[approvals]\nfileChanges = \"ask\"\n[recovery]\nstepTimeoutMs = 200\nsubtaskTimeoutMs = 1000\n\
             [editor]\napprovalTimeoutMs = {approval_timeout_ms}\n"
        ),
    )
}

#[tokio::test]
async fn a_file_change_approved_long_after_the_step_timeout_is_written_and_the_task_completes() {
    // The editor's prompt is given up on after 3 s: ten times the step timeout plus the
    // tools' grace and three times the subtask timeout, so the answer below comes long
    // after any time limit of the work.
    let ws = workspace(3_000);
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(approvals_only(), Value::Null).await;
    let task = server.submit("Write a.txt").await;

    let (request_id, approval) = server.server_request("conclave/requestApproval").await;
    assert_eq!(approval["kind"], "fileChange");
    assert_eq!(approval["diff"]["after"], "print('a')\n");
    let approval_id = approval["approvalId"].as_str().unwrap().to_string();
    // Evidence that the time passed: the server stops waiting for the prompt.
    server
        .notification("$/cancelRequest", |p| p["id"] == request_id)
        .await;
    assert!(
        ws.read("a.txt").is_none(),
        "nothing written before approval"
    );
    let pending = server.call("conclave/listApprovals", json!({})).await;
    assert_eq!(
        pending["approvals"][0]["approvalId"], approval_id,
        "still pending: {pending}"
    );

    let answer = server
        .call(
            "conclave/resolveApproval",
            json!({ "approvalId": approval_id, "decision": "approve" }),
        )
        .await;
    assert_eq!(answer, json!({ "accepted": true }));
    let done = server.task_status(&task, "completed").await;
    assert_eq!(done["subtasks"][0]["attempts"], 1, "no retry: {done}");
    assert_eq!(ws.read("a.txt").as_deref(), Some("print('a')\n"));
    let settled = server
        .notification("conclave/approvalResolved", |p| {
            p["approvalId"] == approval_id
        })
        .await;
    assert_eq!(settled["decision"], "approve");

    assert_eq!(server.shutdown_and_exit().await.code(), Some(0));
}

#[tokio::test]
async fn an_approval_whose_task_is_cancelled_is_withdrawn_from_the_editor_with_a_message() {
    let ws = workspace(600_000);
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(approvals_only(), Value::Null).await;
    let task = server.submit("Write a.txt").await;
    let (request_id, approval) = server.server_request("conclave/requestApproval").await;
    let approval_id = approval["approvalId"].clone();

    let cancelled = server
        .call("conclave/cancelTask", json!({ "taskId": task }))
        .await;
    assert_eq!(cancelled["cancelled"], true);
    let settled = server
        .notification("conclave/approvalResolved", |p| {
            p["approvalId"] == approval_id
        })
        .await;
    assert_eq!(settled["decision"], Value::Null, "{settled}");
    assert_eq!(settled["taskId"], task.as_str());
    assert!(
        settled["reason"].as_str().is_some_and(|r| !r.is_empty()),
        "{settled}"
    );
    server
        .notification("$/cancelRequest", |p| p["id"] == request_id)
        .await;
    let shown = server
        .notification("window/showMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("withdrew"))
        })
        .await;
    assert!(
        shown["message"]
            .as_str()
            .unwrap()
            .contains(approval["title"].as_str().unwrap()),
        "{shown}"
    );
    let pending = server.call("conclave/listApprovals", json!({})).await;
    assert_eq!(pending["approvals"], json!([]));
    // A late "approve" from the prompt changes nothing.
    server
        .respond(request_id, json!({ "decision": "approve" }))
        .await;
    server.task_status(&task, "cancelled").await;
    server.call("conclave/listTasks", json!({})).await;
    assert!(
        ws.read("a.txt").is_none(),
        "a withdrawn change is never written"
    );
    assert_eq!(server.shutdown_and_exit().await.code(), Some(0));
}

/// Answers every approval the server asks until task `task` ends with `status`:
/// `answer(approval)` picks the decision. Returns the approvals asked, in order.
async fn answer_until(
    server: &mut Server,
    task: &str,
    status: &str,
    answer: impl Fn(&Value) -> &'static str,
) -> Vec<Value> {
    let mut asked = Vec::new();
    loop {
        let message = server
            .wait_for("an approval or the task's end", |m| {
                (m.get("id").is_some() && m["method"] == "conclave/requestApproval")
                    || (m["method"] == "conclave/taskUpdated"
                        && m["params"]["task"]["taskId"] == task
                        && m["params"]["task"]["status"] == status)
            })
            .await;
        if message["method"] == "conclave/taskUpdated" {
            return asked;
        }
        let approval = message["params"].clone();
        let decision = answer(&approval);
        server
            .respond(message["id"].clone(), json!({ "decision": decision }))
            .await;
        asked.push(approval);
    }
}

#[tokio::test]
async fn the_checks_ask_once_before_running_the_tasks_code_and_a_no_leaves_it_unchecked() {
    let test = "import pathlib\npathlib.Path('ran.txt').write_text('x')\nfrom probe import double\n\n\
                def test_double():\n    assert double(2) == 4\n";
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Write probe.py and test_probe.py"]),
            json!({ "match": "Write probe.py", "toolCalls": [
                { "name": "file_write", "arguments": { "path": "probe.py", "content": "def double(x):\n    return 2 * x\n" } },
                { "name": "file_write", "arguments": { "path": "test_probe.py", "content": test } },
            ] }),
            json!({ "text": "Wrote both.", "repeat": true }),
        ]),
        "",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(approvals_only(), json!({})).await;
    let task = server.submit("Write probe.py and test_probe.py").await;
    let asked = answer_until(&mut server, &task, "completed", |_| "reject").await;

    assert_eq!(
        asked.len(),
        1,
        "one question for the task's checks: {asked:?}"
    );
    assert_eq!(asked[0]["kind"], "command");
    assert_eq!(
        asked[0]["title"],
        "Run the team's checks on this task's code?"
    );
    let command = asked[0]["command"].as_str().unwrap();
    assert!(
        command.contains("python3"),
        "what will run is shown: {command}"
    );
    assert!(
        asked[0]["detail"].as_str().unwrap().contains("sandbox") || !cfg!(target_os = "linux"),
        "how it is confined is shown: {}",
        asked[0]["detail"]
    );
    assert!(ws.read("ran.txt").is_none(), "nothing the model wrote ran");
    let detail = server
        .call("conclave/getTask", json!({ "taskId": task }))
        .await;
    let unchecked = detail["unchecked"].as_str().unwrap_or_default();
    assert!(
        unchecked.starts_with("not checked: running code was refused"),
        "{detail}"
    );
    assert!(
        detail["result"].as_str().unwrap().contains("Not checked"),
        "{detail}"
    );
}

#[tokio::test]
async fn a_rejected_change_is_not_proposed_again_in_its_task() {
    let write =
        json!({ "name": "file_write", "arguments": { "path": "r.txt", "content": "rejected\n" } });
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Write r.txt"]),
            // The model tries the same change again, as small models do.
            json!({ "match": "Write r.txt", "toolCalls": [write.clone()] }),
            json!({ "match": "declined the change", "toolCalls": [write.clone()] }),
            json!({ "match": "refused earlier", "toolCalls": [write] }),
            json!({ "text": "I could not write r.txt: it was refused.", "repeat": true }),
        ]),
        "[approvals]\nfileChanges = \"ask\"\n",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(approvals_only(), json!({})).await;
    let task = server.submit("Write r.txt").await;
    let asked = answer_until(&mut server, &task, "failed", |approval| {
        if approval["kind"] == "fileChange" {
            "reject"
        } else {
            "abort"
        }
    })
    .await;
    let changes: Vec<&Value> = asked.iter().filter(|a| a["kind"] == "fileChange").collect();
    assert_eq!(changes.len(), 1, "the same diff is shown once: {asked:?}");
    assert!(ws.read("r.txt").is_none());
    let detail = server
        .call("conclave/getTask", json!({ "taskId": task }))
        .await;
    let errors = detail["errors"].to_string();
    assert!(errors.contains("\"kind\":\"refused\""), "{errors}");
    assert!(
        errors.contains("refused") || errors.contains("declined"),
        "{errors}"
    );
}
