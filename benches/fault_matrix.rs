//! The fault matrix against the real binary: the fault-injecting model server
//! (`tests/it/support/faults`) in front of `conclave run` and `conclave serve` over stdio.
//! Run: `cargo bench --bench fault_matrix` (about ten minutes: the outages are waited out
//! on the real clock). Prints the table BENCHMARKS.md keeps.
//!
//! Each cell: how many tasks completed, model calls, faults injected, mean wall time a
//! task, files written more than once (from the writer's own log lines: a write of
//! identical content is a no-op and is not counted), and, for `serve`, recovery steps
//! the store recorded that the editor was never sent.

#[path = "../tests/it/support/faults/mod.rs"]
#[allow(dead_code)] // a bench uses part of the tests' helpers
mod faults_support;
#[path = "../tests/it/support/lsp.rs"]
#[allow(dead_code)] // a bench uses part of the tests' helpers
mod lsp_support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use faults_support::{Fault, FaultPlan, FaultServer, config_for, task_for};

/// Tasks a `run` cell runs (one `conclave run` each, two files a task).
const RUNS: usize = 4;
/// Tasks a `serve` cell submits at once.
const SERVED: usize = 8;

/// The default silence timeouts, scaled to a server that answers at once.
fn config(server: &FaultServer, patience_ms: u64) -> String {
    config_for(server, "")
        .replace(
            "stepTimeoutMs = 400",
            "stepTimeoutMs = 30000\nidleTimeoutMs = 300\nfirstByteTimeoutMs = 600\nfirstBytePerKTokensMs = 0",
        )
        .replace(
            "providerPatienceMs = 120000",
            &format!("providerPatienceMs = {patience_ms}"),
        )
}

fn files(task: usize) -> Vec<(String, String)> {
    vec![
        (format!("t{task}a.txt"), format!("a{task}")),
        (format!("t{task}b.txt"), format!("b{task}")),
    ]
}

fn task_text(task: usize) -> String {
    let files = files(task);
    let pairs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_str()))
        .collect();
    task_for(&pairs)
}

fn files_right(workspace: &Path, task: usize) -> bool {
    files(task).iter().all(|(path, content)| {
        std::fs::read_to_string(workspace.join(path))
            .ok()
            .as_deref()
            == Some(content.as_str())
    })
}

