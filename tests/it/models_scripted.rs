//! The scripted provider: content matching for concurrent agents, times and repeat,
//! injected errors, streaming, exhaustion and script validation.

use std::time::Duration;

use conclave::model::{
    ChatMessage, ModelError, ModelProvider, ModelRequest, Script, ScriptedProvider, StopReason,
};
use conclave::recovery::{Classify, Severity};
use serde_json::json;

use crate::support::models::{complete_collect, scripted};

fn agent_request(system: &str, latest: ChatMessage) -> ModelRequest {
    ModelRequest {
        system: system.into(),
        messages: vec![ChatMessage::user("earlier turn mentioning agent-B"), latest],
        ..ModelRequest::default()
    }
}

fn user(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![ChatMessage::user(text)],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn concurrent_agents_get_their_own_steps_whatever_the_order() {
    let script = json!({"steps": [
        {"match": "agent-A", "toolCalls": [{"name": "file_write", "arguments": {"path": "a.txt", "content": "A"}}]},
        {"match": "agent-B", "toolCalls": [{"name": "file_write", "arguments": {"path": "b.txt", "content": "B"}}]},
        {"match": ["agent-A", "wrote a.txt"], "text": "A done"},
        {"match": ["agent-B", "wrote b.txt"], "text": "B done"}
    ]});
    let tool_result = |path: &str| ChatMessage::Tool {
        tool_call_id: "x".into(),
        name: "file_write".into(),
        content: format!("wrote {path}"),
        is_error: false,
    };
    // Two orders of the same four calls give the same answers.
    for reversed in [false, true] {
        let model = scripted(script.clone());
        let mut calls = [
            (
                "agent-A",
                agent_request("You are agent-A.", ChatMessage::user("write a")),
            ),
            (
                "agent-B",
                agent_request("You are agent-B.", ChatMessage::user("write b")),
            ),
        ];
        if reversed {
            calls.reverse();
        }
        let (first, second) = tokio::join!(
            complete_collect(&*model, &calls[0].1),
            complete_collect(&*model, &calls[1].1)
        );
        for ((agent, _), (answer, _)) in calls.iter().zip([first, second]) {
            let answer = answer.unwrap();
            let expected = if *agent == "agent-A" {
                "a.txt"
            } else {
                "b.txt"
            };
            assert_eq!(answer.tool_calls[0].arguments["path"], expected);
            assert_eq!(answer.stop_reason, StopReason::ToolUse);
        }
        let b = agent_request("You are agent-B.", tool_result("b.txt"));
        let a = agent_request("You are agent-A.", tool_result("a.txt"));
        assert_eq!(
            complete_collect(&*model, &b).await.0.unwrap().text,
            "B done"
        );
        assert_eq!(
            complete_collect(&*model, &a).await.0.unwrap().text,
            "A done"
        );
        assert!(model.unused_steps().is_empty());
    }
}

#[tokio::test]
async fn matched_steps_win_over_unmatched_ones_and_times_count_down() {
    let model = scripted(json!([
        {"text": "fallback", "times": 2},
        {"match": "plan", "text": "planned", "times": 2},
        {"text": "last resort", "repeat": true}
    ]));
    let mut answers = Vec::new();
    for prompt in [
        "make a plan",
        "hello",
        "plan again",
        "plan thrice",
        "hi",
        "hey",
    ] {
        answers.push(
            complete_collect(&*model, &user(prompt))
                .await
                .0
                .unwrap()
                .text,
        );
    }
    assert_eq!(
        answers,
        [
            "planned",
            "fallback",
            "planned",
            "fallback",
            "last resort",
            "last resort"
        ]
    );
    assert!(model.unused_steps().is_empty());
}

#[tokio::test]
async fn text_is_streamed_in_pieces_and_ids_are_deterministic() {
    let model = scripted(json!([{
        "text": "I will write the file now.",
        "toolCalls": [{"name": "glob", "arguments": {"pattern": "*.rs"}}, {"id": "mine", "name": "bash", "arguments": {"command": "ls"}}],
        "times": 2
    }]));
    let mut pieces = Vec::new();
    let mut sink = |d: &str| pieces.push(d.to_string());
    let answer = model.complete(&user("go"), &mut sink).await.unwrap();
    assert!(pieces.len() > 1, "{pieces:?}");
    assert_eq!(pieces.concat(), answer.text);
    assert_eq!(answer.tool_calls[0].id, "call_0_0_0");
    assert_eq!(answer.tool_calls[1].id, "mine");
    assert!(answer.usage.output_tokens > 0);
    let again = complete_collect(&*model, &user("go")).await.0.unwrap();
    assert_eq!(again.tool_calls[0].id, "call_0_1_0");
}

#[tokio::test]
async fn injected_errors_are_the_errors_real_providers_give() {
    let model = scripted(json!([
        {"match": "e1", "error": {"kind": "http", "status": 503, "body": "down"}},
        {"match": "e2", "error": {"kind": "http", "status": 429}},
        {"match": "e3", "error": {"kind": "rate_limited", "retryAfterMs": 2500}},
        {"match": "e4", "error": "timeout"},
        {"match": "e5", "error": "unauthorized"},
        {"match": "e6", "error": {"kind": "malformed", "message": "half a JSON"}},
        {"match": "e7", "error": "context_overflow"},
        {"match": "e8", "error": "spend_limit"}
    ]));
    let mut errors = Vec::new();
    for n in 1..=8 {
        errors.push(
            complete_collect(&*model, &user(&format!("e{n}")))
                .await
                .0
                .unwrap_err(),
        );
    }
    assert!(
        matches!(&errors[0], ModelError::Http { status: 503, excerpt, .. } if excerpt == "down")
    );
    assert!(errors[0].is_transient());
    assert!(matches!(errors[1], ModelError::RateLimited { .. }));
    assert_eq!(errors[2].retry_after(), Some(Duration::from_millis(2500)));
    assert!(matches!(errors[3], ModelError::Timeout { .. }) && errors[3].is_transient());
    assert_eq!(errors[4].severity(), Severity::Critical);
    assert!(errors[5].to_string().contains("half a JSON"));
    assert!(matches!(errors[6], ModelError::ContextOverflow { .. }));
    assert!(matches!(errors[7], ModelError::SpendLimit { .. }));
}

#[tokio::test]
async fn an_exhausted_script_names_the_request() {
    let model = scripted(json!([{"match": "alpha", "text": "a"}]));
    complete_collect(&*model, &user("alpha task"))
        .await
        .0
        .unwrap();
    let err = complete_collect(&*model, &user("alpha task, once more"))
        .await
        .0
        .unwrap_err();
    assert!(matches!(err, ModelError::ScriptExhausted { .. }), "{err:?}");
    assert!(!err.is_transient());
    let text = err.to_string();
    assert!(
        text.contains("no step left") && text.contains("alpha task, once more"),
        "{text}"
    );
}

#[test]
fn bad_scripts_are_refused_with_the_step_named() {
    for (script, expected) in [
        ("not json", "not JSON"),
        (
            r#"{"steps": [{"text": "a"}, {"txt": "b"}]}"#,
            "step 1: unknown field `txt`",
        ),
        (r#"[{"text": "a", "error": "timeout"}]"#, "not both"),
        (r#"[{"text": "a", "times": 0}]"#, "at least 1"),
        (r#"[{"match": "", "text": "a"}]"#, "empty `match`"),
        (r#"[{"error": {"kind": "explode"}}]"#, "step 0"),
        (r#"{"stepz": []}"#, "`steps`"),
    ] {
        let err = Script::parse(script).unwrap_err();
        assert!(err.contains(expected), "{script}: {err}");
    }
}

#[test]
fn a_script_file_names_its_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.json");
    std::fs::write(&path, r#"{"name": "demo", "steps": [{"text": "hi"}]}"#).unwrap();
    let provider = ScriptedProvider::from_file(&path).unwrap();
    assert_eq!(provider.name(), "demo");
    std::fs::write(&path, "[{").unwrap();
    let err = ScriptedProvider::from_file(&path).unwrap_err();
    assert!(err.contains("demo.json"), "{err}");
}
