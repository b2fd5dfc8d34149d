//! Fixtures of the check pipeline: each rule failing a general case of what it catches
//! and passing right code.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::*;
use crate::exec::Runner;
use crate::team::files::files_named;
use names::has_name;

/// The code checks, as a subtask's are run.
async fn code(b: &Bench, files: &[String]) -> Checks {
    run(b, Stage::AfterSubtask, files, None).await
}

/// The tests phase alone.
async fn tests(b: &Bench, command: Option<&str>, files: &[String]) -> Checks {
    run_phase(b, Phase::Tests, files, command, Vec::new()).await
}

fn bench(root: &Path) -> Bench {
    let mut settings = crate::exec::RunnerSettings::new(root.canonicalize().unwrap());
    settings.required = false;
    Bench {
        root: root.to_path_buf(),
        runner: Runner::new(settings).unwrap(),
        consent: Arc::new(Granted),
        disabled: Vec::new(),
        timeout: Duration::from_secs(60),
        acceptance_timeout: Duration::from_secs(60),
        cancel: CancellationToken::new(),
        subtask: None,
        originals: Arc::default(),
        whole_task: false,
    }
}

/// Whether python3 runs here. Without it a test says SKIPPED and returns; under CI
/// (whose machines have it) its absence fails the test instead.
fn python() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok();
    if !found && std::env::var_os("CI").is_some() {
        panic!("python3 is needed by this test and is not installed");
    }
    if !found {
        eprintln!("SKIPPED: python3 is not installed");
    }
    found
}

#[tokio::test]
async fn a_program_that_runs_itself_is_stopped_with_everything_it_started() {
    if !python() || !cfg!(target_os = "linux") {
        return;
    }
    // A program that runs itself, each copy waiting on the next: the check's time
    // limit must end them all.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "import subprocess, sys\nsubprocess.run([sys.executable, 'hello.py'])\n",
    )
    .unwrap();
    let b = bench(dir.path());
    let (code, output) = b
        .run_program("python3", &["hello.py".to_string()])
        .await
        .unwrap();
    assert_eq!(code, None);
    assert!(output.contains("started more than"), "{output}");
    // None of the copies is left running.
    let root = dir.path().canonicalize().unwrap();
    let running = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd == root))
            .count()
    };
    for _ in 0..50 {
        if running() == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(running(), 0, "processes of the check are left");
}

#[tokio::test]
async fn the_team_s_test_of_code_that_never_returns_is_stopped_at_its_own_limit() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("acceptance_test.py"),
        "print('checking spin')\nwhile True:\n    pass\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.acceptance_timeout = Duration::from_secs(1);
    let (code, output) = b
        .run_program("python3", &["acceptance_test.py".to_string()])
        .await
        .unwrap();
    assert_eq!(code, None);
    // What it printed before it was stopped, then why: the fix round reads both.
    assert!(
        output.ends_with(
            "checking spin\nstopped: it did not finish within 1 s (does the code loop forever or wait for input?)"
        ),
        "{output}"
    );
}

#[test]
fn the_acceptance_limit_is_its_own_and_never_beyond_the_subtask_s() {
    let mut config = crate::config::Config::default();
    assert_eq!(acceptance_timeout(&config), Duration::from_secs(120));
    assert_eq!(check_timeout(&config), Duration::from_secs(600));
    config.recovery.subtask_timeout_ms = 60_000;
    assert_eq!(acceptance_timeout(&config), Duration::from_secs(60));
    config.verify.acceptance_timeout_ms = 0;
    assert_eq!(acceptance_timeout(&config), Duration::from_secs(1));
}

#[tokio::test]
async fn code_without_a_name_the_task_asks_for_fails_and_with_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greet.sh"), "echo HELLO\n").unwrap();
    let mut b = bench(dir.path());
    b.whole_task = true;
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Add a --shout flag to greet.sh.",
    );
    let without = code(&b, &["greet.sh".into()]).await;
    let text = without.failure_text().expect("the missing flag is caught");
    assert!(text.contains("asks for `--shout`"), "{text}");
    std::fs::write(
        dir.path().join("greet.sh"),
        "if [ \"$1\" = --shout ]; then echo HELLO; else echo hello; fi\n",
    )
    .unwrap();
    assert!(code(&b, &["greet.sh".into()]).await.passed());
    assert!(has_name("x = perimeter(1, 2)", "perimeter"));
    assert!(!has_name("the meaning", "mean"));
    assert!(!has_name("--shouty", "--shout"));
}

