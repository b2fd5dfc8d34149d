//! ERROR_REPORT.md is right for every way a task can fail: a vetoed plan, an expired
//! decision, verify, cancellation (timeouts, subtasks and provider outages are covered in
//! `faults_team.rs`, `team_recovery.rs` and `team_outcomes.rs`). Before issue 13 these
//! read "Failed 0 / None / Nothing failed for good".

use conclave::config::ReviewMode;
use conclave::runtime::{ApprovalAnswer, ApprovalChoice, RuntimeEvent, TaskId, TaskStatus};
use serde_json::json;

use crate::support::team::{Team, config, plan, start, writes};

/// Answers every approval with abort until `task` finishes; returns the report.
async fn finish_and_report(team: &Team, task: TaskId) -> String {
    let mut events = team.engine.subscribe();
    loop {
        if team
            .engine
            .task(&task.to_string())
            .is_ok_and(|d| d.summary.status.is_finished())
        {
            break;
        }
        if let Ok(RuntimeEvent::ApprovalRequested(r)) = events.recv().await {
            let _ = team.engine.resolve_approval(
                &r.approval_id.to_string(),
                ApprovalAnswer::new(ApprovalChoice::Abort),
            );
        }
    }
    let report = team
        .engine
        .error_report(Some(&task.to_string()))
        .await
        .unwrap();
    assert!(report.path.exists());
    report.markdown
}

fn assert_failed_once(md: &str) {
    assert!(md.contains("| Failed | 1 |"), "{md}");
    assert!(!md.contains("## Failed Tasks\n\nNone."), "{md}");
    assert!(!md.contains("Nothing failed for good"), "{md}");
}

#[tokio::test(start_paused = true)]
async fn a_twice_vetoed_plan() {
    let mut config = config();
    config.governance.max_subtasks = 1;
    let team = start(
        json!([{ "match": "Plan this task", "text": json!({ "subtasks": [
            { "description": "Create one.txt" }, { "description": "Create two.txt" }
        ] }).to_string(), "repeat": true }]),
        config,
    )
    .await;
    let task = team.submit("Two files, too many subtasks");
    let md = finish_and_report(&team, task).await;
    let detail = team.engine.task(&task.to_string()).unwrap();
    // After the second veto the person decides (issue 14); this one cancels.
    assert_eq!(detail.summary.status, TaskStatus::Cancelled);
    assert_failed_once(&md);
    assert!(md.contains("**Phase**: cancelled"), "{md}");
    assert!(md.contains("**Root Cause**: plan_vetoed"), "{md}");
    assert!(md.contains("governance.maxSubtasks"), "{md}");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_expired_plan_decision() {
    let mut config = config();
    config.governance.review = ReviewMode::Model;
    config.governance.decision_ttl_ms = 5_000;
    let team = start(
        json!([
            plan(&["Create late.txt"]),
            // The reviewers never answer in time.
            { "match": "Review this plan", "text": "{\"approve\": true, \"reason\": \"fine\"}", "delayMs": 3600000, "repeat": true }
        ]),
        config,
    )
    .await;
    let task = team.submit("A plan nobody signs in time");
    let md = finish_and_report(&team, task).await;
    assert_failed_once(&md);
    assert!(md.contains("**Phase**: plan"), "{md}");
    assert!(md.contains("**Error Type**: decision_expired"), "{md}");
    assert!(md.contains("governance.decisionTtlMs"), "{md}");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_verify_command_that_keeps_failing() {
    let mut config = config();
    config.verify.command = Some("exit 3".into());
    config.verify.max_rounds = 1;
    let [w1, w2] = writes("Create v.txt", "v.txt", "v\n");
    let team = start(
        json!([
            plan(&["Create v.txt"]),
            w1, w2,
            { "match": "fails its checks", "text": "{\"explanation\": \"cannot fix\", \"confidence\": 0.1, \"files\": []}", "repeat": true }
        ]),
        config,
    )
    .await;
    let task = team.submit("Verified file");
    let md = finish_and_report(&team, task).await;
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed);
    assert_failed_once(&md);
    assert!(md.contains("**Phase**: verify"), "{md}");
    assert!(md.contains("**Error Type**: check_failed"), "{md}");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_task() {
    let team = start(
        json!([
            plan(&["Create slow.txt"]),
            { "match": "Create slow.txt", "text": "thinking", "delayMs": 3600000 }
        ]),
        config(),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Something to cancel");
    loop {
        if let Ok(RuntimeEvent::TaskUpdated(t)) = events.recv().await
            && t.status == TaskStatus::Running
        {
            break;
        }
    }
    team.engine.cancel(&task.to_string()).unwrap();
    let md = finish_and_report(&team, task).await;
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Cancelled);
    assert!(md.contains("**Phase**: cancelled"), "{md}");
    assert!(
        md.contains("**Error Type**: cancelled (low, fatal)"),
        "{md}"
    );
    assert!(md.contains("cancelled by the user"), "{md}");
    team.engine.shutdown().await;
}
