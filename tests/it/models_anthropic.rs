//! The Anthropic Messages provider against a mock server on 127.0.0.1, real HTTP, normal
//! clock (tiny configured delays; waits are asserted through retry events, never time).

use std::sync::Arc;
use std::time::Duration;

use conclave::config::{LlmConfig, LlmProvider};
use conclave::model::{
    AnthropicConfig, AnthropicProvider, ApiKey, ChatMessage, ModelError, ModelRequest, StopReason,
    ToolCall, ToolSpec, from_config,
};
use conclave::recovery::{Classify, Severity};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use crate::support::models::{complete_collect, fast_recovery, resilient};

const KEY: &str = "sk-ant-test-SECRETSECRET0123456789";

fn provider(server: &MockServer, stream: bool) -> Arc<AnthropicProvider> {
    let mut config = AnthropicConfig::new(server.uri(), "claude-test");
    config.api_key = Some(ApiKey::new(KEY));
    config.stream = stream;
    Arc::new(AnthropicProvider::new(config).unwrap())
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "You are terse.".into(),
        messages: vec![ChatMessage::user("Say hi")],
        max_tokens: 256,
        ..ModelRequest::default()
    }
}

fn messages() -> MockBuilder {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
}

fn answer_json(text: &str) -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 9, "output_tokens": 2}
    })
}

fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

async fn received_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn plain_answer_without_streaming() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("Hi.")))
        .expect(1)
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, false), &request()).await;
    let answer = answer.unwrap();
    assert_eq!(answer.text, "Hi.");
    assert_eq!(streamed, "Hi.");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert_eq!(answer.usage.input_tokens, 9);
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "Say hi"}]}])
    );
}

#[tokio::test]
async fn tool_round_trip_merges_consecutive_tool_results() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("Both read.")))
        .mount(&server)
        .await;
    let mut request = request();
    request.tools = vec![ToolSpec {
        name: "file_read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let read = |id: &str, path: &str| ToolCall {
        id: id.into(),
        name: "file_read".into(),
        arguments: json!({ "path": path }),
    };
    request.messages.extend([
        ChatMessage::Assistant {
            content: String::new(),
            tool_calls: vec![read("toolu_a", "a.rs"), read("toolu_b", "b.rs")],
        },
        ChatMessage::Tool {
            tool_call_id: "toolu_a".into(),
            name: "file_read".into(),
            content: "A".into(),
            is_error: false,
        },
        ChatMessage::Tool {
            tool_call_id: "toolu_b".into(),
            name: "file_read".into(),
            content: "no such file".into(),
            is_error: true,
        },
    ]);
    let answer = complete_collect(&*provider(&server, false), &request)
        .await
        .0
        .unwrap();
    assert_eq!(answer.text, "Both read.");

    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body["tools"],
        json!([{"name": "file_read", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}])
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_a", "name": "file_read", "input": {"path": "a.rs"}},
            {"type": "tool_use", "id": "toolu_b", "name": "file_read", "input": {"path": "b.rs"}}]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "A"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no such file", "is_error": true}]})
    );
    assert_eq!(body["messages"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn streamed_tool_use_with_input_json_split_across_deltas() {
    let server = MockServer::start().await;
    let delta = |index: u64, delta: Value| {
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    messages()
        .respond_with(sse(&[
            ("message_start", json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 30, "output_tokens": 1}}})),
            ("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})),
            ("ping", json!({"type": "ping"})),
            delta(0, json!({"type": "text_delta", "text": "Writing "})),
            delta(0, json!({"type": "text_delta", "text": "it."})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            ("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_w", "name": "file_write", "input": {}}})),
            delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
            delta(1, json!({"type": "input_json_delta", "partial_json": "{\"path\": \"hel"})),
            delta(1, json!({"type": "input_json_delta", "partial_json": "lo.py\", \"content\": \"print(1)\"}"})),
            ("content_block_stop", json!({"type": "content_block_stop", "index": 1})),
            ("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 25}})),
            ("message_stop", json!({"type": "message_stop"})),
        ]))
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, true), &request()).await;
    let answer = answer.unwrap();
    assert_eq!(streamed, "Writing it.");
    assert_eq!(answer.text, "Writing it.");
    assert_eq!(answer.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (answer.usage.input_tokens, answer.usage.output_tokens),
        (30, 25)
    );
    assert_eq!(
        answer.tool_calls,
        vec![ToolCall {
            id: "toolu_w".into(),
            name: "file_write".into(),
            arguments: json!({"path": "hello.py", "content": "print(1)"}),
        }]
    );
    assert_eq!(received_bodies(&server).await[0]["stream"], true);
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_is_retried() {
    let server = MockServer::start().await;
    messages()
        .respond_with(sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            ),
            ("error", error_body("overloaded_error", "Overloaded")),
        ]))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("ok")))
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, true), &fast_recovery());
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "ok");
    let events = retries.take();
    assert_eq!(events.len(), 1);
    assert!(events[0].message.contains("529"), "{}", events[0].message);
}