#[tokio::test]
async fn the_right_change_in_the_wrong_file_is_caught() {
    // The fix for stats.py written to a new src/stats.py.
    let dir = tempfile::tempdir().unwrap();
    let original = "def mean(values):\n    return sum(values) / len(values)\n";
    std::fs::write(dir.path().join("stats.py"), original).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/stats.py"),
        "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.whole_task = true;
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Change the function mean in stats.py so that it returns 0.0 for an empty list.",
    );
    let wrong = code(&b, &["src/stats.py".into()]).await;
    let text = wrong.failure_text().expect("stats.py untouched is caught");
    assert!(
        text.contains(
            "the task is about stats.py, but the team left it as it was and wrote src/stats.py"
        ),
        "{text}"
    );
    std::fs::write(
        dir.path().join("stats.py"),
        "def mean(values):\n    return sum(values) / len(values) if values else 0.0\n",
    )
    .unwrap();
    let right = code(&b, &["stats.py".into()]).await;
    assert!(right.passed(), "{:?}", right.results);
    // Nothing written at all (the stub written back as it was) is caught too.
    std::fs::write(dir.path().join("stats.py"), original).unwrap();
    let nothing = code(&b, &[]).await;
    let text = nothing.failure_text().expect("no change is caught");
    assert!(
        text.contains("the task asks to change stats.py, but the team left it as it was"),
        "{text}"
    );
    // Another file written beside an unchanged named one is not held against it.
    std::fs::write(dir.path().join("notes.txt"), "n\n").unwrap();
    assert!(code(&b, &["notes.txt".into()]).await.passed());
    // A subtask that is only part of the task is not held to it.
    b.whole_task = false;
    std::fs::write(dir.path().join("stats.py"), original).unwrap();
    assert!(code(&b, &["src/stats.py".into()]).await.passed());
}

#[tokio::test]
async fn a_file_the_task_asks_for_must_be_there() {
    // "write a script count_lines.py" done as some other file: without this check it
    // would be reported completed.
    let dir = tempfile::tempdir().unwrap();
    let task = "Write a script count_lines.py that prints the number of non-empty lines.";
    let mut b = bench(dir.path());
    b.whole_task = true;
    b.originals = capture_originals(&crate::tools::Sandbox::new(dir.path()).unwrap(), task);
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.rs"), "Hello, world!\n").unwrap();
    let text = code(&b, &["src/main.rs".into()])
        .await
        .failure_text()
        .expect("the missing script is caught");
    assert!(
        text.contains("the task asks for count_lines.py, but there is no such file (the team wrote src/main.rs)"),
        "{text}"
    );
    std::fs::write(dir.path().join("src/count_lines.py"), "print(3)\n").unwrap();
    let text = code(&b, &["src/count_lines.py".into()])
        .await
        .failure_text()
        .expect("the script in another directory is caught");
    assert!(
        text.contains(
            "the task asks for count_lines.py, but the team wrote src/count_lines.py instead"
        ),
        "{text}"
    );
    std::fs::write(dir.path().join("count_lines.py"), "print(3)\n").unwrap();
    let there = code(&b, &["count_lines.py".into()]).await;
    assert!(there.passed(), "{:?}", there.results);
    // A task that moves or removes files may leave a named one gone.
    std::fs::write(dir.path().join("src/helpers.py"), "X = 1\n").unwrap();
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Move helpers.py into src/helpers.py.",
    );
    assert!(code(&b, &["src/helpers.py".into()]).await.passed());
}

#[test]
fn the_files_a_task_names_are_found_once_in_order_and_never_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "key").unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/app.js"), "").unwrap();
    std::fs::write(dir.path().join("stats.py"), "").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        dir.path().join("leak.txt"),
    )
    .unwrap();
    let text = format!(
        "Fix `src/app.js`, then stats.py. Keep stats.py tidy; see missing.py, ../x.py, \
         leak.txt, {} and README.",
        outside.path().join("secret.txt").display()
    );
    assert_eq!(files_named(dir.path(), &text), ["src/app.js", "stats.py"]);
}

