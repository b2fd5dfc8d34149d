//! Generated files reaching the editor through `workspace/applyEdit`: a whole task on a
//! real HTTP model server (wiremock on 127.0.0.1), an editor that never answers (the
//! server falls back to a disk write and says so), and an editor that refuses.

use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::lsp::{Server, Workspace, full_capabilities, plan, script};

fn answer(message: Value) -> ResponseTemplate {
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
        "usage": { "prompt_tokens": 10, "completion_tokens": 5 }
    }))
}

/// An editor applying a Conclave edit: checks its shape, writes the new text and
/// saves, then answers `applied`.
fn apply_like_an_editor(params: &Value, root: &std::path::Path) -> (String, String) {
    let changes = params["edit"]["documentChanges"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{params}");
    assert_eq!(changes[0]["kind"], "create");
    assert_eq!(changes[0]["options"]["ignoreIfExists"], true);
    let uri = changes[0]["uri"].as_str().unwrap().to_string();
    assert_eq!(changes[1]["textDocument"]["uri"], uri.as_str());
    let edits = changes[1]["edits"].as_array().unwrap();
    assert_eq!(edits.len(), 1, "one full-range edit");
    assert_eq!(
        edits[0]["range"]["start"],
        json!({ "line": 0, "character": 0 })
    );
    let text = edits[0]["newText"].as_str().unwrap().to_string();
    let file = uri.strip_prefix("file://").unwrap();
    assert!(
        file.starts_with(&root.display().to_string()),
        "inside the workspace"
    );
    std::fs::write(file, &text).unwrap();
    (uri, text)
}

#[tokio::test]
async fn a_task_on_an_http_model_delivers_its_files_through_apply_edit() {
    let model = MockServer::start().await;
    let completions = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
    completions()
        .and(body_string_contains("created hello.py"))
        .respond_with(answer(
            json!({ "role": "assistant", "content": "hello.py prints a greeting." }),
        ))
        .with_priority(1)
        .mount(&model)
        .await;
    completions()
        .and(body_string_contains("Write hello.py"))
        .respond_with(answer(json!({
            "role": "assistant", "content": null,
            "tool_calls": [{ "id": "call_1", "type": "function", "function": {
                "name": "file_write",
                "arguments": json!({ "path": "hello.py", "content": "print('hello')\n" }).to_string() } }]
        })))
        .with_priority(2)
        .mount(&model)
        .await;
    completions()
        .and(body_string_contains("Plan this task"))
        .respond_with(answer(json!({
            "role": "assistant",
            "content": "```json\n{\"subtasks\": [{\"description\": \"Write hello.py\"}]}\n```"
        })))
        .with_priority(3)
        .mount(&model)
        .await;

    let ws = Workspace::empty();
    std::fs::write(
        ws.path().join("conclave.toml"),
        format!(
            "[llm]\nprovider = \"openai\"\nmodel = \"test-model\"\nbaseUrl = \"{}/v1\"\n\
             apiKeyEnv = \"CONCLAVE_TEST_KEY\"\n[governance]\nreview = \"rules\"\n\
             [approvals]\ncommands = \"auto\"\n",
            model.uri()
        ),
    )
    .unwrap();
    let mut server =
        Server::spawn_with(ws.path(), &[], &[("CONCLAVE_TEST_KEY", "sk-test-123")]).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Greet the world").await;

    let (id, params) = server.server_request("workspace/applyEdit").await;
    let root = ws.path().canonicalize().unwrap();
    let (uri, text) = apply_like_an_editor(&params, &root);
    assert_eq!(uri, ws.uri("hello.py"));
    assert_eq!(text, "print('hello')\n");
    server.respond(id, json!({ "applied": true })).await;

    let done = server.task_status(&task, "completed").await;
    assert_eq!(done["subtasks"][0]["files"], json!([ws.uri("hello.py")]));
    assert_eq!(ws.read("hello.py").as_deref(), Some("print('hello')\n"));
    let detail = server
        .call("conclave/getTask", json!({ "taskId": task }))
        .await;
    assert_eq!(detail["filesWritten"], json!([ws.uri("hello.py")]));
    assert_eq!(
        detail["result"],
        "1 of 1 subtasks completed.\n- hello.py prints a greeting."
    );
    let requests = model.received_requests().await.unwrap();
    assert_eq!(
        requests.len(),
        5,
        "plan, write, summary, and the acceptance test the team asks for (no tests ran), \
         asked once more when the answer holds none"
    );
    let last = String::from_utf8_lossy(&requests[3].body).into_owned();
    assert!(last.contains("short Python test script"), "{last}");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn an_unanswered_apply_edit_falls_back_to_a_disk_write_and_says_so() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create e.txt"]),
            json!({ "match": "Create e.txt", "toolCalls": [ { "name": "file_write", "arguments": { "path": "e.txt", "content": "e\n" } } ] }),
            json!({ "match": "created e.txt", "text": "Wrote e.txt." }),
        ]),
        "[editor]\napplyEditTimeoutMs = 200",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create e.txt").await;
    let (never_answered, _) = server.server_request("workspace/applyEdit").await;
    server
        .notification("window/logMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("did not answer workspace/applyEdit"))
        })
        .await;
    server
        .notification("$/cancelRequest", |p| p["id"] == never_answered)
        .await;
    server.task_status(&task, "completed").await;
    assert_eq!(ws.read("e.txt").as_deref(), Some("e\n"));
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn an_edit_the_editor_refuses_is_not_written_behind_its_back() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create f.txt"]),
            json!({ "match": "Create f.txt", "toolCalls": [ { "name": "file_write", "arguments": { "path": "f.txt", "content": "f\n" } } ] }),
            json!({ "match": "the user said no", "text": "The editor refused f.txt; leaving it." }),
        ]),
        "",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Create f.txt").await;
    let (id, _) = server.server_request("workspace/applyEdit").await;
    server
        .respond(
            id,
            json!({ "applied": false, "failureReason": "the user said no" }),
        )
        .await;
    server
        .notification("conclave/taskUpdated", |p| {
            p["task"]["taskId"] == task.as_str()
                && matches!(
                    p["task"]["status"].as_str(),
                    Some("completed" | "failed" | "escalated")
                )
        })
        .await;
    assert_eq!(ws.read("f.txt"), None, "nothing on disk");
    assert!(server.shutdown_and_exit().await.success());
}
