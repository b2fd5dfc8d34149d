//! http_request against a wiremock server on 127.0.0.1 (a random port per test).

use std::path::Path;
use std::sync::Arc;

use conclave::model::ToolCall;
use conclave::recovery::Classify;
use conclave::tools::{
    CallContext, DiskWriter, HttpSettings, Sandbox, ToolError, ToolOutput, ToolRegistry,
    ToolSettings,
};
use serde_json::{Value, json};
use wiremock::matchers::{body_string, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn registry(root: &Path, http: HttpSettings) -> ToolRegistry {
    let sandbox = Sandbox::new(root).unwrap();
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    ToolRegistry::new(
        sandbox,
        writer,
        ToolSettings {
            http,
            sandbox: conclave::config::SandboxConfig {
                network: true,
                ..Default::default()
            },
            ..ToolSettings::default()
        },
        None,
    )
}

async fn run(tools: &ToolRegistry, arguments: Value) -> Result<ToolOutput, ToolError> {
    let call = ToolCall {
        id: "h".into(),
        name: "http_request".into(),
        arguments,
    };
    tools.dispatch(&call, &CallContext::default()).await
}

#[tokio::test]
async fn get_and_post_return_status_and_body() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/status"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("{\"ok\":true}", "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/items"))
        .and(header("x-trace", "abc"))
        .and(body_string("payload"))
        .respond_with(ResponseTemplate::new(201).set_body_string("created"))
        .expect(1)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), HttpSettings::default());

    let got = run(
        &tools,
        json!({ "method": "get", "url": format!("{}/status", server.uri()) }),
    )
    .await
    .unwrap();
    assert!(
        got.content
            .starts_with("HTTP 200 OK\ncontent-type: application/json\n"),
        "{}",
        got.content
    );
    assert!(got.content.ends_with("{\"ok\":true}"), "{}", got.content);
    assert!(!got.progress, "a GET changes nothing");

    let posted = run(
        &tools,
        json!({
            "method": "POST",
            "url": format!("{}/items", server.uri()),
            "headers": { "x-trace": "abc" },
            "body": "payload"
        }),
    )
    .await
    .unwrap();
    assert!(
        posted.content.starts_with("HTTP 201 Created"),
        "{}",
        posted.content
    );
    assert!(posted.progress);
}

#[tokio::test]
async fn error_statuses_are_tool_errors_classified_by_status() {
    let server = MockServer::start().await;
    Mock::given(path("/down"))
        .respond_with(ResponseTemplate::new(503).set_body_string("try later"))
        .mount(&server)
        .await;
    Mock::given(path("/missing"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), HttpSettings::default());
    let down = run(
        &tools,
        json!({ "method": "GET", "url": format!("{}/down", server.uri()) }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(down, ToolError::HttpStatus { status: 503, .. }),
        "{down:?}"
    );
    assert!(down.to_string().contains("try later"));
    assert!(down.is_transient());
    let missing = run(
        &tools,
        json!({ "method": "GET", "url": format!("{}/missing", server.uri()) }),
    )
    .await
    .unwrap_err();
    assert!(!missing.is_transient());
}

#[tokio::test]
async fn the_response_is_cut_at_the_size_cap() {
    let server = MockServer::start().await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_string("z".repeat(200_000)))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(
        dir.path(),
        HttpSettings {
            max_response_bytes: 1024,
            ..HttpSettings::default()
        },
    );
    let out = run(
        &tools,
        json!({ "method": "GET", "url": format!("{}/big", server.uri()) }),
    )
    .await
    .unwrap();
    assert_eq!(out.content.matches('z').count(), 1024);
    assert!(
        out.content.ends_with("[response truncated at 1024 bytes]"),
        "{}",
        &out.content[out.content.len() - 60..]
    );
}

#[tokio::test]
async fn bad_requests_are_refused_before_sending() {
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), HttpSettings::default());
    for (args, needle) in [
        (
            json!({ "method": "FETCH", "url": "http://127.0.0.1/" }),
            "`method` must be one of",
        ),
        (
            json!({ "method": "GET", "url": "not a url" }),
            "not a valid URL",
        ),
        (
            json!({ "method": "GET", "url": "file:///etc/passwd" }),
            "http:// or https://",
        ),
        (
            json!({ "method": "GET" }),
            "missing required argument `url`",
        ),
    ] {
        let err = run(&tools, args).await.unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_transient_transport_error() {
    // Bind a port, then free it: nothing listens there any more.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), HttpSettings::default());
    let err = run(
        &tools,
        json!({ "method": "GET", "url": format!("http://127.0.0.1:{port}/") }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ToolError::HttpTransport { connect: true, .. }),
        "{err:?}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn transient_failures_of_idempotent_requests_are_retried_and_posts_are_not() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/flaky"))
        .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/flaky"))
        .respond_with(ResponseTemplate::new(200).set_body_string("fine"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/once"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let tools = registry(dir.path(), HttpSettings::default());
    let ok = run(
        &tools,
        json!({ "method": "GET", "url": format!("{}/flaky", server.uri()) }),
    )
    .await
    .unwrap();
    assert!(ok.content.contains("fine"), "{}", ok.content);
    let err = run(
        &tools,
        json!({ "method": "POST", "url": format!("{}/once", server.uri()), "body": "x" }),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, ToolError::HttpStatus { status: 503, .. }),
        "{err:?}"
    );
    let posts = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method.as_str() == "POST")
        .count();
    assert_eq!(posts, 1, "a POST is never repeated behind the model's back");
}
