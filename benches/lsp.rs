//! The language server as an editor meets it (issue 5). Run: `cargo bench --bench lsp`
//! (or `-- notifications`, `-- listTasks`, ... for one part).
//!
//! Everything goes through the real release binary over pipes, driven by the same small
//! client the tests use:
//! - spawn to `initialize` answered (the engine, store and team started);
//! - `conclave/listTasks` round trips with 10 tasks listed, p50 and p99;
//! - notifications a reading client receives per second while 48 agents work 100 tasks
//!   on a zero-latency scripted model;
//! - resident memory idle (default team) and with 48 agents and 10 tasks running.

#[path = "../tests/it/support/lsp.rs"]
#[allow(dead_code)] // a bench uses part of the tests' helpers
mod lsp_support;

use std::time::{Duration, Instant};

use lsp_support::{Server, Workspace, bare_capabilities, full_capabilities};
use serde_json::{Value, json};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// CPU time (user and system) the process has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command's closing parenthesis; utime and stime are the 12th
    // and 13th of them, in clock ticks (100 a second on Linux).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    Duration::from_millis(ticks * 10)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Files written to disk (`Workspace::scripted` has plans reviewed by the rules).
const JOBS_CONFIG: &str = "writes = \"disk\"";

/// A script where job `t` plans `subtasks` steps, each writing a file of its own (a
/// plan's steps must change something, or planning folds them away), and every step
/// answers at once.
fn jobs(tasks: usize, subtasks: usize, step_delay_ms: u64) -> Value {
    let mut steps = Vec::new();
    for t in 0..tasks {
        let list: Vec<Value> = (0..subtasks)
            .map(
                |s| json!({ "description": format!("Step {s} of job {t}: write out_{t}_{s}.txt") }),
            )
            .collect();
        steps.push(json!({ "match": format!("Job {t}:"), "text": json!({ "subtasks": list }).to_string() }));
    }
    steps.push(json!({ "match": "out.txt", "text": "Done.", "repeat": true }));
    steps.push(json!({
        "match": "Step",
        "toolCalls": [ { "name": "file_write", "arguments": { "path": "out.txt", "content": "done\n" } } ],
        "repeat": true,
        "delayMs": step_delay_ms
    }));
    Value::Array(steps)
}

async fn startup() {
    let ws = Workspace::scripted(json!([]), "");
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let mut server = Server::spawn(ws.path()).await;
        server.initialize(bare_capabilities(), json!({})).await;
        times.push(started.elapsed());
        server.shutdown_and_exit().await;
    }
    times.sort();
    println!(
        "spawn to initialize answered: p50 {:.1} ms, p95 {:.1} ms (20 runs)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3
    );
}

async fn list_tasks_round_trip() {
    let ws = Workspace::scripted(jobs(10, 3, 0), JOBS_CONFIG);
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let mut ids = Vec::new();
    for t in 0..10 {
        ids.push(server.submit(&format!("Job {t}: go")).await);
    }
    for id in &ids {
        server.task_status(id, "completed").await;
    }
    let mut times = Vec::new();
    for _ in 0..2000 {
        let started = Instant::now();
        let listed = server.call("conclave/listTasks", json!({})).await;
        times.push(started.elapsed());
        assert_eq!(listed["tasks"].as_array().unwrap().len(), 10);
    }
    times.sort();
    println!(
        "conclave/listTasks round trip (10 tasks): p50 {:.0} µs, p99 {:.0} µs (2000 calls)",
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.99).as_secs_f64() * 1e6
    );
    server.shutdown_and_exit().await;
}

