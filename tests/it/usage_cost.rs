//! Tokens and cost over real HTTP: a whole task run by the team against a mock
//! OpenAI-compatible server that streams its answers with usage chunks, then the
//! `limits.maxTokensPerTask` and `limits.maxCostPerTaskUsd` pauses answered both ways.

use std::sync::Arc;
use std::time::Duration;

use conclave::config::{Config, ModelPrice, ReviewMode};
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::model::{OpenAiConfig, OpenAiProvider};
use conclave::runtime::{
    ApprovalAnswer, ApprovalChoice, ApprovalKind, RuntimeEvent, TaskId, TaskStatus,
};
use serde_json::{Value, json};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn sse(chunks: &[Value]) -> ResponseTemplate {
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn usage_chunk(prompt: u64, completion: u64) -> Value {
    json!({ "choices": [], "usage": { "prompt_tokens": prompt, "completion_tokens": completion } })
}

fn text_answer(text: &str, prompt: u64, completion: u64) -> ResponseTemplate {
    sse(&[
        json!({ "choices": [{ "delta": { "role": "assistant", "content": text } }] }),
        json!({ "choices": [{ "delta": {}, "finish_reason": "stop" }] }),
        usage_chunk(prompt, completion),
    ])
}

/// Planning (100 in, 20 out), then the bottom agent's write (300/30) and summary (400/10).
async fn server() -> MockServer {
    let server = MockServer::start().await;
    let completions = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
    completions()
        .and(body_string_contains("\"role\":\"tool\""))
        .respond_with(text_answer("Wrote hello.py.", 400, 10))
        .with_priority(1)
        .mount(&server)
        .await;
    let arguments = json!({ "path": "hello.py", "content": "print('hello')\n" }).to_string();
    completions()
        .and(body_string_contains("\"tools\""))
        .respond_with(sse(&[
            json!({ "choices": [{ "delta": { "tool_calls": [{ "index": 0, "id": "c1", "type": "function", "function": { "name": "file_write", "arguments": arguments } }] } }] }),
            json!({ "choices": [{ "delta": {}, "finish_reason": "tool_calls" }] }),
            usage_chunk(300, 30),
        ]))
        .with_priority(2)
        .mount(&server)
        .await;
    let plan = json!({ "subtasks": [{ "description": "Write hello.py that prints hello" }] });
    completions()
        .and(body_string_contains("Plan this task"))
        .respond_with(text_answer(&plan.to_string(), 100, 20))
        .with_priority(3)
        .mount(&server)
        .await;
    server
}

fn config() -> Config {
    let mut config = Config::default();
    config.governance.review = ReviewMode::Rules;
    // The checks may run the code (their consent is tests/it/security.rs's subject).
    config.approvals.commands = conclave::config::CommandPolicy::Auto;
    config.team.top = 1;
    config.team.mid = 1;
    config.team.bottom_per_mid = 1;
    config.writes = conclave::config::WriteMode::Disk;
    config.llm.model = Some("test-model".into());
    config.pricing.insert(
        "test-model".into(),
        ModelPrice {
            input: 1.0,
            output: 2.0,
        },
    );
    config
}

async fn engine(server: &MockServer, config: Config) -> (Arc<Engine>, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let provider = OpenAiProvider::new(OpenAiConfig::new(
        format!("{}/v1", server.uri()),
        "test-model",
    ))
    .unwrap();
    let mut setup = EngineSetup::new(workspace.path(), config);
    setup.model = Some(Arc::new(provider));
    (Engine::start(setup).await.unwrap(), workspace)
}

fn submit(engine: &Engine) -> TaskId {
    engine
        .submit(SubmitTask {
            description: "Write hello.py that prints hello".into(),
            ..SubmitTask::default()
        })
        .unwrap()
}

/// Answers the first approval the engine asks with abort; that approval.
async fn abort_the_first_approval(
    engine: &Engine,
    events: &mut conclave::runtime::EventStream,
) -> Arc<conclave::runtime::ApprovalRequest> {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("an approval was asked")
            .unwrap();
        if let RuntimeEvent::ApprovalRequested(request) = event {
            engine
                .resolve_approval(
                    &request.approval_id.to_string(),
                    ApprovalAnswer::new(ApprovalChoice::Abort),
                )
                .unwrap();
            return request;
        }
    }
}

