//! Taking a task back, as a person does it from the command line: a failed `conclave run`
//! puts back every file it touched (unless `--keep-failed`), and `conclave undo` shows
//! the diff, asks, refuses to overwrite a file the person changed since without
//! `--force`, and will not undo twice. The real binary on a scripted model.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::run;

/// A folder as the person has it: `kv.txt` and `notes.txt` of their own.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("conclave.toml"),
        run::scripted_without_breaker(""),
    )
    .expect("config");
    std::fs::write(dir.path().join("kv.txt"), "ORIGINAL kv\n").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "person's notes\n").unwrap();
    // Two subtasks: the first changes kv.txt and notes.txt and creates new.txt; the
    // second fails for every agent until it reaches the person.
    let steps = json!([
        { "match": "Plan this task for", "text": json!({ "subtasks": [
            { "description": "Rewrite kv.txt and notes.txt, add new.txt" },
            { "description": "Write broken.txt once the rest is done", "dependsOn": [0] },
        ] }).to_string() },
        { "match": "keeps failing a subtask", "text": "{\"action\": \"pause\", \"reason\": \"a person should look\"}", "repeat": true },
        { "match": "Rewrite kv.txt", "toolCalls": [
            { "name": "file_write", "arguments": { "path": "kv.txt", "content": "TASK kv\n" } },
            { "name": "file_write", "arguments": { "path": "notes.txt", "content": "task's notes\n" } },
            { "name": "file_write", "arguments": { "path": "new.txt", "content": "made by the task\n" } },
        ] },
        { "match": "created new.txt", "text": "All three are written." },
        { "match": "Write broken.txt", "error": { "kind": "http", "status": 400, "body": "the spec is unreadable" }, "repeat": true },
    ]);
    std::fs::write(
        dir.path().join("script.json"),
        serde_json::to_string_pretty(&json!({ "name": "undo", "steps": steps })).unwrap(),
    )
    .expect("script");
    dir
}

