//! `conclave acp` as an ACP client meets it (issue 15). Run: `cargo bench --bench acp`.
//!
//! The real release binary over pipes, driven by a small newline-delimited JSON-RPC
//! client, on a zero-latency scripted model:
//! - spawn to `initialize` answered;
//! - `session/new` answered (the workspace's lock, store, engine and team started);
//! - `session/prompt` sent to the first `session/update` received;
//! - `session/prompt` sent to its answer (`end_turn`: one subtask writing one file).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let script = json!([
        { "match": "Plan this task", "text": json!({ "subtasks": [{ "description": "Create a.txt" }] }).to_string(), "repeat": true },
        { "match": "Create a.txt", "toolCalls": [{ "name": "file_write", "arguments": { "path": "a.txt", "content": "a\n" } }], "repeat": true },
        { "match": "a.txt", "text": "Wrote a.txt.", "repeat": true },
    ]);
    std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
    std::fs::write(
        dir.path().join("conclave.toml"),
        "heartbeatMs = 1000\nwrites = \"disk\"\n[llm]\nprovider = \"scripted\"\nscript = \"script.json\"\n\
         [governance]\nreview = \"rules\"\n",
    )
    .unwrap();
    dir
}

struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl Agent {
    fn spawn(dir: &Path) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_conclave"))
            .arg("acp")
            .current_dir(dir)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Agent {
            child,
            stdin,
            lines,
            next: 0,
        }
    }

    async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next += 1;
        let line = json!({ "jsonrpc": "2.0", "id": self.next, "method": method, "params": params });
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.next
    }

    /// Reads until `stop` accepts a message; returns it.
    async fn until(&mut self, stop: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the agent ended");
            let message: Value = serde_json::from_str(&line).unwrap();
            if stop(&message) {
                return message;
            }
        }
    }

    async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        let answer = self.until(|m| m["id"] == json!(id)).await;
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    async fn end(mut self) {
        drop(self.stdin);
        let _ = self.child.wait().await;
    }
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    println!(
        "{what}: p50 {:.1} ms, p95 {:.1} ms ({} runs)",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
        times.len()
    );
}

#[tokio::main]
async fn main() {
    let runs = 20;
    let (mut init, mut new, mut first, mut done) = (vec![], vec![], vec![], vec![]);
    for _ in 0..runs {
        let ws = workspace();
        let started = Instant::now();
        let mut agent = Agent::spawn(ws.path());
        agent
            .call(
                "initialize",
                json!({ "protocolVersion": 1, "clientCapabilities": {} }),
            )
            .await;
        init.push(started.elapsed());
        let started = Instant::now();
        let session = agent
            .call("session/new", json!({ "cwd": ws.path(), "mcpServers": [] }))
            .await;
        new.push(started.elapsed());
        // The commands a session offers (`/undo`) are announced right after it opens,
        // before any prompt: not a prompt's first update.
        agent
            .until(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
            .await;
        let started = Instant::now();
        let id = agent
            .send(
                "session/prompt",
                json!({ "sessionId": session["sessionId"], "prompt": [{ "type": "text", "text": "Create a.txt" }] }),
            )
            .await;
        agent.until(|m| m["method"] == "session/update").await;
        first.push(started.elapsed());
        let answer = agent.until(|m| m["id"] == json!(id)).await;
        done.push(started.elapsed());
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
        agent.end().await;
    }
    report("spawn to initialize answered", init);
    report("session/new answered (lock, store, engine, team of 9)", new);
    report("session/prompt to the first session/update", first);
    report(
        "session/prompt to end_turn (plan, one subtask, one file)",
        done,
    );
}
