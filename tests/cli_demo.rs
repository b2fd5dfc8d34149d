//! `conclave demo` as a user runs it: the real binary on its built-in scenario.

use std::path::Path;
use std::process::{Command, Output, Stdio};

fn demo(dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conclave"))
        .args(["demo", "--fast"])
        .arg(dir)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("conclave runs")
}

const FILES: [&str; 4] = ["convert.py", "cli.py", "test_convert.py", "README.md"];

#[test]
fn the_demo_recovers_by_retry_takeover_and_escalation_and_writes_its_files() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("demo");
    let output = demo(&dir);
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{err}");

    for file in FILES {
        assert!(dir.join(file).is_file(), "{file} missing\n{err}");
    }
    let convert = std::fs::read_to_string(dir.join("convert.py")).unwrap();
    assert!(convert.contains("def celsius_to_fahrenheit"), "{convert}");
    assert!(dir.join("conclave.toml").is_file());
    assert!(dir.join(".conclave").join("conclave.db").is_file());

    assert!(
        err.contains("plan approved by the top layer (signed by top-"),
        "{err}"
    );
    // The first two subtasks run in parallel, on two different agents.
    let first_agent = |prefix: &str| {
        err.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|rest| rest.split(':').next())
            .map(str::to_string)
    };
    let one = first_agent("[1/4] running on ");
    let two = first_agent("[2/4] running on ");
    assert!(one.is_some() && two.is_some() && one != two, "{err}");
    // Provider trouble (a 503, timeouts) is waited out; work trouble climbs the ladder.
    assert!(
        err.contains("recovery [1/4] provider wait: waiting for demo, next try in"),
        "{err}"
    );
    assert!(err.contains("recovery [2/4] provider wait: "), "{err}");
    assert!(err.contains("recovery [3/4] retry: "), "{err}");
    assert!(err.contains("recovery [3/4] peer takeover: "), "{err}");
    assert!(
        err.contains("recovery [3/4] escalation to the supervisor: escalated to supervisor mid-1: proposed modify"),
        "{err}"
    );
    assert!(err.contains("What each agent did"), "{err}");
    assert!(
        err.contains("Subtasks: 4 completed, 0 failed (of 4)"),
        "{err}"
    );
    assert!(
        err.contains("Recovery rate: 100% (3 of 3 subtasks that hit an error completed anyway)"),
        "{err}"
    );
    assert!(err.contains("The demo went as scripted"), "{err}");
    // Nothing failed for good, so there is no error report.
    assert!(!err.contains("Error report"), "{err}");

    // The same directory takes the demo again; its files are written afresh.
    std::fs::write(dir.join("convert.py"), "stale").unwrap();
    let again = demo(&dir);
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert_eq!(again.status.code(), Some(0), "{err}");
    let convert = std::fs::read_to_string(dir.join("convert.py")).unwrap();
    assert!(convert.contains("def celsius_to_fahrenheit"), "{convert}");
}

#[test]
fn the_demo_refuses_a_directory_that_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.txt"), "keep me").unwrap();
    let output = demo(dir.path());
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.txt")).unwrap(),
        "keep me"
    );
    assert!(!dir.path().join("conclave.toml").exists());
}
