//! MCP tools through `conclave run`: the real binary, a workspace whose `conclave.toml`
//! names a real MCP server (`examples/mcp_echo.rs`, made with the official SDK) over
//! stdio or streamable HTTP, and the scripted model calling its tools as
//! `mcp__echo__<tool>`. What the server received is read back from its call log.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::support::run;

/// The test server, built once per test run.
fn echo_server() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "--quiet", "--example", "mcp_echo"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        // Not the variables cargo set for this test (CARGO_PKG_NAME, CARGO_MANIFEST_DIR,
        // ...): build scripts that watch them (ring's) would run again, and everything
        // above ring be rebuilt here and again by the next cargo command.
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("CARGO_PKG_")
                || name.starts_with("CARGO_MANIFEST_")
                || ["CARGO_CRATE_NAME", "CARGO_PRIMARY_PACKAGE", "OUT_DIR"].contains(&&*name)
            {
                cargo.env_remove(&*name);
            }
        }
        let status = cargo.status().expect("cargo runs");
        assert!(status.success(), "the mcp_echo example builds");
        // target/debug/deps/<this test> → target/debug/examples/mcp_echo
        let exe = std::env::current_exe().expect("the test's path");
        let debug = exe.parent().and_then(Path::parent).expect("target/debug");
        let server = debug.join("examples").join("mcp_echo");
        assert!(server.is_file(), "{} exists", server.display());
        server
    })
}

/// A workspace with `extra` after the base configuration and the scripted steps.
fn workspace(extra: &str, steps: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("conclave.toml"),
        format!("{}\n{extra}", run::SCRIPTED),
    )
    .expect("config");
    std::fs::write(
        dir.path().join("script.json"),
        serde_json::to_string_pretty(&json!({ "name": "mcp", "steps": steps })).expect("json"),
    )
    .expect("script");
    dir
}

/// `[[mcp.servers]]` for the stdio echo server with `env` (TOML inline table entries).
fn stdio_server(env: &str, more: &str) -> String {
    format!(
        "[[mcp.servers]]\nname = \"echo\"\ncommand = {:?}\nenv = {{ MCP_ECHO_VALUES = \"colour=teal,size=9\"{env} }}\n{more}\n",
        echo_server().display().to_string()
    )
}

