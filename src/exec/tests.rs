//! Real runs: real processes, a real kernel sandbox, real files.

use super::*;

fn runner_in(workspace: &Path, edit: impl FnOnce(&mut RunnerSettings)) -> Runner {
    let mut settings = RunnerSettings::new(workspace.canonicalize().unwrap());
    edit(&mut settings);
    Runner::new(settings).unwrap()
}

fn sh(command: &str) -> RunSpec {
    RunSpec::shell("bash", command).timeout(Duration::from_secs(20))
}

/// Whether this kernel can confine; under CI (whose machines have Landlock) its absence
/// fails the test instead of skipping it.
fn confined() -> bool {
    let yes = matches!(Support::probe(), Support::Landlock { abi } if abi >= 4);
    if !yes && std::env::var_os("CI").is_some() {
        panic!(
            "CI needs Landlock ABI 4+ for the sandbox tests: {}",
            Support::probe().describe()
        );
    }
    if !yes {
        eprintln!("SKIPPED: no Landlock ABI 4+ on this kernel");
    }
    yes
}

#[test]
fn a_command_runs_in_the_workspace_and_its_output_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let done = runner
        .run_blocking(
            sh("pwd; echo out; echo err >&2; exit 3"),
            &CancellationToken::new(),
        )
        .unwrap();
    assert_eq!(done.code(), Some(3));
    let text = done.render();
    assert!(
        text.contains(&dir.path().canonicalize().unwrap().display().to_string()),
        "{text}"
    );
    assert!(
        text.contains("out\n") && text.contains("[stderr]\nerr"),
        "{text}"
    );
}

#[test]
fn merged_output_keeps_the_order_it_was_written_in() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let done = runner
        .run_blocking(
            sh("echo 1; echo 2 >&2; echo 3").merged(),
            &CancellationToken::new(),
        )
        .unwrap();
    assert_eq!(done.render(), "1\n2\n3\n");
}

#[test]
fn credentials_never_reach_a_command() {
    // The server's own environment is filtered by `env::scrubbed` (tested there, and
    // through the real binary in tests/it/security.rs); a caller cannot add one back.
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let mut spec = sh("env");
    spec.env = vec![
        ("GITHUB_TOKEN".into(), "ghp_secret".into()),
        ("PLAIN".into(), "kept".into()),
    ];
    let env = runner
        .run_blocking(spec, &CancellationToken::new())
        .unwrap()
        .render();
    assert!(!env.contains("ghp_secret"), "{env}");
    assert!(env.contains("PLAIN=kept"), "{env}");
    assert!(env.contains("PATH="), "{env}");
    assert!(env.contains("TMPDIR="), "{env}");
}

#[test]
fn the_time_limit_kills_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let marker = dir.path().join("late");
    let command = format!(
        "(sleep 2; touch {}) & echo started; sleep 30",
        marker.display()
    );
    let err = runner
        .run_blocking(
            sh(&command).timeout(Duration::from_millis(500)),
            &CancellationToken::new(),
        )
        .unwrap_err();
    match err {
        RunError::TimedOut { output, .. } => assert!(output.contains("started"), "{output}"),
        other => panic!("{other:?}"),
    }
    std::thread::sleep(Duration::from_secs(3));
    assert!(!marker.exists(), "a background child outlived the run");
}

#[test]
fn cancelling_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stopper.cancel();
    });
    let started = Instant::now();
    let err = runner.run_blocking(sh("sleep 30"), &cancel).unwrap_err();
    assert!(matches!(err, RunError::Cancelled), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_program_that_is_not_installed_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let err = runner
        .run_blocking(
            RunSpec::new("no-such-program-xyz", ["a"]),
            &CancellationToken::new(),
        )
        .unwrap_err();
    assert!(matches!(err, RunError::NotInstalled { .. }), "{err:?}");
}

#[test]
fn without_a_sandbox_a_required_one_refuses_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let runner = Runner {
        inner: Arc::new(Inner {
            settings: RunnerSettings::new(dir.path()),
            temp: tempfile::tempdir().unwrap(),
            confinement: Confinement::Refused {
                reason: "this kernel has no Landlock".into(),
            },
        }),
    };
    let marker = dir.path().join("ran");
    let err = runner
        .run_blocking(
            sh(&format!("touch {}", marker.display())),
            &CancellationToken::new(),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("sandbox.required = false"),
        "{err}"
    );
    assert!(!marker.exists());
    assert!(runner.warning().unwrap().contains("will not run"));
}

#[test]
fn git_hooks_a_command_writes_are_put_back() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let done = runner
        .run_blocking(
            sh("printf '#!/bin/sh\\nid\\n' > .git/hooks/pre-commit; echo '[core] hooksPath=/tmp' >> .git/config; echo x > notes.txt"),
            &CancellationToken::new(),
        )
        .unwrap();
    assert!(
        done.render()
            .contains("put back .git/config, .git/hooks/pre-commit"),
        "{}",
        done.render()
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "x\n"
    );
}

#[test]
fn confined_commands_write_only_inside_the_workspace() {
    if !confined() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |_| {});
    let target = outside.path().join("escaped");
    let done = runner
        .run_blocking(
            sh(&format!(
                "echo in > inside.txt && mkdir -p sub && echo x > sub/y; echo out > {0}; ln -s {0} link; ln {1} hard; echo $TMPDIR; touch $TMPDIR/t && echo tmp-ok",
                target.display(),
                outside.path().join("f").display()
            )),
            &CancellationToken::new(),
        )
        .unwrap();
    let text = done.render();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(dir.path().join("sub/y").exists());
    assert!(!target.exists(), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(
        text.contains("tmp-ok"),
        "the private temp directory is writable: {text}"
    );
}

#[test]
fn confined_commands_cannot_read_hidden_places_or_the_network() {
    if !confined() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    std::fs::write(secrets.path().join("id_rsa"), "PRIVATE").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let runner = runner_in(dir.path(), |s| {
        s.hidden = vec![secrets.path().to_path_buf()]
    });
    let command = format!(
        "cat {}/id_rsa; (exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected) 2>&1; true",
        secrets.path().display()
    );
    let text = runner
        .run_blocking(sh(&command), &CancellationToken::new())
        .unwrap()
        .render();
    assert!(!text.contains("PRIVATE"), "{text}");
    assert!(!text.contains("connected"), "{text}");

    let open = runner_in(dir.path(), |s| s.network = true);
    let text = open
        .run_blocking(sh(&command), &CancellationToken::new())
        .unwrap()
        .render();
    assert!(
        text.contains("connected"),
        "sandbox.network = true lets it connect: {text}"
    );
}

#[tokio::test]
async fn dropping_the_run_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let runner = runner_in(dir.path(), |s| s.required = false);
    let marker = dir.path().join("finished");
    let command = format!("sleep 2; touch {}", marker.display());
    let cancel = CancellationToken::new();
    let run = runner.run(sh(&command), &cancel);
    let _ = tokio::time::timeout(Duration::from_millis(300), run).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !marker.exists(),
        "the run went on after its future was dropped"
    );
}
