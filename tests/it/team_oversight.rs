//! The top layer oversees a running task: the mid reports each subtask's end, a subtask
//! that failed for good goes up as a blocker the top rules on, and the top writes the
//! task's final report (on the task, its boards and the task's log).

use std::sync::Arc;
use std::time::Duration;

use conclave::config::OnFailure;
use conclave::engine::SubmitTask;
use conclave::recovery::RecoveryAction;
use conclave::runtime::{
    AgentBehavior, AgentContext, AgentError, AgentStatus, ApprovalAnswer, ApprovalChoice,
    FinalReport, Layer, Message, MessageKind, RuntimeEvent, SubtaskStatus, TaskId, TaskStatus,
};
use conclave::team::{BehaviorFactory, Services, standard_behaviors};
use conclave::wire::TaskDetail;
use serde_json::json;

use crate::support::team::{Team, config, plan, start, start_with, two_greeting_files, writes};

/// The task's detail once its top agent has written the final report (it follows the
/// task's end by a message or two).
async fn with_final_report(team: &Team, task: TaskId) -> (TaskDetail, FinalReport) {
    for _ in 0..200 {
        let detail = team.engine.task(&task.to_string()).unwrap();
        if let Some(report) = detail.final_report.clone() {
            return (detail, report);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no final report on the task");
}

/// Runs `script` as a task, answering every question to the person with abort, and
/// collects the recovery steps on the way.
async fn run(
    team: &Team,
    description: &str,
    options: conclave::runtime::TaskOptions,
) -> (TaskId, Vec<String>) {
    let mut events = team.engine.subscribe();
    let task = team
        .engine
        .submit(SubmitTask {
            description: description.into(),
            options,
            ..SubmitTask::default()
        })
        .unwrap();
    let mut steps = Vec::new();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::Recovery(step) if step.action == RecoveryAction::EscalateToTop => {
                steps.push(step.message.clone())
            }
            RuntimeEvent::ApprovalRequested(request) => team
                .engine
                .resolve_approval(
                    &request.approval_id.to_string(),
                    ApprovalAnswer::new(ApprovalChoice::Abort),
                )
                .unwrap(),
            RuntimeEvent::TaskUpdated(t) if t.id == task && t.status.is_finished() => {
                return (task, steps);
            }
            _ => {}
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_mid_reports_each_subtask_and_the_top_writes_the_final_report() {
    let team = start(two_greeting_files(), config()).await;
    let task = team.submit("Write two greeting files");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);

    let (detail, report) = with_final_report(&team, task).await;
    let top = report.by.clone();
    assert!(top.starts_with("top-"), "written by a top agent: {top}");
    let mut lines = report.text.lines();
    assert_eq!(
        lines.next(),
        Some("The task completed: 2 of 2 subtasks completed.")
    );
    assert!(
        report
            .text
            .contains(&format!("- plan: 2 subtask(s), signed by {top}")),
        "{}",
        report.text
    );
    assert!(
        report.text.contains("- progress reports read: 2"),
        "{}",
        report.text
    );
    assert!(report.text.contains("hello.txt") && report.text.contains("world.txt"));
    assert_eq!(detail.summary.status, TaskStatus::Completed);

    // Each subtask's end went up as a progress report from the mid to that top agent,
    // and the top noted it on its board.
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let progress: Vec<_> = messages
        .iter()
        .filter(|m| m.kind == MessageKind::ProgressReport && m.payload.get("subtaskId").is_some())
        .collect();
    assert_eq!(progress.len(), 2, "one a subtask");
    assert_eq!(progress[0].payload["total"], 2);
    let board = team.board_of(&top);
    assert!(
        board.contains("subtask 1 of 2 \"Create hello.txt\" completed")
            && board.contains("subtask 2 of 2 \"Create world.txt\" completed"),
        "{board}"
    );
    assert!(
        board.contains("- final report on \"") && board.contains("2 of 2 subtasks completed"),
        "{board}"
    );

    // The task's log (what `conclave log --task` and both editors show) carries the
    // reports with what they say, and the final report line by line.
    let log = team.store.history(Some(task.to_string())).await.unwrap();
    let texts: Vec<&str> = log.iter().map(|e| e.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.starts_with("progress_report → ")
            && t.contains("subtask 2 of 2 \"Create world.txt\" completed")),
        "{texts:#?}"
    );
    let report_lines: Vec<&str> = log
        .iter()
        .filter(|e| e.kind == "report")
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(
        report_lines.first(),
        Some(&"final report: The task completed: 2 of 2 subtasks completed.")
    );
    assert_eq!(report_lines.len(), report.text.lines().count());
    team.engine.shutdown().await;
}

/// A plan of three: `Create a.txt` fails for good, `Create b.txt` is still at work
/// when it does, and `Create c.txt` waits for b.
async fn three_with_a_blocker(on_failure: OnFailure) -> (Team, TaskId, Vec<String>) {
    let plan = json!({ "match": "Plan this task", "text": json!({ "subtasks": [
        { "description": "Create a.txt" },
        { "description": "Create b.txt" },
        { "description": "Create c.txt", "dependsOn": [1] }
    ] }).to_string() });
    let mut config = config();
    config.undo.on_failure = on_failure;
    let [c1, c2] = writes("Create c.txt", "c.txt", "c\n");
    let team = start(
        json!([
            plan,
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "repeat": true },
            { "match": "Create b.txt", "delayMs": 30000, "toolCalls": [ { "name": "file_write", "arguments": { "path": "b.txt", "content": "b\n" } } ] },
            { "match": "b.txt", "text": "Wrote b.txt." },
            c1,
            c2
        ]),
        config,
    )
    .await;
    let (task, steps) = run(&team, "Three greeting files", Default::default()).await;
    (team, task, steps)
}