async fn notification_throughput() {
    let tasks = 300;
    let ws = Workspace::scripted(
        jobs(tasks, 5, 0),
        &format!("{JOBS_CONFIG}\n[team]\ntop = 3\nmid = 5\nbottomPerMid = 8"),
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(full_capabilities(), json!({})).await;
    let cpu_before = cpu_time(server.pid());
    let started = Instant::now();
    // Submitted as an editor with many at once would: without waiting for each answer.
    let mut submits = std::collections::HashSet::new();
    for t in 0..tasks {
        submits.insert(
            server
                .send_request(
                    "conclave/submitTask",
                    json!({ "description": format!("Job {t}: go") }),
                )
                .await,
        );
    }
    let mut ids = std::collections::HashSet::new();
    let mut completed = std::collections::HashSet::new();
    let mut received = 0u64;
    let mut by_method = std::collections::BTreeMap::<String, u64>::new();
    while ids.len() < tasks || !ids.is_subset(&completed) {
        let message = server.wait_for("any message", |_| true).await;
        if message.get("method").is_none() && submits.contains(&message["id"]) {
            ids.insert(message["result"]["taskId"].as_str().unwrap().to_string());
            continue;
        }
        if message.get("method").is_some() && message.get("id").is_some() {
            // As an editor does: accept the progress tokens the server creates.
            server.respond(message["id"].clone(), Value::Null).await;
            continue;
        }
        if message.get("method").is_some() {
            received += 1;
            *by_method
                .entry(message["method"].as_str().unwrap_or("").to_string())
                .or_default() += 1;
        }
        completed.extend(completed_task(&message));
    }
    let elapsed = started.elapsed();
    let cpu = cpu_time(server.pid()) - cpu_before;
    println!(
        "notifications to a reading client: {received} in {:.2} s = {:.0}/s ({tasks} tasks x 5 subtasks, 48 agents)",
        elapsed.as_secs_f64(),
        received as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  server CPU (team, store and connection): {:.2} s = {:.0} µs a notification",
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / received as f64
    );
    println!("  by method: {by_method:?}");
    let log = server.stderr_text();
    println!("  lagged: {}", log.matches("fell behind").count());
    server.shutdown_and_exit().await;
}

/// The connection's own capacity, with the team out of the way: the same 300 tasks run
/// while the client reads nothing (the server's notifications wait in its queues, each
/// durable before it goes out), then the client reads and parses everything queued.
async fn notification_backlog() {
    use tokio::io::{AsyncWriteExt, BufReader};
    let tasks = 300;
    let ws = Workspace::scripted(
        jobs(tasks, 5, 0),
        &format!("{JOBS_CONFIG}\n[team]\ntop = 3\nmid = 5\nbottomPerMid = 8"),
    );
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["serve", "--stdio"])
        .current_dir(ws.path())
        .env("RUST_LOG", "info")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(ws.path().join("serve.log")).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::with_capacity(1 << 16, child.stdout.take().unwrap());
    let frame = |message: Value| {
        let body = message.to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    };
    let root = ws.path().canonicalize().unwrap();
    let initialize = frame(json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": { "processId": null, "rootUri": format!("file://{}", root.display()),
                    "capabilities": bare_capabilities() } }));
    stdin.write_all(&initialize).await.unwrap();
    while read_message(&mut stdout).await.get("id") != Some(&json!(0)) {}
    let mut frames = frame(json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }));
    for t in 0..tasks {
        frames.extend(frame(
            json!({ "jsonrpc": "2.0", "id": t + 1, "method": "conclave/submitTask",
                                    "params": { "description": format!("Job {t}: go") } }),
        ));
    }
    stdin.write_all(&frames).await.unwrap();
    stdin.flush().await.unwrap();
    let submitted = Instant::now();
    // The team is done once the server stops using the CPU.
    loop {
        let before = cpu_time(pid);
        tokio::time::sleep(Duration::from_millis(500)).await;
        if cpu_time(pid) - before <= Duration::from_millis(20) {
            break;
        }
    }
    let team_time = submitted.elapsed() - Duration::from_millis(500);
    let started = Instant::now();
    let mut completed = std::collections::HashSet::new();
    let mut notifications = 0u64;
    while completed.len() < tasks {
        let message = read_message(&mut stdout).await;
        if message.get("method").is_none() {
            continue;
        }
        notifications += 1;
        completed.extend(completed_task(&message));
    }
    let elapsed = started.elapsed();
    println!(
        "notifications queued while the client did not read, then read: {notifications} in {:.2} s = {:.0}/s",
        elapsed.as_secs_f64(),
        notifications as f64 / elapsed.as_secs_f64()
    );
    let log = std::fs::read_to_string(ws.path().join("serve.log")).unwrap_or_default();
    println!(
        "  the team's own time for the {tasks} tasks meanwhile: about {:.1} s (to within 0.5 s)",
        team_time.as_secs_f64()
    );
    println!("  lagged: {}", log.matches("fell behind").count());
    drop(stdin);
    let _ = child.wait().await;
}

