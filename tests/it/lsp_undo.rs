//! `conclave/undoTask` as an editor uses it: the preview (files, diff, conflicts), an
//! apply refused while a file the person changed since would be overwritten, the apply
//! through `workspace/applyEdit` (a full-range edit and a `DeleteFile`), the task marked
//! undone, and a second undo refused.

use serde_json::{Value, json};

use crate::support::lsp::{Server, Workspace, full_capabilities, plan, script};

/// Applies a Conclave edit as an editor does and answers `applied`: the text of a
/// full-range edit written, a `DeleteFile` removed. Returns the kind and the file.
async fn apply(server: &mut Server) -> (String, String) {
    let (id, params) = server.server_request("workspace/applyEdit").await;
    let changes = params["edit"]["documentChanges"]
        .as_array()
        .unwrap()
        .clone();
    let (kind, uri) = match changes[0]["kind"].as_str() {
        Some("delete") => {
            assert_eq!(changes.len(), 1, "{params}");
            assert_eq!(changes[0]["options"]["ignoreIfNotExists"], true);
            let uri = changes[0]["uri"].as_str().unwrap().to_string();
            std::fs::remove_file(uri.strip_prefix("file://").unwrap()).unwrap();
            ("delete", uri)
        }
        _ => {
            let uri = changes[1]["textDocument"]["uri"]
                .as_str()
                .unwrap()
                .to_string();
            let text = changes[1]["edits"][0]["newText"].as_str().unwrap();
            std::fs::write(uri.strip_prefix("file://").unwrap(), text).unwrap();
            ("edit", uri)
        }
    };
    server.respond(id, json!({ "applied": true })).await;
    (kind.to_string(), uri)
}

#[tokio::test]
async fn an_editor_previews_an_undo_is_asked_about_the_persons_edit_then_applies_it() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Change greet.txt and add made.txt"]),
            json!({ "match": "Change greet.txt", "toolCalls": [
                { "name": "file_write", "arguments": { "path": "greet.txt", "content": "hello from the task\n" } },
                { "name": "file_write", "arguments": { "path": "made.txt", "content": "made\n" } },
            ] }),
            json!({ "match": "created made.txt", "text": "Both are written." }),
        ]),
        "",
    );
    std::fs::write(ws.path().join("greet.txt"), "hello\n").unwrap();
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let task = server.submit("Change greet.txt and add made.txt").await;
    apply(&mut server).await;
    apply(&mut server).await;
    server.task_status(&task, "completed").await;

    // The preview, by the short id the editors show.
    let preview = server
        .call("conclave/undoTask", json!({ "taskId": &task[..8] }))
        .await;
    assert_eq!(preview["taskId"], task.as_str());
    assert_eq!(preview["applied"], false);
    assert_eq!(preview["conflicts"], json!([]));
    let files: Vec<(String, String, bool)> = preview["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["action"].as_str().unwrap().to_string(),
                f["editedSince"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        files,
        vec![
            ("greet.txt".into(), "restore".into(), false),
            ("made.txt".into(), "remove".into(), false),
        ]
    );
    assert_eq!(preview["files"][0]["uri"], ws.uri("greet.txt"));
    assert_eq!(
        preview["diff"],
        "--- a/greet.txt\n+++ b/greet.txt\n@@ -1 +1 @@\n-hello from the task\n+hello\n\
         --- a/made.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made\n"
    );

    // The person edits greet.txt: applying without a word on it is refused, naming it.
    std::fs::write(ws.path().join("greet.txt"), "hello, person\n").unwrap();
    let refused = server
        .request(
            "conclave/undoTask",
            json!({ "taskId": task, "apply": true }),
        )
        .await
        .unwrap_err();
    assert_eq!(refused["code"], 1007, "{refused}");
    assert_eq!(refused["data"]["conflicts"], json!(["greet.txt"]));
    assert_eq!(
        ws.read("made.txt").as_deref(),
        Some("made\n"),
        "nothing was done"
    );

    // Told to overwrite: every file goes back through the editor.
    let id = server
        .send_request(
            "conclave/undoTask",
            json!({ "taskId": task, "apply": true, "editedFiles": "overwrite" }),
        )
        .await;
    assert_eq!(
        apply(&mut server).await,
        ("edit".to_string(), ws.uri("greet.txt"))
    );
    assert_eq!(
        apply(&mut server).await,
        ("delete".to_string(), ws.uri("made.txt"))
    );
    let done: Value = server.response(id).await.unwrap();
    assert_eq!(done["applied"], true);
    assert_eq!(done["reverted"]["by"], "undo");
    assert_eq!(
        done["reverted"]["restored"],
        json!(["greet.txt", "made.txt"])
    );
    assert_eq!(ws.read("greet.txt").as_deref(), Some("hello\n"));
    assert_eq!(ws.read("made.txt"), None);

    let detail = server
        .call("conclave/getTask", json!({ "taskId": task }))
        .await;
    assert_eq!(detail["revertedBy"], "undo");
    assert_eq!(
        detail["reverted"]["restored"],
        json!(["greet.txt", "made.txt"])
    );

    let twice = server
        .request("conclave/undoTask", json!({ "taskId": task }))
        .await
        .unwrap_err();
    assert_eq!(twice["code"], 1007);
    assert_eq!(twice["data"]["reason"], "already_undone");
    assert!(
        twice["message"]
            .as_str()
            .unwrap()
            .contains("was undone already"),
        "{twice}"
    );
    assert!(server.shutdown_and_exit().await.success());
}
