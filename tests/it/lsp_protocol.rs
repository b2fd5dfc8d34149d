//! `conclave serve --stdio` as a client meets it: the handshake, the error codes, bad
//! input that must not hurt it, and the lifecycle (shutdown, exit, closed stdin, one
//! server per workspace). The real binary, over real pipes.

use serde_json::{Value, json};

use crate::support::lsp::{
    Server, Workspace, bare_capabilities, full_capabilities, plan, script, writes,
};

#[tokio::test]
async fn initialize_answers_with_the_protocol_version_and_server_info() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    let result = server.initialize(full_capabilities(), json!({})).await;
    assert_eq!(
        result,
        json!({
            "capabilities": { "experimental": { "conclave": { "protocolVersion": 1 } } },
            "serverInfo": { "name": "conclave", "version": env!("CARGO_PKG_VERSION") }
        })
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_request_before_initialize_is_refused_with_32002_and_initialize_still_works() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    let error = server
        .request("conclave/listTasks", json!({}))
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32002);
    server.initialize(bare_capabilities(), json!({})).await;
    assert_eq!(
        server.call("conclave/listTasks", json!({})).await,
        json!({ "tasks": [] })
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn malformed_json_gets_32700_and_the_connection_goes_on() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    server
        .send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\":")
        .await;
    let error = server
        .wait_for("the parse error", |m| m["error"]["code"] == -32700)
        .await;
    assert_eq!(error["id"], Value::Null);
    // A valid JSON value that is not a message is an invalid request, with its id.
    server
        .send_raw(br#"{"jsonrpc": "2.0", "id": 7, "method": 12}"#)
        .await;
    let invalid = server.response(json!(7)).await.unwrap_err();
    assert_eq!(invalid["code"], -32600);
    assert_eq!(
        server.call("conclave/listTasks", json!({})).await,
        json!({ "tasks": [] }),
        "still serving"
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn unknown_methods_and_bad_params_name_what_is_wrong() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;

    let unknown = server
        .request("conclave/doEverything", json!({}))
        .await
        .unwrap_err();
    assert_eq!(unknown["code"], -32601);

    let missing = server
        .request("conclave/getTask", json!({ "id": "x" }))
        .await
        .unwrap_err();
    assert_eq!(missing["code"], -32602);
    assert!(
        missing["message"].as_str().unwrap().contains("taskId"),
        "{missing}"
    );
    let wrong_type = server
        .request("conclave/submitTask", json!({ "description": 42 }))
        .await
        .unwrap_err();
    assert_eq!(wrong_type["code"], -32602);
    let bad_decision = server
        .request(
            "conclave/resolveApproval",
            json!({ "approvalId": "a", "decision": "maybe" }),
        )
        .await
        .unwrap_err();
    assert_eq!(bad_decision["code"], -32602);
    assert!(
        bad_decision["message"].as_str().unwrap().contains("maybe"),
        "{bad_decision}"
    );
    // Methods that take `{}` also take no params at all.
    server
        .send(&json!({ "jsonrpc": "2.0", "id": 500, "method": "conclave/listApprovals" }))
        .await;
    assert_eq!(
        server.response(json!(500)).await.unwrap(),
        json!({ "approvals": [] })
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn unknown_ids_get_the_application_error_codes_with_data() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let nobody = "6f1c2a4e-0000-4000-8000-000000000000";
    for method in [
        "conclave/getTask",
        "conclave/cancelTask",
        "conclave/retryTask",
        "conclave/taskLog",
    ] {
        let error = server
            .request(method, json!({ "taskId": nobody }))
            .await
            .unwrap_err();
        assert_eq!(
            (error["code"].clone(), error["data"].clone()),
            (json!(1001), json!({ "taskId": nobody })),
            "{method}"
        );
    }
    let error = server
        .request(
            "conclave/resolveApproval",
            json!({ "approvalId": nobody, "decision": "approve" }),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (error["code"].clone(), error["data"].clone()),
        (json!(1002), json!({ "approvalId": nobody }))
    );
    for method in [
        "conclave/readWhiteboard",
        "conclave/subscribeWhiteboard",
        "conclave/unsubscribeWhiteboard",
    ] {
        let error = server
            .request(method, json!({ "id": "agent:nobody" }))
            .await
            .unwrap_err();
        assert_eq!(
            (error["code"].clone(), error["data"].clone()),
            (json!(1003), json!({ "id": "agent:nobody" })),
            "{method}"
        );
    }
    let error = server
        .request("conclave/errorReport", json!({ "taskId": nobody }))
        .await
        .unwrap_err();
    assert_eq!(error["code"], 1001);
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn without_a_model_submit_fails_with_1004_and_says_how_to_configure_one() {
    let ws = Workspace::empty();
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let error = server
        .request(
            "conclave/submitTask",
            json!({ "description": "Add a flag" }),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], 1004);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("ANTHROPIC_API_KEY") || message.contains("provider"),
        "{message}"
    );
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn initialization_options_override_conclave_toml() {
    let ws = Workspace::scripted(json!([]), "[team]\nmid = 1\n");
    let mut server = Server::spawn(ws.path()).await;
    server
        .initialize(
            bare_capabilities(),
            json!({ "team": { "top": 1, "bottomPerMid": 1 } }),
        )
        .await;
    let agents = server.call("conclave/listAgents", json!({})).await["agents"]
        .as_array()
        .unwrap()
        .clone();
    let layers: Vec<&str> = agents
        .iter()
        .map(|a| a["layer"].as_str().unwrap())
        .collect();
    assert_eq!(
        layers.len(),
        3,
        "{layers:?}: 1 top (options), 1 mid (toml), 1 bottom"
    );
    for layer in ["top", "mid", "bottom"] {
        assert!(layers.contains(&layer), "{layers:?}");
    }
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn empty_initialization_options_from_a_lua_client_keep_conclave_toml() {
    // Neovim encodes an empty Lua table as `[]`: that means "no overrides", not "no config".
    let ws = Workspace::scripted(json!([]), "[team]\ntop = 1\nmid = 1\nbottomPerMid = 1\n");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!([])).await;
    let agents = server.call("conclave/listAgents", json!({})).await["agents"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(agents, 3, "the team of conclave.toml, not the default one");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn invalid_initialization_options_are_refused_naming_their_origin() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    let root = ws.path().canonicalize().unwrap();
    let error = server
        .request(
            "initialize",
            json!({ "processId": null, "rootUri": format!("file://{}", root.display()),
                    "capabilities": {}, "initializationOptions": { "writes": "paper" } }),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32602);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("initializationOptions"),
        "{error}"
    );
}

#[tokio::test]
async fn a_team_larger_than_the_pool_allows_is_refused_with_agent_pool_full() {
    let ws = Workspace::scripted(
        json!([]),
        "[team]\ntop = 3\nmid = 4\nbottomPerMid = 5\nmaxAgents = 10",
    );
    let mut server = Server::spawn(ws.path()).await;
    let root = ws.path().canonicalize().unwrap();
    let error = server
        .request(
            "initialize",
            json!({ "processId": null, "rootUri": format!("file://{}", root.display()),
                    "capabilities": {} }),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], 1006, "{error}");
    assert_eq!(error["data"]["maxAgents"], 10, "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("10"),
        "the message says the limit: {error}"
    );
}

#[tokio::test]
async fn a_typo_in_conclave_toml_is_blamed_on_the_file_even_when_the_editor_sends_options() {
    let ws = Workspace::scripted(json!([]), "writes = \"dsk\"");
    let mut server = Server::spawn(ws.path()).await;
    let root = ws.path().canonicalize().unwrap();
    let error = server
        .request(
            "initialize",
            json!({ "processId": null, "rootUri": format!("file://{}", root.display()),
                    "capabilities": {}, "initializationOptions": {} }),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], -32602);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.starts_with("conclave.toml is not valid"),
        "{message}"
    );
    assert!(message.contains("dsk"), "{message}");
}

