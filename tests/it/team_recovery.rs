//! The recovery ladder end to end: peer takeover, supervisor escalation, critical errors
//! to the top layer and the user, timeouts, hung agents, partial results.

use std::sync::Arc;

use conclave::recovery::{RecoveryAction, Severity};
use conclave::runtime::{
    AgentBehavior, AgentContext, AgentError, ApprovalAnswer, ApprovalChoice, ApprovalKind,
    EventStream, Layer, Message, MessageKind, RuntimeEvent, SubtaskStatus, TaskStatus,
};
use conclave::team::{BehaviorFactory, standard_behaviors};
use serde_json::json;

use crate::support::team::{self, config, plan, start, start_with, writes};

/// The task completed, its first subtask finished by `who`, which wrote `file`.
fn completed_by<S: std::fmt::Debug>(
    team: &team::Team,
    task: conclave::runtime::TaskId,
    who: &str,
    file: (&str, &str),
    steps: &S,
) {
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed, "{steps:?}");
    assert_eq!(
        detail.summary.subtasks[0].assignee_name.as_deref(),
        Some(who),
        "{steps:?}"
    );
    assert_eq!(team.read(file.0), file.1);
}

/// The recovery actions taken until a person is asked, and the question.
async fn until_a_person_is_asked(
    events: &mut EventStream,
) -> (Vec<RecoveryAction>, Arc<conclave::runtime::ApprovalRequest>) {
    let mut steps = Vec::new();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::Recovery(step) => steps.push(step.action),
            RuntimeEvent::ApprovalRequested(request) => return (steps, request),
            _ => {}
        }
    }
}

/// Collects recovery actions and answers approvals with `answer` until the task ends.
async fn watch(
    team: &team::Team,
    events: &mut EventStream,
    answer: ApprovalChoice,
) -> Vec<(RecoveryAction, Severity, String)> {
    let mut steps = Vec::new();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::Recovery(step) => {
                steps.push((step.action, step.severity, step.message.clone()))
            }
            RuntimeEvent::ApprovalRequested(request) => {
                team.engine
                    .resolve_approval(
                        &request.approval_id.to_string(),
                        ApprovalAnswer::new(answer),
                    )
                    .unwrap();
            }
            RuntimeEvent::TaskUpdated(task) if task.status.is_finished() => return steps,
            _ => {}
        }
    }
}

fn actions(steps: &[(RecoveryAction, Severity, String)]) -> Vec<RecoveryAction> {
    steps.iter().map(|s| s.0).collect()
}

/// One top, one mid and `coders` coders.
fn small_team(coders: usize) -> conclave::config::Config {
    let mut config = config();
    config.team.top = 1;
    config.team.mid = 1;
    config.team.bottom_per_mid = coders;
    config
}

/// A team on `task` whose first `failures` attempts fail (a 400) until the supervisor
/// answers `proposal` (JSON); then the subtask as it reads by then (`done_as.0`) writes
/// the file `done_as.1`, holding its first letter.
async fn supervised(
    config: conclave::config::Config,
    task: &str,
    failures: u32,
    proposal: &str,
    done_as: (&str, &str),
) -> team::Team {
    let (description, file) = done_as;
    let content = format!("{}\n", &file[..1]);
    let [w1, w2] = writes(description, file, &content);
    start(
        json!([
            plan(&[task]),
            { "match": task, "error": { "kind": "http", "status": 400 }, "times": failures },
            { "match": "keeps failing", "text": proposal },
            w1, w2
        ]),
        config,
    )
    .await
}

