//! The OpenAI-compatible provider against a mock server on 127.0.0.1, real HTTP, normal
//! clock (tiny configured delays; waits are asserted through retry events, never time).

use std::sync::Arc;
use std::time::Duration;

use conclave::config::{Config, LlmConfig, LlmProvider};
use conclave::model::{
    ApiKey, ChatMessage, ModelError, ModelRequest, OpenAiConfig, OpenAiProvider, StopReason,
    ToolCall, ToolSpec, from_config,
};
use conclave::recovery::{Classify, Severity};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use crate::support::models::{complete_collect, fast_recovery, resilient};

const KEY: &str = "sk-test-KEYKEYKEYKEY0123456789";

fn provider(server: &MockServer, stream: bool) -> Arc<OpenAiProvider> {
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "test-model");
    config.api_key = Some(ApiKey::new(KEY));
    config.stream = stream;
    Arc::new(OpenAiProvider::new(config).unwrap())
}

fn request() -> ModelRequest {
    ModelRequest {
        system: "You are terse.".into(),
        messages: vec![ChatMessage::user("Say hi")],
        max_tokens: 100,
        ..ModelRequest::default()
    }
}

fn completions() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

fn sse(events: &[Value]) -> ResponseTemplate {
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn answer_json(text: &str) -> Value {
    json!({
        "choices": [{ "index": 0, "message": { "role": "assistant", "content": text },
                      "finish_reason": "stop" }],
        "usage": { "prompt_tokens": 12, "completion_tokens": 3 }
    })
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
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("Hi.")))
        .expect(1)
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, false), &request()).await;
    let answer = answer.unwrap();
    assert_eq!(answer.text, "Hi.");
    assert_eq!(streamed, "Hi.");
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert_eq!(answer.usage.input_tokens, 12);

    let requests = server.received_requests().await.unwrap();
    let auth = requests[0].headers.get("authorization").unwrap();
    assert_eq!(auth.to_str().unwrap(), format!("Bearer {KEY}"));
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Say hi"})
    );
}

#[tokio::test]
async fn plain_answer_streamed_without_usage_chunk() {
    let server = MockServer::start().await;
    completions()
        .respond_with(sse(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": "Hel"}}]}),
            json!({"choices": [{"delta": {"content": "lo!"}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "stop"}]}),
        ]))
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, true), &request()).await;
    let answer = answer.unwrap();
    assert_eq!(answer.text, "Hello!");
    assert_eq!(streamed, "Hello!");
    assert_eq!(answer.usage.input_tokens, 0);
    let body = &received_bodies(&server).await[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
}

#[tokio::test]
async fn tool_call_round_trip_maps_the_tool_result() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("Done.")))
        .mount(&server)
        .await;
    let mut request = request();
    request.tools = vec![ToolSpec {
        name: "file_read".into(),
        description: "Read a file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    request.messages.extend([
        ChatMessage::Assistant {
            content: "Reading it.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "file_read".into(),
                arguments: json!({"path": "src/main.rs"}),
            }],
        },
        ChatMessage::Tool {
            tool_call_id: "call_1".into(),
            name: "file_read".into(),
            content: "fn main() {}".into(),
            is_error: false,
        },
    ]);
    let answer = complete_collect(&*provider(&server, false), &request)
        .await
        .0
        .unwrap();
    assert_eq!(answer.text, "Done.");

    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body["messages"][2],
        json!({"role": "assistant", "content": "Reading it.", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "file_read", "arguments": "{\"path\":\"src/main.rs\"}"}}]})
    );
    assert_eq!(
        body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"})
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "file_read");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["properties"]["path"]["type"],
        "string"
    );
}