#[tokio::test]
async fn python_syntax_errors_and_stubs_fail_and_real_code_passes() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.py"), "def f(:\n    return 1\n```\n").unwrap();
    std::fs::write(
        dir.path().join("stub.py"),
        "def add(a, b):\n    \"\"\"Add.\"\"\"\n\ndef sub(a, b):\n    ...\n\ndef mul(a, b):\n    return a * b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("good.py"),
        "def add(a, b):\n    \"\"\"Add.\"\"\"\n    return a + b\n",
    )
    .unwrap();
    let b = bench(dir.path());

    let bad = code(&b, &["bad.py".into()]).await;
    assert!(!bad.passed());
    assert!(bad.failure_text().unwrap().contains("py_compile"));

    let stub = code(&b, &["stub.py".into()]).await;
    let text = stub.failure_text().unwrap();
    assert!(text.contains("`add`") && text.contains("`sub`"), "{text}");
    assert!(!text.contains("`mul`"));

    let good = code(&b, &["good.py".into()]).await;
    assert!(good.passed(), "{:?}", good.results);
    assert_eq!(good.results.len(), 3, "syntax, stubs, contracts");
}

/// The result of the rule `rule` among `checks`, which must be there.
fn of<'a>(checks: &'a Checks, rule: &str) -> &'a CheckResult {
    checks
        .results
        .iter()
        .find(|r| r.rules == [rule])
        .unwrap_or_else(|| panic!("no {rule} result in {:?}", checks.results))
}

/// Broken code fails the rule and right code passes it; a checker that is not
/// installed is a skip that says so.
async fn judged(b: &Bench, rule: &str, file: &str, broken: &str, right: &str) {
    std::fs::write(b.root.join(file), broken).unwrap();
    let checks = code(b, &[file.to_string()]).await;
    let result = of(&checks, rule);
    if result.status == CheckStatus::Skipped {
        assert!(result.detail.contains("not installed"), "{result:?}");
        eprintln!("SKIPPED: {rule}: {}", result.detail);
        return;
    }
    assert_eq!(result.status, CheckStatus::Failed, "{rule}: {result:?}");
    std::fs::write(b.root.join(file), right).unwrap();
    let checks = code(b, &[file.to_string()]).await;
    assert_eq!(
        of(&checks, rule).status,
        CheckStatus::Passed,
        "{rule}: {:?}",
        checks.results
    );
}

#[tokio::test]
async fn each_syntax_rule_fails_broken_code_and_passes_right_code() {
    let dir = tempfile::tempdir().unwrap();
    let b = bench(dir.path());
    judged(
        &b,
        "syntax.javascript",
        "a.js",
        "function f( {\n",
        "function f() {}\n",
    )
    .await;
    judged(&b, "syntax.shell", "a.sh", "if then fi\n", "echo hi\n").await;
    judged(&b, "syntax.json", "a.json", "{\"a\": 1,}\n", "{\"a\": 1}\n").await;
    std::fs::write(
        dir.path().join("tsconfig.json"),
        "{\"files\": [\"a.ts\"]}\n",
    )
    .unwrap();
    // The workspace's own compiler: the VS Code extension's (CI installs it).
    let tsc = Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/vscode/node_modules/.bin/tsc");
    if tsc.is_file() {
        std::fs::create_dir_all(dir.path().join("node_modules/.bin")).unwrap();
        std::os::unix::fs::symlink(tsc, dir.path().join("node_modules/.bin/tsc")).unwrap();
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI installs editors/vscode's typescript"
        );
    }
    judged(
        &b,
        "syntax.typescript",
        "a.ts",
        "let n: number = \"x\";\n",
        "let n: number = 1;\n",
    )
    .await;
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n",
    )
    .unwrap();
    judged(
        &b,
        "syntax.rust",
        "lib.rs",
        "pub fn f() -> u8 { \"x\" }\n",
        "pub fn f() -> u8 { 1 }\n",
    )
    .await;
}

#[tokio::test]
async fn the_project_tests_of_each_language_run_and_their_failure_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let b = bench(dir.path());
    let run = |file: &'static str| {
        let b = b.clone();
        async move { tests(&b, None, &[file.to_string()]).await }
    };
    // JavaScript: a test the task wrote, run by node.
    std::fs::write(
        dir.path().join("sum.test.js"),
        "const assert = require('node:assert');\nrequire('node:test')('sum', () => assert.strictEqual(1 + 1, 3));\n",
    )
    .unwrap();
    let js = run("sum.test.js").await;
    let result = of(&js, "tests.javascript");
    if result.status == CheckStatus::Skipped {
        eprintln!("SKIPPED: tests.javascript: {}", result.detail);
    } else {
        assert_eq!(result.status, CheckStatus::Failed, "{result:?}");
        std::fs::write(
            dir.path().join("sum.test.js"),
            "const assert = require('node:assert');\nrequire('node:test')('sum', () => assert.strictEqual(1 + 1, 2));\n",
        )
        .unwrap();
        assert_eq!(
            of(&run("sum.test.js").await, "tests.javascript").status,
            CheckStatus::Passed
        );
    }
    // Rust: the project's cargo test.
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("lib.rs"),
        "#[test]\nfn t() { assert_eq!(1 + 1, 3); }\n",
    )
    .unwrap();
    let rust = run("lib.rs").await;
    let result = of(&rust, "tests.rust");
    if result.status == CheckStatus::Skipped {
        eprintln!("SKIPPED: tests.rust: {}", result.detail);
    } else {
        assert_eq!(result.status, CheckStatus::Failed, "{result:?}");
        std::fs::write(
            dir.path().join("lib.rs"),
            "#[test]\nfn t() { assert_eq!(1 + 1, 2); }\n",
        )
        .unwrap();
        assert_eq!(
            of(&run("lib.rs").await, "tests.rust").status,
            CheckStatus::Passed
        );
    }
}

#[tokio::test]
async fn a_failure_names_its_rules_and_a_disabled_rule_does_not_run() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("shout.py"),
        "def add(a, b):\n    \"\"\"Add.\"\"\"\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.originals = Arc::new(TaskFiles::new(
        "Implement add(a, b) and a --shout flag in shout.py.",
        Vec::new(),
    ));
    b.whole_task = true;
    let files = ["shout.py".to_string()];

    let all = code(&b, &files).await;
    let failed: Vec<(&str, &[String])> = all
        .failed()
        .map(|r| (r.kind.as_str(), r.rules.as_slice()))
        .collect();
    assert_eq!(
        failed,
        [
            ("stubs", &["python.stub".to_string()][..]),
            ("contracts", &["names.missing-name".to_string()][..])
        ],
        "{:?}",
        all.results
    );
    assert!(describe(&all.results).contains("failed [python.stub]"));

    b.disabled = vec!["python.stub".into(), "names.missing-name".into()];
    let some = code(&b, &files).await;
    assert!(some.passed(), "{:?}", some.results);
    assert!(
        some.results
            .iter()
            .all(|r| r.kind == "syntax" || r.kind == "contracts"),
        "{:?}",
        some.results
    );

    b.disabled = vec!["syntax.python".into()];
    std::fs::write(dir.path().join("shout.py"), "def f(:\n").unwrap();
    let unchecked = code(&b, &files).await;
    assert!(
        !unchecked
            .results
            .iter()
            .any(|r| r.rules == ["syntax.python"]),
        "{:?}",
        unchecked.results
    );
}

#[tokio::test]
async fn a_function_rewritten_to_print_breaks_the_contract_it_was_given() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original =
        "def fizzbuzz(n: int) -> list:\n    \"\"\"Return the list of strings for 1..n.\"\"\"\n";
    std::fs::write(dir.path().join("solution.py"), original).unwrap();
    let task = "Implement the function fizzbuzz in `solution.py`.";
    let mut b = bench(dir.path());
    b.originals = capture_originals(&crate::tools::Sandbox::new(dir.path()).unwrap(), task);
    assert_eq!(b.originals.files.len(), 1);
    // The model rewrote the file over the docstring and printed instead.
    std::fs::write(
        dir.path().join("solution.py"),
        "def fizzbuzz(n):\n    for i in range(1, n + 1):\n        print(i)\n",
    )
    .unwrap();

    let broken = code(&b, &["solution.py".into()]).await;
    let text = broken.failure_text().expect("the contract check fails");
    assert!(text.contains("`fizzbuzz` must return its result"), "{text}");
    assert!(
        text.contains("Return the list of strings for 1..n."),
        "the fix prompt gets the original docstring back: {text}"
    );

    std::fs::write(
        dir.path().join("solution.py"),
        "def fizzbuzz(n):\n    return [str(i) for i in range(1, n + 1)]\n",
    )
    .unwrap();
    let kept = code(&b, &["solution.py".into()]).await;
    assert!(kept.passed(), "{:?}", kept.results);
}

#[tokio::test]
async fn a_function_lost_in_a_rewrite_is_caught_but_a_renamed_one_is_not() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let original = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef spread(values):\n    \"\"\"Largest minus smallest.\"\"\"\n    return max(values) - min(values)\n";
    std::fs::write(dir.path().join("stats.py"), original).unwrap();
    let mut b = bench(dir.path());
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Change mean in stats.py to return 0.0 for an empty list.",
    );
    // The model rewrote the file with the one function it was asked about.
    std::fs::write(
        dir.path().join("stats.py"),
        "def mean(nums):\n    if not nums:\n        return 0.0\n    return sum(nums) / len(nums)\n",
    )
    .unwrap();
    let lost = code(&b, &["stats.py".into()]).await;
    let text = lost.failure_text().expect("the lost function is caught");
    assert!(text.contains("`spread` was in the file before"), "{text}");
    assert!(text.contains("return max(values) - min(values)"), "{text}");
    assert!(!text.contains("`mean`"), "{text}");

    // A rename names the old function: its going is what was asked.
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Rename spread in stats.py to span.",
    );
    std::fs::write(
        dir.path().join("stats.py"),
        "def mean(values):\n    return sum(values) / len(values)\n\n\ndef span(values):\n    return max(values) - min(values)\n",
    )
    .unwrap();
    let renamed = code(&b, &["stats.py".into()]).await;
    assert!(renamed.passed(), "{:?}", renamed.results);
}

#[tokio::test]
async fn a_rename_that_leaves_the_old_definition_in_place_is_not_done() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mathx = "def calc(prices):\n    \"\"\"The sum of the prices.\"\"\"\n    return round(sum(prices), 2)\n";
    std::fs::write(dir.path().join("mathx.py"), mathx).unwrap();
    std::fs::write(
        dir.path().join("main.py"),
        "from mathx import calc\n\nprint(calc([1.25, 2.5]))\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Rename the function calc in mathx.py to compute_total, and update its caller in main.py.",
    );
    // The task's own check, as the work is done.
    b.whole_task = true;
    std::fs::write(
        dir.path().join("mathx.py"),
        format!("{mathx}def compute_total(prices):\n    return round(sum(prices), 2)\n"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("main.py"),
        "from mathx import compute_total\n\nprint(compute_total([1.25, 2.5]))\n",
    )
    .unwrap();
    let files = ["mathx.py".to_string(), "main.py".to_string()];
    let both = code(&b, &files).await;
    let text = both.failure_text().expect("the old definition is caught");
    assert!(text.contains("mathx.py still defines `calc`"), "{text}");

    // Renamed in place: done.
    std::fs::write(
        dir.path().join("mathx.py"),
        mathx.replace("def calc", "def compute_total"),
    )
    .unwrap();
    let renamed = code(&b, &files).await;
    assert!(renamed.passed(), "{:?}", renamed.results);

    // The old one gone and the new one nowhere: not done either.
    std::fs::write(dir.path().join("mathx.py"), "TOTAL = 0\n").unwrap();
    let lost = code(&b, &files).await;
    let text = lost.failure_text().expect("the missing new name is caught");
    assert!(
        text.contains("no file of the task defines `compute_total`"),
        "{text}"
    );
}

#[tokio::test]
async fn a_script_rewritten_without_its_imports_names_and_main_block_is_caught() {
    if !python() {
        return;
    }
    // A script rewritten as its main function alone: what it lost is named.
    let dir = tempfile::tempdir().unwrap();
    let report = "from geometry import area\n\nWIDTH, HEIGHT = 3, 4\n\n\ndef main():\n    print(f\"area: {area(WIDTH, HEIGHT)}\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
    std::fs::write(dir.path().join("report.py"), report).unwrap();
    std::fs::write(
        dir.path().join("geometry.py"),
        "def area(w, h):\n    return w * h\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Change report.py so that after the area line it also prints the perimeter.",
    );
    std::fs::write(
        dir.path().join("report.py"),
        "def main():\n    print(f\"area: {area(WIDTH, HEIGHT)}\")\n    print(f\"perimeter: {perimeter(WIDTH, HEIGHT)}\")\n",
    )
    .unwrap();
    let broken = code(&b, &["report.py".into()]).await;
    let text = broken.failure_text().expect("the lost parts are caught");
    assert!(
        text.contains("`area` is used but never defined or imported; before the task the file had:\nfrom geometry import area"),
        "{text}"
    );
    assert!(text.contains("`WIDTH` is used but never defined"), "{text}");
    assert!(
        text.contains("`perimeter` is used but never defined or imported"),
        "{text}"
    );
    assert!(
        text.contains(
            "`if __name__ == \"__main__\":` block was in the file before the task and is gone"
        ),
        "{text}"
    );

    // Done right, nothing is said; names bound in any way count as defined.
    std::fs::write(
        dir.path().join("report.py"),
        "from geometry import area\nimport os.path as p\n\nWIDTH, HEIGHT = 3, 4\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n\n\ndef main(*args, **kw):\n    try:\n        total = [x for x in range(3) if (y := x)]\n    except ValueError as e:\n        print(e)\n    print(f\"area: {area(WIDTH, HEIGHT)}\", p, total, y, args, kw, len)\n    print(f\"perimeter: {perimeter(WIDTH, HEIGHT)}\")\n\n\nif __name__ == \"__main__\":\n    main()\n",
    )
    .unwrap();
    let right = code(&b, &["report.py".into()]).await;
    assert!(right.passed(), "{:?}", right.results);
}

