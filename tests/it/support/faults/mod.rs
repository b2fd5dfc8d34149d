//! A fault-injecting OpenAI-compatible model server for the fault matrix.
//!
//! It speaks just enough HTTP/1.1 (one request per connection, `Connection: close`) to
//! answer `POST …/chat/completions` like a small, obedient coding model, and injects
//! faults from a seeded plan: 429 with Retry-After, 500, 503, a garbage 200 body, a
//! truncated stream, a connection reset, a stall before the first byte or in the middle
//! of a stream, an outage window, a permanent 401 or 403 and a permanent 400 context
//! overflow.
//!
//! The "model": a planning prompt (`Plan this task for …`) gets one subtask per file
//! named in the task (`Write the files: a.txt=hello, b.txt=world`); a subtask
//! (`Write a.txt containing exactly: hello`) gets a `file_write` tool call, then, once
//! the tool's result is in the conversation, a one-line summary; a supervisor asked to
//! propose gets `reassign`; a plan to review is approved. The server counts calls, faults and the writes it asked for.

pub mod model;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

/// One kind of injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// 429 with `Retry-After: secs`.
    RateLimited {
        retry_after_secs: u64,
    },
    Http500,
    Http503,
    /// 200 with a body that is not JSON.
    Garbage,
    /// 200 event stream cut off before the answer is complete.
    TruncatedStream,
    /// The connection is closed without an answer.
    Reset,
    /// No answer for this long (past the step timeout).
    Stall {
        millis: u64,
    },
    /// An event stream that begins, then sends nothing for this long.
    StallMidStream {
        millis: u64,
    },
    /// 401, every time.
    Unauthorized,
    /// 403, every time.
    #[allow(dead_code)] // only benches/fault_matrix.rs injects it
    Forbidden,
    /// 400 `context_length_exceeded`, every time.
    #[allow(dead_code)] // only benches/fault_matrix.rs injects it
    ContextOverflow,
}

/// The random transient faults of the matrix, in turn.
pub const TRANSIENT: [Fault; 6] = [
    Fault::RateLimited {
        retry_after_secs: 1,
    },
    Fault::Http500,
    Fault::Http503,
    Fault::Garbage,
    Fault::TruncatedStream,
    Fault::Reset,
];

/// What the server does wrong, and when.
#[derive(Clone, Debug, Default)]
pub struct FaultPlan {
    pub seed: u64,
    /// Share of calls (0–1) that get one of `kinds`, picked at random.
    pub rate: f64,
    pub kinds: Vec<Fault>,
    /// Every call in this window (from the server's first call) answers 503.
    pub outage: Option<(Duration, Duration)>,
    /// Every call gets this fault (a dead provider, a bad key)…
    pub always: Option<Fault>,
    /// …after this many healthy calls (1: the plan goes through).
    pub always_after: u64,
}

impl FaultPlan {
    pub fn random(rate: f64, seed: u64) -> FaultPlan {
        FaultPlan {
            seed,
            rate,
            kinds: TRANSIENT.to_vec(),
            ..FaultPlan::default()
        }
    }
}

/// What the server saw.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub calls: u64,
    pub faults: u64,
    pub by_fault: HashMap<String, u64>,
    /// How often the server asked for a write of each path.
    pub writes: HashMap<String, u64>,
    pub plans: u64,
    /// Plans it was asked to review (as the top layer).
    pub reviews: u64,
    /// Calls answered while the outage window was on.
    pub outage_calls: u64,
}

struct State {
    plan: FaultPlan,
    rng: u64,
    started: Option<Instant>,
    stats: Stats,
}

pub struct FaultServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultServer {
    pub async fn start(plan: FaultPlan) -> FaultServer {
        Self::start_on("127.0.0.1:0", plan).await
    }