#[tokio::test(start_paused = true)]
async fn the_top_stops_a_task_that_can_no_longer_complete_before_work_that_would_be_put_back() {
    let (team, task, steps) = three_with_a_blocker(OnFailure::Restore).await;
    let (detail, report) = with_final_report(&team, task).await;
    let top = report.by.clone();
    let statuses: Vec<SubtaskStatus> = detail.summary.subtasks.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [
            SubtaskStatus::Failed,
            SubtaskStatus::Completed,
            SubtaskStatus::Failed
        ]
    );
    // c never started: it was skipped with the top's reason, and its steps were never
    // asked of the model.
    let c = &detail.summary.subtasks[2];
    let skipped = detail
        .errors
        .iter()
        .find(|e| e.subtask_id() == Some(c.subtask_id))
        .expect("c's error");
    assert_eq!(skipped.failure.kind.to_string(), "skipped");
    assert!(
        skipped
            .failure
            .message
            .contains(&format!("{top} stopped the task"))
            && skipped.failure.message.contains("undo.onFailure"),
        "{}",
        skipped.failure.message
    );
    assert!(
        // Steps 4 and 5 of the script are c's.
        team.model.unused_steps().contains(&4),
        "{:?}",
        team.model.unused_steps()
    );
    // The step is shown as the editors show recovery, on the boards, and in the report.
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with(&format!("{top} stopped the task"))),
        "{steps:?}"
    );
    let board = team.board_of(&top);
    assert!(board.contains("verdict: stop"), "{board}");
    // The skip went up as progress too: every subtask's end is reported.
    assert!(
        board.contains(&format!(
            "subtask 3 of 3 \"Create c.txt\" skipped: {top} stopped the task"
        )),
        "{board}"
    );
    assert!(
        team.mid_board().contains(&format!("- {top}: stop (")),
        "{}",
        team.mid_board()
    );
    assert!(
        report.text.contains("- decided on subtask 1 of 3: stop"),
        "{}",
        report.text
    );
    assert!(
        report
            .text
            .starts_with("The task failed: 1 of 3 subtasks completed.")
    );
    // The blocker and the verdict are in the task's log.
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m.kind == MessageKind::IssueEscalation
                && m.payload["blocker"]["kind"] == "bad_request")
    );
    assert!(
        messages
            .iter()
            .any(|m| m.kind == MessageKind::ArbitrationResult && m.payload["verdict"] == "stop")
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn work_that_is_kept_goes_on_after_a_blocker() {
    let (team, task, steps) = three_with_a_blocker(OnFailure::Keep).await;
    let (detail, report) = with_final_report(&team, task).await;
    let statuses: Vec<SubtaskStatus> = detail.summary.subtasks.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [
            SubtaskStatus::Failed,
            SubtaskStatus::Completed,
            SubtaskStatus::Completed
        ],
        "c ran: what it writes is kept"
    );
    assert_eq!(team.read("c.txt"), "c\n");
    assert!(steps.is_empty(), "the top did not step in: {steps:?}");
    assert!(
        team.board_of(&report.by).contains("verdict: continue"),
        "{}",
        team.board_of(&report.by)
    );
    assert!(
        report
            .text
            .starts_with("The task failed: 2 of 3 subtasks completed.")
    );
    team.engine.shutdown().await;
}