#[tokio::test]
async fn an_unknown_setting_is_reported_to_the_editor_and_ignored() {
    let ws = Workspace::scripted(json!([]), "[approvals]\nfileChange = \"ask\"");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let logged = server
        .notification("window/logMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("approvals.fileChange"))
        })
        .await;
    let message = logged["message"].as_str().unwrap();
    assert!(
        message.starts_with("conclave.toml: unknown setting"),
        "{message}"
    );
    assert!(message.contains("fileChanges"), "{message}");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_two_megabyte_description_is_taken_whole() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let description = format!("Rewrite this:\n{}", "x".repeat(2 * 1024 * 1024));
    let result = server
        .call(
            "conclave/submitTask",
            json!({ "description": description, "title": "Big" }),
        )
        .await;
    let id = result["taskId"].as_str().unwrap();
    let detail = server
        .call("conclave/getTask", json!({ "taskId": id }))
        .await;
    assert_eq!(
        detail["description"].as_str().unwrap().len(),
        description.len()
    );
    assert_eq!(detail["title"], "Big");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn exit_after_shutdown_is_0_and_without_it_is_1() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    assert_eq!(server.shutdown_and_exit().await.code(), Some(0));

    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    server.notify("exit", Value::Null).await;
    assert_eq!(server.exit_status().await.code(), Some(1));
}