#[tokio::test]
async fn an_option_read_that_the_parser_never_adds_is_caught() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = bench(dir.path());
    let without = "import argparse\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n    parser.add_argument(\"name\")\n    args = parser.parse_args()\n    if args.shout:\n        print(f\"HELLO, {args.name.upper()}!\")\n    else:\n        print(f\"Hello, {args.name}!\")\n\n\nif __name__ == \"__main__\":\n    main()\n";
    std::fs::write(dir.path().join("greet.py"), without).unwrap();
    let text = code(&b, &["greet.py".into()])
        .await
        .failure_text()
        .expect("the missing option is caught");
    assert!(
        text.contains("greet.py:8: `args.shout` is read, but the parser never adds `--shout`: add it, for a flag with parser.add_argument(\"--shout\", action=\"store_true\")"),
        "{text}"
    );
    let with = without.replace(
        "    args = parser.parse_args()",
        "    parser.add_argument(\"-s\", \"--shout\", action=\"store_true\")\n    args = parser.parse_args()",
    );
    std::fs::write(dir.path().join("greet.py"), with).unwrap();
    let right = code(&b, &["greet.py".into()]).await;
    assert!(right.passed(), "{:?}", right.results);
}

#[tokio::test]
async fn an_import_of_a_name_the_task_took_from_a_module_is_caught() {
    if !python() {
        return;
    }
    // A rename in the module that leaves a caller importing the old name.
    let dir = tempfile::tempdir().unwrap();
    let main =
        "from mathx import calc\n\nif __name__ == \"__main__\":\n    print(calc([1.25, 2.5]))\n";
    std::fs::write(dir.path().join("main.py"), main).unwrap();
    std::fs::write(
        dir.path().join("mathx.py"),
        "def calc(prices):\n    return round(sum(prices), 2)\n",
    )
    .unwrap();
    let mut b = bench(dir.path());
    b.originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Rename the function calc in mathx.py to compute_total, and update its caller in main.py.",
    );
    std::fs::write(
        dir.path().join("mathx.py"),
        "def compute_total(prices):\n    return round(sum(prices), 2)\n",
    )
    .unwrap();
    // One subtask that changed only mathx.py: another may still update main.py.
    let first_step = code(&b, &["mathx.py".into()]).await;
    assert!(first_step.passed(), "{:?}", first_step.results);
    // The whole task: main.py, untouched, is caught.
    b.whole_task = true;
    let text = code(&b, &["mathx.py".into()])
        .await
        .failure_text()
        .expect("the stale import is caught");
    assert!(
        text.contains("main.py:1: imports `calc` from mathx, but mathx.py no longer defines it (it did before the task)"),
        "{text}"
    );
    // An import the team wrote of a name that is not there is caught too.
    std::fs::write(
        dir.path().join("main.py"),
        "from mathx import compute_totals\n\nif __name__ == \"__main__\":\n    print(compute_totals([1.25, 2.5]))\n",
    )
    .unwrap();
    let text = code(&b, &["mathx.py".into(), "main.py".into()])
        .await
        .failure_text()
        .expect("the wrong import is caught");
    assert!(
        text.contains(
            "main.py:1: imports `compute_totals` from mathx, but mathx.py does not define it"
        ),
        "{text}"
    );
    // Done right, nothing is said.
    std::fs::write(
        dir.path().join("main.py"),
        "from mathx import compute_total\n\nif __name__ == \"__main__\":\n    print(compute_total([1.25, 2.5]))\n",
    )
    .unwrap();
    let right = code(&b, &["mathx.py".into(), "main.py".into()]).await;
    assert!(right.passed(), "{:?}", right.results);
    // A task that removes nothing: the name goes back where it was.
    b.originals = Arc::new(TaskFiles::new(
        "Add a function total_tax to mathx.py; main.py prints the total.",
        vec![(
            "mathx.py".into(),
            "def compute_total(prices):\n    return round(sum(prices), 2)\n".into(),
        )],
    ));
    std::fs::write(
        dir.path().join("mathx.py"),
        "def total_tax(prices):\n    return 0\n",
    )
    .unwrap();
    let text = code(&b, &["mathx.py".into()])
        .await
        .failure_text()
        .expect("the lost function is caught");
    assert!(
        text.contains(
            "put `compute_total` back in mathx.py as it was (the task does not remove it)"
        ),
        "{text}"
    );
}

