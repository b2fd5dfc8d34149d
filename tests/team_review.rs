//! The default review path, `governance.review = "model"`: a veto with reasons, a re-plan
//! that answers them, the person after the second veto, arbitration of a split top
//! layer, and plans that fit the task (one subtask carrying the task, duplicates merged).

mod team_support;

use conclave::config::{Config, ReviewMode};
use conclave::runtime::{
    ApprovalAnswer, ApprovalChoice, ApprovalKind, DecisionStatus, MessageKind, RuntimeEvent,
    TaskStatus,
};
use serde_json::{Value, json};
use team_support::{Team, config, start, writes};

/// The test config with the model reviewing plans, as by default.
fn model_review(top: usize) -> Config {
    let mut config = config();
    config.governance.review = ReviewMode::Model;
    config.team.top = top;
    config.team.mid = 1;
    config.team.bottom_per_mid = 2;
    config
}

fn plan_step(matches: &[&str], subtasks: &[&str]) -> Value {
    let list: Vec<Value> = subtasks
        .iter()
        .map(|d| json!({ "description": d }))
        .collect();
    json!({ "match": matches, "text": json!({ "subtasks": list }).to_string() })
}

fn review_step(matches: &[&str], approve: bool, reason: &str) -> Value {
    json!({ "match": matches, "text": json!({ "approve": approve, "reason": reason }).to_string() })
}