async fn finished(engine: &Engine, task: TaskId) -> TaskStatus {
    tokio::time::timeout(Duration::from_secs(30), engine.wait_for(task))
        .await
        .expect("the task finished in time")
        .unwrap()
        .status
}

#[tokio::test]
async fn streamed_usage_is_counted_per_task_subtask_and_agent_and_priced() {
    let server = server().await;
    let (engine, workspace) = engine(&server, config()).await;
    let task = submit(&engine);
    assert_eq!(finished(&engine, task).await, TaskStatus::Completed);
    assert!(workspace.path().join("hello.py").exists());

    // Every request asked for the usage chunk.
    for request in server.received_requests().await.unwrap() {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        assert_eq!(body["stream_options"]["include_usage"], true);
    }
    let detail = engine.task(&task.to_string()).unwrap();
    let usage = &detail.usage;
    assert_eq!(usage.total.input_tokens, 800);
    assert_eq!(usage.total.output_tokens, 60);
    assert_eq!(usage.total.calls, 3);
    assert_eq!(usage.total.estimated_calls, 0);
    let cost = usage.total.cost_usd.expect("the model has a price");
    assert!((cost - 0.00092).abs() < 1e-9, "{cost}");
    let subtask = detail.summary.subtasks[0].subtask_id.to_string();
    assert_eq!(usage.by_subtask[&subtask].calls, 2);
    assert_eq!(usage.by_subtask[&subtask].total_tokens(), 740);
    // The mid planned (one call), the bottom agent worked (two).
    let mut per_agent: Vec<u64> = usage.by_agent.values().map(|u| u.calls).collect();
    per_agent.sort();
    assert_eq!(per_agent, vec![1, 2]);
    // On the wire (getTask), camelCase.
    let wire = serde_json::to_value(&detail).unwrap();
    assert_eq!(wire["usage"]["total"]["inputTokens"], 800);
    assert!(wire["usage"]["total"]["costUsd"].is_f64());
    // ERROR_REPORT.md has the figures too.
    let report = engine.error_report(Some(&task.to_string())).await.unwrap();
    assert!(
        report
            .markdown
            .contains("800 in · 60 out · 3 calls · $0.0009"),
        "{}",
        report.markdown
    );
    engine.shutdown().await;
}

#[tokio::test]
async fn the_token_limit_pauses_the_task_until_the_person_answers() {
    let server = server().await;
    let mut config = config();
    config.limits.max_tokens_per_task = Some(100);
    // Two pauses are counted below; the acceptance test the team would write for
    // hello.py (one more call, one more pause) is not what this test is about.
    config.verify.acceptance_tests = false;
    let (engine, _workspace) = engine(&server, config).await;
    let mut events = engine.subscribe();
    let task = submit(&engine);

    // Planning (120 tokens) goes over the limit: the bottom agent's first call waits.
    let mut asked = 0;
    while asked < 2 {
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("an approval was asked")
            .unwrap();
        let RuntimeEvent::ApprovalRequested(request) = event else {
            continue;
        };
        assert_eq!(request.kind, ApprovalKind::Decision);
        assert!(request.title.contains("Token limit"), "{}", request.title);
        let detail = engine.task(&task.to_string()).unwrap();
        assert_eq!(detail.summary.status, TaskStatus::AwaitingApproval);
        let calls_so_far = server.received_requests().await.unwrap().len();
        assert_eq!(calls_so_far, 1 + asked, "no call is made while paused");
        engine
            .resolve_approval(
                &request.approval_id.to_string(),
                ApprovalAnswer::new(ApprovalChoice::Approve),
            )
            .unwrap();
        asked += 1;
    }
    assert_eq!(finished(&engine, task).await, TaskStatus::Completed);
    let usage = engine.task(&task.to_string()).unwrap().usage;
    // Raised twice by as much again: after 120 tokens to 220, after 450 to 550.
    assert_eq!(usage.token_limit, Some(550));
    engine.shutdown().await;
}

#[tokio::test]
async fn cancelling_at_the_token_limit_cancels_the_task() {
    let server = server().await;
    let mut config = config();
    config.limits.max_tokens_per_task = Some(100);
    let (engine, workspace) = engine(&server, config).await;
    let mut events = engine.subscribe();
    let task = submit(&engine);
    abort_the_first_approval(&engine, &mut events).await;
    assert_eq!(finished(&engine, task).await, TaskStatus::Cancelled);
    assert!(!workspace.path().join("hello.py").exists());
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    engine.shutdown().await;
}