    /// As [`FaultServer::start`], on `address` (a port chosen earlier).
    pub async fn start_on(address: &str, plan: FaultPlan) -> FaultServer {
        let listener = TcpListener::bind(address).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State {
            rng: plan.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            plan,
            started: None,
            stats: Stats::default(),
        }));
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, state).await;
                });
            }
        });
        FaultServer { addr, state, task }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The provider name Conclave gives this server.
    pub fn provider_name(&self) -> String {
        format!("openai-compatible@{}", self.addr)
    }

    pub fn stats(&self) -> Stats {
        self.state.lock().unwrap().stats.clone()
    }
}

/// A `conclave.toml` for a run against `server`, with small delays so a test takes
/// seconds. `extra` is appended (TOML).
pub fn config_for(server: &FaultServer, extra: &str) -> String {
    config_at(&server.base_url(), extra)
}

/// [`config_for`] a server at `base_url` that may not be listening yet.
pub fn config_at(base_url: &str, extra: &str) -> String {
    format!(
        r#"heartbeatMs = 500

[llm]
provider = "openai"
baseUrl = "{}"
model = "fault-model"
apiKeyEnv = "CONCLAVE_FAULTS_NO_KEY"

[governance]
review = "rules"

[team]
top = 1
mid = 1
bottomPerMid = 2

[recovery]
stepTimeoutMs = 400
maxDelayMs = 400
providerPatienceMs = 120000

[recovery.call]
maxAttempts = 4
baseDelayMs = 10
maxDelayMs = 100

[recovery.severity.low]
baseDelayMs = 5

[recovery.severity.medium]
baseDelayMs = 5

[recovery.severity.high]
baseDelayMs = 5

[recovery.breaker]
window = 10
minCalls = 5
failureRate = 0.5
openMs = 300
halfOpenProbes = 1
{extra}
"#,
        base_url
    )
}

/// The task text for `files` (path, content).
pub fn task_for(files: &[(&str, &str)]) -> String {
    let list: Vec<String> = files.iter().map(|(p, c)| format!("{p}={c}")).collect();
    format!("Write the files: {}", list.join(", "))
}

