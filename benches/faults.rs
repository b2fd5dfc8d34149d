//! The reliability matrix (issue 13). Run: `cargo bench --bench faults`.
//!
//! The whole team (engine, agents, ladder, resilient model with its breaker and shared
//! retry budget) against an in-process model with seeded faults, on tokio's paused clock
//! (virtual time: a 60-second outage costs milliseconds of wall time). For each fault
//! kind × rate it prints: tasks completed, model calls per logical call (one logical
//! call = one answer the team needed), and the mean extra virtual time per task over a
//! fault-free run (time to recover). The last columns are what a plain retry loop with
//! the policies of the codex app-server (5 attempts: 4 request retries at 200 ms × 2ⁿ)
//! and pi (4 attempts: 3 retries at 2, 4 and 8 s) would complete on the same independent
//! faults: a task of `k` calls completes with probability `(1 − pⁿ)ᵏ`.

#[path = "../tests/it/support/faults/mod.rs"]
#[allow(dead_code)] // a bench uses part of the tests' helpers
mod faults_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use conclave::config::{Config, ReviewMode};
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::runtime::TaskStatus;
use conclave::store::Store;
use faults_support::model::{FaultModel, Plan, Transient};
use tokio::time::Instant;

const TASKS: usize = 10;
const FILES_PER_TASK: usize = 2;
/// Logical calls per task: the plan, then per file a write and a summary.
const CALLS_PER_TASK: i32 = 1 + 2 * FILES_PER_TASK as i32;

fn config() -> Config {
    let mut config = Config::default();
    config.governance.review = ReviewMode::Rules;
    config.team.top = 1;
    config.team.mid = 1;
    config.team.bottom_per_mid = 2;
    config.recovery.step_timeout_ms = 10_000;
    config
}

struct Outcome {
    completed: usize,
    calls: u64,
    answers: u64,
    /// Mean virtual time per task.
    mean: Duration,
}

async fn run(plan: Plan) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let model = FaultModel::new(plan);
    let mut setup = EngineSetup::new(dir.path(), config());
    setup.store = Some(Store::in_memory().unwrap());
    setup.model = Some(model.clone());
    let engine = Engine::start(setup).await.unwrap();
    let started = Instant::now();
    let ids: Vec<_> = (0..TASKS)
        .map(|t| {
            let files: Vec<String> = (0..FILES_PER_TASK)
                .map(|f| format!("t{t}-f{f}.txt=content {t} {f}"))
                .collect();
            engine
                .submit(SubmitTask {
                    description: format!("Write the files: {}", files.join(", ")),
                    ..SubmitTask::default()
                })
                .unwrap()
        })
        .collect();
    let mut completed = 0;
    let mut total = Duration::ZERO;
    for id in ids {
        let summary = engine.wait_for(id).await.unwrap();
        total += started.elapsed();
        if summary.status == TaskStatus::Completed {
            completed += 1;
        }
    }
    engine.shutdown().await;
    Outcome {
        completed,
        calls: model.calls.load(Ordering::SeqCst),
        answers: model.answers.load(Ordering::SeqCst),
        mean: total / TASKS as u32,
    }
}

fn plain_retry_loop(rate: f64, attempts: i32) -> f64 {
    (1.0 - rate.powi(attempts)).powi(CALLS_PER_TASK) * 100.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let wall = std::time::Instant::now();
    let baseline = runtime.block_on(run(Plan::default()));
    println!(
        "Fault-free: {}/{TASKS} tasks, {:.2} calls per logical call, mean {:.1} s per task (virtual)\n",
        baseline.completed,
        baseline.calls as f64 / baseline.answers.max(1) as f64,
        baseline.mean.as_secs_f64()
    );
    println!(
        "| fault | rate | completed | calls / logical call | time to recover (s/task) | codex loop | pi loop |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut kinds: Vec<(String, Vec<Transient>)> = vec![("mixed".into(), Transient::ALL.to_vec())];
    kinds.extend(
        Transient::ALL
            .iter()
            .map(|k| (k.name().to_string(), vec![*k])),
    );
    for (name, kinds) in kinds {
        for rate in [0.1, 0.3, 0.5] {
            let mut completed = 0;
            let (mut calls, mut answers) = (0, 0);
            let mut extra = 0.0;
            let seeds = [1, 2];
            for seed in seeds {
                let outcome = runtime.block_on(run(Plan {
                    seed,
                    rate,
                    kinds: kinds.clone(),
                    ..Plan::default()
                }));
                completed += outcome.completed;
                calls += outcome.calls;
                answers += outcome.answers;
                extra += outcome.mean.as_secs_f64() - baseline.mean.as_secs_f64();
            }
            let total = TASKS * seeds.len();
            println!(
                "| {name} | {:.0}% | {:.0}% | {:.2} | {:.1} | {:.0}% | {:.0}% |",
                rate * 100.0,
                completed as f64 * 100.0 / total as f64,
                calls as f64 / answers.max(1) as f64,
                extra / seeds.len() as f64,
                plain_retry_loop(rate, 5),
                plain_retry_loop(rate, 4),
            );
        }
    }
    // A dead provider: how many calls the whole team makes before the tasks end.
    let mut config = config();
    config.recovery.provider_patience_ms = 600_000;
    let dead = runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let model = FaultModel::new(Plan {
            dead_after_plan: Some(|| faults_support::model::http(503)),
            ..Plan::default()
        });
        let mut setup = EngineSetup::new(dir.path(), config.clone());
        setup.store = Some(Store::in_memory().unwrap());
        setup.model = Some(model.clone());
        let engine = Engine::start(setup).await.unwrap();
        let started = Instant::now();
        let ids: Vec<_> = (0..TASKS)
            .map(|t| {
                engine
                    .submit(SubmitTask {
                        description: format!("Write the files: dead{t}.txt=x, dead{t}b.txt=y"),
                        ..SubmitTask::default()
                    })
                    .unwrap()
            })
            .collect();
        for id in ids {
            engine.wait_for(id).await.unwrap();
        }
        engine.shutdown().await;
        (model.calls.load(Ordering::SeqCst), started.elapsed())
    });
    println!(
        "\nDead provider after the plans ({TASKS} tasks, patience 10 min): {} model calls in all \
         (breaker window {} + retry budget {} + probes), tasks ended after {:.0} s (virtual)",
        dead.0,
        config.recovery.breaker.min_calls,
        config.recovery.retry_budget.capacity,
        dead.1.as_secs_f64()
    );
    println!(
        "\nwall time of the whole matrix: {:.1} s",
        wall.elapsed().as_secs_f64()
    );
}