/// The mock's calls at $10 / $20 a million tokens: planning $0.0014, the write $0.0036,
/// the summary $0.0042.
fn config_with_spend_cap(cap_usd: f64) -> Config {
    let mut config = config();
    config.pricing.insert(
        "test-model".into(),
        ModelPrice {
            input: 10.0,
            output: 20.0,
        },
    );
    config.limits.max_cost_per_task_usd = cap_usd;
    config
}

#[tokio::test]
async fn the_spend_cap_pauses_the_task_in_dollars_until_the_person_answers() {
    let server = server().await;
    let mut config = config_with_spend_cap(0.001);
    // As in the token-limit test: the two pauses of the task's own calls, no more.
    config.verify.acceptance_tests = false;
    let (engine, _workspace) = engine(&server, config).await;
    let mut events = engine.subscribe();
    let task = submit(&engine);

    let mut titles = Vec::new();
    while titles.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(30), events.recv())
            .await
            .expect("an approval was asked")
            .unwrap();
        let RuntimeEvent::ApprovalRequested(request) = event else {
            continue;
        };
        assert_eq!(request.kind, ApprovalKind::Decision);
        assert!(
            request
                .detail
                .contains("(`limits.maxCostPerTaskUsd`). It is paused."),
            "{}",
            request.detail
        );
        assert_eq!(request.options[0].title.split(' ').next(), Some("Continue"));
        let detail = engine.task(&task.to_string()).unwrap();
        assert_eq!(detail.summary.status, TaskStatus::AwaitingApproval);
        let calls_so_far = server.received_requests().await.unwrap().len();
        assert_eq!(
            calls_so_far,
            1 + titles.len(),
            "no call is made while paused"
        );
        titles.push((request.title.clone(), request.options[0].title.clone()));
        engine
            .resolve_approval(
                &request.approval_id.to_string(),
                ApprovalAnswer::new(ApprovalChoice::Approve),
            )
            .unwrap();
    }
    assert_eq!(finished(&engine, task).await, TaskStatus::Completed);
    // Dollars spent, the cap, the tokens; the cap raised by as much again each time:
    // after $0.0014 to $0.0024, after $0.0050 to $0.0060.
    assert_eq!(
        titles,
        vec![
            (
                "Spending cap reached: $0.0014 of $0.0010 (120 tokens)".to_string(),
                "Continue (cap $0.0024)".to_string()
            ),
            (
                "Spending cap reached: $0.0050 of $0.0024 (450 tokens)".to_string(),
                "Continue (cap $0.0060)".to_string()
            ),
        ]
    );
    let usage = engine.task(&task.to_string()).unwrap().usage;
    let raised = usage.cost_limit_usd.expect("the raised cap is on the task");
    assert!((raised - 0.006).abs() < 1e-9, "{raised}");
    assert_eq!(usage.token_limit, None);
    let wire = serde_json::to_value(engine.task(&task.to_string()).unwrap()).unwrap();
    assert!(wire["usage"]["costLimitUsd"].is_f64(), "{wire}");
    engine.shutdown().await;
}

#[tokio::test]
async fn refusing_to_go_past_the_spend_cap_cancels_the_task() {
    let server = server().await;
    let (engine, workspace) = engine(&server, config_with_spend_cap(0.001)).await;
    let mut events = engine.subscribe();
    let task = submit(&engine);
    let asked = abort_the_first_approval(&engine, &mut events).await;
    assert!(asked.title.starts_with("Spending cap reached: $0.0014"));
    assert_eq!(finished(&engine, task).await, TaskStatus::Cancelled);
    assert!(!workspace.path().join("hello.py").exists());
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    engine.shutdown().await;
}

#[tokio::test]
async fn a_model_without_a_price_is_never_held_to_the_spend_cap() {
    let server = server().await;
    let mut config = config_with_spend_cap(0.000_001);
    config.pricing.clear();
    let (engine, workspace) = engine(&server, config).await;
    let task = submit(&engine);
    // Nobody answers anything here: a pause would keep the task from finishing.
    assert_eq!(finished(&engine, task).await, TaskStatus::Completed);
    assert!(workspace.path().join("hello.py").exists());
    let usage = engine.task(&task.to_string()).unwrap().usage;
    assert_eq!(usage.total.cost_usd, None);
    engine.shutdown().await;
}
