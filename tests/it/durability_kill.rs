//! Kill it at any moment, start it again, nothing is lost: the real `conclave run`
//! against a slow OpenAI-compatible mock model is SIGKILLed at seeded points (after the
//! k-th progress line, in the middle of a file write, while an approval is pending),
//! then run again on the same workspace.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use conclave::store::Store;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const TASK: &str = "Write the four parts of the manual";
const PARTS: usize = 4;

/// A part's content: large, so that writing it takes a while.
fn content(n: usize) -> String {
    format!("part {n} of the manual\n").repeat(60_000)
}

#[derive(Default)]
struct ModelState {
    after_restart: bool,
    /// Requests per part: (before the kill, after the restart).
    requests: HashMap<usize, (usize, usize)>,
    /// Parts that answer 401 the first time they are asked.
    refuse_once: HashSet<usize>,
}

/// Answers like a chat-completions model would: the mid's planning call gets the plan,
/// a bottom agent's first call for part N gets a `file_write`, the call after the tool
/// result gets "Done.".
struct Model(Arc<Mutex<ModelState>>);

fn completion(message: Value, finish: &str) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "mock",
            "choices": [ { "index": 0, "message": message, "finish_reason": finish } ],
            "usage": { "prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20 }
        }))
        .set_delay(Duration::from_millis(150))
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let first_user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string();
        if first_user.starts_with("Plan this task") {
            let subtasks: Vec<Value> = (1..=PARTS)
                .map(|n| json!({ "description": format!("Write part-{n}.txt") }))
                .collect();
            return completion(
                json!({ "role": "assistant", "content": json!({ "subtasks": subtasks }).to_string() }),
                "stop",
            );
        }
        let Some(n) = first_user
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("Write part-"))
            .and_then(|l| l.strip_suffix(".txt"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return ResponseTemplate::new(400).set_body_string("unexpected request");
        };
        let mut state = self.0.lock().unwrap();
        let after = state.after_restart;
        let counts = state.requests.entry(n).or_default();
        if after {
            counts.1 += 1
        } else {
            counts.0 += 1
        }
        if messages.last().is_some_and(|m| m["role"] == "tool") {
            return completion(
                json!({ "role": "assistant", "content": format!("Done: part {n} written.") }),
                "stop",
            );
        }
        if state.refuse_once.remove(&n) {
            return ResponseTemplate::new(401).set_body_json(json!({ "error": { "message": "invalid api key", "type": "invalid_request_error" } }));
        }
        let args = json!({ "path": format!("part-{n}.txt"), "content": content(n) }).to_string();
        completion(
            json!({ "role": "assistant", "content": null, "tool_calls": [ { "id": format!("call_{n}"), "type": "function", "function": { "name": "file_write", "arguments": args } } ] }),
            "tool_calls",
        )
    }
}

struct Scenario {
    _server: MockServer,
    model: Arc<Mutex<ModelState>>,
    workspace: tempfile::TempDir,
}

async fn scenario(refuse_once: &[usize]) -> Scenario {
    let server = MockServer::start().await;
    let model = Arc::new(Mutex::new(ModelState {
        refuse_once: refuse_once.iter().copied().collect(),
        ..ModelState::default()
    }));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Model(model.clone()))
        .mount(&server)
        .await;
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(
        workspace.path().join("conclave.toml"),
        format!(
            "heartbeatMs = 500\n[llm]\nprovider = \"openai\"\nmodel = \"mock\"\nbaseUrl = \"{}/v1\"\n\
             [governance]\nreview = \"rules\"\n[recovery.call]\nmaxAttempts = 1\n",
            server.uri()
        ),
    )
    .unwrap();
    Scenario {
        _server: server,
        model,
        workspace,
    }
}