#[tokio::test(start_paused = true)]
async fn a_subtask_an_agent_keeps_failing_moves_to_an_idle_peer() {
    let [w1, w2] = writes("Create a.txt", "a.txt", "a\n");
    let team = start(
        json!([
            plan(&["Create a.txt"]),
            // Work trouble (not the provider's): high severity, 1 attempt + 1 retry, all
            // failing for the first agent.
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "times": 2 },
            w1, w2
        ]),
        config(),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    let mut seen = actions(&steps);
    // The agent that gave up is replaced beside the peer's work, and that replacement is
    // one of the task's recovery steps, whenever it lands.
    if !seen.contains(&RecoveryAction::ReplaceAgent) {
        let replaced = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            loop {
                if let RuntimeEvent::Recovery(step) = events.recv().await.unwrap()
                    && step.action == RecoveryAction::ReplaceAgent
                {
                    return step;
                }
            }
        })
        .await
        .expect("the agent that gave up is replaced");
        assert_eq!(replaced.task_id, task.to_string());
        seen.push(RecoveryAction::ReplaceAgent);
    }
    assert_eq!(
        seen.iter()
            .filter(|a| **a == RecoveryAction::ReplaceAgent)
            .count(),
        1
    );
    seen.retain(|a| *a != RecoveryAction::ReplaceAgent);
    assert_eq!(
        seen,
        [
            RecoveryAction::Retry,
            RecoveryAction::PeerTakeover,
            RecoveryAction::Recovered
        ]
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed);
    assert_eq!(detail.summary.subtasks[0].attempts, 3);
    let first_failer = team
        .store
        .messages(Some(task.to_string()))
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.kind == MessageKind::PeerHelpRequest)
        .unwrap()
        .from;
    assert_ne!(
        detail.summary.subtasks[0].assignee,
        Some(first_failer),
        "the peer finished it"
    );
    assert_eq!(team.read("a.txt"), "a\n");
    // The agent that ran out of retries was marked failed, as the state machine says.
    let went = team.store.transitions(Some(first_failer)).await.unwrap();
    assert!(
        went.iter()
            .any(|t| t.to == conclave::runtime::AgentStatus::Failed
                && t.reason == "ran out of retries"),
        "{went:?}"
    );
    team.engine.shutdown().await;
}

/// A bottom agent that works as usual but never answers a peer's help request.
struct Silent(Box<dyn AgentBehavior>);