#[test]
fn originals_are_the_files_the_task_names_inside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.py"), "x = 1\n").unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/b.py"), "y = 2\n").unwrap();
    let originals = capture_originals(
        &crate::tools::Sandbox::new(dir.path()).unwrap(),
        "Edit a.py and (pkg/b.py), not ../etc.py or missing.py. Then a.py again.",
    );
    let paths: Vec<&str> = originals.files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a.py", "pkg/b.py"]);
}

#[tokio::test]
async fn a_missing_checker_is_a_skip_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let b = bench(dir.path());
    let result = b
        .command(
            "syntax",
            Runs::Reads,
            "no-such-checker-xyz",
            vec![],
            &["a.x".into()],
        )
        .await;
    assert_eq!(result.status, CheckStatus::Skipped);
    assert!(result.detail.contains("not installed"));
}

#[tokio::test]
async fn written_python_tests_run_and_their_failure_is_reported() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test_calc.py"),
        "import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
    )
    .unwrap();
    let b = bench(dir.path());
    let files = vec!["calc.py".to_string(), "test_calc.py".to_string()];
    let failing = tests(&b, None, &files).await;
    assert!(!failing.passed(), "{:?}", failing.results);
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    let passing = tests(&b, None, &files).await;
    assert!(passing.passed(), "{:?}", passing.results);
    assert_eq!(passing.results[0].status, CheckStatus::Passed);
}

