//! The fault matrix in-process, on tokio's paused clock: a whole team (engine, agents,
//! the resilient model with its breaker and retry budget) against a model that fails on
//! a seeded plan, so a 60-second outage or a ten-minute patience take milliseconds.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use conclave::config::Config;
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::recovery::{FailureKind, RecoveryAction};
use conclave::runtime::{AgentStatus, RuntimeEvent, TaskOptions, TaskStatus};
use conclave::store::Store;
use tokio::time::Instant;

use crate::support::faults::model::{FaultModel, Plan, http, unauthorized};
use crate::support::team;

fn config() -> Config {
    let mut config = team::config();
    config.team.top = 1;
    config.team.mid = 1;
    config.team.bottom_per_mid = 2;
    config.recovery.call.max_attempts = 4;
    config.recovery.call.base_delay_ms = 200;
    config.recovery.call.max_delay_ms = 2_000;
    config.recovery.breaker.window = 10;
    config.recovery.breaker.min_calls = 5;
    config.recovery.breaker.open_ms = 30_000;
    config.recovery.breaker.half_open_probes = 1;
    config
}

struct Run {
    engine: Arc<Engine>,
    model: Arc<FaultModel>,
    workspace: tempfile::TempDir,
    events: conclave::runtime::EventStream,
}

async fn start(plan: Plan, config: Config) -> Run {
    let workspace = tempfile::tempdir().unwrap();
    let model = FaultModel::new(plan);
    let mut setup = EngineSetup::new(workspace.path(), config);
    setup.store = Some(Store::in_memory().unwrap());
    setup.model = Some(model.clone());
    let engine = Engine::start(setup).await.unwrap();
    let events = engine.subscribe();
    Run {
        engine,
        model,
        workspace,
        events,
    }
}

const FILES: [(&str, &str); 2] = [("alpha.txt", "hello"), ("beta.txt", "goodbye")];

fn task(files: &[(&str, &str)]) -> String {
    let list: Vec<String> = files.iter().map(|(p, c)| format!("{p}={c}")).collect();
    format!("Write the files: {}", list.join(", "))
}

/// What the run showed until every submitted task finished.
#[derive(Default, Debug)]
struct Seen {
    actions: Vec<RecoveryAction>,
    messages: Vec<String>,
    approvals: usize,
    agent_statuses: Vec<AgentStatus>,
    /// The tasks each provider-wide step said it held up.
    provider_wide: Vec<Vec<String>>,
}

async fn until_finished(run: &mut Run, tasks: &[conclave::runtime::TaskId]) -> Seen {
    let mut seen = Seen::default();
    loop {
        let done = tasks.iter().all(|t| {
            run.engine
                .task(&t.to_string())
                .is_ok_and(|d| d.summary.status.is_finished())
        });
        if done {
            return seen;
        }
        match tokio::time::timeout(Duration::from_secs(3600), run.events.recv()).await {
            Ok(Ok(RuntimeEvent::Recovery(step))) => {
                seen.actions.push(step.action);
                seen.messages.push(step.message.clone());
                if step.task_id.is_empty() {
                    seen.provider_wide.push(step.task_ids.clone());
                }
            }
            Ok(Ok(RuntimeEvent::ApprovalRequested(request))) => {
                seen.approvals += 1;
                let _ = run.engine.resolve_approval(
                    &request.approval_id.to_string(),
                    conclave::runtime::ApprovalAnswer::new(
                        conclave::runtime::ApprovalChoice::Abort,
                    ),
                );
            }
            Ok(Ok(RuntimeEvent::AgentStatus(change))) => seen.agent_statuses.push(change.to),
            Ok(Ok(_)) | Ok(Err(_)) => {}
            Err(_) => panic!("the tasks never finished: {seen:?}"),
        }
    }
}