#[tokio::test]
async fn streamed_tool_call_deltas_split_across_chunks() {
    let server = MockServer::start().await;
    let call = |index: u64, extra: Value| {
        let mut delta = json!({"index": index});
        for (k, v) in extra.as_object().unwrap() {
            delta[k] = v.clone();
        }
        json!({"choices": [{"delta": {"tool_calls": [delta]}}]})
    };
    completions()
        .respond_with(sse(&[
            json!({"choices": [{"delta": {"role": "assistant", "content": "Writing."}}]}),
            call(0, json!({"id": "call_w", "type": "function", "function": {"name": "file_write", "arguments": ""}})),
            call(0, json!({"function": {"arguments": "{\"path\": \"hel"}})),
            call(1, json!({"id": "call_b", "type": "function", "function": {"name": "bash", "arguments": "{\"command\""}})),
            call(0, json!({"function": {"arguments": "lo.py\", \"content\": \"print(1)\"}"}})),
            call(1, json!({"function": {"arguments": ": \"python hello.py\"}"}})),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 20}}),
        ]))
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, true), &request()).await;
    let answer = answer.unwrap();
    assert_eq!(streamed, "Writing.");
    assert_eq!(answer.stop_reason, StopReason::ToolUse);
    assert_eq!(answer.usage.output_tokens, 20);
    assert_eq!(
        answer.tool_calls,
        vec![
            ToolCall {
                id: "call_w".into(),
                name: "file_write".into(),
                arguments: json!({"path": "hello.py", "content": "print(1)"}),
            },
            ToolCall {
                id: "call_b".into(),
                name: "bash".into(),
                arguments: json!({"command": "python hello.py"}),
            },
        ]
    );
}

#[tokio::test]
async fn rate_limit_retry_after_is_honoured() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "0.05"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("ok")))
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "ok");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    let events = retries.take();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].error_kind, "rate_limited");
    assert_eq!(events[0].retry_after, Some(Duration::from_millis(50)));
    assert!(
        events[0].delay >= Duration::from_millis(50),
        "{:?}",
        events[0].delay
    );
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_goes_up_unretried() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "120"))
        .expect(1)
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(
        matches!(err, ModelError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_secs(120)),
        "{err:?}"
    );
    assert!(retries.take().is_empty());
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let server = MockServer::start().await;
    for status in [500, 503] {
        completions()
            .respond_with(ResponseTemplate::new(status).set_body_string("upstream trouble"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("finally")))
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "finally");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    let events = retries.take();
    let attempts: Vec<u32> = events.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, vec![2, 3]);
    assert!(events.iter().all(|e| e.error_kind == "http_status"));
    // Full jitter pinned at 0.5: half of 1 ms, then half of 2 ms.
    assert_eq!(events[0].delay, Duration::from_micros(500));
    assert_eq!(events[1].delay, Duration::from_millis(1));
}

#[tokio::test]
async fn unauthorized_is_critical_never_retried_and_never_shows_the_key() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": format!("Incorrect API key provided: {KEY}"), "code": "invalid_api_key"}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let (model, retries) = resilient(provider(&server, false), &fast_recovery());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Unauthorized { .. }), "{err:?}");
    assert_eq!(err.severity(), Severity::Critical);
    assert!(!err.is_transient());
    assert!(retries.take().is_empty());
    assert!(!err.to_string().contains(KEY));
    assert!(!format!("{err:?}").contains(KEY));
}

#[tokio::test]
async fn a_server_error_echoing_the_key_does_not_leak_it() {
    let server = MockServer::start().await;
    completions()
        .respond_with(
            ResponseTemplate::new(500).set_body_string(format!("crash while handling key={KEY} !")),
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
    assert!(err.is_transient());
    let text = err.to_string();
    assert!(text.contains("crash while handling"), "{text}");
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("KEYKEYKEY"), "{text}");
}

#[tokio::test]
async fn quota_and_context_errors_are_typed() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(429).set_body_json(json!({
            "error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    completions()
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}
        })))
        .mount(&server)
        .await;
    let model = provider(&server, false);
    let err = complete_collect(&*model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::SpendLimit { .. }), "{err:?}");
    assert_eq!(err.severity(), Severity::Critical);
    let err = complete_collect(&*model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::ContextOverflow { .. }), "{err:?}");
}

