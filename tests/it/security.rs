//! The security model (docs/security.md), attempt by attempt, through the real binary:
//! `conclave run` on a temporary workspace with a scripted model (or a real HTTP model
//! server for the key), a fake home folder holding secrets, and the disk, the store and
//! every request checked afterwards.
//!
//! The scripted model doubles as an observer: a step that matches a secret's text
//! writes a `leaked-*.txt` file, so anything that reached a prompt shows up on disk.

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::run;

/// A workspace (nested one level, so `..` has somewhere to go) and a home folder with
/// an SSH key in it.
struct Setup {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

fn setup(steps: Value, extra_config: &str) -> Setup {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let workspace = base.join("ws");
    let home = base.join("home");
    let outside = base.join("outside");
    for dir in [&workspace, &home.join(".ssh"), &outside] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE-CANARY-7f3a\n").unwrap();
    std::fs::write(home.join(".profile"), "export X=1\n").unwrap();
    std::fs::write(
        workspace.join("conclave.toml"),
        format!("{}\n{extra_config}\n", run::SCRIPTED),
    )
    .unwrap();
    std::fs::write(
        workspace.join("script.json"),
        serde_json::to_string_pretty(&json!({ "name": "probe", "steps": steps })).unwrap(),
    )
    .unwrap();
    Setup {
        _root: root,
        workspace,
        home,
        outside,
    }
}

fn conclave(setup: &Setup, task: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    run_in(&setup.workspace, &setup.home, task, args, env)
}

fn run_in(
    workspace: &Path,
    home: &Path,
    task: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .arg("run")
        .arg(task)
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("HOME", home)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

fn plan(description: &str) -> Value {
    json!({ "match": "Plan this task for", "text": json!({ "subtasks": [{ "description": description }] }).to_string() })
}

/// Steps that write `leaked-<what>.txt` when `canary` reaches the model.
fn observer(canary: &str, what: &str) -> Value {
    json!({ "match": canary, "repeat": true, "toolCalls": [ { "name": "file_write",
        "arguments": { "path": format!("leaked-{what}.txt"), "content": "leaked\n" } } ] })
}

fn leaked(workspace: &Path) -> Vec<String> {
    std::fs::read_dir(workspace)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("leaked-"))
        .collect()
}

/// Whether the kernel can confine (CI's can: there its absence fails the test).
fn confined() -> bool {
    // SAFETY: with a null attribute and size 0 the call reads and writes no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if abi < 4 && std::env::var_os("CI").is_some() {
        panic!("CI needs Landlock ABI 4+ for the sandbox tests (found {abi})");
    }
    if abi < 4 {
        eprintln!("SKIPPED: no Landlock ABI 4+ on this kernel");
    }
    abi >= 4
}

#[test]
fn a_command_stays_inside_the_workspace_whatever_it_tries() {
    if !confined() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let probe = format!(
        "echo ran > ran.txt; \
         echo x > \"$HOME/marker.txt\"; \
         cat \"$HOME/.ssh/id_rsa\"; \
         ln \"$HOME/.profile\" hard.txt; \
         ln -s \"$HOME/.ssh/id_rsa\" key_link; \
         printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit; \
         python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED-' + 'CANARY')\"; \
         echo PROBE-DONE"
    );
    let setup = setup(
        json!([
            observer("PRIVATE-CANARY", "key"),
            observer("CONNECTED-CANARY", "network"),
            plan("Probe the sandbox"),
            { "match": "Probe the sandbox", "toolCalls": [ { "name": "bash", "arguments": { "command": probe } } ] },
            { "match": "PROBE-DONE", "toolCalls": [
                { "name": "file_read", "arguments": { "path": "key_link" } },
                { "name": "file_write", "arguments": { "path": "../escape.txt", "content": "x\n" } },
                { "name": "file_write", "arguments": { "path": "/ABSOLUTE/abs.txt", "content": "x\n" } },
                { "name": "file_write", "arguments": { "path": ".git/hooks/post-checkout", "content": "#!/bin/sh\n" } },
                { "name": "file_write", "arguments": { "path": ".conclave/conclave.db", "content": "x\n" } },
            ] },
            { "text": "Probed the sandbox.", "repeat": true },
        ]),
        "",
    );
    let outside = setup.outside.join("abs.txt");
    let script = std::fs::read_to_string(setup.workspace.join("script.json"))
        .unwrap()
        .replace("/ABSOLUTE/abs.txt", &outside.display().to_string());
    std::fs::write(setup.workspace.join("script.json"), script).unwrap();
    std::fs::create_dir_all(setup.workspace.join(".git/hooks")).unwrap();
    std::fs::write(setup.workspace.join(".git/config"), "[core]\n").unwrap();

    let output = conclave(&setup, "Probe the sandbox", &["--approve", "auto"], &[]);
    let err = String::from_utf8_lossy(&output.stderr);
    let ws = &setup.workspace;
    assert!(ws.join("ran.txt").exists(), "the command ran: {err}");
    assert!(
        !setup.home.join("marker.txt").exists(),
        "a write to the home folder"
    );
    assert!(
        !ws.join("hard.txt").exists(),
        "a hard link to a file outside"
    );
    assert!(
        !ws.join(".git/hooks/pre-commit").exists(),
        "a git hook a command wrote is put back"
    );
    assert!(
        !ws.join(".git/hooks/post-checkout").exists(),
        "a git hook a tool would write"
    );
    assert!(!setup._root.path().join("escape.txt").exists(), "`..`");
    assert!(!outside.exists(), "an absolute path outside");
    assert!(
        leaked(ws).is_empty(),
        "{:?} reached the model: {err}",
        leaked(ws)
    );
    assert!(
        listener.accept().is_err(),
        "a connection with the network off"
    );
    assert_eq!(
        std::fs::read_to_string(setup.home.join(".ssh/id_rsa")).unwrap(),
        "PRIVATE-CANARY-7f3a\n"
    );
}

