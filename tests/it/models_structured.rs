//! Structured calls over the scripted provider: extraction, one re-ask, typed failure.

use conclave::model::structured::ask_json_streaming;
use conclave::model::{
    ChatMessage, Fix, ModelError, ModelRequest, Plan, Review, StructuredOutput, ToolSpec, ask_json,
};
use serde_json::json;

use crate::support::models::{Recording, scripted};

fn request(text: &str) -> ModelRequest {
    ModelRequest {
        system: "You are a reviewer.".into(),
        messages: vec![ChatMessage::user(text)],
        ..ModelRequest::default()
    }
}

#[tokio::test]
async fn a_bare_object_is_taken_as_it_is() {
    let model = scripted(
        json!([{"text": "{\"approve\": false, \"reason\": \"no tests\", \"mood\": \"grumpy\"}"}]),
    );
    let review: Review = ask_json(&*model, &request("review this")).await.unwrap();
    assert_eq!(
        review,
        Review {
            approve: false,
            reason: "no tests".into()
        }
    );
}

#[tokio::test]
async fn a_fenced_object_with_chatter_around_it() {
    let answer = "Sure! Here is the plan:\n```json\n{\"subtasks\": [\n  {\"description\": \"write parser\"},\n  {\"description\": \"test it {edge cases}\", \"assignee\": \"bottom-1\", \"dependsOn\": [0]}\n]}\n```\nLet me know if you need more.";
    let model = scripted(json!([{ "text": answer }]));
    let plan: Plan = ask_json(&*model, &request("plan it")).await.unwrap();
    assert_eq!(plan.subtasks.len(), 2);
    assert_eq!(plan.subtasks[1].assignee.as_deref(), Some("bottom-1"));
    assert_eq!(plan.subtasks[1].depends_on, vec![0]);
}

#[tokio::test]
async fn an_unfenced_object_inside_prose() {
    let answer = "I looked at the {failing} test. My fix: {\"files\": [{\"path\": \"src/lib.rs\", \"content\": \"fn f() { }\"}], \"confidence\": 72, \"explanation\": \"off by one\"} Done.";
    let model = scripted(json!([{ "text": answer }]));
    let fix: Fix = ask_json(&*model, &request("fix it")).await.unwrap();
    assert_eq!(fix.files[0].content, "fn f() { }");
    assert_eq!(fix.confidence, 72);
}

#[tokio::test]
async fn no_tools_are_offered_and_the_format_is_stated() {
    let inner = Recording::new(scripted(
        json!([{"text": "{\"approve\": true, \"reason\": \"ok\"}"}]),
    ));
    let mut req = request("review");
    req.tools.push(ToolSpec {
        name: "bash".into(),
        description: "run".into(),
        parameters: json!({}),
    });
    let mut streamed = String::new();
    let mut sink = |d: &str| streamed.push_str(d);
    let review: Review = ask_json_streaming(&*inner, &req, &mut sink).await.unwrap();
    assert!(review.approve);
    assert!(streamed.contains("approve"));
    let sent = &inner.requests()[0];
    assert!(sent.tools.is_empty());
    assert!(sent.system.starts_with("You are a reviewer."));
    assert!(sent.system.ends_with(Review::INSTRUCTIONS));
}

#[tokio::test]
async fn an_unusable_answer_is_asked_for_once_more() {
    let inner = Recording::new(scripted(json!([
        {"match": "could not be used", "text": "```json\n{\"subtasks\": [{\"description\": \"a\"}, {\"description\": \"b\", \"dependsOn\": [0]}]}\n```"},
        {"text": "{\"subtasks\": [{\"description\": \"a\", \"dependsOn\": [5]}]}"}
    ])));
    let plan: Plan = ask_json(&*inner, &request("plan")).await.unwrap();
    assert_eq!(plan.subtasks.len(), 2);
    let requests = inner.requests();
    assert_eq!(requests.len(), 2);
    let second = &requests[1].messages;
    assert_eq!(second.len(), 3);
    assert!(
        matches!(&second[1], ChatMessage::Assistant { content, .. } if content.contains("[5]")),
        "the bad answer is shown back: {second:?}"
    );
    assert!(
        matches!(&second[2], ChatMessage::User { content } if content.contains("depends on 5")),
        "the correction says what was wrong: {second:?}"
    );
}

#[tokio::test]
async fn a_second_bad_answer_is_a_typed_error() {
    let inner = Recording::new(scripted(json!([
        {"text": "I approve wholeheartedly!", "repeat": true}
    ])));
    let err = ask_json::<Review>(&*inner, &request("review"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::InvalidStructuredOutput { .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("no JSON object") && text.contains("I approve"),
        "{text}"
    );
    assert_eq!(inner.calls(), 2, "asked once more, not forever");
}

#[tokio::test]
async fn transport_errors_are_not_re_asked() {
    let inner = Recording::new(scripted(json!([{"error": "unauthorized", "repeat": true}])));
    let err = ask_json::<Review>(&*inner, &request("review"))
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Unauthorized { .. }), "{err:?}");
    assert_eq!(inner.calls(), 1);
}
