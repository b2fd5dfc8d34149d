//! A small typed LSP client for the tests: it spawns the real `conclave serve --stdio`
//! binary, frames JSON-RPC over its stdin/stdout, and lets a test send requests, wait
//! for the notifications and server-to-client requests it expects (with a deadline, never
//! a sleep), and answer them. Every byte the server writes to stdout must be a frame:
//! anything else fails the test.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long any single wait may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(30);

pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: mpsc::UnboundedReceiver<Value>,
    /// Messages received but not yet asked for, oldest first.
    backlog: VecDeque<Value>,
    next_id: i64,
    pub workspace: PathBuf,
    pub stderr: PathBuf,
}

/// A workspace for a server: a temp dir with `conclave.toml` and, when given, a script.
pub struct Workspace {
    pub dir: tempfile::TempDir,
}

impl Workspace {
    /// A workspace whose team runs on the scripted model with `script`, rules review,
    /// one call attempt and tiny ladder delays; `extra` is appended to conclave.toml.
    pub fn scripted(script: Value, extra: &str) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
        std::fs::write(
            dir.path().join("conclave.toml"),
            format!(
                "heartbeatMs = 1000\n{extra}\n[llm]\nprovider = \"scripted\"\nscript = \"script.json\"\n\
                 [governance]\nreview = \"rules\"\n[recovery.call]\nmaxAttempts = 1\n\
                 [recovery.severity.low]\nbaseDelayMs = 10\n[recovery.severity.medium]\nbaseDelayMs = 10\n\
                 [recovery.severity.high]\nbaseDelayMs = 10\n"
            ),
        )
        .unwrap();
        Workspace { dir }
    }

    /// A workspace with no configuration at all.
    pub fn empty() -> Workspace {
        Workspace {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn uri(&self, relative: &str) -> String {
        let root = self.dir.path().canonicalize().unwrap();
        format!("file://{}/{relative}", root.display())
    }

    pub fn read(&self, relative: &str) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join(relative)).ok()
    }
}

/// The client capabilities of an editor like VS Code: applyEdit with resource
/// operations, work-done progress, and everything Conclave can show.
pub fn full_capabilities() -> Value {
    json!({
        "workspace": { "applyEdit": true,
                       "workspaceEdit": { "documentChanges": true, "resourceOperations": ["create", "rename", "delete"] } },
        "window": { "workDoneProgress": true },
        "experimental": { "conclave": { "approvals": true, "whiteboards": true, "recoveryStatus": true } }
    })
}

/// A client that announces nothing and cannot apply edits.
pub fn bare_capabilities() -> Value {
    json!({})
}

impl Server {
    pub async fn spawn(workspace: &Path) -> Server {
        Server::spawn_with(workspace, &[], &[]).await
    }