#[tokio::test]
async fn verify_command_overrides_and_nothing_to_run_is_a_skip() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
    let b = bench(dir.path());
    let files = vec!["notes.txt".to_string()];
    let none = tests(&b, None, &files).await;
    assert_eq!(none.results[0].status, CheckStatus::Skipped);
    let failing = tests(&b, Some("echo broken; exit 3"), &files).await;
    assert_eq!(failing.results[0].status, CheckStatus::Failed);
    assert!(failing.results[0].detail.contains("broken"));
}

#[test]
fn rust_and_js_markers_are_stubs() {
    assert_eq!(
        marked_stubs(
            "src/a.rs",
            "fn a() {\n    todo!()\n}\n// todo!() in a comment\n"
        )
        .len(),
        1
    );
    assert_eq!(
        marked_stubs(
            "a.js",
            "function f() { throw new Error('Not implemented'); }"
        )
        .len(),
        1
    );
    assert!(marked_stubs("a.js", "function f() { return 1; }").is_empty());
}

#[test]
fn every_rule_is_run_by_one_check_or_by_the_acceptance_test() {
    let by_acceptance = |id: &str| {
        id == "tests.acceptance" || id == "tests.examples" || id.starts_with("acceptance.")
    };
    for rule in crate::checks::RULES {
        let owners = PIPELINE
            .iter()
            .filter(|check| check.rules().contains(&rule.id))
            .count();
        if by_acceptance(rule.id) {
            assert_eq!(owners, 0, "{} is the acceptance test's", rule.id);
        } else {
            assert_eq!(owners, 1, "{} must be run by exactly one check", rule.id);
        }
    }
    for check in PIPELINE {
        for id in check.rules() {
            assert!(crate::checks::rule(id).is_some(), "{id} is not in RULES");
        }
    }
    // The acceptance runner's lists (`Rule("id", …)`) hold every acceptance rule but the
    // verdict `tests.acceptance` itself, and the test repairs, once each; nothing else.
    let runner = include_str!("../acceptance_runner.py");
    let listed: Vec<&str> = runner
        .split("Rule(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    let mut expected: Vec<&str> = crate::checks::RULES
        .iter()
        .map(|r| r.id)
        .filter(|id| by_acceptance(id) && *id != "tests.acceptance")
        .chain(
            crate::checks::REPAIRS
                .iter()
                .map(|r| r.id)
                .filter(|id| id.starts_with("repair.test-")),
        )
        .collect();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "the runner's rules against the registry");
}