#[tokio::test]
/// A garbage body is a fault of the moment, like a 500: retried (3 attempts), then
/// returned as it is.
async fn a_malformed_body_is_retried_then_returned() {
    let server = MockServer::start().await;
    completions()
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>proxy error</html>", "application/json"),
        )
        .expect(3)
        .mount(&server)
        .await;
    let (model, _) = resilient(provider(&server, false), &fast_recovery());
    let err = complete_collect(&model, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("proxy error"), "{err}");
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = MockServer::start().await;
    completions()
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(answer_json("late"))
                .set_delay(Duration::from_secs(5)),
        )
        .mount(&server)
        .await;
    let mut config = OpenAiConfig::new(format!("{}/v1", server.uri()), "m");
    config.stream = false;
    config.timeout = Some(Duration::from_millis(150));
    let provider = OpenAiProvider::new(config).unwrap();
    let err = complete_collect(&provider, &request()).await.0.unwrap_err();
    assert!(
        matches!(err, ModelError::Timeout { timeout, .. } if timeout == Duration::from_millis(150)),
        "{err:?}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn a_refused_connection_is_a_transient_connection_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let provider = OpenAiProvider::new(OpenAiConfig::new(
        format!("http://127.0.0.1:{port}/v1"),
        "m",
    ))
    .unwrap();
    let err = complete_collect(&provider, &request()).await.0.unwrap_err();
    assert!(matches!(err, ModelError::Connection { .. }), "{err:?}");
    assert!(
        err.to_string()
            .ends_with(&format!("connection refused at http://127.0.0.1:{port}")),
        "where it was refused, said at once: {err}"
    );
    assert!(err.is_transient());
}

#[tokio::test]
async fn a_local_server_from_config_needs_no_key() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("local")))
        .mount(&server)
        .await;
    let llm = LlmConfig {
        provider: Some(LlmProvider::Openai),
        base_url: Some(format!("{}/v1/", server.uri())),
        model: Some("qwen2.5-coder".into()),
        api_key_env: Some("CONCLAVE_TEST_OPENAI_LOCAL_UNSET_KEY".into()),
        max_tokens: Some(321),
        ..LlmConfig::default()
    };
    let model = from_config(
        &Config {
            llm,
            ..Config::default()
        },
        std::path::Path::new("."),
    )
    .unwrap();
    let answer = complete_collect(&*model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "local");
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(body["model"], "qwen2.5-coder");
    assert_eq!(body["max_tokens"], 100, "the request's max_tokens wins");
}

#[tokio::test]
async fn the_key_comes_from_the_variable_named_by_api_key_env() {
    let server = MockServer::start().await;
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_json(answer_json("ok")))
        .mount(&server)
        .await;
    // PATH is set in every test process, so no environment needs changing.
    let expected = std::env::var("PATH").unwrap();
    let llm = LlmConfig {
        provider: Some(LlmProvider::Openai),
        base_url: Some(format!("{}/v1", server.uri())),
        model: Some("m".into()),
        api_key_env: Some("PATH".into()),
        ..LlmConfig::default()
    };
    let model = from_config(
        &Config {
            llm,
            ..Config::default()
        },
        std::path::Path::new("."),
    )
    .unwrap();
    complete_collect(&*model, &request()).await.0.unwrap();
    let requests = server.received_requests().await.unwrap();
    let auth = requests[0]
        .headers
        .get("authorization")
        .unwrap()
        .to_str()
        .unwrap();
    assert_eq!(auth, format!("Bearer {expected}"));
}