#[async_trait::async_trait]
impl AgentBehavior for Silent {
    fn responsibilities(&self) -> String {
        self.0.responsibilities()
    }
    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        if message.kind == MessageKind::PeerHelpRequest {
            return Ok(());
        }
        self.0.handle(ctx, message).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_peer_that_does_not_answer_is_passed_over_for_one_that_does() {
    let mut config = config();
    config.team.mid = 1;
    config.team.bottom_per_mid = 3;
    let standard = standard_behaviors();
    let behaviors: BehaviorFactory = Arc::new(move |agent, services| {
        let behavior = standard(agent, services);
        if agent.name == "bottom-1-2" {
            Box::new(Silent(behavior)) as Box<dyn AgentBehavior>
        } else {
            behavior
        }
    });
    let [w1, w2] = writes("Create a.txt", "a.txt", "a\n");
    let team = start_with(
        json!([
            plan(&["Create a.txt"]),
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "times": 2 },
            w1, w2
        ]),
        config,
        Some(behaviors),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(
        actions(&steps).contains(&RecoveryAction::PeerTakeover),
        "{steps:?}"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed);
    let bottoms = team.engine.runtime().pool.by_layer(Layer::Bottom);
    let name_of = |id| {
        bottoms
            .iter()
            .find(|a| Some(a.id()) == id)
            .map(|a| a.name())
            .unwrap_or_default()
    };
    assert_eq!(
        name_of(detail.summary.subtasks[0].assignee),
        "bottom-1-3",
        "the peer that answered finished it"
    );
    let board = team.mid_board();
    assert!(
        board.contains("bottom-1-2 did not answer the help request within"),
        "the mid's board says who was passed over: {board}"
    );
    assert_eq!(team.read("a.txt"), "a\n");
    team.engine.shutdown().await;
}

/// The agent named `name` in `team`, by id.
fn agent_named(team: &team::Team, name: &str) -> conclave::runtime::AgentId {
    team.engine
        .agents()
        .into_iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no agent {name}"))
        .agent_id
}

// A peer that was idle when the takeover began but took work of its own before it was
// asked declines as busy; the next idle peer takes the subtask over.
#[tokio::test(start_paused = true)]
async fn a_peer_busy_with_work_of_its_own_declines_and_the_next_idle_peer_takes_over() {
    // The default team: mid-1 with bottom-1-1 and bottom-1-2, mid-2 with bottom-2-1 and
    // bottom-2-2. bottom-1-2, the first peer asked, never answers: while it is waited
    // for, a second task goes to mid-2 and its coder bottom-2-1, the next peer asked.
    let standard = standard_behaviors();
    let behaviors: BehaviorFactory = Arc::new(move |agent, services| {
        let behavior = standard(agent, services);
        if agent.name == "bottom-1-2" {
            Box::new(Silent(behavior)) as Box<dyn AgentBehavior>
        } else {
            behavior
        }
    });
    let mut plan_a = plan(&["Create a.txt"]);
    plan_a["match"] = json!(["Plan this task", "Create a.txt"]);
    let mut plan_b = plan(&["Create b.txt"]);
    plan_b["match"] = json!(["Plan this task", "Create b.txt"]);
    let [a1, a2] = writes("Create a.txt", "a.txt", "a\n");
    let team = start_with(
        json!([
            plan_a,
            plan_b,
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "times": 2 },
            a1, a2,
            // The second task's coder is still at work when it is asked to help.
            { "match": "Create b.txt", "delayMs": 30000,
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "b.txt", "content": "b\n" } } ] },
            { "match": "b.txt", "text": "Wrote b.txt." }
        ]),
        config(),
        Some(behaviors),
    )
    .await;
    let silent = agent_named(&team, "bottom-1-2");
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let mut other = None;
    let mut steps = Vec::new();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::Message(m)
                if m.kind == MessageKind::PeerHelpRequest
                    && m.to == conclave::runtime::Recipient::Agent(silent)
                    && other.is_none() =>
            {
                other = Some(team.submit("Create b.txt"));
            }
            RuntimeEvent::Recovery(step) if step.task_id == task.to_string() => {
                steps.push((step.action, step.severity, step.message.clone()))
            }
            RuntimeEvent::TaskUpdated(t) if t.id == task && t.status.is_finished() => break,
            _ => {}
        }
    }
    let other = other.expect("the first peer was asked");
    let takeover = steps
        .iter()
        .find(|s| s.0 == RecoveryAction::PeerTakeover)
        .unwrap_or_else(|| panic!("no takeover: {steps:?}"));
    assert_eq!(
        takeover.2, "bottom-1-1 handed the subtask to idle peer bottom-2-2",
        "{steps:?}"
    );
    completed_by(&team, task, "bottom-2-2", ("a.txt", "a\n"), &steps);
    // The asking mid's board names each peer passed over, and why.
    let board = team.board_of("mid-1");
    assert!(
        board.contains("- bottom-1-2 did not answer the help request within")
            && board.contains("- bottom-2-1 declined the takeover (busy)"),
        "the mid's board says who was passed over: {board}"
    );
    let declined = team.board_of("bottom-2-1");
    assert!(
        declined.contains("- peer help request from bottom-1-1: declined (busy)"),
        "the peer's board says it declined: {declined}"
    );
    // The declining peer's own work went on to the end.
    let summary = team.engine.wait_for(other).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert_eq!(
        summary.subtasks[0].assignee_name.as_deref(),
        Some("bottom-2-1")
    );
    assert_eq!(team.read("b.txt"), "b\n");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_coder_allowed_no_retries_hands_its_failing_subtask_to_a_peer_at_once() {
    let [w1, w2] = writes("Create a.txt", "a.txt", "a\n");
    // `[llm.bottom] maxRetries = 0`: the first failure goes up the ladder, where the
    // severity ladder alone would retry on the same agent first.
    let mut config = config();
    config.llm.bottom.max_retries = Some(0);
    let team = start(
        json!([
            plan(&["Create a.txt"]),
            { "match": "Create a.txt", "error": { "kind": "http", "status": 400 }, "times": 1 },
            w1, w2
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    let mut seen = actions(&steps);
    seen.retain(|a| *a != RecoveryAction::ReplaceAgent);
    assert_eq!(
        seen,
        [RecoveryAction::PeerTakeover, RecoveryAction::Recovered],
        "{steps:?}"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed);
    assert_eq!(detail.summary.subtasks[0].attempts, 2);
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_no_idle_peer_a_persistent_failure_goes_to_the_supervisor_who_modifies_the_subtask() {
    let team = supervised(
        small_team(1),
        "Create b.txt from the template",
        2,
        "{\"action\": \"modify\", \"reason\": \"there is no template\", \"modifiedDescription\": \"Create b.txt with plain text\"}",
        ("Create b.txt with plain text", "b.txt"),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create b.txt from the template");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert_eq!(
        actions(&steps),
        [
            RecoveryAction::Retry,
            RecoveryAction::EscalateToSupervisor,
            RecoveryAction::Recovered
        ]
    );
    assert!(steps[1].2.contains("proposed modify"), "{}", steps[1].2);
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(
        detail.summary.subtasks[0].description, "Create b.txt with plain text",
        "the task shows the rewritten subtask"
    );
    // The escalation travelled as an issue_escalation message from the bottom agent to its mid.
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let escalation = messages
        .iter()
        .find(|m| m.kind == MessageKind::IssueEscalation)
        .expect("an issue_escalation message");
    let mid = team.engine.runtime().pool.by_layer(Layer::Mid)[0].id();
    assert_eq!(escalation.to, conclave::runtime::Recipient::Agent(mid));
    assert!(escalation.payload["metrics"].is_object());
    assert_eq!(escalation.payload["proposedSolution"]["action"], "modify");
    let mid_board = team
        .engine
        .runtime()
        .whiteboards
        .read(
            &conclave::runtime::Accessor::System,
            conclave::runtime::WhiteboardId::Agent(mid),
        )
        .unwrap()
        .content;
    assert!(
        mid_board.contains("- escalation from bottom-1-1: "),
        "the mid's board names who escalated: {mid_board}"
    );
    assert!(
        !messages
            .iter()
            .any(|m| m.kind == MessageKind::PeerHelpRequest),
        "there was no peer to ask"
    );
    assert_eq!(
        team.engine.task(&task.to_string()).unwrap().summary.status,
        TaskStatus::Completed
    );
    assert_eq!(team.read("b.txt"), "b\n");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_401_goes_to_the_top_layer_and_the_user_at_once() {
    let team = start(
        json!([
            plan(&["Create c.txt"]),
            { "match": "Create c.txt", "error": "unauthorized", "repeat": true }
        ]),
        config(),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create c.txt");
    let (steps, approval) = until_a_person_is_asked(&mut events).await;
    assert_eq!(
        steps,
        [RecoveryAction::EscalateToTop],
        "no retry, no peer, no supervisor for a critical error"
    );
    assert_eq!(
        (approval.kind, approval.severity),
        (ApprovalKind::Escalation, Severity::Critical)
    );
    let options: Vec<ApprovalChoice> = approval.options.iter().map(|o| o.id).collect();
    assert_eq!(
        options,
        [
            ApprovalChoice::Retry,
            ApprovalChoice::Reassign,
            ApprovalChoice::Modify,
            ApprovalChoice::Abort
        ]
    );
    assert_eq!(
        team.engine.task(&task.to_string()).unwrap().summary.status,
        TaskStatus::Escalated
    );
    assert_eq!(team.engine.approvals().len(), 1, "listed while pending");
    // Every top agent heard of it.
    let tops = team.engine.runtime().pool.by_layer(Layer::Top);
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let notice = messages
        .iter()
        .find(|m| m.kind == MessageKind::IssueEscalation)
        .unwrap();
    assert_eq!(notice.to, conclave::runtime::Recipient::Layer(Layer::Top));
    assert_eq!(tops.len(), 3);

    team.engine
        .resolve_approval(
            &approval.approval_id.to_string(),
            ApprovalAnswer::new(ApprovalChoice::Abort),
        )
        .unwrap();
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Failed);
    assert_eq!(summary.subtasks[0].status, SubtaskStatus::Failed);
    assert!(team.engine.approvals().is_empty());
    let report = team
        .engine
        .error_report(Some(&task.to_string()))
        .await
        .unwrap();
    assert!(
        report
            .markdown
            .contains("**Error Type**: auth (critical, fatal)"),
        "{}",
        report.markdown
    );
    assert!(report.markdown.contains("Check the API key"));
    team.engine.shutdown().await;
}

// A subtask that no retry, peer or supervisor could mend waits for a person: the top is
// told it waits, and the person's answer sends it on.
#[tokio::test(start_paused = true)]
async fn a_subtask_waiting_for_a_person_is_told_to_the_top_and_goes_on_when_the_person_answers() {
    let team = supervised(
        small_team(1),
        "Create c.txt",
        2,
        "{\"action\": \"pause\", \"reason\": \"a person should decide\"}",
        ("Create c.txt", "c.txt"),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create c.txt");
    let (steps, approval) = until_a_person_is_asked(&mut events).await;
    assert_eq!(
        steps,
        [RecoveryAction::Retry, RecoveryAction::EscalateToSupervisor],
        "no peer to ask, and the supervisor could not help"
    );
    assert_eq!(
        (approval.kind, approval.severity),
        (ApprovalKind::Escalation, Severity::High)
    );
    assert_eq!(approval.title, "[1/1] Create c.txt keeps failing");
    assert!(
        approval
            .detail
            .contains("The team retried, tried a peer and its supervisor."),
        "{}",
        approval.detail
    );
    // While it waits, the task and its subtask show as escalated and the approval is
    // listed.
    let waiting = team.engine.task(&task.to_string()).unwrap().summary;
    assert_eq!(waiting.status, TaskStatus::Escalated);
    assert_eq!(waiting.subtasks[0].status, SubtaskStatus::Escalated);
    assert_eq!(team.engine.approvals().len(), 1);
    // The top writes on its board and the global board that the subtask waits for a
    // person.
    let said = "- escalation from mid-1: \"Create c.txt\" waits for a person's decision after";
    tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while !team.board_of("top-1").contains(said) {
            events.recv().await.unwrap();
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "the top's board does not say the subtask waits: {}",
            team.board_of("top-1")
        )
    });
    let global = team.engine.whiteboard("global").unwrap().content;
    assert!(global.contains(said), "{global}");
    let messages = team.store.messages(Some(task.to_string())).await.unwrap();
    let top = agent_named(&team, "top-1");
    let notice = messages
        .iter()
        .find(|m| m.kind == MessageKind::IssueEscalation && m.payload["waitingFor"] == "person")
        .expect("an issue_escalation waiting for a person");
    assert_eq!(notice.to, conclave::runtime::Recipient::Agent(top));
    assert_eq!(notice.from, agent_named(&team, "mid-1"));

    team.engine
        .resolve_approval(
            &approval.approval_id.to_string(),
            ApprovalAnswer::new(ApprovalChoice::Retry),
        )
        .unwrap();
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert_eq!(summary.subtasks[0].status, SubtaskStatus::Completed);
    assert_eq!(summary.subtasks[0].attempts, 3);
    assert!(team.engine.approvals().is_empty());
    assert_eq!(team.read("c.txt"), "c\n");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_subtask_that_outlives_its_timeout_is_stopped_and_fails_with_a_timeout() {
    // recovery.subtaskTimeoutMs bounds all attempts together: an attempt that uses it
    // up is stopped, and no retry follows.
    let mut config = config();
    config.recovery.subtask_timeout_ms = 2_000;
    let [w1, w2] = writes("Create slow.txt", "slow.txt", "done\n");
    let team = start(
        json!([
            plan(&["Create slow.txt"]),
            { "match": "Create slow.txt", "text": "thinking very slowly", "delayMs": 60000 },
            w1, w2
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Be slow once");
    let started = tokio::time::Instant::now();
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(actions(&steps), [RecoveryAction::GaveUp]);
    assert_eq!(
        steps[0].1,
        Severity::High,
        "a timeout counts as high severity"
    );
    assert!(steps[0].2.contains("timeout"), "{}", steps[0].2);
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.errors[0].failure.kind, "timeout");
    assert!(
        detail.errors[0]
            .failure
            .message
            .contains("recovery.subtaskTimeoutMs"),
        "{:?}",
        detail.errors
    );
    assert_eq!(detail.summary.status, TaskStatus::Failed);
    assert_eq!(detail.summary.subtasks[0].attempts, 1);
    let report = team
        .engine
        .error_report(Some(&task.to_string()))
        .await
        .unwrap();
    assert!(
        report.markdown.contains("**Error Type**: timeout (high)"),
        "{}",
        report.markdown
    );
    team.engine.shutdown().await;
}

/// A bottom agent that wedges its own message loop on its first assignment.
struct Wedged;

#[async_trait::async_trait]
impl AgentBehavior for Wedged {
    fn responsibilities(&self) -> String {
        String::new()
    }
    async fn handle(&mut self, _: &AgentContext, message: Arc<Message>) -> Result<(), AgentError> {
        if message.kind == MessageKind::TaskAssign {
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

/// The standard behaviours, except that the agent named `name` is [`Wedged`].
fn wedging(name: &'static str) -> BehaviorFactory {
    let standard = standard_behaviors();
    Arc::new(move |agent, services| {
        if agent.name == name {
            Box::new(Wedged) as Box<dyn AgentBehavior>
        } else {
            standard(agent, services)
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_hung_agent_is_replaced_and_the_new_one_completes_its_task() {
    let config = small_team(1);
    let behaviors = wedging("bottom-1-1");
    let [w1, w2] = writes("Create d.txt", "d.txt", "d\n");
    let team = start_with(
        json!([plan(&["Create d.txt"]), w1, w2]),
        config,
        Some(behaviors),
    )
    .await;
    let hung = team.engine.runtime().pool.by_layer(Layer::Bottom)[0].id();
    let mut events = team.engine.subscribe();
    let task = team.submit("Create d.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(
        actions(&steps).contains(&RecoveryAction::ReplaceAgent),
        "{steps:?}"
    );
    let summary = team.engine.task(&task.to_string()).unwrap().summary;
    assert_eq!(summary.status, TaskStatus::Completed);
    let bottoms = team.engine.runtime().pool.by_layer(Layer::Bottom);
    assert_eq!(bottoms.len(), 1);
    let replacement = &bottoms[0];
    assert_ne!(replacement.id(), hung);
    assert_eq!(replacement.name(), "bottom-1-1.r1");
    assert_eq!(summary.subtasks[0].assignee, Some(replacement.id()));
    // It took the hung agent's place under the same mid.
    let mid = &team.engine.runtime().pool.by_layer(Layer::Mid)[0];
    assert_eq!(mid.config().subordinates, vec![replacement.id()]);
    assert_eq!(replacement.config().supervisor, Some(mid.id()));
    assert_eq!(team.read("d.txt"), "d\n");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn replacement_carries_over_the_current_task_queue_and_whiteboard() {
    let mut config = config();
    config.team.bottom_per_mid = 1;
    config.team.mid = 1;
    let behaviors = wedging("bottom-1-1");
    let team = start_with(json!([]), config, Some(behaviors)).await;
    let runtime = team.engine.runtime().clone();
    let old = runtime.pool.by_layer(Layer::Bottom)[0].clone();
    old.wait_for_status(|s| *s == conclave::runtime::AgentStatus::Idle)
        .await;
    old.set_current_task(Some("task-42".into()));
    let board = conclave::runtime::WhiteboardId::Agent(old.id());
    runtime
        .whiteboards
        .append(&old.accessor(), board, "- halfway through the parser")
        .unwrap();
    // Wedge it, then queue two messages it will never read.
    let system = conclave::runtime::AgentId::SYSTEM;
    runtime
        .bus
        .send(Message::to_agent(
            system,
            old.id(),
            MessageKind::TaskAssign,
            json!({}),
        ))
        .unwrap();
    while old.metrics().messages_processed == 0 {
        tokio::task::yield_now().await;
    }
    for n in 1..=2 {
        runtime
            .bus
            .send(Message::to_agent(
                system,
                old.id(),
                MessageKind::Warning,
                json!({ "n": n }),
            ))
            .unwrap();
    }
    assert_eq!(runtime.bus.queued(old.id()).len(), 2);

    let new_id = team
        .engine
        .replace_agent(&old.id().to_string(), "keeps failing")
        .await
        .unwrap();
    let new = runtime.pool.get(new_id).unwrap();
    assert_eq!(new.current_task().as_deref(), Some("task-42"));
    assert_eq!(new.name(), "bottom-1-1.r1");
    assert_eq!(
        old.status(),
        conclave::runtime::AgentStatus::Terminated,
        "the wedged agent was stopped by force"
    );
    assert!(runtime.pool.get(old.id()).is_none());
    let mid = &runtime.pool.by_layer(Layer::Mid)[0];
    assert_eq!(mid.config().subordinates, vec![new_id]);
    // The queued messages reach the new agent, which notes them on the board it inherited.
    let agent_board = conclave::runtime::WhiteboardId::Agent(new_id);
    loop {
        let content = runtime
            .whiteboards
            .read(&conclave::runtime::Accessor::System, agent_board)
            .unwrap()
            .content;
        if content.matches("- warning from system").count() == 3 {
            assert!(
                content.contains("halfway through the parser")
                    && content.contains("Took over from bottom-1-1"),
                "{content}"
            );
            assert!(
                !content.contains(&old.id().to_string()),
                "boards name agents, not ids: {content}"
            );
            break;
        }
        tokio::task::yield_now().await;
    }
    team.engine.shutdown().await;
}

/// A writer over the real disk that fails as a full disk does while `full` is set.
struct FillableDisk {
    disk: conclave::tools::DiskWriter,
    full: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl conclave::tools::WorkspaceWriter for FillableDisk {
    async fn write_file(
        &self,
        path: &std::path::Path,
        content: &str,
    ) -> Result<conclave::tools::WriteOutcome, conclave::tools::WriteError> {
        if self.full.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(conclave::tools::WriteError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::from_raw_os_error(libc::ENOSPC),
            });
        }
        self.disk.write_file(path, content).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_disk_is_waited_for_and_the_subtask_goes_on_when_there_is_space() {
    let [_, done] = writes("Create a.txt", "a.txt", "a\n");
    let team = start(
        json!([
            plan(&["Create a.txt"]),
            { "match": "Create a.txt", "toolCalls": [ { "name": "file_write", "arguments": { "path": "a.txt", "content": "a\n" } } ], "times": 2 },
            done
        ]),
        config(),
    )
    .await;
    let disk = Arc::new(FillableDisk {
        disk: conclave::tools::DiskWriter::new(
            conclave::tools::Sandbox::new(team.workspace.path()).unwrap(),
        ),
        full: std::sync::atomic::AtomicBool::new(true),
    });
    team.engine.set_writer(disk.clone());
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let mut steps = Vec::new();
    // Five minutes of the paused clock: the waits are seconds.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        assert!(steps.len() < 20, "recovery without end: {steps:?}");
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("the task did not finish; recovery so far: {steps:?}"));
        match event.unwrap() {
            RuntimeEvent::Recovery(step) => {
                if step.action == RecoveryAction::WaitForProvider {
                    assert_eq!(step.provider.as_deref(), Some("the workspace's disk"));
                    assert!(
                        step.message.contains("a.txt") && step.message.contains("No space left"),
                        "the wait names the file and the cause: {}",
                        step.message
                    );
                    // Space comes back while the subtask waits.
                    disk.full.store(false, std::sync::atomic::Ordering::SeqCst);
                }
                steps.push(step.action);
            }
            RuntimeEvent::TaskUpdated(t) if t.status.is_finished() => break,
            _ => {}
        }
    }
    assert_eq!(
        steps,
        [RecoveryAction::WaitForProvider, RecoveryAction::Recovered],
        "a wait, not a retry spent on the work"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(
        detail.summary.status,
        TaskStatus::Completed,
        "{:?}",
        detail.errors
    );
    assert_eq!(team.read("a.txt"), "a\n");
    assert_eq!(detail.errors[0].failure.kind, "disk_unavailable");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_s_own_account_goes_to_the_next_attempt() {
    let mut config = config();
    config.team.reflect = true;
    let team = start(
        json!([
            plan(&["Create a.txt"]),
            // The retry is told what the agent said of its first attempt, and does it.
            { "match": ["Create a.txt", "Its own account: I only described a.txt"],
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "a.txt", "content": "a\n" } } ] },
            { "match": "created a.txt", "text": "Wrote a.txt." },
            // The first attempt answers in prose, twice: nothing is changed.
            { "match": "Create a.txt", "text": "The file a.txt would hold one line." },
            { "match": "You have not changed anything yet", "text": "It holds the letter a." },
            { "match": "Your attempt at this subtask failed",
              "text": "I only described a.txt instead of writing it. Next time call file_write." }
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed, "{steps:?}");
    assert_eq!(team.read("a.txt"), "a\n");
    assert_eq!(detail.summary.subtasks[0].attempts, 2);
    let coder = detail.summary.subtasks[0].assignee_name.clone().unwrap();
    let board = team.board_of(&coder);
    assert!(
        board.contains("- reflection: I only described a.txt instead of writing it."),
        "the account is on the agent's board: {board}"
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_peer_who_takes_over_is_told_what_the_failed_agent_learned() {
    let mut config = config();
    config.team.share_knowledge = true;
    // No retry on the same agent: the first failure goes to a peer.
    config.llm.bottom.max_retries = Some(0);
    let team = start(
        json!([
            plan(&["Create a.txt from notes.txt"]),
            { "match": ["Create a.txt from notes.txt", "before you took it over", "It read notes.txt"],
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "a.txt", "content": "the note\n" } } ] },
            { "match": "created a.txt", "text": "Wrote a.txt." },
            { "match": "Create a.txt from notes.txt",
              "toolCalls": [ { "name": "file_read", "arguments": { "path": "notes.txt" } } ] },
            { "match": "the note", "text": "The notes say: the note." },
            { "match": "You have not changed anything yet", "text": "Nothing more to do." }
        ]),
        config,
    )
    .await;
    std::fs::write(team.workspace.path().join("notes.txt"), "the note\n").unwrap();
    let mut events = team.engine.subscribe();
    let task = team.submit("Create a.txt from notes.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(
        actions(&steps).contains(&RecoveryAction::PeerTakeover),
        "{steps:?}"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed, "{steps:?}");
    assert_eq!(team.read("a.txt"), "the note\n");
    let peer = detail.summary.subtasks[0].assignee_name.clone().unwrap();
    let board = team.mid_board();
    assert!(
        board.contains(&format!("- shared what bottom-1-1 learned with {peer}")),
        "the supervisor's board says who was told: {board}"
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_supervisor_that_proposes_a_new_agent_gets_one_and_it_finishes_the_subtask() {
    let team = supervised(
        small_team(1),
        "Create e.txt",
        2,
        "{\"action\": \"replace_agent\", \"reason\": \"the coder is stuck\"}",
        ("Create e.txt", "e.txt"),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create e.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    let seen = actions(&steps);
    assert!(
        seen.contains(&RecoveryAction::EscalateToSupervisor)
            && seen.contains(&RecoveryAction::ReplaceAgent),
        "{steps:?}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s.0 == RecoveryAction::EscalateToSupervisor
                && s.2.contains("proposed replace_agent")),
        "{steps:?}"
    );
    completed_by(&team, task, "bottom-1-1.r1", ("e.txt", "e\n"), &steps);
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_supervisor_that_proposes_reassigning_hands_the_subtask_to_an_agent_not_yet_tried() {
    let team = supervised(
        small_team(2),
        "Create f.txt",
        // Both coders fail it: the first, then the peer who takes over.
        4,
        "{\"action\": \"reassign\", \"reason\": \"a fresh agent may get through\"}",
        ("Create f.txt", "f.txt"),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Create f.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(
        steps
            .iter()
            .any(|s| s.0 == RecoveryAction::EscalateToSupervisor
                && s.2.contains("proposed reassign")),
        "{steps:?}"
    );
    // Neither agent that failed it: the first one's replacement, made when it ran out
    // of retries.
    completed_by(&team, task, "bottom-1-1.r1", ("f.txt", "f\n"), &steps);
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_hung_supervisor_is_replaced_and_its_replacement_coordinates_the_task() {
    let config = small_team(1);
    let behaviors = wedging("mid-1");
    let [w1, w2] = writes("Create g.txt", "g.txt", "g\n");
    let team = start_with(
        json!([plan(&["Create g.txt"]), w1, w2]),
        config,
        Some(behaviors),
    )
    .await;
    let hung = team.engine.runtime().pool.by_layer(Layer::Mid)[0].id();
    let mut events = team.engine.subscribe();
    let task = team.submit("Create g.txt");
    let steps = watch(&team, &mut events, ApprovalChoice::Abort).await;
    assert!(
        steps
            .iter()
            .any(|s| s.0 == RecoveryAction::ReplaceAgent && s.2.contains("mid-1")),
        "{steps:?}"
    );
    let summary = team.engine.task(&task.to_string()).unwrap().summary;
    assert_eq!(summary.status, TaskStatus::Completed, "{steps:?}");
    let mids = team.engine.runtime().pool.by_layer(Layer::Mid);
    assert_eq!(mids.len(), 1);
    let replacement = &mids[0];
    assert_ne!(replacement.id(), hung);
    assert_eq!(replacement.name(), "mid-1.r1");
    // It took the hung supervisor's place: the coder reports to it now.
    let bottom = &team.engine.runtime().pool.by_layer(Layer::Bottom)[0];
    assert_eq!(bottom.config().supervisor, Some(replacement.id()));
    assert_eq!(replacement.config().subordinates, vec![bottom.id()]);
    assert_eq!(team.read("g.txt"), "g\n");
    team.engine.shutdown().await;
}
