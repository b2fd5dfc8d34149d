//! File-change approvals as a person meets them, through the real binary: an approval
//! answered long after the step timeout still writes its file, and an approval that
//! stops mattering is withdrawn from the editor with a message.

mod lsp_support;

use lsp_support::{Server, Workspace, plan, script, writes};
use serde_json::{Value, json};

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
