//! The fault matrix through the real binary: `conclave run` against the fault-injecting
//! OpenAI-compatible server (`faults_support`), in a temporary workspace, checking the
//! exit code, every file, the server's call counts, stderr and ERROR_REPORT.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::faults::{Fault, FaultPlan, FaultServer, config_at, config_for, task_for};
use crate::support::lsp;

const FILES: [(&str, &str); 2] = [("alpha.txt", "hello"), ("beta.txt", "goodbye")];

fn workspace(server: &FaultServer, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("conclave.toml"), config_for(server, extra)).expect("config");
    dir
}

/// Runs `conclave run` off the async runtime, so the server keeps answering.
async fn conclave(workspace: &Path, args: &[&str]) -> Output {
    let workspace = workspace.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("run")
            .args(&args)
            .arg("--workspace")
            .arg(&workspace)
            .env_remove("RUST_LOG")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .expect("conclave runs")
    })
    .await
    .expect("join")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn error_reports(workspace: &Path) -> Vec<PathBuf> {
    let sessions = workspace.join(".conclave").join("sessions");
    let Ok(entries) = std::fs::read_dir(sessions) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("ERROR_REPORT.md"))
        .filter(|p| p.exists())
        .collect()
}

fn assert_files_right(workspace: &Path, err: &str) {
    for (path, content) in FILES {
        assert_eq!(
            std::fs::read_to_string(workspace.join(path))
                .ok()
                .as_deref(),
            Some(content),
            "{path}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_transient_faults_at_10_and_30_percent_never_fail_a_task() {
    for (rate, seed) in [(0.1, 11), (0.3, 12), (0.3, 13)] {
        let server = FaultServer::start(FaultPlan::random(rate, seed)).await;
        let ws = workspace(&server, "");
        let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "deny"]).await;
        let err = stderr(&output);
        let stats = server.stats();
        assert_eq!(
            output.status.code(),
            Some(0),
            "rate {rate}: {stats:?}\n{err}"
        );
        assert_files_right(ws.path(), &err);
        assert!(error_reports(ws.path()).is_empty(), "{err}");
        // Provider trouble never reached a person or the top of the ladder.
        assert!(!err.contains("escalation to"), "{err}");
        assert!(!err.contains("gave up"), "{err}");
        // No breaker opened: random faults are judged after call-level retries.
        assert!(!err.contains("paused for"), "rate {rate}: {err}");
        for (path, _) in FILES {
            assert!(
                stats.writes.get(path).copied().unwrap_or(0) >= 1,
                "{path}: {stats:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_mid_task_is_waited_out_and_the_task_completes_without_a_person() {
    // 503 on every call for 3 s after the first call (the plan), then healthy again.
    let server = FaultServer::start(FaultPlan {
        outage: Some((Duration::from_millis(1), Duration::from_secs(3))),
        ..FaultPlan::default()
    })
    .await;
    let ws = workspace(&server, "");
    let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "deny"]).await;
    let err = stderr(&output);
    let stats = server.stats();
    assert_eq!(output.status.code(), Some(0), "{stats:?}\n{err}");
    assert_files_right(ws.path(), &err);
    assert!(stats.outage_calls > 0, "{stats:?}");
    // The wait was visible, named the provider, and cost no escalation.
    assert!(
        err.contains(&format!("waiting for {}", server.provider_name())),
        "{err}"
    );
    assert!(err.contains("next try in"), "{err}");
    assert!(!err.contains("escalation to"), "{err}");
    assert!(!err.contains("(--approve deny)"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_named_at_once_and_waited_out_until_the_server_starts() {
    // A port nobody listens on yet: every call is refused until the server starts.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(
        ws.path().join("conclave.toml"),
        config_at(&format!("http://127.0.0.1:{port}/v1"), ""),
    )
    .unwrap();
    let task = task_for(&FILES);
    let args = [task.as_str(), "--approve", "deny"];
    let run = conclave(ws.path(), &args);
    let starts_late = async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        FaultServer::start_on(&format!("127.0.0.1:{port}"), FaultPlan::default()).await
    };
    let (output, server) = tokio::join!(run, starts_late);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{:?}\n{err}", server.stats());
    assert_files_right(ws.path(), &err);
    assert!(
        err.contains(&format!(
            " (connection refused at http://127.0.0.1:{port}), next try in"
        )),
        "the wait says why, and where: {err}"
    );
    assert!(!err.contains("escalation to"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_before_the_first_byte_and_mid_stream_are_cut_by_silence_and_retried() {
    // Half the calls stall for 20 s, before their answer or in its middle; the
    // step ceiling is a minute, so only the silence timeouts can cut them in time.
    let server = FaultServer::start(FaultPlan {
        seed: 1,
        rate: 0.5,
        kinds: vec![
            Fault::Stall { millis: 20_000 },
            Fault::StallMidStream { millis: 20_000 },
        ],
        ..FaultPlan::default()
    })
    .await;
    let ws = tempfile::tempdir().unwrap();
    let config = config_for(&server, "").replace(
        "stepTimeoutMs = 400",
        "stepTimeoutMs = 60000\nidleTimeoutMs = 300\nfirstByteTimeoutMs = 600\nfirstBytePerKTokensMs = 0",
    );
    std::fs::write(ws.path().join("conclave.toml"), config).unwrap();
    let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "deny"]).await;
    let err = stderr(&output);
    let stats = server.stats();
    assert_eq!(output.status.code(), Some(0), "{stats:?}\n{err}");
    assert_files_right(ws.path(), &err);
    assert!(
        stats.by_fault.keys().any(|k| k.contains("StallMidStream"))
            && stats.by_fault.keys().any(|k| k.starts_with("Stall {")),
        "both stalls were injected: {stats:?}"
    );
    // Cut by the silence timeouts (kind `stalled`), not by the step ceiling (`timeout`).
    assert!(err.contains("kind=\"stalled\""), "{err}");
    assert!(!err.contains("kind=\"timeout\""), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_provider_gets_a_bounded_number_of_calls_then_the_task_ends_naming_it() {
    let server = FaultServer::start(FaultPlan {
        always: Some(Fault::Http503),
        always_after: 1,
        ..FaultPlan::default()
    })
    .await;
    // Patience 2 s: the task ends soon with a provider outage.
    let ws = workspace(
        &server,
        "\n[recovery.retryBudget]\ncapacity = 4\nperSuccess = 0.5\n",
    );
    let config = std::fs::read_to_string(ws.path().join("conclave.toml")).unwrap();
    std::fs::write(
        ws.path().join("conclave.toml"),
        config.replace("providerPatienceMs = 120000", "providerPatienceMs = 2000"),
    )
    .unwrap();
    let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "deny"]).await;
    let err = stderr(&output);
    let stats = server.stats();
    assert_eq!(output.status.code(), Some(1), "{err}");
    // The breaker's window (5 failed logical calls opens it) plus the shared retry
    // budget (4), plus one half-open probe per open period (300 ms over 2 s of patience).
    let probes = 2_000 / 300 + 1;
    assert!(
        stats.calls <= 1 + 5 + 4 + probes,
        "{} calls to a dead provider: {err}",
        stats.calls
    );
    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains(&server.provider_name()), "{report}");
    assert!(report.contains("provider_outage"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_is_not_retried_and_reaches_the_person_as_critical() {
    let server = FaultServer::start(FaultPlan {
        always: Some(Fault::Unauthorized),
        always_after: 1,
        ..FaultPlan::default()
    })
    .await;
    let ws = workspace(&server, "");
    let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "deny"]).await;
    let err = stderr(&output);
    let stats = server.stats();
    assert_eq!(output.status.code(), Some(1), "{err}");
    // The plan, then one call per subtask: a 401 is never retried.
    assert_eq!(stats.calls, 3, "{err}");
    assert!(err.contains("escalation to the top layer"), "{err}");
    assert!(err.contains("(--approve deny)"), "{err}");
    let reports = error_reports(ws.path());
    assert_eq!(reports.len(), 1, "{err}");
    let report = std::fs::read_to_string(&reports[0]).unwrap();
    assert!(report.contains("auth (critical, fatal)"), "{report}");
    assert!(report.contains("Check the API key"), "{report}");
}

/// `conclave serve` against the same server: three tasks at 30% random transient faults
/// all complete, an outage window is waited out, and the editor sees the waits as
/// `wait_for_provider` recovery steps naming the provider; no agent ends failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_completes_every_task_through_faults_and_an_outage() {
    let server = FaultServer::start(FaultPlan {
        outage: Some((Duration::from_millis(1), Duration::from_secs(2))),
        ..FaultPlan::random(0.3, 31)
    })
    .await;
    let ws = workspace(&server, "");
    let mut lsp = lsp::Server::spawn(ws.path()).await;
    lsp.initialize(lsp::bare_capabilities(), serde_json::json!({}))
        .await;
    let groups = [
        [("s1.txt", "one"), ("s2.txt", "two")],
        [("s3.txt", "three"), ("s4.txt", "four")],
        [("s5.txt", "five"), ("s6.txt", "six")],
    ];
    let mut ids = Vec::new();
    for files in &groups {
        ids.push(lsp.submit(&task_for(files)).await);
    }
    let wait = lsp
        .notification("conclave/recoveryStatus", |p| {
            p["action"] == "wait_for_provider"
        })
        .await;
    assert_eq!(wait["provider"], server.provider_name().as_str(), "{wait}");
    assert!(
        wait["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("waiting for {} (", server.provider_name())),
        "{wait}"
    );
    for id in &ids {
        lsp.task_status(id, "completed").await;
    }
    for files in &groups {
        for (path, content) in files {
            assert_eq!(
                std::fs::read_to_string(ws.path().join(path))
                    .ok()
                    .as_deref(),
                Some(*content)
            );
        }
    }
    let agents = lsp.call("conclave/listAgents", serde_json::json!({})).await;
    assert!(
        agents["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["status"] != "failed"),
        "{agents}"
    );
    assert!(lsp.shutdown_and_exit().await.success());
}

/// Eight tasks submitted at once over one `serve` connection at 30% faults: every one
/// completes with its files, no task's status goes backwards in what the editor is
/// told, and `conclave/listTasks` answers all along and agrees at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_tasks_at_once_at_30_percent_faults_all_complete_and_stay_consistent() {
    let server = FaultServer::start(FaultPlan::random(0.3, 88)).await;
    let ws = workspace(&server, "");
    let mut lsp = lsp::Server::spawn(ws.path()).await;
    lsp.initialize(lsp::bare_capabilities(), serde_json::json!({}))
        .await;
    let groups: Vec<[(String, String); 2]> = (0..8)
        .map(|i| {
            [
                (format!("load{i}a.txt"), format!("a{i}")),
                (format!("load{i}b.txt"), format!("b{i}")),
            ]
        })
        .collect();
    let mut ids = Vec::new();
    for files in &groups {
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        ids.push(lsp.submit(&task_for(&files)).await);
    }
    // Asked while the team works: every task is listed, every time.
    for _ in 0..3 {
        let listed = lsp.call("conclave/listTasks", serde_json::json!({})).await;
        let listed: Vec<&str> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["taskId"].as_str())
            .collect();
        assert!(
            ids.iter().all(|id| listed.contains(&id.as_str())),
            "{listed:?}"
        );
    }
    for id in &ids {
        lsp.task_status(id, "completed").await;
    }
    for files in &groups {
        for (path, content) in files {
            assert_eq!(
                std::fs::read_to_string(ws.path().join(path))
                    .ok()
                    .as_deref(),
                Some(content.as_str()),
                "{path}"
            );
        }
    }
    let listed = lsp.call("conclave/listTasks", serde_json::json!({})).await;
    for task in listed["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
        assert!(
            task["subtasks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|s| s["status"] == "completed"),
            "{task}"
        );
    }
    // What the editor was told, in order: no finished task was ever reported unfinished
    // again.
    assert_eq!(
        lsp.call("shutdown", serde_json::Value::Null).await,
        serde_json::Value::Null
    );
    lsp.notify("exit", serde_json::Value::Null).await;
    let updates = lsp.rest().await;
    let mut finished: Vec<String> = Vec::new();
    for update in updates
        .iter()
        .filter(|m| m["method"] == "conclave/taskUpdated")
    {
        let task = &update["params"]["task"];
        let id = task["taskId"].as_str().unwrap_or_default().to_string();
        let done = ["completed", "failed", "cancelled"]
            .contains(&task["status"].as_str().unwrap_or_default());
        assert!(done || !finished.contains(&id), "{id} went back: {task}");
        if done {
            finished.push(id);
        }
    }
    assert!(server.stats().faults > 0, "{:?}", server.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_layer_calls_the_model_its_table_names() {
    // A "strong" server reviews and plans, a "small" one codes: [llm] is the small one,
    // [llm.top] and [llm.mid] name the other.
    let small = FaultServer::start(FaultPlan::random(0.0, 1)).await;
    let strong = FaultServer::start(FaultPlan::random(0.0, 2)).await;
    let layers = format!(
        "[governance]\nreview = \"model\"\n\n[llm.top]\nbaseUrl = \"{url}\"\nmodel = \"strong-model\"\n\n[llm.mid]\nbaseUrl = \"{url}\"\nmodel = \"strong-model\"\n",
        url = strong.base_url()
    );
    let ws = tempfile::tempdir().expect("temp dir");
    let config = config_for(&small, "").replace("[governance]\nreview = \"rules\"\n", "") + &layers;
    std::fs::write(ws.path().join("conclave.toml"), config).expect("config");

    let output = conclave(ws.path(), &[&task_for(&FILES), "--approve", "auto"]).await;
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_files_right(ws.path(), &err);
    let (small, strong) = (small.stats(), strong.stats());
    assert!(
        strong.plans >= 1,
        "the mid layer planned on its own model: {strong:?}"
    );
    assert!(
        strong.reviews >= 1,
        "the top layer reviewed on its own model: {strong:?}"
    );
    assert!(
        strong.writes.is_empty(),
        "no coding on the reviewers' model: {strong:?}"
    );
    assert_eq!(
        (small.plans, small.reviews),
        (0, 0),
        "the coders' model only codes: {small:?}"
    );
    for (path, _) in FILES {
        assert!(
            small.writes.contains_key(path),
            "{path} coded on [llm]'s model: {small:?}"
        );
    }
}