/// Writes per path that changed a file, from the writer's log lines.
fn writes(log: &str) -> HashMap<String, u32> {
    let mut counts = HashMap::new();
    for line in log.lines().filter(|l| l.contains("file written")) {
        let changed = line.contains("status=\"created\"") || line.contains("status=\"updated\"");
        let path = line
            .split("path=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next());
        if let (true, Some(path)) = (changed, path) {
            *counts
                .entry(path.trim_matches('"').to_string())
                .or_insert(0) += 1;
        }
    }
    counts
}

struct Row {
    fault: String,
    rate: String,
    completed: usize,
    tasks: usize,
    calls: u64,
    faults: u64,
    mean: Duration,
    written_twice: usize,
    events_lost: Option<i64>,
    /// `serve` cells: `conclave/listTasks` round trips while the tasks ran, p50 and p99.
    list_tasks: Option<(Duration, Duration)>,
}

impl Row {
    fn print(&self) {
        println!(
            "| {} | {} | {} of {} | {} | {} | {:.1} s | {} | {} | {} |",
            self.fault,
            self.rate,
            self.completed,
            self.tasks,
            self.calls,
            self.faults,
            self.mean.as_secs_f64(),
            self.written_twice,
            self.events_lost.map_or("—".to_string(), |n| n.to_string()),
            self.list_tasks
                .map_or("—".to_string(), |(p50, p99)| format!(
                    "{:.2} / {:.2} ms",
                    p50.as_secs_f64() * 1e3,
                    p99.as_secs_f64() * 1e3
                )),
        );
    }
}

/// How long the breaker stays open: short for the random faults (so a cell takes
/// seconds), the default 30 s for the outages (what bounds a dead provider's calls).
#[derive(Clone, Copy)]
enum Breaker {
    Quick,
    Default,
}

/// `RUNS` sequential `conclave run`s against one server with `plan`.
async fn run_cell(
    fault: &str,
    rate: &str,
    plan: FaultPlan,
    runs: usize,
    patience_ms: u64,
    breaker: Breaker,
) -> Row {
    let server = FaultServer::start(plan).await;
    let ws = tempfile::tempdir().unwrap();
    let mut config = config(&server, patience_ms);
    if let Breaker::Default = breaker {
        config = config.replace("openMs = 300", "openMs = 30000");
    }
    std::fs::write(ws.path().join("conclave.toml"), config).unwrap();
    let mut completed = 0;
    let mut twice = 0;
    let started = Instant::now();
    for task in 0..runs {
        let workspace = ws.path().to_path_buf();
        let text = task_text(task);
        let output = tokio::task::spawn_blocking(move || {
            Command::new(env!("CARGO_BIN_EXE_conclave"))
                .args(["run", &text, "--approve", "deny", "--workspace"])
                .arg(&workspace)
                .env("RUST_LOG", "warn,conclave::tools::writer=debug")
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .output()
                .expect("conclave runs")
        })
        .await
        .unwrap();
        if output.status.success() && files_right(ws.path(), task) {
            completed += 1;
        }
        twice += writes(&String::from_utf8_lossy(&output.stderr))
            .values()
            .filter(|n| **n > 1)
            .count();
    }
    let stats = server.stats();
    Row {
        fault: fault.into(),
        rate: rate.into(),
        completed,
        tasks: runs,
        calls: stats.calls,
        faults: stats.faults,
        mean: started.elapsed() / runs as u32,
        written_twice: twice,
        events_lost: None,
        list_tasks: None,
    }
}

/// `SERVED` tasks at once over one `conclave serve` connection.
async fn serve_cell(rate: f64, seed: u64) -> Row {
    let server = FaultServer::start(FaultPlan {
        kinds: all_transient(),
        ..FaultPlan::random(rate, seed)
    })
    .await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("conclave.toml"), config(&server, 600_000)).unwrap();
    // The writer's lines go to the server's stderr file.
    let mut lsp = lsp_support::Server::spawn_with(
        ws.path(),
        &[],
        &[("RUST_LOG", "warn,conclave::tools::writer=debug")],
    )
    .await;
    lsp.initialize(lsp_support::bare_capabilities(), serde_json::json!({}))
        .await;
    let started = Instant::now();
    let mut ids = Vec::new();
    for task in 0..SERVED {
        ids.push(lsp.submit(&task_text(task)).await);
    }
    // An editor polls the task list while the team works: its round trip under the load.
    let mut list_times = Vec::new();
    let mut finished: HashMap<String, bool> = HashMap::new();
    while finished.len() < ids.len() {
        let asked = Instant::now();
        lsp.call("conclave/listTasks", serde_json::json!({})).await;
        list_times.push(asked.elapsed());
        for message in lsp.received() {
            let task = &message["params"]["task"];
            let status = task["status"].as_str().unwrap_or_default();
            if message["method"] == "conclave/taskUpdated"
                && ["completed", "failed", "cancelled"].contains(&status)
            {
                finished.insert(
                    task["taskId"].as_str().unwrap_or_default().to_string(),
                    status == "completed",
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    list_times.sort();
    let completed = ids
        .iter()
        .enumerate()
        .filter(|(task, id)| {
            finished.get(id.as_str()) == Some(&true) && files_right(ws.path(), *task)
        })
        .count();
    let elapsed = started.elapsed();
    assert_eq!(
        lsp.call("shutdown", serde_json::Value::Null).await,
        serde_json::Value::Null
    );
    lsp.notify("exit", serde_json::Value::Null).await;
    let rest = lsp.rest().await;
    let seen_steps = rest
        .iter()
        .filter(|m| m["method"] == "conclave/recoveryStatus")
        .count() as i64;
    // The notifications waited for above were taskUpdated only: every recoveryStatus is
    // in what is left.
    let stored: i64 = rusqlite::Connection::open(ws.path().join(".conclave/conclave.db"))
        .unwrap()
        .query_row("SELECT COUNT(*) FROM recovery_steps", [], |r| r.get(0))
        .unwrap();
    let log = std::fs::read_to_string(&lsp.stderr).unwrap_or_default();
    let stats = server.stats();
    Row {
        fault: "mixed, serve".into(),
        rate: format!("{:.0}%", rate * 100.0),
        completed,
        tasks: SERVED,
        calls: stats.calls,
        faults: stats.faults,
        mean: elapsed / SERVED as u32,
        written_twice: writes(&log).values().filter(|n| **n > 1).count(),
        events_lost: Some(stored - seen_steps),
        list_tasks: Some((percentile(&list_times, 0.5), percentile(&list_times, 0.99))),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
        .copied()
        .unwrap_or_default()
}

fn all_transient() -> Vec<Fault> {
    let mut kinds = faults_support::TRANSIENT.to_vec();
    kinds.push(Fault::Stall { millis: 20_000 });
    kinds.push(Fault::StallMidStream { millis: 20_000 });
    kinds
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `--outages`: the two outage cells alone (they take six minutes of the run);
    // `--serve`: the load cells alone (eight tasks at once over one `serve` connection).
    let only_outages = std::env::args().any(|a| a == "--outages");
    let only_serve = std::env::args().any(|a| a == "--serve");
    println!(
        "| fault | rate | completed | model calls | faults injected | time a task | files written twice | events lost | listTasks p50 / p99 under the load |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    if only_serve {
        serve_cells().await;
        return;
    }
    if !only_outages {
        random_faults().await;
    }
    for (name, length) in [
        ("outage of 60 s", Duration::from_secs(60)),
        ("outage of 5 min", Duration::from_secs(300)),
    ] {
        let plan = FaultPlan {
            outage: Some((Duration::from_millis(1), length)),
            ..FaultPlan::default()
        };
        run_cell(
            name,
            "every call while it lasts",
            plan,
            1,
            600_000,
            Breaker::Default,
        )
        .await
        .print();
    }
}

/// Every transient kind at 30, 50 and 70% through `run`, mixed through `serve`, and the
/// faults that must end a task at once.
async fn random_faults() {
    let kinds: Vec<(&str, Fault)> = vec![
        (
            "429 + Retry-After",
            Fault::RateLimited {
                retry_after_secs: 1,
            },
        ),
        ("500", Fault::Http500),
        ("503", Fault::Http503),
        ("malformed 200", Fault::Garbage),
        ("dropped connection", Fault::Reset),
        ("stream cut short", Fault::TruncatedStream),
        ("stall before headers", Fault::Stall { millis: 20_000 }),
        ("stall mid-stream", Fault::StallMidStream { millis: 20_000 }),
    ];
    for (name, fault) in &kinds {
        for rate in [0.3, 0.5, 0.7] {
            let plan = FaultPlan {
                seed: 7,
                rate,
                kinds: vec![*fault],
                ..FaultPlan::default()
            };
            let rate = format!("{:.0}%", rate * 100.0);
            run_cell(name, &rate, plan, RUNS, 120_000, Breaker::Quick)
                .await
                .print();
        }
    }
    serve_cells().await;
    for (name, fault) in [
        ("401 (expected to fail: no retry)", Fault::Unauthorized),
        ("403 (expected to fail: no retry)", Fault::Forbidden),
        (
            "400 context overflow (expected to fail)",
            Fault::ContextOverflow,
        ),
    ] {
        let plan = FaultPlan {
            always: Some(fault),
            always_after: 1,
            ..FaultPlan::default()
        };
        run_cell(
            name,
            "every call after the plan",
            plan,
            1,
            120_000,
            Breaker::Quick,
        )
        .await
        .print();
    }
}

/// Eight tasks at once over one `serve` connection, mixed faults at 30, 50 and 70%.
async fn serve_cells() {
    for (rate, seed) in [(0.3, 31), (0.5, 51), (0.7, 71)] {
        serve_cell(rate, seed).await.print();
    }
}