fn next_unit(state: &mut State) -> f64 {
    // xorshift64*: reproducible per seed, no dependency.
    let mut x = state.rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state.rng = x;
    (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
}

/// Decides this call's fault (if any) and counts it.
fn pick_fault(state: &mut State) -> Option<Fault> {
    let now = Instant::now();
    let started = *state.started.get_or_insert(now);
    state.stats.calls += 1;
    let fault = if let Some(always) = state.plan.always
        && state.stats.calls > state.plan.always_after
    {
        Some(always)
    } else if let Some((from, length)) = state.plan.outage
        && now >= started + from
        && now < started + from + length
    {
        state.stats.outage_calls += 1;
        Some(Fault::Http503)
    } else if state.plan.rate > 0.0 && !state.plan.kinds.is_empty() {
        let roll = next_unit(state);
        let which = next_unit(state);
        (roll < state.plan.rate).then(|| {
            let index =
                ((which * state.plan.kinds.len() as f64) as usize).min(state.plan.kinds.len() - 1);
            state.plan.kinds[index]
        })
    } else {
        None
    };
    if let Some(fault) = fault {
        state.stats.faults += 1;
        *state
            .stats
            .by_fault
            .entry(format!("{fault:?}"))
            .or_default() += 1;
    }
    fault
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Value>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < header_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(serde_json::from_slice(&buf[header_end..]).ok())
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[(&str, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    stream.write_all(out.as_bytes()).await?;
    stream.flush().await
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let fault = pick_fault(&mut state.lock().unwrap());
    let json_type = ("Content-Type", "application/json".to_string());
    match fault {
        Some(Fault::RateLimited { retry_after_secs }) => {
            let body = json!({"error": {"message": "Rate limit reached, slow down", "type": "rate_limit_error"}});
            respond(
                &mut stream,
                "429 Too Many Requests",
                &[json_type, ("Retry-After", retry_after_secs.to_string())],
                &body.to_string(),
            )
            .await
        }
        Some(Fault::Http500) => {
            let body = json!({"error": {"message": "internal error", "type": "server_error"}});
            respond(
                &mut stream,
                "500 Internal Server Error",
                &[json_type],
                &body.to_string(),
            )
            .await
        }
        Some(Fault::Http503) => {
            let body =
                json!({"error": {"message": "the model is overloaded", "type": "server_error"}});
            respond(
                &mut stream,
                "503 Service Unavailable",
                &[json_type],
                &body.to_string(),
            )
            .await
        }
        Some(Fault::Garbage) => {
            respond(
                &mut stream,
                "200 OK",
                &[json_type],
                "<html>upstream proxy error</html>",
            )
            .await
        }
        Some(Fault::TruncatedStream) => {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": "I will"}}]});
            stream
                .write_all(format!("{head}data: {chunk}\n\n").as_bytes())
                .await?;
            stream.flush().await
        }
        Some(Fault::Reset) => {
            // Closing with unread data would reset; closing right away drops the answer.
            drop(stream);
            Ok(())
        }
        Some(Fault::Stall { millis }) => {
            tokio::time::sleep(Duration::from_millis(millis)).await;
            Ok(())
        }
        Some(Fault::StallMidStream { millis }) => {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": "I will"}}]});
            stream
                .write_all(format!("{head}data: {chunk}\n\n").as_bytes())
                .await?;
            stream.flush().await?;
            tokio::time::sleep(Duration::from_millis(millis)).await;
            Ok(())
        }
        Some(Fault::Unauthorized) => {
            let body = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
            respond(
                &mut stream,
                "401 Unauthorized",
                &[json_type],
                &body.to_string(),
            )
            .await
        }
        Some(Fault::Forbidden) => {
            let body = json!({"error": {"message": "This key may not use this model", "type": "permission_error"}});
            respond(
                &mut stream,
                "403 Forbidden",
                &[json_type],
                &body.to_string(),
            )
            .await
        }
        Some(Fault::ContextOverflow) => {
            let body = json!({"error": {"message": "This model's maximum context length is 4096 tokens", "type": "invalid_request_error", "code": "context_length_exceeded"}});
            respond(
                &mut stream,
                "400 Bad Request",
                &[json_type],
                &body.to_string(),
            )
            .await
        }
        None => {
            let answer = think(&request, &state);
            respond(&mut stream, "200 OK", &[json_type], &answer.to_string()).await
        }
    }
}

fn completion(message: Value, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "model": "fault-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

fn text(content: &str) -> Value {
    completion(json!({"role": "assistant", "content": content}), "stop")
}

/// The obedient model.
fn think(request: &Value, state: &Arc<Mutex<State>>) -> Value {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let first = users.first().copied().unwrap_or("");
    if first.starts_with("Plan this task for") {
        state.lock().unwrap().stats.plans += 1;
        let files = first
            .split("Write the files:")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .unwrap_or("");
        let subtasks: Vec<Value> = files
            .split(',')
            .filter_map(|pair| pair.trim().split_once('='))
            .map(|(path, content)| {
                json!({ "description": format!("Write {path} containing exactly: {content}"), "dependsOn": [] })
            })
            .collect();
        return text(&json!({ "subtasks": subtasks }).to_string());
    }
    if first.starts_with("Review this plan against the task.") {
        state.lock().unwrap().stats.reviews += 1;
        return text(r#"{"approve": true, "reason": "every file the task names is written"}"#);
    }
    if first.contains("Propose what to do") {
        return text(r#"{"action": "reassign", "reason": "another agent may have better luck"}"#);
    }
    if let Some(rest) = first.lines().next().and_then(|l| l.strip_prefix("Write "))
        && let Some((path, content)) = rest.split_once(" containing exactly: ")
    {
        let answered = messages.iter().any(|m| m["role"] == "tool");
        if answered {
            return text(&format!("{path} is written."));
        }
        *state
            .lock()
            .unwrap()
            .stats
            .writes
            .entry(path.to_string())
            .or_default() += 1;
        return completion(
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "file_write",
                        "arguments": json!({ "path": path, "content": content }).to_string()
                    }
                }]
            }),
            "tool_calls",
        );
    }
    text("Done.")
}