fn conclave(workspace: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(args)
        .arg("--workspace")
        .arg(workspace)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

fn read(workspace: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(workspace.join(file)).ok()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The short id the summary tells the person to undo with.
fn short_id(stderr: &str) -> String {
    let at = stderr
        .find("conclave undo ")
        .unwrap_or_else(|| panic!("no undo hint: {stderr}"));
    stderr[at + "conclave undo ".len()..]
        .chars()
        .take_while(|c| c.is_ascii_hexdigit())
        .collect()
}

#[test]
fn a_failed_run_puts_back_what_it_touched_and_leaves_what_the_person_changed_meanwhile() {
    let ws = workspace();
    let mut child = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args([
            "run",
            "Rewrite the files",
            "--approve",
            "ask",
            "--workspace",
        ])
        .arg(ws.path())
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("conclave runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    // While the person is asked about the failing subtask, the first subtask's files
    // are written; the person edits notes.txt before answering.
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("Approval needed: escalation") {
            break;
        }
    }
    assert_eq!(
        read(ws.path(), "kv.txt").as_deref(),
        Some("TASK kv\n"),
        "{seen}"
    );
    std::fs::write(ws.path().join("notes.txt"), "the person's edit\n").unwrap();
    writeln!(stdin, "abort").unwrap();
    drop(stdin);
    for line in lines {
        seen.push_str(&line.unwrap());
        seen.push('\n');
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{seen}");

    assert_eq!(
        read(ws.path(), "kv.txt").as_deref(),
        Some("ORIGINAL kv\n"),
        "{seen}"
    );
    assert_eq!(
        read(ws.path(), "new.txt"),
        None,
        "a file the task created is removed"
    );
    assert_eq!(
        read(ws.path(), "notes.txt").as_deref(),
        Some("the person's edit\n"),
        "a file the person changed after the task is not clobbered"
    );
    assert!(
        seen.contains("Put back as before the task (the task failed): kv.txt, new.txt"),
        "{seen}"
    );
    assert!(
        seen.contains("notes.txt left as it is: it was changed after the task changed it"),
        "{seen}"
    );

    // Put back already: undoing it again is refused, and says what was done.
    let id = {
        let out = conclave(ws.path(), &["log", "--json"]);
        let entries: Value = serde_json::from_slice(&out.stdout).unwrap();
        entries
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["detail"]["taskId"].as_str().map(str::to_string))
            .expect("a task id in the log")
    };
    let again = conclave(ws.path(), &["undo", &id[..8], "--yes"]);
    assert_eq!(again.status.code(), Some(1));
    let err = text(&again.stderr);
    assert!(err.contains("was undone already"), "{err}");
    assert!(err.contains("put back when it failed"), "{err}");
}

#[test]
fn keep_failed_keeps_the_changes_and_undo_shows_asks_refuses_to_clobber_then_takes_them_back() {
    let ws = workspace();
    let run = conclave(
        ws.path(),
        &[
            "run",
            "Rewrite the files",
            "--approve",
            "deny",
            "--keep-failed",
        ],
    );
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("TASK kv\n"));
    assert_eq!(
        read(ws.path(), "new.txt").as_deref(),
        Some("made by the task\n")
    );
    let id = short_id(&err);
    assert_eq!(id.len(), 8, "{err}");

    // Not a terminal and no --yes: the diff is shown, nothing is changed.
    let asked = conclave(ws.path(), &["undo", &id]);
    assert_eq!(asked.status.code(), Some(1));
    let diff = text(&asked.stdout);
    assert!(
        diff.contains("kv.txt: put back as before the task"),
        "{diff}"
    );
    assert!(
        diff.contains("new.txt: removed (the task created it)"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/kv.txt\n+++ b/kv.txt\n@@ -1 +1 @@\n-TASK kv\n+ORIGINAL kv\n"),
        "{diff}"
    );
    assert!(
        diff.contains("--- a/new.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-made by the task\n"),
        "{diff}"
    );
    assert!(
        text(&asked.stderr).contains("confirm with --yes"),
        "{}",
        text(&asked.stderr)
    );
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("TASK kv\n"));

    // The person changes notes.txt: the undo would lose it, so it asks for --force.
    std::fs::write(ws.path().join("notes.txt"), "the person's edit\n").unwrap();
    let refused = conclave(ws.path(), &["undo", &id, "--yes"]);
    assert_eq!(refused.status.code(), Some(1));
    let out = text(&refused.stdout);
    let err = text(&refused.stderr);
    assert!(
        out.contains("notes.txt: put back as before the task — changed since the task"),
        "{out}"
    );
    assert!(
        err.contains("notes.txt changed after the task changed it"),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        read(ws.path(), "kv.txt").as_deref(),
        Some("TASK kv\n"),
        "nothing changed"
    );

    let undone = conclave(ws.path(), &["undo", &id, "--yes", "--force"]);
    let err = text(&undone.stderr);
    assert_eq!(undone.status.code(), Some(0), "{err}");
    assert!(
        err.contains("Undone: kv.txt, new.txt, notes.txt put back as before the task"),
        "{err}"
    );
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("ORIGINAL kv\n"));
    assert_eq!(
        read(ws.path(), "notes.txt").as_deref(),
        Some("person's notes\n")
    );
    assert_eq!(read(ws.path(), "new.txt"), None);

    let twice = conclave(ws.path(), &["undo", &id, "--yes"]);
    assert_eq!(twice.status.code(), Some(1));
    assert!(
        text(&twice.stderr).contains("was undone already"),
        "{}",
        text(&twice.stderr)
    );

    // The task's history says it was undone.
    let log = conclave(ws.path(), &["log", "--task", &full_id(ws.path(), &id)]);
    let log = text(&log.stdout);
    assert!(
        log.contains("undone: put back as before the task: kv.txt, new.txt, notes.txt"),
        "{log}"
    );
}