/// The task a `conclave/taskUpdated` says is completed.
fn completed_task(message: &Value) -> Option<String> {
    let task = &message["params"]["task"];
    (message["method"] == "conclave/taskUpdated" && task["status"] == "completed")
        .then(|| task["taskId"].as_str().unwrap().to_string())
}

/// One framed message, parsed.
async fn read_message<R: tokio::io::AsyncBufRead + Unpin>(input: &mut R) -> Value {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut length = 0;
    let mut header = String::new();
    loop {
        header.clear();
        input.read_line(&mut header).await.unwrap();
        let line = header.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// What one `conclave/taskUpdated` costs the server to build and frame (a task of 5
/// subtasks, each with a file): the ceiling of the notification path when the team is
/// not the one setting the pace.
fn notification_cost() {
    use conclave::runtime::{SubtaskId, SubtaskStatus, TaskId, TaskStatus};
    use conclave::wire::{SubtaskSummary, TaskSummary};
    let uris = conclave::lsp::protocol::Uris::new(std::path::Path::new("/work/space"));
    let summary = TaskSummary {
        task_id: TaskId::new(),
        title: "Add a --verbose flag to cli.py".into(),
        status: TaskStatus::Running,
        progress: 40,
        created_at: chrono::Utc::now(),
        updated_at: chrono::Utc::now(),
        subtasks: (0..5)
            .map(|i| SubtaskSummary {
                subtask_id: SubtaskId::new(),
                description: format!("Step {i}: write module_{i}.py with its tests"),
                assignee: None,
                assignee_name: None,
                status: SubtaskStatus::Running,
                attempts: 1,
                files: vec![format!("src/module_{i}.py")],
            })
            .collect(),
        recovery: None,
        unchecked: None,
        checked_by: None,
        parked: None,
        usage_total: None,
        check_counts: None,
        reverted_by: None,
    };
    let rounds = 100_000;
    let started = Instant::now();
    let mut bytes = 0usize;
    for _ in 0..rounds {
        let params = conclave::lsp::protocol::task_updated(&uris, &summary);
        let body = serde_json::to_vec(
            &json!({ "jsonrpc": "2.0", "method": "conclave/taskUpdated", "params": params }),
        )
        .unwrap();
        let frame = format!("Content-Length: {}\r\n\r\n", body.len());
        bytes += frame.len() + body.len();
    }
    let elapsed = started.elapsed();
    println!(
        "building and framing conclave/taskUpdated (5 subtasks): {:.1} µs each = {:.0}/s on one core ({} bytes each)",
        elapsed.as_secs_f64() * 1e6 / rounds as f64,
        rounds as f64 / elapsed.as_secs_f64(),
        bytes / rounds
    );
}

async fn memory() {
    let ws = Workspace::scripted(json!([]), "");
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    server.call("conclave/listAgents", json!({})).await;
    let pid = server.pid();
    println!(
        "RSS idle (default team, 9 agents): {:.1} MiB",
        rss_kib(pid) as f64 / 1024.0
    );
    server.shutdown_and_exit().await;

    let ws = Workspace::scripted(
        jobs(10, 4, 60_000),
        "writes = \"disk\"\n[team]\ntop = 3\nmid = 5\nbottomPerMid = 8\n[recovery]\nstepTimeoutMs = 120000",
    );
    let mut server = Server::spawn(ws.path()).await;
    server.initialize(bare_capabilities(), json!({})).await;
    let mut ids = Vec::new();
    for t in 0..10 {
        ids.push(server.submit(&format!("Job {t}: go")).await);
    }
    for id in &ids {
        server.task_status(id, "running").await;
    }
    let agents = server.call("conclave/listAgents", json!({})).await;
    let count = agents["agents"].as_array().unwrap().len();
    let pid = server.pid();
    println!(
        "RSS with {count} agents and 10 tasks running: {:.1} MiB",
        rss_kib(pid) as f64 / 1024.0
    );
    server.shutdown_and_exit().await;
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench --bench lsp -- NAME` runs the parts whose names contain NAME.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    runtime.block_on(async {
        if wanted("startup") {
            startup().await;
        }
        if wanted("listTasks") {
            list_tasks_round_trip().await;
        }
        if wanted("notifications") {
            notification_throughput().await;
        }
        if wanted("backlog") {
            notification_backlog().await;
        }
        if wanted("cost") {
            notification_cost();
        }
        if wanted("memory") {
            memory().await;
        }
    });
}