fn conclave(workspace: &Path, task: &str, approve: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .arg("run")
        .arg(task)
        .args(["--approve", approve, "--workspace"])
        .arg(workspace)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        // A credential in Conclave's own environment, which no server may see.
        .env("CONCLAVE_TEST_API_KEY", "sk-test-7a6b5c4d3e2f1a0b")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The calls the echo server received, one `name {arguments}` a line.
fn calls(workspace: &Path) -> Vec<String> {
    std::fs::read_to_string(workspace.join("mcp-echo-calls.log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

fn plan(description: &str) -> Value {
    json!({ "match": "Plan this task for", "text": json!({ "subtasks": [ { "description": description } ] }).to_string() })
}

fn call(on: &str, tool: &str, arguments: Value) -> Value {
    json!({ "match": on, "toolCalls": [ { "name": tool, "arguments": arguments } ] })
}

/// The end of a subtask: write `colour.txt`, then say it is done.
fn write_colour(on: &str, content: &str) -> Vec<Value> {
    vec![
        call(
            on,
            "file_write",
            json!({ "path": "colour.txt", "content": content }),
        ),
        json!({ "match": "created colour.txt", "text": "colour.txt is written." }),
    ]
}

const TASK: &str = "Look up the colour in the echo table and write it to colour.txt";

fn lookup_steps() -> Vec<Value> {
    let mut steps = vec![
        plan(TASK),
        call(
            "Look up the colour",
            "mcp__echo__lookup",
            json!({ "key": "colour" }),
        ),
    ];
    steps.extend(write_colour("colour = teal", "teal\n"));
    steps
}

#[test]
fn an_agent_calls_an_mcp_tool_approved_as_a_command_and_uses_its_result() {
    let ws = workspace(&stdio_server("", ""), Value::Array(lookup_steps()));
    let output = conclave(ws.path(), TASK, "auto");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("colour.txt")).unwrap(),
        "teal\n"
    );
    // Under the default `approvals.commands = "ask"` the call was asked, as a call.
    assert!(err.contains("Call `mcp__echo__lookup`?"), "{err}");
    assert_eq!(calls(ws.path()), [r#"lookup {"key":"colour"}"#], "{err}");
}

#[test]
fn a_refused_mcp_call_is_never_made_nor_asked_again() {
    let steps = vec![
        plan(TASK),
        call(
            "Look up the colour",
            "mcp__echo__lookup",
            json!({ "key": "colour" }),
        ),
        // Told the refusal is final, a stubborn model tries the same call again.
        json!({ "match": "was not called", "toolCalls": [ { "name": "mcp__echo__lookup", "arguments": { "key": "colour" } } ], "repeat": true }),
    ];
    let ws = workspace(&stdio_server("", ""), Value::Array(steps));
    let output = conclave(ws.path(), TASK, "deny");
    let err = stderr(&output);
    assert_ne!(output.status.code(), Some(0), "{err}");
    assert!(calls(ws.path()).is_empty(), "the server got no call: {err}");
    assert_eq!(
        err.matches("approval requested (command, medium): Call `mcp__echo__lookup`?")
            .count(),
        1,
        "asked once, refused once: {err}"
    );
    assert!(
        err.contains("reject (--approve deny) — Call `mcp__echo__lookup`?"),
        "{err}"
    );
    // Final: the ladder gives up at once instead of retrying what was refused.
    assert!(!err.contains("attempt 2"), "{err}");
    assert!(!ws.path().join("colour.txt").exists());
}

#[test]
fn the_server_sees_the_scrubbed_environment_and_only_the_variables_named_for_it() {
    let mut steps = vec![
        plan(TASK),
        call(
            "Look up the colour",
            "mcp__echo__env",
            json!({ "name": "CONCLAVE_TEST_API_KEY" }),
        ),
        call("(unset)", "mcp__echo__env", json!({ "name": "ECHO_GIVEN" })),
    ];
    steps.extend(write_colour("given-by-config", "teal\n"));
    let ws = workspace(
        &format!(
            "{}\n[approvals]\ncommands = \"auto\"\n",
            stdio_server(", ECHO_GIVEN = \"given-by-config\"", "")
        ),
        Value::Array(steps),
    );
    let output = conclave(ws.path(), TASK, "deny");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(calls(ws.path()).len(), 2, "{err}");
    // `commands = "auto"`: nobody was asked.
    assert!(!err.contains("Call `mcp__echo__"), "{err}");
}

#[test]
fn a_hanging_mcp_tool_times_out_and_the_server_goes_on() {
    let mut steps = vec![
        plan(TASK),
        call("Look up the colour", "mcp__echo__hang", json!({})),
        call(
            "timed out after",
            "mcp__echo__lookup",
            json!({ "key": "colour" }),
        ),
    ];
    steps.extend(write_colour("colour = teal", "teal\n"));
    let ws = workspace(
        &format!(
            "{}\n[approvals]\ncommands = \"auto\"\n",
            stdio_server("", "timeoutMs = 500")
        ),
        Value::Array(steps),
    );
    let started = std::time::Instant::now();
    let output = conclave(ws.path(), TASK, "deny");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        calls(ws.path()),
        ["hang {}", r#"lookup {"key":"colour"}"#],
        "the hang was not repeated: {err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn a_crashed_server_is_said_so_and_started_again_at_the_next_call() {
    let mut steps = vec![
        plan(TASK),
        call("Look up the colour", "mcp__echo__crash", json!({})),
        call(
            "started again at the next call",
            "mcp__echo__lookup",
            json!({ "key": "colour" }),
        ),
    ];
    steps.extend(write_colour("colour = teal", "teal\n"));
    let ws = workspace(
        &format!(
            "{}\n[approvals]\ncommands = \"auto\"\n",
            stdio_server("", "")
        ),
        Value::Array(steps),
    );
    let output = conclave(ws.path(), TASK, "deny");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        calls(ws.path()),
        ["crash {}", r#"lookup {"key":"colour"}"#],
        "{err}"
    );
    assert!(
        err.contains("crashing on purpose"),
        "its stderr is told: {err}"
    );
}

#[test]
fn a_server_that_cannot_start_is_reported_once_and_tasks_go_on_without_it() {
    let mut steps = vec![plan("Write teal to colour.txt")];
    steps.extend(write_colour("Write teal to colour.txt", "teal\n"));
    let ws = workspace(
        &stdio_server(", MCP_ECHO_FAIL_START = \"1\"", ""),
        Value::Array(steps),
    );
    let output = conclave(ws.path(), "Write teal to colour.txt", "auto");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("colour.txt")).unwrap(),
        "teal\n"
    );
    assert_eq!(err.matches("is not available").count(), 1, "{err}");
    assert!(err.contains("exited with code 2"), "{err}");
    assert!(
        err.contains("MCP_ECHO_FAIL_START is set"),
        "its stderr is told: {err}"
    );
}

/// The echo server over streamable HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(dir: &Path) -> HttpServer {
        let mut child = Command::new(echo_server())
            .arg("--http")
            .current_dir(dir)
            .env("MCP_ECHO_VALUES", "colour=teal")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the echo server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its address");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .expect("the address line")
            .to_string();
        HttpServer { child, url }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_streamable_http_server_is_used_the_same_way() {
    let logs = tempfile::tempdir().expect("temp dir");
    let server = HttpServer::start(logs.path());
    let ws = workspace(
        &format!(
            "[[mcp.servers]]\nname = \"echo\"\nurl = {:?}\nheaders = {{ X-Echo-Token = \"${{CONCLAVE_TEST_API_KEY}}\" }}\n",
            server.url
        ),
        Value::Array(lookup_steps()),
    );
    let output = conclave(ws.path(), TASK, "auto");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("colour.txt")).unwrap(),
        "teal\n"
    );
    assert!(err.contains("Call `mcp__echo__lookup`?"), "{err}");
    assert_eq!(calls(logs.path()), [r#"lookup {"key":"colour"}"#], "{err}");
    assert!(!err.contains("sk-test-7a6b5c4d3e2f1a0b"), "{err}");
}
