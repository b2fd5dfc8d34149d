//! The team at work (issue 4). Run: `cargo bench --bench team`.
//!
//! A 100-subtask task on a zero-latency scripted model: wall time per subtask is the
//! runtime's overhead (planning, signing, assignment over the bus, the executor loop,
//! reports, checkpoints into SQLite), since the model answers at once. Then 10 tasks of
//! 10 subtasks at once, and the same with each subtask naming a file of its own: a
//! subtask that names files claims them from every mid before it starts (`team/peers.rs`),
//! and the difference between the two rows is what those claims cost.

use std::sync::Arc;
use std::time::Instant;

use conclave::config::{Config, ReviewMode};
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::model::scripted::ScriptedProvider;
use conclave::runtime::TaskStatus;
use conclave::store::Store;
use serde_json::{Value, json};

/// Subtasks that name a file each, or none.
#[derive(Clone, Copy, PartialEq)]
enum Files {
    None,
    OneEach,
}

fn script(tasks: usize, subtasks: usize, files: Files) -> Value {
    let mut steps = Vec::new();
    for t in 0..tasks {
        let list: Vec<Value> = (0..subtasks)
            .map(|s| match files {
                Files::None => json!({ "description": format!("Step {s} of job {t}") }),
                Files::OneEach => {
                    json!({ "description": format!("Step {s} of job {t}: notes in job{t}_{s}.txt") })
                }
            })
            .collect();
        steps.push(json!({ "match": format!("Job {t}:"), "text": json!({ "subtasks": list }).to_string() }));
    }
    // Every subtask: one answer, no tool call; the model costs nothing.
    steps.push(json!({ "match": "Step", "text": "Done.", "repeat": true }));
    Value::Array(steps)
}

async fn run(tasks: usize, subtasks: usize, files: Files) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.governance.review = ReviewMode::Rules;
    config.governance.max_subtasks = subtasks;
    let mut setup = EngineSetup::new(dir.path(), config);
    setup.store = Some(Store::open(&Store::default_path(dir.path())).unwrap());
    setup.model = Some(Arc::new(
        ScriptedProvider::from_json(&script(tasks, subtasks, files).to_string()).unwrap(),
    ));
    let engine = Engine::start(setup).await.unwrap();
    let started = Instant::now();
    let ids: Vec<_> = (0..tasks)
        .map(|t| {
            engine
                .submit(SubmitTask {
                    description: format!("Job {t}: do {subtasks} steps"),
                    ..SubmitTask::default()
                })
                .unwrap()
        })
        .collect();
    for id in ids {
        let summary = engine.wait_for(id).await.unwrap();
        assert_eq!(summary.status, TaskStatus::Completed);
    }
    let elapsed = started.elapsed().as_secs_f64();
    engine.shutdown().await;
    elapsed
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        run(1, 10, Files::None).await; // warm-up
        let mut one: Vec<f64> = Vec::new();
        for _ in 0..3 {
            one.push(run(1, 100, Files::None).await);
        }
        one.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "one task of 100 subtasks on a zero-latency model: {:.1} ms in all, {:.3} ms runtime overhead per subtask (median of 3)",
            one[1] * 1000.0,
            one[1] * 1000.0 / 100.0
        );
        for (files, what) in [
            (Files::None, ""),
            (Files::OneEach, ", each naming a file of its own"),
        ] {
            let mut ten: Vec<f64> = Vec::new();
            for _ in 0..3 {
                ten.push(run(10, 10, files).await);
            }
            ten.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "10 tasks of 10 subtasks at once{what}: {:.1} ms in all, {:.3} ms per subtask (median of 3)",
                ten[1] * 1000.0,
                ten[1] * 1000.0 / 100.0
            );
        }
    });
}