#[tokio::test]
async fn closed_stdin_ends_the_server_cleanly_and_keeps_what_was_recorded() {
    let ws = Workspace::scripted(
        script(vec![
            plan(&["Create a.txt"]),
            json!(writes("Create a.txt", "a.txt", "a\n")),
        ]),
        "writes = \"disk\"",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let id = server.submit("Create a.txt").await;
    server.task_status(&id, "completed").await;
    server.close_stdin();
    assert_eq!(server.exit_status().await.code(), Some(0));
    // The audit log was committed: the next server knows the task.
    let mut again = Server::spawn(ws.path()).await;
    again.initialize(bare_capabilities(), json!({})).await;
    let detail = again
        .call("conclave/getTask", json!({ "taskId": id }))
        .await;
    assert_eq!(detail["status"], "completed");
    assert!(again.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn a_second_server_on_the_same_workspace_says_so_and_exits_non_zero() {
    let ws = Workspace::scripted(json!([]), "");
    let mut first = Server::spawn(ws.path()).await;
    first.initialize(bare_capabilities(), json!({})).await;

    let mut second = Server::spawn(ws.path()).await;
    let root = ws.path().canonicalize().unwrap();
    let error = second
        .request(
            "initialize",
            json!({ "processId": null, "rootUri": format!("file://{}", root.display()), "capabilities": {} }),
        )
        .await
        .unwrap_err();
    assert_eq!(error["code"], 1007);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("already serving"),
        "{error}"
    );
    assert_eq!(second.exit_status().await.code(), Some(1));
    // The first one is untouched.
    assert_eq!(
        first.call("conclave/listTasks", json!({})).await,
        json!({ "tasks": [] })
    );
    assert!(first.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn logs_reach_the_editor_as_window_log_message() {
    let ws = Workspace::scripted(json!([]), "writes = \"disk\"");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let log = server
        .notification("window/logMessage", |p| {
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains("written to disk by the server"))
        })
        .await;
    assert_eq!(log["type"], 3, "info");
    assert!(server.shutdown_and_exit().await.success());
}

#[tokio::test]
async fn context_files_outside_the_workspace_are_refused_with_1005() {
    let ws = Workspace::scripted(
        script(vec![
            json!({ "match": ["Plan this task", "Files in context: notes/todo.md"],
                    "text": json!({ "subtasks": [{ "description": "Create a.txt" }] }).to_string() }),
            json!(writes("Create a.txt", "a.txt", "a\n")),
        ]),
        "writes = \"disk\"",
    );
    std::fs::create_dir(ws.path().join("notes")).unwrap();
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let outside = server
        .request(
            "conclave/submitTask",
            json!({ "description": "Read this", "context": { "files": ["file:///etc/passwd"] } }),
        )
        .await
        .unwrap_err();
    assert_eq!(
        (outside["code"].clone(), outside["data"].clone()),
        (json!(1005), json!({ "path": "file:///etc/passwd" }))
    );
    let escaping = server
        .request(
            "conclave/submitTask",
            json!({ "description": "Read this", "context": { "selection": {
                "uri": ws.uri("../elsewhere.rs"),
                "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 1, "character": 0 } } } } }),
        )
        .await
        .unwrap_err();
    assert_eq!(escaping["code"], 1005);
    assert_eq!(
        server.call("conclave/listTasks", json!({})).await,
        json!({ "tasks": [] }),
        "nothing was queued"
    );

    // Inside the root, the planner sees the workspace-relative path.
    let task = server
        .call(
            "conclave/submitTask",
            json!({ "description": "Create a.txt", "context": { "files": [ws.uri("notes/todo.md")] } }),
        )
        .await;
    let id = task["taskId"].as_str().unwrap();
    server.task_status(id, "completed").await;
    assert!(server.shutdown_and_exit().await.success());
}