#[test]
fn what_a_failed_tasks_shell_command_changed_is_put_back_and_undo_takes_it_back_too() {
    let ws = workspace();
    let config = std::fs::read_to_string(ws.path().join("conclave.toml")).unwrap();
    std::fs::write(
        ws.path().join("conclave.toml"),
        format!("{config}\n[approvals]\ncommands = \"auto\"\n"),
    )
    .unwrap();
    // The first subtask works through a shell command only: it creates built.txt,
    // changes kv.txt and removes notes.txt; the second fails.
    let steps = json!([
        { "match": "Plan this task for", "text": json!({ "subtasks": [
            { "description": "Build the files with a command" },
            { "description": "Write broken.txt once the rest is done", "dependsOn": [0] },
        ] }).to_string() },
        { "match": "keeps failing a subtask", "text": "{\"action\": \"pause\", \"reason\": \"a person should look\"}", "repeat": true },
        { "match": "Build the files", "toolCalls": [
            { "name": "bash", "arguments": { "command": "mkdir -p out && printf 'built\\n' > out/built.txt && printf 'COMMAND kv\\n' > kv.txt && rm notes.txt" } },
        ] },
        { "match": "exit code: 0", "text": "Built." },
        { "match": "Write broken.txt", "error": { "kind": "http", "status": 400, "body": "the spec is unreadable" }, "repeat": true },
    ]);
    std::fs::write(
        ws.path().join("script.json"),
        serde_json::to_string_pretty(&json!({ "name": "undo-bash", "steps": steps })).unwrap(),
    )
    .unwrap();

    // Kept first, to see what the command did and to undo it later.
    let run = conclave(
        ws.path(),
        &[
            "run",
            "Build the files",
            "--approve",
            "deny",
            "--keep-failed",
        ],
    );
    let err = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert_eq!(
        read(ws.path(), "out/built.txt").as_deref(),
        Some("built\n"),
        "{err}"
    );
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("COMMAND kv\n"));
    assert_eq!(read(ws.path(), "notes.txt"), None);
    assert!(
        err.contains("Changes kept (by its commands: kv.txt, notes.txt, out/built.txt); to take them back: conclave undo "),
        "{err}"
    );
    let id = short_id(&err);
    let undone = conclave(ws.path(), &["undo", &id, "--yes"]);
    let (out, err) = (text(&undone.stdout), text(&undone.stderr));
    assert_eq!(undone.status.code(), Some(0), "{out}{err}");
    assert!(
        out.contains("out/built.txt: removed (the task created it)"),
        "{out}"
    );
    assert!(
        out.contains("--- a/kv.txt\n+++ b/kv.txt\n@@ -1 +1 @@\n-COMMAND kv\n+ORIGINAL kv\n"),
        "{out}"
    );
    assert!(
        err.contains("Undone: kv.txt, notes.txt, out/built.txt put back as before the task"),
        "{err}"
    );
    assert_eq!(read(ws.path(), "out/built.txt"), None);
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("ORIGINAL kv\n"));
    assert_eq!(
        read(ws.path(), "notes.txt").as_deref(),
        Some("person's notes\n")
    );

    // Without --keep-failed, the failure itself puts it all back.
    let failed = conclave(ws.path(), &["run", "Build the files", "--approve", "deny"]);
    let err = text(&failed.stderr);
    assert_eq!(failed.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "Put back as before the task (the task failed): kv.txt, notes.txt, out/built.txt"
        ),
        "{err}"
    );
    assert_eq!(read(ws.path(), "out/built.txt"), None);
    assert_eq!(read(ws.path(), "kv.txt").as_deref(), Some("ORIGINAL kv\n"));
    assert_eq!(
        read(ws.path(), "notes.txt").as_deref(),
        Some("person's notes\n")
    );
}

/// The whole id of the task whose id starts with `short`, from the audit log.
fn full_id(workspace: &Path, short: &str) -> String {
    let out = conclave(workspace, &["log", "--json"]);
    let entries: Value = serde_json::from_slice(&out.stdout).unwrap();
    entries
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["detail"]["taskId"].as_str())
        .find(|id| id.starts_with(short))
        .expect("the task in the log")
        .to_string()
}

#[test]
fn undo_is_refused_while_another_conclave_holds_the_folder() {
    use conclave::engine::{ClientName, Holder, WorkspaceLock};
    let ws = workspace();
    let editor = Holder::this_process(
        Some(ClientName {
            name: "Visual Studio Code".into(),
            version: None,
        }),
        None,
    );
    let _lock = WorkspaceLock::acquire(ws.path(), &editor).expect("the test takes the folder");
    let output = conclave(ws.path(), &["undo", "0123abcd", "--yes"]);
    let err = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("already serving"), "{err}");
    assert!(err.contains("Visual Studio Code"), "{err}");
}

#[test]
fn an_unknown_task_is_named_and_nothing_is_done() {
    let ws = workspace();
    let output = conclave(ws.path(), &["undo", "0123abcd", "--yes"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("0123abcd: no task has that id"),
        "{}",
        text(&output.stderr)
    );
}