#[tokio::test]
async fn rate_limit_retry_after_is_honoured() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0.04")
                .set_body_json(error_body("rate_limit_error", "slow down")),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("ok")))
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    let events = retries.take();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].error_kind, "rate_limited");
    assert!(
        events[0].delay >= Duration::from_millis(40),
        "{:?}",
        events[0].delay
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = MockServer::start().await;
    for status in [500, 503] {
        messages()
            .respond_with(
                ResponseTemplate::new(status).set_body_json(error_body("api_error", "Internal")),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("recovered")))
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "recovered");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    assert_eq!(retries.take().len(), 2);
}

#[tokio::test]
async fn unauthorized_is_critical_never_retried_and_never_shows_the_key() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(401).set_body_json(error_body(
            "authentication_error",
            &format!("invalid x-api-key {KEY}"),
        )))
        .expect(1)
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Unauthorized { .. }), "{err:?}");
    assert_eq!(err.severity(), Severity::Critical);
    assert!(retries.take().is_empty());
    assert!(!err.to_string().contains(KEY));
}

#[tokio::test]
async fn a_server_error_echoing_the_key_does_not_leak_it() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_json(error_body("api_error", &format!("failed for key {KEY}"))),
        )
        .mount(&server)
        .await;
    let err = complete_collect(&*provider(&server, false), &request())
        .await
        .0
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Http { status: 500, .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("failed for key"), "{text}");
    assert!(
        !text.contains(KEY) && !text.contains("SECRETSECRET"),
        "{text}"
    );
}

#[tokio::test]
async fn prompt_too_long_and_billing_are_typed() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(400).set_body_json(error_body(
            "invalid_request_error",
            "prompt is too long: 201000 tokens > 200000 maximum",
        )))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    messages()
        .respond_with(ResponseTemplate::new(400).set_body_json(error_body(
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
        )))
        .mount(&server)
        .await;
    let model = provider(&server, false);
    let err = complete_collect(&*model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::ContextOverflow { .. }), "{err:?}");
    let err = complete_collect(&*model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::SpendLimit { .. }), "{err:?}");
}

#[tokio::test]
/// A malformed stream is retried like any fault of the moment (3 attempts), then an error.
async fn a_malformed_stream_is_retried_then_an_error() {
    let server = MockServer::start().await;
    messages()
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "event: message_start\ndata: {not json\n\n",
            "text/event-stream",
        ))
        .expect(3)
        .mount(&server)
        .await;
    let (model, _) = resilient(provider(&server, true), &fast_recovery());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = MockServer::start().await;
    messages()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer_json("late"))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let mut config = AnthropicConfig::new(server.uri(), "claude-test");
    config.api_key = Some(ApiKey::new(KEY));
    config.stream = false;
    config.timeout = Some(Duration::from_millis(150));
    let err = complete_collect(&AnthropicProvider::new(config).unwrap(), &request())
        .await
        .0
        .unwrap_err();
    assert!(matches!(err, ModelError::Timeout { .. }), "{err:?}");
    assert!(err.is_transient());
}

#[test]
fn the_hosted_api_without_its_key_is_not_configured() {
    let llm = LlmConfig {
        provider: Some(LlmProvider::Anthropic),
        api_key_env: Some("CONCLAVE_TEST_ANTHROPIC_UNSET_KEY".into()),
        ..LlmConfig::default()
    };
    let err = match from_config(
        &conclave::config::Config {
            llm,
            ..Default::default()
        },
        std::path::Path::new("."),
    ) {
        Ok(_) => panic!("a missing key must be reported"),
        Err(e) => e,
    };
    assert!(matches!(err, ModelError::NotConfigured { .. }));
    assert!(
        err.to_string()
            .contains("CONCLAVE_TEST_ANTHROPIC_UNSET_KEY"),
        "{err}"
    );
    assert!(err.to_string().contains("11434"), "{err}");
}
