//! The team at work (issue 4). Run: `cargo bench --bench team`.
//!
//! A 100-subtask task on a zero-latency scripted model: wall time per subtask is the
//! runtime's overhead (planning, signing, assignment over the bus, the executor loop,
//! reports, checkpoints into SQLite), since the model answers at once. Then 10 tasks of
//! 10 subtasks at once.

use std::sync::Arc;
use std::time::Instant;

use conclave::config::{Config, ReviewMode};
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::model::scripted::ScriptedProvider;
use conclave::runtime::TaskStatus;
use conclave::store::Store;
use serde_json::{Value, json};

fn script(tasks: usize, subtasks: usize) -> Value {
    let mut steps = Vec::new();
    for t in 0..tasks {
        let list: Vec<Value> = (0..subtasks)
            .map(|s| json!({ "description": format!("Step {s} of job {t}") }))
            .collect();
        steps.push(json!({ "match": format!("Job {t}:"), "text": json!({ "subtasks": list }).to_string() }));
    }
    // Every subtask: one answer, no tool call; the model costs nothing.
    steps.push(json!({ "match": "Step", "text": "Done.", "repeat": true }));
    Value::Array(steps)
}

async fn run(tasks: usize, subtasks: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.governance.review = ReviewMode::Rules;
    config.governance.max_subtasks = subtasks;
    let mut setup = EngineSetup::new(dir.path(), config);
    setup.store = Some(Store::open(&Store::default_path(dir.path())).unwrap());
    setup.model = Some(Arc::new(
        ScriptedProvider::from_json(&script(tasks, subtasks).to_string()).unwrap(),
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
        run(1, 10).await; // warm-up
        let mut one: Vec<f64> = Vec::new();
        for _ in 0..3 {
            one.push(run(1, 100).await);
        }
        one.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "one task of 100 subtasks on a zero-latency model: {:.1} ms in all, {:.3} ms runtime overhead per subtask (median of 3)",
            one[1] * 1000.0,
            one[1] * 1000.0 / 100.0
        );
        let mut ten: Vec<f64> = Vec::new();
        for _ in 0..3 {
            ten.push(run(10, 10).await);
        }
        ten.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "10 tasks of 10 subtasks at once: {:.1} ms in all, {:.3} ms per subtask (median of 3)",
            ten[1] * 1000.0,
            ten[1] * 1000.0 / 100.0
        );
    });
}
