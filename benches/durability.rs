//! Durability (issue 6). Run: `cargo bench --bench durability`.
//!
//! - the cost of one durable checkpoint of a subtask step: a task change committed with
//!   `synchronous=FULL` on this machine's disk, measured until the commit returned;
//! - the time from start to every task resumed with 100 unfinished tasks in the store.

use std::sync::Arc;
use std::time::{Duration, Instant};

use conclave::config::{Config, ReviewMode};
use conclave::engine::{Engine, EngineSetup};
use conclave::model::scripted::ScriptedProvider;
use conclave::runtime::{
    EventBus, Subtask, TaskContext, TaskOptions, TaskRecord, TaskStatus, Tasks,
};
use conclave::store::{Record, Store};

fn task(n: usize) -> TaskRecord {
    let mut task = TaskRecord::new(
        format!("task {n}"),
        "resume me".into(),
        TaskContext::default(),
        TaskOptions::default(),
    );
    task.status = TaskStatus::Running;
    task.subtasks = (0..5)
        .map(|i| Subtask::new(format!("step {i}"), vec![]))
        .collect();
    task
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Checkpoint cost per subtask step.
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.db")).unwrap();
        let tasks = Tasks::new(EventBus::default(), Some(store.clone()));
        let record = task(0);
        let id = record.id;
        tasks.insert(record);
        store.flush().await.unwrap();
        let steps = 300;
        let mut each: Vec<Duration> = Vec::with_capacity(steps);
        for step in 0..steps {
            let started = Instant::now();
            tasks.update(id, |t| t.subtasks[step % 5].attempts += 1);
            store.flush().await.unwrap();
            each.push(started.elapsed());
        }
        each.sort();
        println!(
            "durable checkpoint per subtask step (synchronous=FULL, until committed): p50 {:.3} ms, p99 {:.3} ms",
            each[steps / 2].as_secs_f64() * 1000.0,
            each[steps * 99 / 100].as_secs_f64() * 1000.0
        );

        // Many agents at once: steps of 100 tasks arrive together and share commits.
        let ids: Vec<_> = (1..=100)
            .map(|n| {
                let record = task(n);
                let id = record.id;
                tasks.insert(record);
                id
            })
            .collect();
        store.flush().await.unwrap();
        let burst = 2000;
        let started = Instant::now();
        for step in 0..burst {
            tasks.update(ids[step % ids.len()], |t| t.subtasks[step % 5].attempts += 1);
        }
        store.flush().await.unwrap();
        println!(
            "durable checkpoints from 100 concurrent tasks: {:.3} ms per subtask step ({burst} steps committed in {:.1} ms)",
            started.elapsed().as_secs_f64() * 1000.0 / burst as f64,
            started.elapsed().as_secs_f64() * 1000.0
        );

        // Start with 100 unfinished tasks.
        let mut runs = Vec::new();
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let path = Store::default_path(dir.path());
            {
                let store = Store::open(&path).unwrap();
                for n in 0..100 {
                    store.record(Record::TaskCheckpoint(std::sync::Arc::new(task(n))));
                }
                store.flush().await.unwrap();
            }
            let mut config = Config::default();
            config.governance.review = ReviewMode::Rules;
            let mut setup = EngineSetup::new(dir.path(), config);
            setup.store = Some(Store::open(&path).unwrap());
            setup.model = Some(Arc::new(ScriptedProvider::from_json(r#"[{"text": "{\"subtasks\": [{\"description\": \"x\"}]}", "repeat": true}]"#).unwrap()));
            let started = Instant::now();
            let engine = Engine::start(setup).await.unwrap();
            let elapsed = started.elapsed();
            assert_eq!(engine.tasks().len(), 100);
            runs.push(elapsed);
            engine.shutdown().await;
        }
        runs.sort();
        println!(
            "start to every task resumed, 100 unfinished tasks in the store: {:.1} ms (median of 3)",
            runs[1].as_secs_f64() * 1000.0
        );
    });
}