/// The standard behaviours, with every top agent's wrapped by `wrap`.
fn tops_as(
    wrap: impl Fn(Box<dyn AgentBehavior>, &Arc<Services>) -> Box<dyn AgentBehavior>
    + Send
    + Sync
    + 'static,
) -> BehaviorFactory {
    let standard = standard_behaviors();
    Arc::new(move |agent, services| {
        let behavior = standard(agent, services);
        if agent.layer == Layer::Top {
            wrap(behavior, services)
        } else {
            behavior
        }
    })
}

/// A top agent whose first blocker finds a coder back in service: the coder that was
/// out when the subtask was handed out is repaired the moment the blocker arrives.
struct RepairsOnBlocker {
    inner: Box<dyn AgentBehavior>,
    pool: conclave::runtime::AgentPool,
}

#[async_trait::async_trait]
impl AgentBehavior for RepairsOnBlocker {
    fn responsibilities(&self) -> String {
        self.inner.responsibilities()
    }
    async fn initialize(&mut self, ctx: &AgentContext) -> Result<(), AgentError> {
        self.inner.initialize(ctx).await
    }
    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        if message.kind == MessageKind::IssueEscalation && message.payload.get("blocker").is_some()
        {
            let failed = self
                .pool
                .by_layer(Layer::Bottom)
                .into_iter()
                .find(|a| a.status() == AgentStatus::Failed);
            if let Some(agent) = failed {
                agent.transition(AgentStatus::Working, "repaired").unwrap();
                agent.transition(AgentStatus::Idle, "ready").unwrap();
            }
        }
        self.inner.handle(ctx, message).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_subtask_that_found_no_agent_is_given_to_one_free_now() {
    let mut config = config();
    config.team.mid = 1;
    let behaviors = tops_as(|inner, services| {
        Box::new(RepairsOnBlocker {
            inner,
            pool: services.runtime.pool.clone(),
        })
    });
    let [w1, w2] = writes("Create notes.md", "notes.md", "notes\n");
    let team = start_with(
        json!([plan(&["Create notes.md"]), w1, w2]),
        config,
        Some(behaviors),
    )
    .await;
    // Every coder is out of service when the subtask is handed out.
    let bottoms = team.engine.runtime().pool.by_layer(Layer::Bottom);
    for agent in &bottoms {
        agent
            .transition(AgentStatus::Failed, "out of service")
            .unwrap();
    }
    let (task, steps) = run(&team, "Create notes.md", Default::default()).await;
    let (detail, report) = with_final_report(&team, task).await;
    assert_eq!(
        detail.summary.status,
        TaskStatus::Completed,
        "{:?}",
        detail.errors
    );
    assert_eq!(team.read("notes.md"), "notes\n");
    let repaired = bottoms
        .iter()
        .find(|a| a.status() != AgentStatus::Failed)
        .expect("one coder repaired")
        .name();
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with(&format!("{} gave the subtask to {repaired}", report.by))),
        "{steps:?}"
    );
    assert!(
        report
            .text
            .contains("- decided on subtask 1 of 1: reassign"),
        "{}",
        report.text
    );
    // What stopped it the first time stays on the task's record.
    assert!(
        detail
            .errors
            .iter()
            .any(|e| e.failure.kind == "agent_unavailable"),
        "{:?}",
        detail.errors
    );
    team.engine.shutdown().await;
}