fn spawn(workspace: &Path, approve: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args([
            "run",
            TASK,
            "--workspace",
            workspace.to_str().unwrap(),
            "--approve",
            approve,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Progress lines of `child` as they come.
fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// What the store holds right after the kill.
struct AtKill {
    message_ids: HashSet<String>,
    completed_parts: Vec<usize>,
    pending_approvals: Vec<uuid::Uuid>,
}

async fn inspect_after_kill(workspace: &Path) -> AtKill {
    // A store left by a killed writer opens cleanly and is consistent.
    let store = Store::open(&Store::default_path(workspace)).unwrap();
    let check: String = store
        .query(|conn| conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
        .await
        .unwrap();
    assert_eq!(check, "ok");
    let message_ids = store
        .messages(None)
        .await
        .unwrap()
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    let completed_parts = store
        .tasks()
        .await
        .unwrap()
        .iter()
        .flat_map(|t| {
            t.subtasks
                .iter()
                .filter(|s| s.status == conclave::runtime::SubtaskStatus::Completed)
                .map(|s| s.description.clone())
        })
        .filter_map(|d| {
            d.strip_prefix("Write part-")?
                .strip_suffix(".txt")?
                .parse()
                .ok()
        })
        .collect();
    let pending_approvals = store
        .pending_approvals()
        .await
        .unwrap()
        .iter()
        .map(|a| a.approval_id)
        .collect();
    AtKill {
        message_ids,
        completed_parts,
        pending_approvals,
    }
}

/// Every file is either absent or whole and right, never half-written.
fn check_files(workspace: &Path, all_present: bool) {
    for n in 1..=PARTS {
        match std::fs::read_to_string(workspace.join(format!("part-{n}.txt"))) {
            Ok(text) => assert!(
                text == content(n),
                "part-{n}.txt is not whole ({} bytes)",
                text.len()
            ),
            Err(_) => assert!(!all_present, "part-{n}.txt is missing"),
        }
    }
}

/// Restarts on the same workspace, answering approvals automatically, and checks that
/// the task completes without losing or redoing anything.
async fn restart_and_check(s: &Scenario, at_kill: AtKill) {
    s.model.lock().unwrap().after_restart = true;
    let ws = s.workspace.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_conclave"))
            .args([
                "run",
                TASK,
                "--workspace",
                ws.to_str().unwrap(),
                "--approve",
                "auto",
            ])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the resumed run failed:\n{stderr}");
    check_files(s.workspace.path(), true);
    let leftovers: Vec<_> = std::fs::read_dir(s.workspace.path())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".conclave-write-")
        })
        .collect();
    assert!(
        leftovers.is_empty(),
        "temp files left behind: {leftovers:?}"
    );

    let store = Store::open(&Store::default_path(s.workspace.path())).unwrap();
    let tasks = store.tasks().await.unwrap();
    assert_eq!(
        tasks.len(),
        1,
        "the restarted run resumed the task instead of starting another"
    );
    assert_eq!(tasks[0].status, conclave::runtime::TaskStatus::Completed);
    // Every event recorded before the kill is still there.
    let after: HashSet<String> = store
        .messages(None)
        .await
        .unwrap()
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    assert!(
        at_kill.message_ids.is_subset(&after),
        "events recorded before the kill were lost"
    );
    // No subtask completed before the kill ran again.
    let model = s.model.lock().unwrap();
    for part in &at_kill.completed_parts {
        assert_eq!(
            model.requests.get(part).map(|c| c.1).unwrap_or(0),
            0,
            "part {part} was completed before the kill and ran again"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_seeded_progress_lines_it_resumes_and_completes() {
    // Seeded kill points: after the k-th progress line of the first run.
    for seed in [3u64, 11, 29] {
        let s = scenario(&[]).await;
        let mut child = spawn(s.workspace.path(), "deny");
        let progress = lines(&mut child);
        let k = 2 + (seed * 7_919 % 12) as usize;
        for _ in 0..k {
            if progress.recv_timeout(Duration::from_secs(60)).is_err() {
                break;
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        check_files(s.workspace.path(), false);
        let at_kill = inspect_after_kill(s.workspace.path()).await;
        restart_and_check(&s, at_kill).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_in_the_middle_of_a_file_write_it_leaves_no_half_file() {
    let s = scenario(&[]).await;
    let mut child = spawn(s.workspace.path(), "deny");
    let _progress = lines(&mut child);
    // Wait until a write is under way: its temp file exists next to where the file goes.
    let caught = loop {
        let writing = std::fs::read_dir(s.workspace.path())
            .unwrap()
            .flatten()
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".conclave-write-")
            });
        if writing {
            break true;
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::yield_now();
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(caught, "the run ended before any write could be caught");
    check_files(s.workspace.path(), false);
    let at_kill = inspect_after_kill(s.workspace.path()).await;
    restart_and_check(&s, at_kill).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_an_approval_is_pending_the_approval_survives_and_can_be_answered() {
    // Part 3 meets a 401 the first time: critical, so it goes straight to the person.
    let s = scenario(&[3]).await;
    let mut child = spawn(s.workspace.path(), "ask");
    let progress = lines(&mut child);
    loop {
        let line = progress
            .recv_timeout(Duration::from_secs(60))
            .expect("the run should ask about part 3");
        if line.to_lowercase().contains("approval") || line.contains("Choose") {
            break;
        }
    }
    // Let the approval reach the store (it is written with the escalation), then kill.
    let store_path = Store::default_path(s.workspace.path());
    let pending = loop {
        let store = Store::open(&store_path).unwrap();
        let pending = store.pending_approvals().await.unwrap();
        if !pending.is_empty() {
            break pending;
        }
        tokio::task::yield_now().await;
    };
    child.kill().unwrap();
    child.wait().unwrap();
    let at_kill = inspect_after_kill(s.workspace.path()).await;
    assert_eq!(
        at_kill.pending_approvals,
        vec![pending[0].approval_id],
        "still pending after the kill"
    );
    let approval = pending[0].approval_id;
    restart_and_check(&s, at_kill).await;
    let store = Store::open(&store_path).unwrap();
    let status: String = store
        .query(move |conn| {
            conn.query_row(
                "SELECT status FROM approvals WHERE id = ?1",
                [approval.to_string()],
                |r| r.get(0),
            )
        })
        .await
        .unwrap();
    assert_eq!(
        status, "answered",
        "the restarted run answered the approval that was pending"
    );
}