#[test]
fn with_commands_denied_nothing_the_model_wrote_runs_and_the_task_says_so() {
    let marker = "ran-the-model's-code";
    let test = format!(
        "import os, pathlib\npathlib.Path(os.environ['HOME'], {marker:?}).write_text('x')\n\
         from probe import double\n\ndef test_double():\n    assert double(2) == 4\n\ntest_double()\n"
    );
    for (args, config) in [
        (
            vec!["--approve", "auto"],
            "[approvals]\ncommands = \"deny\"\n",
        ),
        (vec!["--approve", "deny"], ""),
    ] {
        let setup = setup(
            json!([
                plan("Write probe.py with double(x) and test_probe.py"),
                { "match": "Write probe.py", "toolCalls": [
                    { "name": "file_write", "arguments": { "path": "probe.py", "content": "def double(x):\n    return x * 2\n" } },
                    { "name": "file_write", "arguments": { "path": "test_probe.py", "content": test } },
                ] },
                { "text": "Wrote probe.py and its test.", "repeat": true },
            ]),
            config,
        );
        let output = conclave(
            &setup,
            "Write probe.py with double(x) and test_probe.py",
            &args,
            &[],
        );
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(setup.workspace.join("test_probe.py").exists(), "{err}");
        assert!(
            !setup.home.join(marker).exists(),
            "{args:?}: the model's test ran: {err}"
        );
        assert!(
            err.contains("not checked: running code was refused"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("tests `python3"),
            "{args:?}: no test ran: {err}"
        );
    }
}

#[test]
fn approved_checks_run_the_models_tests_inside_the_sandbox() {
    let test = "import os, pathlib\npathlib.Path('ran-the-test.txt').write_text(os.environ.get('HOME', ''))\n\
                from probe import double\n\ndef test_double():\n    assert double(2) == 4\n";
    let setup = setup(
        json!([
            plan("Write probe.py with double(x) and test_probe.py"),
            { "match": "Write probe.py", "toolCalls": [
                { "name": "file_write", "arguments": { "path": "probe.py", "content": "def double(x):\n    return x * 2\n" } },
                { "name": "file_write", "arguments": { "path": "test_probe.py", "content": test } },
            ] },
            { "text": "Wrote probe.py and its test.", "repeat": true },
        ]),
        "",
    );
    let output = conclave(
        &setup,
        "Write probe.py with double(x) and test_probe.py",
        &["--approve", "auto"],
        &[],
    );
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(setup.workspace.join("ran-the-test.txt").exists(), "{err}");
    assert!(!err.contains("not checked"), "{err}");
}

/// A model server that answers like an OpenAI-compatible one and remembers every
/// request: the plan, a command that prints the environment, a read of the `.env` file
/// holding the key, then an error whose body quotes the key (as some providers do).
mod http_model {
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};
    use wiremock::{Request, Respond, ResponseTemplate};

    #[derive(Clone, Default)]
    pub struct Recorder {
        pub bodies: Arc<Mutex<Vec<String>>>,
        pub auth: Arc<Mutex<Vec<String>>>,
        pub key: String,
    }

    fn answer(message: Value) -> ResponseTemplate {
        let finish = if message.get("tool_calls").is_some() {
            "tool_calls"
        } else {
            "stop"
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{ "index": 0, "message": message, "finish_reason": finish }],
            "usage": { "prompt_tokens": 10, "completion_tokens": 5 }
        }))
    }

    fn call(name: &str, arguments: Value) -> Value {
        json!({ "role": "assistant", "content": null, "tool_calls": [{ "id": format!("c_{name}"), "type": "function",
            "function": { "name": name, "arguments": arguments.to_string() } }] })
    }

    impl Respond for Recorder {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body = String::from_utf8_lossy(&request.body).into_owned();
            self.bodies.lock().unwrap().push(body.clone());
            if let Some(auth) = request.headers.get("authorization") {
                self.auth
                    .lock()
                    .unwrap()
                    .push(auth.to_str().unwrap_or_default().to_string());
            }
            let last = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["messages"].as_array().and_then(|m| m.last().cloned()))
                .map(|m| m["content"].to_string())
                .unwrap_or_default();
            if body.contains("Plan this task") {
                return answer(json!({ "role": "assistant",
                    "content": "{\"subtasks\": [{\"description\": \"Inspect the environment of this project\"}]}" }));
            }
            if last.contains("Inspect the environment of this project") {
                return answer(call(
                    "bash",
                    json!({ "command": "env; cat /proc/$PPID/environ | tr '\\0' '\\n'; echo ENV-DONE" }),
                ));
            }
            if last.contains("ENV-DONE") {
                return answer(call("file_read", json!({ "path": ".env" })));
            }
            // After the read: the provider refuses, quoting the key.
            ResponseTemplate::new(400).set_body_json(json!({
                "error": { "message": format!("Incorrect API key provided: {}", self.key) }
            }))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_reaches_no_prompt_store_report_or_output() {
    let key = format!("seckey-{}", uuid::Uuid::new_v4().simple());
    let server = wiremock::MockServer::start().await;
    let recorder = http_model::Recorder {
        key: key.clone(),
        ..Default::default()
    };
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(recorder.clone())
        .mount(&server)
        .await;
    let setup = setup(json!([]), "");
    std::fs::write(
        setup.workspace.join("conclave.toml"),
        format!(
            "heartbeatMs = 500\n[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbaseUrl = \"{}/v1\"\n\
             apiKeyEnv = \"CONCLAVE_SECURITY_TEST_KEY\"\n[governance]\nreview = \"rules\"\n\
             [recovery.call]\nmaxAttempts = 1\n[team]\ntop = 1\nmid = 1\nbottomPerMid = 1\n",
            server.uri()
        ),
    )
    .unwrap();
    std::fs::write(
        setup.workspace.join(".env"),
        format!("CONCLAVE_SECURITY_TEST_KEY={key}\n"),
    )
    .unwrap();
    let (workspace, home, key_env) = (setup.workspace.clone(), setup.home.clone(), key.clone());
    let output = tokio::task::spawn_blocking(move || {
        run_in(
            &workspace,
            &home,
            "Inspect the environment of this project",
            &["--approve", "auto"],
            &[("CONCLAVE_SECURITY_TEST_KEY", &key_env)],
        )
    })
    .await
    .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );

    let bodies = recorder.bodies.lock().unwrap().clone();
    assert!(bodies.len() >= 3, "the model was asked: {said}");
    assert!(
        bodies.iter().any(|b| b.contains("PATH=")),
        "the environment was printed into a prompt (the test saw it): {said}"
    );
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("CONCLAVE_SECURITY_TEST_KEY=[REDACTED]")),
        "the .env read reached the prompt redacted"
    );
    for body in &bodies {
        assert!(!body.contains(&key), "a prompt carried the key: {body}");
    }
    assert!(
        recorder
            .auth
            .lock()
            .unwrap()
            .iter()
            .all(|a| a == &format!("Bearer {key}")),
        "the key was used where it belongs"
    );
    assert!(!said.contains(&key), "the run's output: {said}");
    let mut stored = Vec::new();
    for entry in walk(&setup.workspace.join(".conclave")) {
        let mut bytes = Vec::new();
        std::fs::File::open(&entry)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        if String::from_utf8_lossy(&bytes).contains(&key) {
            stored.push(entry);
        }
    }
    assert!(stored.is_empty(), "the key was stored in {stored:?}");
    assert!(
        walk(&setup.workspace.join(".conclave"))
            .iter()
            .any(|p| p.ends_with("ERROR_REPORT.md")),
        "the failure quoting the key was reported (redacted): {said}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                todo.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}