/// A top agent that signs plans but never answers a blocker.
struct DeafToBlockers(Box<dyn AgentBehavior>);

#[async_trait::async_trait]
impl AgentBehavior for DeafToBlockers {
    fn responsibilities(&self) -> String {
        self.0.responsibilities()
    }
    async fn initialize(&mut self, ctx: &AgentContext) -> Result<(), AgentError> {
        self.0.initialize(ctx).await
    }
    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        if message.kind == MessageKind::IssueEscalation && message.payload.get("blocker").is_some()
        {
            return Ok(());
        }
        self.0.handle(ctx, message).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_top_that_gives_no_verdict_does_not_hold_the_task_up() {
    let behaviors = tops_as(|inner, _| Box::new(DeafToBlockers(inner)));
    let team = start_with(
        json!([
            plan(&["Create a.txt"]),
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "repeat": true }
        ]),
        config(),
        Some(behaviors),
    )
    .await;
    let (task, _) = run(&team, "Create a.txt", Default::default()).await;
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed);
    let board = team.mid_board();
    assert!(
        board.contains(": continue (") && board.contains("gave no verdict"),
        "{board}"
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn two_subtasks_on_one_file_run_one_after_the_other_as_the_top_rules() {
    let plan = json!({ "match": "Plan this task", "text": json!({ "subtasks": [
        { "description": "Create calc.py with a function add" },
        { "description": "Extend calc.py: subtract two numbers in sub" }
    ] }).to_string() });
    let team = start(
        json!([
            plan,
            { "match": "Create calc.py with a function add", "delayMs": 5000, "toolCalls": [ { "name": "file_write", "arguments": { "path": "calc.py", "content": "def add(a, b):\n    return a + b\n" } } ] },
            { "match": "created calc.py", "text": "Wrote add." },
            { "match": "Extend calc.py", "toolCalls": [ { "name": "file_edit", "arguments": { "path": "calc.py", "old_text": "    return a + b\n", "new_text": "    return a + b\n\n\ndef sub(a, b):\n    return a - b\n" } } ] },
            { "match": "calc.py", "text": "Wrote sub." }
        ]),
        config(),
    )
    .await;
    let (task, _) = run(&team, "A small calculator", Default::default()).await;
    let (detail, report) = with_final_report(&team, task).await;
    assert_eq!(
        detail.summary.status,
        TaskStatus::Completed,
        "{:?}",
        detail.errors
    );
    // The second edited what the first wrote: it started only after the first was done.
    assert_eq!(
        team.read("calc.py"),
        "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
    );
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let conflict = messages
        .iter()
        .position(|m| m.kind == MessageKind::ConflictReport)
        .expect("the conflict went to the top");
    assert_eq!(messages[conflict].payload["files"], json!(["calc.py"]));
    let second_assigned = messages
        .iter()
        .rposition(|m| m.kind == MessageKind::TaskAssign)
        .unwrap();
    let first_done = messages
        .iter()
        .position(|m| m.kind == MessageKind::ProgressReport && m.payload["position"] == 1)
        .expect("subtask 1's end reported");
    assert!(first_done < second_assigned, "one after the other");
    let global = team
        .engine
        .whiteboard("global")
        .unwrap()
        .content
        .to_string();
    assert!(
        global.contains("## Arbitration Result")
            && global.contains("Conflict: subtasks 1 and 2 of \"")
            && global.contains("both work on calc.py")
            && global.contains(&format!("Arbitrator: {}", report.by)),
        "{global}"
    );
    assert!(
        team.mid_board()
            .contains("- subtask 2 waits for subtask 1: both work on calc.py"),
        "{}",
        team.mid_board()
    );
    assert!(
        team.mid_board().contains(&format!(
            "- {} ruled: subtask 1 finishes first and subtask 2 starts after it",
            report.by
        )),
        "{}",
        team.mid_board()
    );
    assert!(
        report.text.contains("- decided on a conflict ("),
        "{}",
        report.text
    );
    team.engine.shutdown().await;
}