/// Answers the first approval with `answer` and returns it; the task then runs on.
async fn answer_first_approval(
    team: &Team,
    events: &mut conclave::runtime::EventStream,
    answer: ApprovalAnswer,
) -> conclave::runtime::ApprovalRequest {
    loop {
        if let RuntimeEvent::ApprovalRequested(request) = events.recv().await.unwrap() {
            team.engine
                .resolve_approval(&request.approval_id.to_string(), answer)
                .unwrap();
            return (*request).clone();
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_veto_gives_reasons_and_the_re_plan_answers_them() {
    let [a1, a2] = writes("Create a.txt", "a.txt", "a\n");
    let [b1, b2] = writes("Create b.txt", "b.txt", "b\n");
    let team = start(
        json!([
            // The second plan is made only if the veto's reason is in the prompt.
            plan_step(
                &["Plan this task", "Also create b.txt"],
                &["Create a.txt", "Create b.txt"]
            ),
            plan_step(&["Plan this task"], &["Create a.txt", "Create a.txt again"]),
            review_step(
                &["Review this plan", "Create a.txt again"],
                false,
                "Also create b.txt; the task asks for it."
            ),
            review_step(
                &["Review this plan", "Create b.txt"],
                true,
                "Both files are covered."
            ),
            a1,
            a2,
            b1,
            b2
        ]),
        model_review(1),
    )
    .await;
    let task = team.submit("Write the two letter files");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert_eq!(
        (team.read("a.txt"), team.read("b.txt")),
        ("a\n".into(), "b\n".into())
    );
    let mut decisions = team.store.decisions().await.unwrap();
    decisions.sort_by_key(|d| d.created_at);
    let statuses: Vec<DecisionStatus> = decisions.iter().map(|d| d.status).collect();
    assert_eq!(statuses, [DecisionStatus::Vetoed, DecisionStatus::Approved]);
    assert_eq!(
        decisions[0].vetoes[0].reason,
        "Also create b.txt; the task asks for it."
    );
    // The review saw the task itself, not only the plan.
    assert!(decisions[0].content["task"] == "Write the two letter files");
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn after_the_second_veto_the_person_approves_the_plan_anyway() {
    let [a1, a2] = writes("Create a.txt", "a.txt", "a\n");
    let [b1, b2] = writes("Create b.txt", "b.txt", "b\n");
    let team = start(
        json!([
            { "match": "Plan this task", "text": json!({ "subtasks": [{ "description": "Create a.txt" }, { "description": "Create b.txt" }] }).to_string(), "repeat": true },
            { "match": "Review this plan", "text": "{\"approve\": false, \"reason\": \"too risky\"}", "repeat": true },
            a1, a2, b1, b2
        ]),
        model_review(1),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Write the two letter files");
    let approval = answer_first_approval(
        &team,
        &mut events,
        ApprovalAnswer::new(ApprovalChoice::Approve),
    )
    .await;
    assert_eq!(approval.kind, ApprovalKind::Decision);
    assert!(
        approval.detail.contains("1. Create a.txt"),
        "{}",
        approval.detail
    );
    assert!(
        approval.detail.contains("round 1: too risky"),
        "{}",
        approval.detail
    );
    assert!(
        approval.detail.contains("round 2: too risky"),
        "{}",
        approval.detail
    );
    let options: Vec<ApprovalChoice> = approval.options.iter().map(|o| o.id).collect();
    assert_eq!(
        options,
        [
            ApprovalChoice::Approve,
            ApprovalChoice::Modify,
            ApprovalChoice::Abort
        ]
    );
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert_eq!(team.read("b.txt"), "b\n");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn after_the_second_veto_the_person_edits_or_cancels_and_the_task_never_fails() {
    // Edit: the person's plan (one subtask a line) is what runs.
    let [c1, c2] = writes("Create c.txt", "c.txt", "c\n");
    let team = start(
        json!([
            { "match": "Plan this task", "text": json!({ "subtasks": [{ "description": "Create x.txt" }, { "description": "Create y.txt" }] }).to_string(), "repeat": true },
            { "match": "Review this plan", "text": "{\"approve\": false, \"reason\": \"wrong files\"}", "repeat": true },
            c1, c2
        ]),
        model_review(1),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Write c.txt");
    let edited = ApprovalAnswer {
        modified_description: Some("1. Create c.txt\n".into()),
        ..ApprovalAnswer::new(ApprovalChoice::Modify)
    };
    answer_first_approval(&team, &mut events, edited).await;
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert_eq!(summary.subtasks.len(), 1);
    assert_eq!(team.read("c.txt"), "c\n");
    assert!(team.read("x.txt").is_empty());
    team.engine.shutdown().await;

    // Cancel: the task is cancelled, not failed, and nothing is written.
    let team = start(
        json!([
            { "match": "Plan this task", "text": json!({ "subtasks": [{ "description": "Create x.txt" }, { "description": "Create y.txt" }] }).to_string(), "repeat": true },
            { "match": "Review this plan", "text": "{\"approve\": false, \"reason\": \"wrong files\"}", "repeat": true }
        ]),
        model_review(1),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Write c.txt");
    answer_first_approval(
        &team,
        &mut events,
        ApprovalAnswer::new(ApprovalChoice::Abort),
    )
    .await;
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Cancelled, "{summary:?}");
    assert!(team.read("x.txt").is_empty());
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_split_top_layer_is_settled_by_arbitration() {
    // Two top agents of equal weight: top-1 (the senior) signs, top-2 vetoes. The
    // weighted quorum alone would veto; arbitration breaks the tie by seniority.
    let [a1, a2] = writes("Create a.txt", "a.txt", "a\n");
    let [b1, b2] = writes("Create b.txt", "b.txt", "b\n");
    let team = start(
        json!([
            plan_step(&["Plan this task"], &["Create a.txt", "Create b.txt"]),
            review_step(&["Review this plan", "You are top-1"], true, "sound"),
            review_step(
                &["Review this plan", "You are top-2"],
                false,
                "I would rather wait"
            ),
            a1,
            a2,
            b1,
            b2
        ]),
        model_review(2),
    )
    .await;
    let task = team.submit("Write the two letter files");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    // Both parties were told the result, with the tie broken by seniority.
    let results: Vec<Value> = team
        .store
        .messages(Some(task.to_string()))
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.kind == MessageKind::ArbitrationResult)
        .map(|m| m.payload.clone())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["chosenOption"], "approve the plan");
    assert!(results[0]["tieBrokenBy"].is_string(), "{results:?}");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_small_task_stays_whole_and_duplicates_are_merged() {
    // The model plans the same subtask twice (as small models do): one subtask is kept,
    // carrying the task verbatim, and the top layer signs it without a model review.
    let task_text = "Write a Python program in the file hello.py that prints hello world.";
    let team = start(
        json!([
            plan_step(&["Plan this task"], &[
                "Write a Python program in the file hello.py that prints hello world",
                "Write a python program in the file hello.py that prints hello world.",
                " "
            ]),
            { "match": "hello.py that prints", "toolCalls": [ { "name": "file_write", "arguments": { "path": "hello.py", "content": "print('hello world')\n" } } ] },
            { "match": "hello.py", "text": "Wrote hello.py." }
        ]),
        model_review(3),
    )
    .await;
    let task = team.submit(task_text);
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert_eq!(summary.subtasks.len(), 1);
    assert_eq!(summary.subtasks[0].description, task_text);
    assert_eq!(team.read("hello.py"), "print('hello world')\n");
    assert!(
        team.model.unused_steps().is_empty(),
        "no review call was needed"
    );
    // Done means checked: the Python file was compiled, and what ran is on the task.
    let detail = team.engine.task(&task.to_string()).unwrap();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok();
    if python {
        assert!(
            detail.checks.iter().any(|c| c.name.contains("py_compile")
                && c.status == conclave::runtime::CheckStatus::Passed),
            "{:?}",
            detail.checks
        );
    }
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_syntax_error_goes_back_to_the_agent_and_a_stub_fails_the_subtask() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return;
    }
    // The agent writes a broken file, is shown the compiler's error, and fixes it.
    let team = start(
        json!([
            plan_step(&["Plan this task"], &["Write calc.py with add(a, b)"]),
            { "match": "fails this check", "toolCalls": [ { "name": "file_write", "arguments": { "path": "calc.py", "content": "def add(a, b):\n    return a + b\n" } } ] },
            { "match": "Write calc.py", "toolCalls": [ { "name": "file_write", "arguments": { "path": "calc.py", "content": "def add(a, b):\n    return a + b\n```\n" } } ] },
            { "match": "calc.py", "text": "Wrote calc.py.", "times": 2 }
        ]),
        model_review(1),
    )
    .await;
    let task = team.submit("Write calc.py with add(a, b)");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(
        team.read("calc.py"),
        "def add(a, b):\n    return a + b\n",
        "{:?}",
        detail.checks
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;

    // A body left as a docstring is never "completed".
    let mut config = model_review(1);
    config.verify.max_rounds = 0;
    let team = start(
        json!([
            plan_step(&["Plan this task"], &["Implement add in calc.py"]),
            { "match": "keeps failing", "text": "{\"action\": \"pause\", \"reason\": \"needs a person\"}", "repeat": true },
            { "toolCalls": [ { "name": "file_write", "arguments": { "path": "calc.py", "content": "def add(a, b):\n    \"\"\"Add a and b.\"\"\"\n" } } ], "times": 1 },
            { "text": "Done.", "repeat": true }
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Implement add in calc.py");
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::ApprovalRequested(request) => {
                team.engine
                    .resolve_approval(
                        &request.approval_id.to_string(),
                        ApprovalAnswer::new(ApprovalChoice::Abort),
                    )
                    .unwrap();
            }
            RuntimeEvent::TaskUpdated(t) if t.status.is_finished() => break,
            _ => {}
        }
    }
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(
        detail.summary.status,
        TaskStatus::Failed,
        "{:?} {:?} {}",
        detail.checks,
        detail.errors,
        team.read("calc.py")
    );
    assert!(
        detail
            .errors
            .iter()
            .any(|e| e.failure.kind == "check_failed"
                && e.failure.message.contains("`add` has no body")),
        "{:?}",
        detail.errors
    );
    team.engine.shutdown().await;
}