    pub async fn spawn_with(workspace: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        let stderr = workspace.join(format!("serve-{}.log", uuid::Uuid::new_v4().simple()));
        let mut command = Command::new(env!("CARGO_BIN_EXE_conclave"));
        command
            .arg("serve")
            .arg("--stdio")
            .args(args)
            .current_dir(workspace)
            .env(
                "RUST_LOG",
                std::env::var("CONCLAVE_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("the conclave binary starts");
        let stdout = child.stdout.take().unwrap();
        let (sender, incoming) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_frame(&mut reader).await {
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        Server {
            stdin: child.stdin.take(),
            child,
            incoming,
            backlog: VecDeque::new(),
            next_id: 0,
            workspace: workspace.to_path_buf(),
            stderr,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the server runs")
    }

    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    pub async fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).unwrap();
        self.send_raw(&body).await;
    }

    /// One frame with exactly this body.
    pub async fn send_raw(&mut self, body: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        stdin.write_all(&frame).await.unwrap();
        stdin.flush().await.unwrap();
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await;
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error)`.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        self.response(json!(id)).await
    }

    /// Sends a request without waiting for its response; its id.
    pub async fn send_request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        id
    }

    /// Every message received so far and not yet waited for, oldest first.
    pub fn received(&mut self) -> &VecDeque<Value> {
        while let Ok(message) = self.incoming.try_recv() {
            self.backlog.push_back(message);
        }
        &self.backlog
    }

    /// The response to request `id`.
    pub async fn response(&mut self, id: Value) -> Result<Value, Value> {
        let response = self
            .wait_for(&format!("the response to request {id}"), |m| {
                m.get("method").is_none() && m["id"] == id
            })
            .await;
        match response.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(response["result"].clone()),
        }
    }

    /// A request that must succeed.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        match self.request(method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method} failed: {error}\n{}", self.stderr_text()),
        }
    }

    pub async fn initialize(&mut self, capabilities: Value, options: Value) -> Value {
        let result = self.initialize_only(capabilities, options).await;
        self.notify("initialized", json!({})).await;
        result
    }

    /// `initialize` without the `initialized` notification that should follow.
    pub async fn initialize_only(&mut self, capabilities: Value, options: Value) -> Value {
        let root = self.workspace.canonicalize().unwrap();
        self.call(
            "initialize",
            json!({
                "processId": std::process::id(),
                "rootUri": format!("file://{}", root.display()),
                "capabilities": capabilities,
                "initializationOptions": options,
            }),
        )
        .await
    }

    /// The next message (oldest first) that `matches`; the others stay for later waits.
    pub async fn wait_for(&mut self, what: &str, mut matches: impl FnMut(&Value) -> bool) -> Value {
        if let Some(index) = self.backlog.iter().position(&mut matches) {
            return self.backlog.remove(index).unwrap();
        }
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Ok(Some(message)) if matches(&message) => return message,
                Ok(Some(message)) => self.backlog.push_back(message),
                Ok(None) => panic!(
                    "the server closed stdout while the test waited for {what}\n{}",
                    self.stderr_text()
                ),
                Err(_) => panic!(
                    "waited {DEADLINE:?} for {what}; received meanwhile:\n{}\n--- stderr ---\n{}",
                    self.backlog
                        .iter()
                        .map(|m| m.to_string().chars().take(1200).collect::<String>())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    self.stderr_text()
                ),
            }
        }
    }

    /// The next notification `method` whose params satisfy `matches`.
    pub async fn notification(
        &mut self,
        method: &str,
        mut matches: impl FnMut(&Value) -> bool,
    ) -> Value {
        let message = self
            .wait_for(&format!("a {method} notification"), |m| {
                m.get("id").is_none() && m["method"] == method && matches(&m["params"])
            })
            .await;
        message["params"].clone()
    }

    /// The `conclave/taskUpdated` where task `id` has `status`.
    pub async fn task_status(&mut self, id: &str, status: &str) -> Value {
        self.notification("conclave/taskUpdated", |p| {
            p["task"]["taskId"] == id && p["task"]["status"] == status
        })
        .await["task"]
            .clone()
    }

    /// The next server-to-client request `method`: its id and params.
    pub async fn server_request(&mut self, method: &str) -> (Value, Value) {
        let message = self
            .wait_for(&format!("a {method} request"), |m| {
                m.get("id").is_some() && m["method"] == method
            })
            .await;
        (message["id"].clone(), message["params"].clone())
    }

    pub async fn respond(&mut self, id: Value, result: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
            .await;
    }

    pub async fn respond_error(&mut self, id: Value, code: i64, message: &str) {
        self.send(
            &json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }),
        )
        .await;
    }

    /// Submits a task and returns its id.
    pub async fn submit(&mut self, description: &str) -> String {
        let result = self
            .call("conclave/submitTask", json!({ "description": description }))
            .await;
        result["taskId"].as_str().unwrap().to_string()
    }

    /// `shutdown` then `exit`; the exit status.
    pub async fn shutdown_and_exit(mut self) -> ExitStatus {
        assert_eq!(self.call("shutdown", Value::Null).await, Value::Null);
        self.notify("exit", Value::Null).await;
        self.exit_status().await
    }

    pub async fn exit_status(&mut self) -> ExitStatus {
        tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .expect("the server exits")
            .unwrap()
    }

    /// Every message not yet waited for, up to the end of stdout (send `exit` first).
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut rest: Vec<Value> = self.backlog.drain(..).collect();
        while let Some(message) = tokio::time::timeout(DEADLINE, self.incoming.recv())
            .await
            .expect("the server closes stdout")
        {
            rest.push(message);
        }
        rest
    }

    /// Closes the server's stdin.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }
}

/// Reads one Content-Length frame; `None` at the end of the stream. Anything on stdout
/// that is not a frame panics: stdout is protocol only.
async fn read_frame<R: tokio::io::AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Option<Value> {
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or_else(|| {
            panic!("stdout carried something that is not a frame header: {header:?}")
        });
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.trim().parse::<usize>().unwrap());
        }
    }
    let mut body = vec![0; length.expect("every frame has a Content-Length")];
    reader.read_exact(&mut body).await.ok()?;
    Some(serde_json::from_slice(&body).expect("every frame body is JSON"))
}

/// A plan answer for the mid's planning call.
pub fn plan(subtasks: &[&str]) -> Value {
    let list: Vec<Value> = subtasks
        .iter()
        .map(|d| json!({ "description": d }))
        .collect();
    json!({ "match": "Plan this task", "text": json!({ "subtasks": list }).to_string() })
}

/// A bottom agent's two steps for `description`: write `path`, then say it is done
/// (matched on the tool's result, which no other agent's request contains).
pub fn writes(description: &str, path: &str, content: &str) -> [Value; 2] {
    [
        json!({ "match": description, "toolCalls": [ { "name": "file_write", "arguments": { "path": path, "content": content } } ] }),
        json!({ "match": format!("created {path}"), "text": format!("Wrote {path}.") }),
    ]
}

/// A script from steps and groups of steps (arrays are flattened one level).
pub fn script(parts: Vec<Value>) -> Value {
    let mut steps = Vec::new();
    for part in parts {
        match part {
            Value::Array(group) => steps.extend(group),
            step => steps.push(step),
        }
    }
    Value::Array(steps)
}
