//! `conclave intent` over the real binary: how the checks read a task, as JSON.

use std::process::Command;

fn intent(workspace: &std::path::Path, task: &str) -> (bool, serde_json::Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["intent", "--workspace"])
        .arg(workspace)
        .arg(task)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.success(), json, stderr)
}

#[test]
fn the_task_is_printed_as_the_checks_read_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("stats.py"),
        "def mean(xs):\n    return sum(xs) / len(xs)\n",
    )
    .unwrap();
    let (ok, read, stderr) = intent(
        dir.path(),
        "Rename mean to average in stats.py, rounded to 2 decimal places.",
    );
    assert!(ok, "{stderr}");
    assert_eq!(read["renames"], serde_json::json!([["mean", "average"]]));
    assert_eq!(read["removes"], true);
    assert_eq!(read["aboutRounding"], true);
    assert_eq!(read["aboutProgram"], false);
    // A flag and a program: the test may run it.
    let (ok, read, stderr) = intent(dir.path(), "Add a --verbose flag to the script cli.py.");
    assert!(ok, "{stderr}");
    assert!(
        read["names"]
            .as_array()
            .is_some_and(|n| n.contains(&"--verbose".into())),
        "{read}"
    );
    assert_eq!(read["aboutProgram"], true);
}

#[test]
fn a_workspace_that_is_not_there_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = intent(&dir.path().join("missing"), "Write stats.py.");
    assert!(!ok);
    assert!(stderr.contains("missing"), "{stderr}");
}