fn submit(run: &Run, description: &str, options: TaskOptions) -> conclave::runtime::TaskId {
    run.engine
        .submit(SubmitTask {
            description: description.into(),
            options,
            ..SubmitTask::default()
        })
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn thirty_percent_transient_faults_complete_every_task_without_opening_the_breaker() {
    let (mut calls, mut answers) = (0, 0);
    for seed in [1, 2, 3] {
        let mut run = start(
            Plan {
                seed,
                rate: 0.3,
                ..Plan::default()
            },
            config(),
        )
        .await;
        let files: Vec<[(&str, &str); 2]> = vec![
            [("a1.txt", "one"), ("a2.txt", "two")],
            [("b1.txt", "three"), ("b2.txt", "four")],
            [("c1.txt", "five"), ("c2.txt", "six")],
            [("d1.txt", "seven"), ("d2.txt", "eight")],
            [("e1.txt", "nine"), ("e2.txt", "ten")],
        ];
        let tasks: Vec<_> = files
            .iter()
            .map(|f| submit(&run, &task(f), TaskOptions::default()))
            .collect();
        let seen = until_finished(&mut run, &tasks).await;
        for (task, files) in tasks.iter().zip(&files) {
            let detail = run.engine.task(&task.to_string()).unwrap();
            assert_eq!(
                detail.summary.status,
                TaskStatus::Completed,
                "seed {seed}: {:?} {seen:?}",
                detail.errors
            );
            for (path, content) in files {
                assert_eq!(
                    std::fs::read_to_string(run.workspace.path().join(path)).unwrap(),
                    *content
                );
            }
        }
        assert!(
            !seen.actions.contains(&RecoveryAction::CircuitOpen),
            "seed {seed}: {seen:?}"
        );
        assert_eq!(seen.approvals, 0, "seed {seed}: {seen:?}");
        assert!(!seen.actions.contains(&RecoveryAction::EscalateToSupervisor));
        calls += run.model.calls.load(Ordering::SeqCst);
        answers += run.model.answers.load(Ordering::SeqCst);
        run.engine.shutdown().await;
    }
    // Amplification: model calls per logical call (per answer the team needed).
    assert!(
        (calls as f64) / (answers as f64) < 1.6,
        "{calls} model calls for {answers} logical calls"
    );
}

#[tokio::test(start_paused = true)]
async fn fifty_percent_transient_faults_still_complete_at_least_95_percent_of_tasks() {
    let (mut total, mut completed) = (0, 0);
    for seed in [21, 22, 23, 24] {
        let mut run = start(
            Plan {
                seed,
                rate: 0.5,
                ..Plan::default()
            },
            config(),
        )
        .await;
        let names: Vec<(String, String)> = (0..10)
            .map(|n| (format!("f{seed}-{n}.txt"), format!("content {n}")))
            .collect();
        let files: Vec<Vec<(&str, &str)>> = names
            .chunks(2)
            .map(|c| c.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect())
            .collect();
        let tasks: Vec<_> = files
            .iter()
            .map(|f| submit(&run, &task(f), TaskOptions::default()))
            .collect();
        until_finished(&mut run, &tasks).await;
        for (task, files) in tasks.iter().zip(&files) {
            total += 1;
            let detail = run.engine.task(&task.to_string()).unwrap();
            if detail.summary.status == TaskStatus::Completed {
                completed += 1;
                for (path, content) in files {
                    assert_eq!(
                        std::fs::read_to_string(run.workspace.path().join(path)).unwrap(),
                        *content
                    );
                }
            }
        }
        run.engine.shutdown().await;
    }
    assert!(
        completed * 100 >= total * 95,
        "{completed} of {total} tasks completed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_sixty_second_outage_is_waited_out_visibly_with_no_person_involved() {
    let mut run = start(
        Plan {
            outage: Some((Duration::ZERO, Duration::from_secs(60))),
            ..Plan::default()
        },
        config(),
    )
    .await;
    let t = submit(&run, &task(&FILES), TaskOptions::default());
    let started = Instant::now();
    let seen = until_finished(&mut run, &[t]).await;
    let detail = run.engine.task(&t.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Completed, "{seen:?}");
    assert!(started.elapsed() >= Duration::from_secs(60));
    assert_eq!(seen.approvals, 0, "{seen:?}");
    for action in [
        RecoveryAction::EscalateToSupervisor,
        RecoveryAction::EscalateToTop,
        RecoveryAction::PeerTakeover,
        RecoveryAction::GaveUp,
    ] {
        assert!(!seen.actions.contains(&action), "{action:?}: {seen:?}");
    }
    assert!(
        seen.actions.contains(&RecoveryAction::WaitForProvider),
        "{seen:?}"
    );
    assert!(
        seen.messages
            .iter()
            .any(|m| m.starts_with("waiting for faulty (") && m.contains("), next try in")),
        "{seen:?}"
    );
    // The breaker opened on the dead provider and closed when it came back.
    assert!(
        seen.actions.contains(&RecoveryAction::CircuitOpen),
        "{seen:?}"
    );
    assert!(
        seen.messages
            .iter()
            .any(|m| m.starts_with("provider faulty paused for 30 s after")),
        "{seen:?}"
    );
    // Each provider-wide step names the tasks it holds up.
    assert!(!seen.provider_wide.is_empty(), "{seen:?}");
    assert!(
        seen.provider_wide
            .iter()
            .all(|held| held == &vec![t.to_string()]),
        "{seen:?}"
    );
    // Waiting agents were blocked; no agent failed.
    assert!(
        seen.agent_statuses.contains(&AgentStatus::Blocked),
        "{seen:?}"
    );
    assert!(
        !seen.agent_statuses.contains(&AgentStatus::Failed),
        "{seen:?}"
    );
    // No attempt was spent on waiting: one attempt per subtask.
    assert!(
        detail.summary.subtasks.iter().all(|s| s.attempts == 1),
        "{:?}",
        detail.summary.subtasks
    );
    for (path, content) in FILES {
        assert_eq!(
            std::fs::read_to_string(run.workspace.path().join(path)).unwrap(),
            content
        );
    }
    run.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_dead_provider_gets_at_most_its_window_then_the_task_ends_after_the_patience() {
    let mut config = config();
    config.recovery.provider_patience_ms = 10 * 60_000;
    let mut run = start(
        Plan {
            dead_after_plan: Some(|| http(503)),
            ..Plan::default()
        },
        config.clone(),
    )
    .await;
    let t = submit(&run, &task(&FILES), TaskOptions::default());
    let started = Instant::now();
    let seen = until_finished(&mut run, &[t]).await;
    let detail = run.engine.task(&t.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed, "{seen:?}");
    assert!(
        started.elapsed() >= Duration::from_secs(9 * 60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(seen.approvals, 0, "{seen:?}");
    // Bounded amplification: the plan, the breaker's window of failed logical calls,
    // the shared retry budget, and one half-open probe per open period.
    let calls = run.model.calls.load(Ordering::SeqCst);
    let probes = config.recovery.provider_patience_ms / config.recovery.breaker.open_ms + 1;
    let bound = 1
        + config.recovery.breaker.min_calls as u64
        + config.recovery.retry_budget.capacity as u64
        + probes;
    assert!(calls <= bound, "{calls} calls > {bound}");
    let last = detail.errors.last().unwrap();
    assert_eq!(
        last.failure.kind,
        FailureKind::ProviderOutage,
        "{:?}",
        detail.errors
    );
    let report = run.engine.error_report(Some(&t.to_string())).await.unwrap();
    assert!(
        report.markdown.contains("faulty did not recover: waited "),
        "{}",
        report.markdown
    );
    assert!(
        report.markdown.contains("**Root Cause**: server"),
        "{}",
        report.markdown
    );
    // The outage is resumable: the failed subtasks can be retried.
    assert!(run.engine.retry(&t.to_string()).is_ok());
    run.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_401_is_never_retried_and_goes_to_the_person_as_critical() {
    let mut run = start(
        Plan {
            dead_after_plan: Some(unauthorized),
            ..Plan::default()
        },
        config(),
    )
    .await;
    let t = submit(&run, &task(&FILES[..1]), TaskOptions::default());
    let seen = until_finished(&mut run, &[t]).await;
    assert_eq!(run.model.calls.load(Ordering::SeqCst), 2, "{seen:?}");
    assert_eq!(seen.approvals, 1, "{seen:?}");
    assert!(
        seen.actions.contains(&RecoveryAction::EscalateToTop),
        "{seen:?}"
    );
    assert!(!seen.actions.contains(&RecoveryAction::Retry), "{seen:?}");
    // While the person was asked, the agent waited for them.
    assert!(
        seen.agent_statuses.contains(&AgentStatus::WaitingApproval),
        "{seen:?}"
    );
    let detail = run.engine.task(&t.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed);
    assert!(
        detail
            .errors
            .iter()
            .any(|e| e.failure.kind == FailureKind::Auth && e.failure.fatal)
    );
    run.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn options_timeout_ms_bounds_the_task_and_the_report_says_so() {
    let mut run = start(
        Plan {
            hang_after_plan: true,
            ..Plan::default()
        },
        config(),
    )
    .await;
    let t = submit(
        &run,
        &task(&FILES),
        TaskOptions {
            timeout_ms: Some(5_000),
            ..TaskOptions::default()
        },
    );
    let started = Instant::now();
    let seen = until_finished(&mut run, &[t]).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let detail = run.engine.task(&t.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed, "{seen:?}");
    let last = detail.errors.last().unwrap();
    assert_eq!(last.failure.kind, FailureKind::Timeout);
    assert!(last.failure.message.contains("options.timeoutMs"));
    let report = run.engine.error_report(Some(&t.to_string())).await.unwrap();
    assert!(
        report.markdown.contains("**Phase**: timeout"),
        "{}",
        report.markdown
    );
    assert!(
        report.markdown.contains("| Failed | 1 |"),
        "{}",
        report.markdown
    );
    run.engine.shutdown().await;
}