#[tokio::test]
async fn an_event_stream_without_its_content_type_is_still_read() {
    let server = MockServer::start().await;
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"plain\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    completions()
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/plain"))
        .mount(&server)
        .await;
    let (answer, streamed) = complete_collect(&*provider(&server, true), &request()).await;
    assert_eq!(answer.unwrap().text, "plain");
    assert_eq!(streamed, "plain");
}

/// A raw HTTP server on 127.0.0.1: each connection gets the next of `answers`, a list
/// of (pause before, bytes) written in turn; after the last the connection stays open
/// and silent. Returns the base URL.
async fn raw_server(answers: Vec<Vec<(u64, String)>>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        for answer in answers {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                // The request: headers, then Content-Length bytes of body.
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request);
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                for (pause, bytes) in answer {
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                    if socket.write_all(bytes.as_bytes()).await.is_err() {
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_secs(60)).await;
            });
        }
    });
    url
}

const SSE_HEADERS: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";

fn sse_delta(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({ "choices": [{ "index": 0, "delta": { "content": text } }] })
    )
}

fn silence_provider(url: String, first_ms: u64, idle_ms: u64) -> OpenAiProvider {
    let mut config = OpenAiConfig::new(url, "m");
    config.silence = Some(conclave::model::http::Silence {
        first_byte: Duration::from_millis(first_ms),
        first_byte_per_k_tokens: Duration::ZERO,
        idle: Duration::from_millis(idle_ms),
    });
    OpenAiProvider::new(config).unwrap()
}

#[tokio::test]
async fn a_server_that_accepts_and_sends_nothing_is_stalled_within_the_first_byte_allowance() {
    let url = raw_server(vec![vec![]]).await;
    let provider = silence_provider(url, 300, 300);
    let err = complete_collect(&provider, &request()).await.0.unwrap_err();
    assert!(
        matches!(&err, ModelError::Stalled { waiting, .. } if waiting.contains("before")),
        "{err:?}"
    );
    assert!(err.is_transient(), "a stall is retried like a timeout");
}

#[tokio::test]
async fn an_answer_that_stops_mid_stream_is_stalled_within_the_idle_timeout() {
    let url = raw_server(vec![vec![(0, SSE_HEADERS.into()), (0, sse_delta("Hel"))]]).await;
    let provider = silence_provider(url, 2000, 300);
    let (result, deltas) = complete_collect(&provider, &request()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ModelError::Stalled { waiting, .. } if waiting.contains("middle")),
        "{err:?}"
    );
    assert_eq!(deltas, "Hel", "what came before the stall was streamed");
}

#[tokio::test]
async fn a_slow_answer_that_keeps_streaming_is_never_cut_off() {
    // Ten pieces, 150 ms apart: 1.5 s in all, far over the 400 ms idle timeout, which
    // judges only the silences.
    let mut answer = vec![(0, SSE_HEADERS.to_string())];
    for i in 0..10 {
        answer.push((150, sse_delta(&format!("{i} "))));
    }
    answer.push((150, "data: [DONE]\n\n".to_string()));
    let url = raw_server(vec![answer]).await;
    let provider = silence_provider(url, 1000, 400);
    let answer = complete_collect(&provider, &request()).await.0.unwrap();
    assert_eq!(answer.text, "0 1 2 3 4 5 6 7 8 9 ");
}

#[tokio::test]
async fn a_stall_is_retried_and_the_next_attempt_answers() {
    let done = vec![
        (0, SSE_HEADERS.to_string()),
        (0, sse_delta("fine")),
        (0, "data: [DONE]\n\n".to_string()),
    ];
    let url = raw_server(vec![vec![(0, SSE_HEADERS.into())], done]).await;
    let provider: Arc<dyn conclave::model::ModelProvider> =
        Arc::new(silence_provider(url, 1000, 300));
    let (model, retries) = resilient(provider, &fast_recovery());
    let answer = complete_collect(&model, &request()).await.0.unwrap();
    assert_eq!(answer.text, "fine");
    assert_eq!(retries.take().len(), 1, "one retry after the stall");
}