#[tokio::test]
async fn tests_run_only_at_the_end_of_the_task_and_only_on_code_that_compiles() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 5)\n",
    )
    .unwrap();
    let b = bench(dir.path());
    let files = vec!["calc.py".to_string(), "test_calc.py".to_string()];
    // After a subtask: the code is read, never run.
    let after = run(&b, Stage::AfterSubtask, &files, None).await;
    assert!(after.passed(), "{}", after.summary());
    assert_eq!(after.tests().count(), 0);
    // At the end: the failing test fails the task.
    let end = run(&b, Stage::EndOfTask, &files, None).await;
    assert!(!end.passed());
    assert_eq!(of(&end, "tests.python").status, CheckStatus::Failed);
    // Code that does not compile is not tested: its error is the compiler's.
    std::fs::write(
        dir.path().join("calc.py"),
        "def add(a, b)\n    return a + b\n",
    )
    .unwrap();
    let broken = run(&b, Stage::EndOfTask, &files, None).await;
    assert_eq!(of(&broken, "syntax.python").status, CheckStatus::Failed);
    assert_eq!(broken.tests().count(), 0);
}

#[test]
fn the_first_failure_says_what_it_calls_for_and_a_stopped_run_is_code_that_never_ends() {
    let dir = tempfile::tempdir().unwrap();
    let b = bench(dir.path());
    let files = ["calc.py".to_string()];
    let passed = b.result(
        "syntax.python",
        "py_compile",
        CheckStatus::Passed,
        &files,
        "",
    );
    let failed = |detail: &str| {
        b.result(
            "tests.acceptance",
            "acceptance test",
            CheckStatus::Failed,
            &files,
            detail,
        )
    };
    let checks = |results: Vec<CheckResult>| Checks { results };
    assert_eq!(checks(vec![passed.clone()]).failure_code(), "");
    assert_eq!(
        checks(vec![passed.clone(), failed("AssertionError: 3 != 4")]).failure_code(),
        "tests"
    );
    let stopped = format!(
        "checking spin\n{} 120 s (does the code loop forever or wait for input?)",
        bench::STOPPED
    );
    assert_eq!(
        checks(vec![passed, failed(&stopped)]).failure_code(),
        crate::recovery::strategy::NEVER_ENDS
    );
}
