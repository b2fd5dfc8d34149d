//! Acceptance tests the team writes when the task has none: code and tests together.
//!
//! A task that changes Python code in a workspace without tests leaves the checks with
//! nothing that runs the code: a function that compiles and has a body passes, right
//! or wrong (a `fizzbuzz` returning a tuple of ints would be reported done). So
//! before calling such a task done, the coordinator has the model write a
//! few `assert`s from the task itself (and the files as they were before it, not the
//! code now: a test read off the code would only repeat its mistakes), and runs them.
//!
//! - The test is in Python for Python code, else in JavaScript for CommonJS code (run by
//!   node, whole; `acceptance_runner.js`). It lives in
//!   `.conclave/checks/task-N/acceptance_test.{py,js}` (N numbers the workspace's
//!   tasks in the order they first needed a test), never among the user's files,
//!   and is written once per task: later fix rounds run the same test.
//! - It runs in a wrapper (`acceptance_runner.py`) that tells a failing code from a
//!   broken test: an `AssertionError`, or an error raised inside the workspace's code,
//!   fails the check (and goes to the fix loop), as does a function missing from the
//!   code that the task names as code (`fizzbuzz(n)`, "the function mean"); an error of
//!   the test itself (a wrong import, a name it never defined, a function of the code
//!   it made up, a syntax error) is rewritten once. A test still
//!   broken skips the check, saying why, and since nothing then checked the code
//!   against the task, the task is not reported done (`verify.rs`: it fails). So does a
//!   test the provider would not serve, twice (its calls failed past their retries): the
//!   check could have run and did not. A test the model could not write at all is a
//!   plain skip. unittest-style tests (`self.assertEqual`…) run as the asserts they
//!   stand for.
//! - Each assert is judged on its own. One that only calls functions the task does not
//!   name, and that the code as it was before the task fails too, asked for something
//!   the task never did (for "make `mean([])` return 0.0", an assert
//!   `spread([]) == 0.0` would fail right code): it is ignored, and the check says so. The
//!   same assert passing before the task is a regression, and fails the check.
//! - What small models get wrong in a test and the runner can mend, it mends and says
//!   so: a project module or function used without its import, a check function never
//!   called, `python` for the running interpreter, an answer cut off at the token limit,
//!   a `said` of its own. A long hand-written value the code fails is blamed on the
//!   first test, not the code; so is a first test that runs a program for a function.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::check::{self, Bench, Originals};
use super::{Services, first_line};
use crate::checks::defines::{Language, defined_name, is_definition, language_of};
use crate::checks::intent::Intent;
use crate::config::TeamLayer;
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::Classify;
use crate::recovery::quality::{self, TestOutcome, TestStep, Verdict};
use crate::runtime::{AgentContext, CheckResult, CheckStatus, Evidence, TaskId};

/// The check's name, as `getTask` and the boards show it.
pub const NAME: &str = "acceptance test (written by the team)";

/// How a skipped acceptance check begins its detail: no test, no answer from the
/// provider, or a broken test.
const NOT_WRITTEN: &str = "the team could not write an acceptance test";
const UNSERVED: &str = "the provider did not answer the calls for the acceptance test";
const BROKEN: &str = "the acceptance test the team wrote is broken itself";

/// Whether `result` is an acceptance check skipped because the test the team wrote was
/// broken, or the provider failed the calls for it, also the second time: the team
/// meant to check the code and could not, so nothing says the code does what the task
/// asks, and the task is not done (`verify.rs`). A test the model gave no answer for, a
/// test the person would not let run, or a checker that is not installed, is a plain
/// skip: the summary says why.
pub fn unverified(result: &CheckResult) -> bool {
    result.name == NAME
        && result.status == CheckStatus::Skipped
        && (result.detail.starts_with(BROKEN) || result.detail.starts_with(UNSERVED))
}

/// Why an [`unverified`] check had no test to run, in a line.
pub fn why_unverified(result: &CheckResult) -> String {
    if result.detail.starts_with(UNSERVED) {
        return result.detail.lines().next().unwrap_or(UNSERVED).to_string();
    }
    let output = result.detail.split_once('\n').map_or("", |(_, rest)| rest);
    let output = output.split("\n\nThe test (").next().unwrap_or(output);
    format!(
        "the test the team wrote was broken twice ({})",
        broken_because(output)
    )
}

/// How a passed run of the runner says the code gave the task's own examples, and how
/// many (`EXAMPLES_GIVEN` in `acceptance_runner.py`).
const EXAMPLES_GIVEN: &str = "the task's own examples the code gives:";

/// The runner's rules that set a failing assert aside because other evidence speaks for
/// the code: a test passed so is disputed, never checked.
const SETS_ASIDE_FOR_REVIEW: [&str; 2] = ["acceptance.disputed-assert", "acceptance.inverse-value"];

impl Evidence {
    pub fn of(checks: &[CheckResult]) -> Evidence {
        let passed = |c: &&CheckResult| c.status == CheckStatus::Passed && c.kind == "tests";
        if checks.iter().filter(passed).any(|c| c.name != NAME) {
            return Evidence::ProjectTests;
        }
        match checks.iter().filter(passed).find(|c| c.name == NAME) {
            Some(c)
                if c.rules
                    .iter()
                    .any(|r| SETS_ASIDE_FOR_REVIEW.contains(&r.as_str())) =>
            {
                Evidence::Disputed
            }
            Some(c) if c.detail.lines().any(|l| l.starts_with(EXAMPLES_GIVEN)) => {
                Evidence::TaskExamples
            }
            Some(_) => Evidence::OwnTestOnly,
            None => Evidence::Nothing,
        }
    }

    /// Whether a completion resting on this asks the person to review it: only the
    /// team's own test ran the code, or the test and the code disagreed (a task with no
    /// code to run, `Nothing`, does not). The result text, the run summary and
    /// `conclave run`'s exit code 3 follow it.
    pub fn asks_for_review(self) -> bool {
        matches!(self, Evidence::OwnTestOnly | Evidence::Disputed)
    }

    /// In a line, for the final report.
    pub fn describe(self) -> &'static str {
        match self {
            Evidence::ProjectTests => "tests in the project, or verify.command",
            Evidence::TaskExamples => {
                "the examples the task gives, and a test the team wrote from the task"
            }
            Evidence::OwnTestOnly => {
                "only a test the team wrote itself: nothing independent of the team checked the change, so review it"
            }
            Evidence::Disputed => {
                "a test the team wrote, with asserts the code fails set aside because other evidence gives what the code gives (a second solution written from the task alone, or the code's own inverse function): the test and the code disagree, so review it"
            }
            Evidence::Nothing => "nothing: no test ran it",
        }
    }
}

/// How the wrapper tells a broken test from a failing code.
const TEST_BROKEN_EXIT: i32 = 3;

/// Runs the test (`python3 -c RUNNER TEST TASK_FILE ORIGINALS_DIR`) with the workspace on
/// `sys.path`, judging each assert on its own. Exit 0: passed; 1: the code failed it;
/// 3: the test itself is broken. `src/checks/python/definitions.py` is joined ahead of
/// it (`checks::python_program`).
static RUNNER: LazyLock<String> =
    LazyLock::new(|| crate::checks::python_program(include_str!("acceptance_runner.py")));

/// Runs a JavaScript test (`node -e JS_RUNNER TEST TASK_FILE DISABLED_JSON`), whole: the
/// same exit codes and `::rule` lines.
const JS_RUNNER: &str = include_str!("acceptance_runner.js");

/// Whether the acceptance test applies: Python or JavaScript code changed, and no test
/// ran.
pub fn wanted(s: &Services, files: &[String], tests: &[CheckResult]) -> bool {
    s.config.verify.acceptance_tests
        && crate::checks::enabled("tests.acceptance", &s.config.verify.disabled)
        && s.models.is_some()
        && tests.iter().all(|r| r.status == CheckStatus::Skipped)
        && files.iter().any(|f| language_of(f).is_some())
}

fn test_path(s: &Services, task_id: TaskId, language: Language) -> PathBuf {
    checks_dir(&s.workspace.join(".conclave").join("checks"), task_id)
        .join(format!("acceptance_test.{}", language.extension()))
}

/// The file in a task's checks folder that names the task it belongs to.
const TASK_ID_FILE: &str = "task-id";

/// The task's folder under `checks`: `task-N`, numbered in the order tasks first needed
/// one in this workspace. The model reads the test's path (in the prompt and in
/// tracebacks), and a task id is random: a number keeps the same work's prompts the
/// same from run to run, and reads better. The folder names its task in `task-id`,
/// which finds it again after a restart; a folder named by the task id (as older
/// builds made) is used as it is.
fn checks_dir(checks: &Path, task_id: TaskId) -> PathBuf {
    let id = task_id.to_string();
    let by_id = checks.join(&id);
    if by_id.is_dir() {
        return by_id;
    }
    let mut highest = 0u64;
    for entry in std::fs::read_dir(checks).into_iter().flatten().flatten() {
        let dir = entry.path();
        if std::fs::read_to_string(dir.join(TASK_ID_FILE)).is_ok_and(|named| named.trim() == id) {
            return dir;
        }
        if let Some(n) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.strip_prefix("task-"))
            .and_then(|n| n.parse::<u64>().ok())
        {
            highest = highest.max(n);
        }
    }
    if std::fs::create_dir_all(checks).is_err() {
        return by_id;
    }
    // `create_dir` fails on a folder that exists: two tasks starting at once take
    // different numbers.
    for n in highest + 1.. {
        let dir = checks.join(format!("task-{n}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                return match std::fs::write(dir.join(TASK_ID_FILE), &id) {
                    Ok(()) => dir,
                    Err(_) => by_id,
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return by_id,
        }
    }
    by_id
}

/// Writes the test if there is none yet for this task, runs it, and says how it went.
pub async fn run(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    bench: &Bench,
    files: &[String],
) -> CheckResult {
    // Python when Python changed, else JavaScript: one test per task.
    let language = if files
        .iter()
        .any(|f| language_of(f) == Some(Language::Python))
    {
        Language::Python
    } else {
        Language::JavaScript
    };
    let path = test_path(s, task_id, language);
    let code_files: Vec<String> = files
        .iter()
        .filter(|f| language_of(f) == Some(language))
        .cloned()
        .collect();
    // The rules that found something in a test or mended one, over both tests.
    let mut fired: Vec<String> = vec!["tests.acceptance".into()];
    let result = |status, detail: String, fired: &[String]| CheckResult {
        kind: "tests".into(),
        name: NAME.into(),
        status,
        files: code_files.clone(),
        detail,
        subtask_id: None,
        at: chrono::Utc::now(),
        rules: fired.to_vec(),
    };
    // Asked before the test is written: a test no one may run is not worth a model call.
    let runner = match language {
        Language::Python => "python3",
        Language::JavaScript => "node",
    };
    let what = format!(
        "{runner} {} (an acceptance test the team writes from the task, which imports the task's {})",
        relative(s, &path),
        code_files.join(", ")
    );
    if let Err(why) = bench.consent.may_run(&what).await {
        return result(
            CheckStatus::Skipped,
            format!("{}: {why}", check::NOT_RUN),
            &fired,
        );
    }
    // The one file a second solution of the task may be written for, to settle
    // comparisons the code fails (`acceptance.disputed-assert`).
    let second_file = match language {
        Language::Python if s.config.verify.second_solution => {
            second_solution_file(&code_files, &bench.originals)
        }
        _ => None,
    };
    let second_dir = path.with_file_name("second");
    // Times the test was written again; the quality ladder says how many it may be.
    let mut rewrites = 0;
    // Why the last test could not be used, for its rewrite.
    let mut previous_problem: Option<String> = None;
    loop {
        if !path.is_file() {
            let target = TestTarget {
                path: &path,
                language,
                code_files: &code_files,
            };
            match write_test(
                ctx,
                s,
                task_id,
                &bench.originals,
                &target,
                previous_problem.as_deref(),
            )
            .await
            {
                Ok(written) => {
                    s.task_state.entry(task_id).or_default().acceptance_test = Some(written);
                }
                // An answer with no usable test (prose, a copy of the code without an
                // assert), or a call the provider failed, is asked for again, as a
                // broken test is.
                Err(NoCode { why, unserved }) => {
                    let outcome = if unserved {
                        TestOutcome::Unserved
                    } else {
                        TestOutcome::NotWritten
                    };
                    match quality::acceptance_test(outcome, rewrites, false) {
                        TestStep::WriteAgain => {
                            tracing::info!(task = %task_id, "no usable acceptance test; asking again: {why}");
                            // A failed call says nothing to the model about its test.
                            previous_problem = (!unserved).then_some(why);
                            rewrites += 1;
                            continue;
                        }
                        // Unserved: `unverified`, never completed; not written: a plain skip.
                        _ => {
                            let lead = if unserved { UNSERVED } else { NOT_WRITTEN };
                            return result(CheckStatus::Skipped, format!("{lead}: {why}"), &fired);
                        }
                    }
                }
            }
        }
        put_back_if_changed(ctx, s, task_id, &path);
        let test = path.to_string_lossy().into_owned();
        let (task_file, originals) = write_runner_inputs(&path, &bench.originals);
        let second = match &second_file {
            Some(file) => put_second_solution(s, task_id, &second_dir, file),
            None => String::new(),
        };
        let ran = match language {
            Language::Python => {
                let which = if rewrites > 0 { "rewritten" } else { "first" };
                let args = [
                    "-c".into(),
                    RUNNER.as_str().into(),
                    test,
                    task_file,
                    originals,
                    which.into(),
                    serde_json::to_string(&bench.disabled).unwrap_or_else(|_| "[]".into()),
                    serde_json::to_string(&bench.intent()).unwrap_or_else(|_| "{}".into()),
                    second,
                ];
                bench.run_program("python3", &args).await
            }
            Language::JavaScript => {
                let args = [
                    "-e".into(),
                    JS_RUNNER.into(),
                    test,
                    task_file,
                    serde_json::to_string(&bench.disabled).unwrap_or_else(|_| "[]".into()),
                ];
                bench.run_program("node", &args).await
            }
        };
        let (code, output) = match ran {
            Ok(ran) => ran,
            Err(why) => return result(CheckStatus::Skipped, why, &fired),
        };
        let (output, disputable) = rules_named(&output, &mut fired);
        let shown = format!(
            "{}\n\nThe test ({}):\n{}",
            output.trim_end(),
            relative(s, &path),
            std::fs::read_to_string(&path)
                .unwrap_or_default()
                .trim_end()
        );
        let outcome = match code {
            Some(0) => TestOutcome::Passed,
            Some(TEST_BROKEN_EXIT) => TestOutcome::Broken,
            _ if disputable && second_file.is_some() => TestOutcome::Disputable,
            _ => TestOutcome::Failed,
        };
        let second_asked = s
            .task_state
            .get(&task_id)
            .is_some_and(|state| state.second_solution.is_some());
        match quality::acceptance_test(outcome, rewrites, second_asked) {
            // The asserts it ignored (about code the task does not name, failed before
            // the task too) are said.
            TestStep::Count(Verdict::Passed) => {
                return result(CheckStatus::Passed, output.trim().to_string(), &fired);
            }
            TestStep::Count(Verdict::Failed) => return result(CheckStatus::Failed, shown, &fired),
            // Skipped as broken: `unverified`, never completed.
            TestStep::Count(Verdict::Unverified) | TestStep::Skip => {
                return result(CheckStatus::Skipped, format!("{BROKEN}:\n{shown}"), &fired);
            }
            TestStep::AskSecondSolution => {
                let file = second_file.as_deref().unwrap_or_default();
                let written = write_second_solution(ctx, s, task_id, &bench.originals, file).await;
                match &written {
                    Ok(_) => {
                        let _ = ctx.append_own_board(&format!(
                            "- the code failed the acceptance test: wrote a second solution of the task from the task alone, to see whether it fails the test the same way: {}",
                            relative(s, &second_dir.join(file))
                        ));
                    }
                    Err(why) => {
                        tracing::info!(task = %task_id, "no usable second solution: {why}")
                    }
                }
                s.task_state.entry(task_id).or_default().second_solution =
                    Some(written.ok().map(|content| (file.to_string(), content)));
            }
            TestStep::WriteAgain => {
                // A broken test says nothing about the code: write it again.
                tracing::info!(task = %task_id, "the acceptance test is broken; rewriting it: {}", first_line(&output));
                previous_problem = Some(broken_because(&output));
                let _ = std::fs::remove_file(&path);
                if let Some(mut state) = s.task_state.get_mut(&task_id) {
                    state.acceptance_test = None;
                }
                rewrites += 1;
            }
        }
    }
}

/// The runner's output without its `::rule ID` lines, whose ids join `fired`, and
/// whether it said `::disputable` (comparisons a second solution could settle failed).
fn rules_named(output: &str, fired: &mut Vec<String>) -> (String, bool) {
    let mut kept = String::with_capacity(output.len());
    let mut disputable = false;
    for line in output.split_inclusive('\n') {
        if line.trim_end() == "::disputable" {
            disputable = true;
            continue;
        }
        match line.trim_end().strip_prefix("::rule ") {
            Some(id) => {
                if !fired.iter().any(|f| f == id) {
                    fired.push(id.to_string());
                }
            }
            None => kept.push_str(line),
        }
    }
    (kept, disputable)
}

/// The file a second solution of the task is written for: the one Python file the team
/// changed, when what it was before the task is known (the task named it: as it was,
/// or not there yet). With several files changed, one solution cannot stand for the
/// team's.
fn second_solution_file(code_files: &[String], originals: &Originals) -> Option<String> {
    let [file] = code_files else { return None };
    let known =
        originals.files.iter().any(|(f, _)| f == file) || originals.task.contains(file.as_str());
    known.then(|| file.clone())
}

/// Puts the task's second solution, if it has one, in `dir` (as it was written: a
/// coder's `bash` may have changed it since) and returns `dir` for the runner, else "".
fn put_second_solution(s: &Services, task_id: TaskId, dir: &Path, file: &str) -> String {
    let mut state = s.task_state.entry(task_id).or_default();
    // After a restart the solution written before is on disk, and not asked for again.
    if state.second_solution.is_none()
        && let Ok(content) = std::fs::read_to_string(dir.join(file))
    {
        state.second_solution = Some(Some((file.to_string(), content)));
    }
    let Some(Some((file, content))) = &state.second_solution else {
        return String::new();
    };
    let target = dir.join(file);
    let written = target
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|_| std::fs::write(&target, content));
    match written {
        Ok(()) => dir.to_string_lossy().into_owned(),
        Err(why) => {
            tracing::warn!(task = %task_id, "could not write the second solution: {why}");
            String::new()
        }
    }
}

/// Asks the coders' model for `file` whole, from the task and the files as they were
/// before it alone: it never sees the team's code or test, so a value it agrees on
/// with the team's code is a second opinion, not a copy.
async fn write_second_solution(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    originals: &Originals,
    file: &str,
) -> Result<String, String> {
    let task = s
        .tasks
        .get(task_id)
        .map(|t| t.description)
        .unwrap_or_default();
    let before = match originals.files.iter().find(|(f, _)| f == file) {
        Some((_, content)) => format!(
            "{file} as it was before the task:\n```python\n{}\n```",
            content.trim_end()
        ),
        None => format!("{file} does not exist yet."),
    };
    let mut seen: Vec<String> = originals.files.iter().map(|(f, _)| f.clone()).collect();
    seen.push(file.to_string());
    let others = super::files::other_files_now(&s.sandbox, &task, &seen);
    let others = if others.is_empty() {
        others
    } else {
        format!("\n\n{others}")
    };
    let prompt = format!(
        "Task:\n{task}\n\n{before}{others}\n\nWrite {file} whole, as it must be when the task is done, \
with every function the task asks for complete. Reply with only one ```python block."
    );
    ask_for_code(ctx, s, TeamLayer::Bottom, prompt, 1536, Language::Python)
        .await
        .map_err(|no| no.why)
}

/// Why no code came back: the model's answer had none, or the provider never gave one.
struct NoCode {
    why: String,
    /// The provider failed the call past its retries (a transient failure, or the
    /// provider's own trouble as `FailureKind::is_provider_wait` reads it): a step that
    /// could have been served and was not.
    unserved: bool,
}

impl From<String> for NoCode {
    fn from(why: String) -> Self {
        NoCode {
            why,
            unserved: false,
        }
    }
}

/// Asks `layer`'s model, in that layer's part, for one block of `language` code.
async fn ask_for_code(
    ctx: &AgentContext,
    s: &Services,
    layer: TeamLayer,
    prompt: String,
    max_tokens: u32,
    language: Language,
) -> Result<String, NoCode> {
    let model = s
        .model(layer)
        .ok_or_else(|| NoCode::from("no model is configured".to_string()))?;
    let part = match layer {
        TeamLayer::Top => super::roles::TOP,
        TeamLayer::Mid => super::roles::MID,
        TeamLayer::Bottom => super::roles::BOTTOM,
    };
    let request = ModelRequest {
        system: ctx.system_prompt(part),
        messages: vec![ChatMessage::user(prompt)],
        tools: Vec::new(),
        max_tokens,
        temperature: s.temperature(layer),
    };
    let answer = model
        .complete(&request, &mut |_: &str| {})
        .await
        .map_err(|e| NoCode {
            unserved: e.is_transient() || e.failure_kind().is_provider_wait(),
            why: e.to_string(),
        })?;
    code_block(&answer.text, language).ok_or_else(|| {
        NoCode::from(format!(
            "the model's answer had no {} code: \"{}\"",
            language.name(),
            first_line(&answer.text)
        ))
    })
}

/// The test as the team wrote it, back on disk if something changed it since: a fix
/// round's coder may rewrite the test to pass instead of fixing the code, and while the
/// file tools refuse `.conclave/`, `bash` can still write there.
fn put_back_if_changed(ctx: &AgentContext, s: &Services, task_id: TaskId, path: &Path) {
    let Some(written) = s
        .task_state
        .get(&task_id)
        .and_then(|state| state.acceptance_test.clone())
    else {
        return;
    };
    if std::fs::read_to_string(path).ok().as_deref() == Some(written.as_str()) {
        return;
    }
    tracing::warn!(task = %task_id, "the acceptance test was changed after it was written; putting it back");
    if std::fs::write(path, &written).is_ok() {
        let _ = ctx.append_own_board(&format!(
            "- the acceptance test {} had been changed by the team's code or tools; it was put back as written",
            relative(s, path)
        ));
    }
}

/// Beside the test: the task's text (whose words tell which asserts are about it) and
/// the task's files as they were before it (`originals/`), for the runner to try the
/// asserts about other code on. Their paths, the second empty when nothing was kept.
fn write_runner_inputs(test: &Path, originals: &Originals) -> (String, String) {
    let Some(dir) = test.parent() else {
        return (String::new(), String::new());
    };
    let task_file = dir.join("task.txt");
    let task_file = match std::fs::write(&task_file, &originals.task) {
        Ok(()) => task_file.to_string_lossy().into_owned(),
        Err(_) => String::new(),
    };
    let before = dir.join("originals");
    let mut kept = false;
    for (file, content) in &originals.files {
        let target = before.join(file);
        kept |= target
            .parent()
            .is_some_and(|p| std::fs::create_dir_all(p).is_ok())
            && std::fs::write(&target, content).is_ok();
    }
    let before = if kept {
        before.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    (task_file, before)
}

fn relative(s: &Services, path: &Path) -> String {
    path.strip_prefix(&s.workspace)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Put before the model's test: printed text compared as a person reads it. Small
/// models compare "Hello, world!" with "hello world" exactly and fail right code. Case
/// counts when the task is about case: otherwise `said` would make every greeting
/// equal, and "print it in upper case" would pass code that never does.
fn said_prelude(intent: &Intent) -> String {
    let about_case = intent.about_case;
    let lower = if about_case { "" } else { ".lower()" };
    format!(
        "import re as _re\n\n\ndef said(text):\n    \"\"\"Text as a person reads it: no punctuation, single spaces{}.\"\"\"\n    return \" \".join(_re.sub(r\"[^\\w\\s]\", \" \", str(text)){lower}.split())\n\n\n",
        if lower.is_empty() { "" } else { ", lower case" }
    )
}

/// The acceptance test to write: where it goes, its language, and the code it tests.
#[derive(Clone, Copy)]
struct TestTarget<'a> {
    path: &'a Path,
    language: Language,
    code_files: &'a [String],
}

/// Asks the model for the test and saves it (a Python one after [`said_prelude`]).
async fn write_test(
    ctx: &AgentContext,
    s: &Services,
    task_id: TaskId,
    originals: &Originals,
    target: &TestTarget<'_>,
    previous: Option<&str>,
) -> Result<String, NoCode> {
    let TestTarget {
        path,
        language,
        code_files,
    } = *target;
    let task = s
        .tasks
        .get(task_id)
        .map(|t| t.description)
        .unwrap_or_default();
    let mut before = String::new();
    for (file, content) in originals.files.iter() {
        let shown: String = content.chars().take(4000).collect();
        before.push_str(&format!("\n--- {file}\n{shown}\n"));
    }
    let mut now = String::new();
    let mut defined: Vec<(String, String)> = Vec::new();
    for file in code_files.iter().take(6) {
        if let Ok(absolute) = s.sandbox.resolve(file)
            && let Ok(content) = tokio::fs::read_to_string(&absolute).await
        {
            let defs: Vec<&str> = content
                .lines()
                .filter(|l| is_definition(l, language))
                .collect();
            now.push_str(&format!("\n{file}: {}", defs.join(" | ")));
            defined.extend(
                defs.iter()
                    .filter_map(|l| defined_name(l, language))
                    .map(|name| (file.clone(), name)),
            );
        }
    }
    let before = if before.is_empty() {
        String::new()
    } else {
        format!("\n\nThe files as they were before the task:{before}")
    };
    // What the task points to without naming it ("see the other modules"): a test that
    // cannot see it can only repeat the coder's guess.
    let mut seen: Vec<String> = originals.files.iter().map(|(f, _)| f.clone()).collect();
    seen.extend(code_files.iter().cloned());
    let others = super::files::other_files_now(&s.sandbox, &task, &seen);
    let others = if others.is_empty() {
        others
    } else {
        format!("\n\n{others}")
    };
    // The examples name the task's own function: a small model copies an example
    // as it is, even an import of a function the project does not have.
    let task_function = task_function(&task, &defined);
    // A small model's arithmetic is often wrong where its code is not: an expected value
    // it works out itself fails right code. Written as the arithmetic, Python works it out.
    let what = format!(
        "that check the behaviour the task asks for, and nothing the task does not state: use its exact \
values and names, invent no others. Where the task gives no expected result, choose small inputs and write \
each expected result as the Python arithmetic that works it out from them (`== 2 * 3 + 4 * 5`, not `== 26`): \
a value worked out in your head is often wrong. Check single values and short results{}: never write out a long \
expected list or text by hand.",
        short_result_examples(task_function.as_ref().map(|(_, name)| name.as_str()))
    );
    let how = match language {
        Language::Python => format!(
            "Write a short Python test script: 3 to 6 `assert` statements {what} When the task is about \
a function, import it from its module{} (the project root is on sys.path) and call it. Only when the task asks for \
a program or script (it prints, or takes command-line arguments), run it with \
subprocess.run([sys.executable, \"file.py\", ...], capture_output=True, text=True) and compare what it printed \
with said(), which is defined for you and ignores punctuation and spacing (and case, unless the task is about case): \
assert said(result.stdout) == said(\"hello world\"). Reply with only one ```python block.",
            task_function
                .as_ref()
                .map(|(file, name)| format!(" (`from {} import {name}`)", python_module(file)))
                .unwrap_or_default()
        ),
        Language::JavaScript => format!(
            "Write a short Node.js test script: `const assert = require('assert');`, the module required \
with a path from the project root (`const {{ {name} }} = require('./{file}');`), then 3 to 6 \
`assert.strictEqual` or `assert.deepStrictEqual` calls {what} Reply with only one ```javascript block.",
            name = task_function
                .as_ref()
                .map_or("name", |(_, name)| name.as_str()),
            file = task_function
                .as_ref()
                .map_or("file.js", |(file, _)| file.as_str()),
        ),
    };
    // A rewrite is told what was wrong with the last test, or it may repeat the mistake.
    let previous = previous
        .map(|why| {
            format!(
                "\n\nYour previous test could not be used: {why}. Write a new one that avoids that."
            )
        })
        .unwrap_or_default();
    let prompt = format!(
        "Task:\n{task}{before}{others}\n\nDefinitions in the files now:{now}\n\n{how}{previous}"
    );
    let code = ask_for_code(ctx, s, TeamLayer::Mid, prompt, 1024, language).await?;
    if !code.contains("assert") {
        return Err(NoCode::from("the model's test asserts nothing".to_string()));
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| NoCode::from(e.to_string()))?;
    }
    let prelude = match language {
        Language::Python => said_prelude(originals.intent()),
        Language::JavaScript => String::new(),
    };
    let written = format!("{prelude}{code}");
    std::fs::write(path, &written).map_err(|e| NoCode::from(e.to_string()))?;
    let _ = ctx.append_own_board(&format!(
        "- wrote an acceptance test for the task: {}",
        relative(s, path)
    ));
    Ok(written)
}

/// What made a test broken, in a line: the runner's own verdict when it gave one, else
/// the error that ended the traceback.
fn broken_because(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("the test "))
        .or(lines.last())
        .map_or_else(|| "it was broken".to_string(), |l| l.to_string())
}

/// The function of the task's code that the task names, as (file, name): the first
/// one in the task's own words.
fn task_function(task: &str, defined: &[(String, String)]) -> Option<(String, String)> {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut first: Option<(usize, &(String, String))> = None;
    for entry in defined {
        let at = task
            .match_indices(entry.1.as_str())
            .map(|(i, _)| i)
            .find(|&i| !task[..i].ends_with(word) && !task[i + entry.1.len()..].starts_with(word));
        if let Some(at) = at
            && first.is_none_or(|(earliest, _)| at < earliest)
        {
            first = Some((at, entry));
        }
    }
    first.map(|(_, entry)| entry.clone())
}

/// Examples of short checks, on the task's function when there is one; none at all
/// when there is not, as any other name would be copied. Only the plain call is shown
/// as code: a `len(f(…))` or `f(…)[2]` example was copied onto a function returning a
/// float.
fn short_result_examples(function: Option<&str>) -> String {
    function.map_or_else(String::new, |f| {
        format!(
            " (`{f}(…) == …`, one call and its expected value each; of a long list, only its length or one item)"
        )
    })
}

/// The module a Python file is imported as: `pkg/util.py` is `pkg.util`.
fn python_module(file: &str) -> String {
    file.trim_start_matches("./")
        .trim_end_matches(".py")
        .replace('/', ".")
}

/// The first fenced code block in `language` (or a bare ```), or the whole answer when
/// it is code without a fence.
fn code_block(text: &str, language: Language) -> Option<String> {
    let tags: &[&str] = match language {
        Language::Python => &["python", "py", "python3"],
        Language::JavaScript => &["javascript", "js", "node", "nodejs"],
    };
    let mut inside = false;
    let mut block = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            if inside {
                break;
            }
            let lang = trimmed.trim_start_matches('`').trim().to_ascii_lowercase();
            if lang.is_empty() || tags.contains(&lang.as_str()) {
                inside = true;
            }
            continue;
        }
        if inside {
            block.push(line);
        }
    }
    let code = if block.is_empty() {
        let plain = text.trim();
        let starts: &[&str] = match language {
            Language::Python => &["import ", "from ", "assert "],
            Language::JavaScript => &["const ", "require(", "assert"],
        };
        starts
            .iter()
            .any(|start| plain.starts_with(start))
            .then(|| plain.to_string())?
    } else {
        block.join("\n")
    };
    Some(format!("{}\n", code.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `program` runs here. Without it a test says SKIPPED and returns; under
    /// CI (whose machines have it) its absence fails the test instead.
    fn installed(program: &str) -> bool {
        let found = std::process::Command::new(program)
            .arg("--version")
            .output()
            .is_ok();
        if !found && std::env::var_os("CI").is_some() {
            panic!("{program} is needed by this test and is not installed");
        }
        if !found {
            eprintln!("SKIPPED: {program} is not installed");
        }
        found
    }

    #[test]
    fn each_task_gets_a_numbered_checks_folder_that_it_finds_again() {
        let workspace = tempfile::tempdir().unwrap();
        let checks = workspace.path().join(".conclave/checks");
        let (first, second) = (TaskId::new(), TaskId::new());
        assert_eq!(checks_dir(&checks, first), checks.join("task-1"));
        assert_eq!(checks_dir(&checks, second), checks.join("task-2"));
        // Asked again (a later fix round, or after a restart): the same folder.
        assert_eq!(checks_dir(&checks, first), checks.join("task-1"));
        assert_eq!(checks_dir(&checks, second), checks.join("task-2"));
        // Numbers go on past the highest: a lower folder removed by hand is not reused.
        std::fs::remove_dir_all(checks.join("task-1")).unwrap();
        assert_eq!(checks_dir(&checks, TaskId::new()), checks.join("task-3"));
        // A folder an older build named by the task's id stays that task's.
        let older = TaskId::new();
        std::fs::create_dir_all(checks.join(older.to_string())).unwrap();
        assert_eq!(checks_dir(&checks, older), checks.join(older.to_string()));
    }

    #[test]
    fn the_test_is_the_fenced_python_block() {
        let answer = "Here it is:\n```python\nfrom solution import f\nassert f(1) == 2\n```\nDone.";
        assert_eq!(
            code_block(answer, Language::Python).unwrap(),
            "from solution import f\nassert f(1) == 2\n"
        );
        assert_eq!(
            code_block("assert 1 == 1", Language::Python).unwrap(),
            "assert 1 == 1\n",
            "unfenced code is taken as it is"
        );
        assert!(code_block("I cannot write a test for this.", Language::Python).is_none());
        assert!(code_block("```json\n{}\n```", Language::Python).is_none());
        assert_eq!(
            code_block(
                "```javascript\nconst assert = require('assert');\n```",
                Language::JavaScript
            )
            .unwrap(),
            "const assert = require('assert');\n"
        );
        assert!(code_block("```python\nassert 1\n```", Language::JavaScript).is_none());
    }

    #[test]
    fn said_compares_printed_text_as_a_person_reads_it() {
        if !installed("python3") {
            return;
        }
        let passes = |script: String| {
            let run = std::process::Command::new("python3")
                .args(["-c", &script])
                .output()
                .unwrap();
            run.status.success()
        };
        let hello = "Write hello.py that prints hello world.";
        assert!(passes(format!(
            "{}assert said('Hello, World!\\n') == said('hello world')\nassert said('3 apples') != said('4 apples')\n",
            said_prelude(&Intent::read(hello, &|_| false))
        )));
        // When the task is about case, case counts.
        let shout = "Add a --shout flag: with it, the greeting is printed in upper case.";
        assert!(passes(format!(
            "{}assert said('HELLO, ADA!') == said('HELLO ADA')\nassert said('Hello, Ada!') != said('HELLO ADA')\n",
            said_prelude(&Intent::read(shout, &|_| false))
        )));
    }

    #[test]
    fn a_test_function_the_script_never_calls_still_runs() {
        if !installed("python3") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("doubler.py"),
            "def double(x):\n    return x + x\n",
        )
        .unwrap();
        let run = |test: &str| {
            std::fs::write(dir.path().join("t.py"), test).unwrap();
            std::process::Command::new("python3")
                .args(["-c", RUNNER.as_str(), "t.py"])
                .current_dir(dir.path())
                .output()
                .unwrap()
                .status
                .code()
        };
        let defined =
            "from doubler import double\n\ndef test_double():\n    assert double(2) == 5\n";
        assert_eq!(
            run(defined),
            Some(1),
            "the uncalled failing test fails the run"
        );
        let right = "from doubler import double\n\ndef test_double():\n    assert double(2) == 4\n\ntest_double()\n";
        assert_eq!(run(right), Some(0));
    }

    /// Runs `test` with the runner in a workspace holding `stats.py` now, and `before`
    /// as the task's original `stats.py`: the exit code and output.
    fn run_on_stats(task: &str, now: &str, before: &str, test: &str) -> (Option<i32>, String) {
        run_on_stats_as(task, now, before, test, "first")
    }

    /// As [`run_on_stats`], for the team's `first` or `rewritten` test.
    fn run_on_stats_as(
        task: &str,
        now: &str,
        before: &str,
        test: &str,
        which: &str,
    ) -> (Option<i32>, String) {
        run_on_stats_with(task, now, before, test, which, "[]")
    }

    /// As [`run_on_stats_as`], with the rules `disabled` (JSON) switched off.
    fn run_on_stats_with(
        task: &str,
        now: &str,
        before: &str,
        test: &str,
        which: &str,
        disabled: &str,
    ) -> (Option<i32>, String) {
        run_on_stats_beside(task, now, before, test, which, disabled, None)
    }

    /// As [`run_on_stats_with`], with `second` as a second solution's `stats.py`.
    fn run_on_stats_beside(
        task: &str,
        now: &str,
        before: &str,
        test: &str,
        which: &str,
        disabled: &str,
        second: Option<&str>,
    ) -> (Option<i32>, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stats.py"), now).unwrap();
        let checks = dir.path().join(".conclave/checks/t");
        std::fs::create_dir_all(&checks).unwrap();
        let second_dir = match second {
            Some(code) => {
                let second_dir = checks.join("second");
                std::fs::create_dir_all(&second_dir).unwrap();
                std::fs::write(second_dir.join("stats.py"), code).unwrap();
                second_dir.to_string_lossy().into_owned()
            }
            None => String::new(),
        };
        let test_path = checks.join("acceptance_test.py");
        std::fs::write(&test_path, test).unwrap();
        let originals = std::sync::Arc::new(super::super::check::TaskFiles::new(
            task,
            vec![("stats.py".into(), before.into())],
        ));
        let intent = serde_json::to_string(originals.intent()).unwrap();
        let (task_file, originals) = write_runner_inputs(&test_path, &originals);
        let run = std::process::Command::new("python3")
            .args(["-c", RUNNER.as_str()])
            .args([
                test_path.to_string_lossy().as_ref(),
                &task_file,
                &originals,
                which,
                disabled,
                &intent,
                &second_dir,
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let output = format!(
            "{}{}",
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr)
        );
        (run.status.code(), output)
    }

    #[test]
    fn a_function_the_test_calls_without_importing_it_is_imported_from_the_project() {
        if !installed("python3") {
            return;
        }
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
        // No import at all: as written, it runs no code of the project.
        let unimported = "assert mean([]) == 0.0\nassert mean([1, 3]) == 2.0\n";
        let (code, output) = run_on_stats(task, right, before, unimported);
        assert_eq!(code, Some(0), "{output}");
        assert!(
            output.contains("imported mean from stats: the test used it without importing it"),
            "{output}"
        );
        let (code, output) = run_on_stats(task, before, before, unimported);
        assert_eq!(code, Some(1), "the unchanged code still fails it: {output}");
        // A name no module of the project defines is still the test's own mistake.
        let module = "assert stats.mean([]) == 0.0\n";
        let (code, output) = run_on_stats(task, right, before, module);
        assert_eq!(code, Some(0), "{output}");
        assert!(
            output.contains("imported stats: the test used the module"),
            "{output}"
        );
        let invented = "assert average([]) == 0.0\n";
        let (code, output) = run_on_stats(task, right, before, invented);
        assert_eq!(code, Some(3), "{output}");
    }

    #[test]
    fn a_forgotten_call_another_python_and_a_cut_off_answer_are_mended() {
        if !installed("python3") {
            return;
        }
        let task = "Change stats.py so that running it prints 0.0, the mean of an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\nif __name__ == '__main__':\n    print(mean([]))\n";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n\n\nif __name__ == '__main__':\n    print(mean([]))\n";
        // A check function defined and never called, which runs no assert; and
        // `["python", …]`, which a machine may not have.
        let uncalled = "import subprocess\n\ndef check_empty():\n    result = subprocess.run(['python', 'stats.py'], capture_output=True, text=True)\n    assert result.stdout == '0.0'\n";
        let (code, output) = run_on_stats(task, right, before, uncalled);
        assert_eq!(code, Some(0), "{output}");
        let (code, output) = run_on_stats(task, before, before, uncalled);
        assert_eq!(
            code,
            Some(1),
            "the check runs, and fails the old code: {output}"
        );
        // Asserts, the last cut off by the token limit mid-string.
        let cut = "from stats import mean\nassert mean([]) == 0.0\nassert mean([2, 4]) == 3\nassert mean([1, 2, 3, 4, 5, 6, 7, 8, 9]) == \"5";
        let (code, output) = run_on_stats(task, right, before, cut);
        assert_eq!(code, Some(0), "{output}");
        assert!(
            output.contains("cut off at line 4 (the end of the model"),
            "{output}"
        );
        let (code, _) = run_on_stats(task, before, before, cut);
        assert_eq!(code, Some(1), "the complete asserts still check");
        // A `said` of the test's own is left out: the given one compares printed text
        // as a person reads it, and the test's own may keep punctuation or line breaks.
        let own_said = "import subprocess, sys\n\ndef said(s):\n    return s.replace(' ', '').lower()\n\nassert said(subprocess.run([sys.executable, 'stats.py'], capture_output=True, text=True).stdout) == said('0.0')\n";
        let (code, output) = run_on_stats(
            task,
            right,
            before,
            &format!(
                "{}{own_said}",
                said_prelude(&Intent::read(task, &|_| false))
            ),
        );
        assert_eq!(code, Some(0), "{output}");
        assert!(output.contains("own said() was left out"), "{output}");
        // Code that reads the command line sees the test's alone, not the runner's
        // (a test may call a `main()` whose argparse would meet the runner's arguments).
        let reads_argv =
            "import sys\n\n\ndef mean(xs):\n    return 0.0 if sys.argv[1:] == [] else 1.0\n";
        let (code, output) = run_on_stats(
            task,
            reads_argv,
            before,
            "from stats import mean\nassert mean([]) == 0.0\n",
        );
        assert_eq!(code, Some(0), "{output}");
        // A syntax error before the end is the test's own: broken.
        let wrong = "from stats import mean\nassert mean([]) == == 0.0\nassert mean([2, 4]) == 3\nassert mean([1]) == 1\nassert mean([2]) == 2\n";
        assert_eq!(run_on_stats(task, right, before, wrong).0, Some(3));
    }

    #[test]
    fn a_first_test_that_runs_a_program_for_a_function_task_is_broken() {
        if !installed("python3") {
            return;
        }
        // A task about a function, tested by running its module as a program and
        // expecting what it prints.
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
        let program = "import subprocess, sys\nresult = subprocess.run([sys.executable, 'stats.py'], capture_output=True, text=True)\nassert result.stdout == '0.0'\n";
        let (code, output) = run_on_stats(task, right, "", program);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("the task is about a function, mean (from stats): import it"),
            "{output}"
        );
        // The rewrite is judged as it is; a task about a program may run one.
        assert_eq!(
            run_on_stats_as(task, right, "", program, "rewritten").0,
            Some(1)
        );
        let printing = "Change stats.py so that it prints the mean of an empty list as 0.0.";
        assert_eq!(run_on_stats(printing, right, "", program).0, Some(1));
    }

    #[test]
    fn a_missing_name_fails_the_code_only_when_the_code_or_the_task_is_at_fault() {
        if !installed("python3") {
            return;
        }
        // The task names `mean` as a function: code without it fails.
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let without_mean = "def spread(xs):\n    return 0\n";
        let test = "from stats import mean\nassert mean([]) == 0.0\n";
        assert_eq!(run_on_stats(task, without_mean, "", test).0, Some(1));
        let attribute = "import stats\nassert stats.mean([]) == 0.0\n";
        assert_eq!(run_on_stats(task, without_mean, "", attribute).0, Some(1));
        // A program task tested with `stats.mean()`: a word of the task, no function
        // it asks for.
        let program = "Write a program in stats.py that prints the mean of 1, 2 and 3.";
        let printing = "print(2.0)\n";
        let (code, output) = run_on_stats(program, printing, "", attribute);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert_eq!(
            broken_because(&output),
            "the test uses `stats.mean`, which the task does not name and the code does not define: test only what the task asks for"
        );
        let imported = "from stats import mean\nassert mean([1, 2, 3]) == 2.0\n";
        let (code, output) = run_on_stats(program, printing, "", imported);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(output.contains("`stats.mean`"), "{output}");

        // `from string import string` atop the code. An import the code makes
        // fails the code; one the test makes of something that is not there is the
        // test's own mistake.
        let bad_import = "from string import string\n\n\ndef mean(xs):\n    return 0.0\n";
        let (code, output) = run_on_stats(task, bad_import, "", test);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("cannot import name 'string'"), "{output}");
        let test_imports =
            "from string import string\nfrom stats import mean\nassert mean([]) == 0.0\n";
        let right = "def mean(xs):\n    return 0.0\n";
        let (code, output) = run_on_stats(task, right, "", test_imports);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            !output.contains("the test uses"),
            "not a name of the project: {output}"
        );
    }

    #[test]
    fn the_test_prompt_s_examples_name_the_task_s_function_or_none() {
        let defined: Vec<(String, String)> = [
            ("stats.py", "def spread(xs):"),
            ("stats.py", "def mean(xs):"),
            ("lib/util.py", "class Meaner:"),
        ]
        .iter()
        .filter_map(|(file, line)| {
            defined_name(line, Language::Python).map(|name| (file.to_string(), name))
        })
        .collect();
        let task = "Change the function mean in stats.py so that spread stays the same.";
        let found = task_function(task, &defined).unwrap();
        assert_eq!(
            found,
            ("stats.py".to_string(), "mean".to_string()),
            "the first named"
        );
        assert!(short_result_examples(Some(&found.1)).contains("`mean(…) == …`"));
        assert!(
            !short_result_examples(Some("mean")).contains("len(mean"),
            "no shape the model would copy onto a function that returns one value"
        );
        assert_eq!(python_module("lib/util.py"), "lib.util");
        assert!(
            task_function("Write a program that prints the mean.", &[]).is_none(),
            "a program task has no function"
        );
        assert!(
            task_function("Make it meaner.", &defined).is_none(),
            "a name only inside a word is not named"
        );
        assert_eq!(short_result_examples(None), "", "no invented name to copy");
        assert_eq!(
            defined_name("const slugify = (text) => {", Language::JavaScript).as_deref(),
            Some("slugify")
        );
    }

    #[test]
    fn an_assert_about_code_the_task_does_not_name_counts_only_if_it_held_before() {
        if !installed("python3") {
            return;
        }
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n";
        // The test also asks spread([]) for 0.0, which the task never did and the code
        // never could.
        let test = "from stats import mean, spread\nassert mean([]) == 0.0\nassert mean([1, 3]) == 2\nassert spread([]) == 0.0\n";
        let (code, output) = run_on_stats(task, right, before, test);
        assert_eq!(code, Some(0), "{output}");
        assert!(
            output.contains("ignored: `assert spread([]) == 0.0`"),
            "the check says what it ignored: {output}"
        );

        // What the task asks for still fails wrong code.
        let wrong = before;
        let (code, output) = run_on_stats(task, wrong, before, test);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("ZeroDivisionError"), "{output}");

        // A regression in code the task does not name fails too: spread worked before.
        let broke_spread = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n\n\ndef spread(xs):\n    return 0\n";
        let regression =
            "from stats import mean, spread\nassert mean([]) == 0.0\nassert spread([1, 4]) == 3\n";
        let (code, output) = run_on_stats(task, broke_spread, before, regression);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("spread([1, 4]) == 3"), "{output}");

        // A function the task names missing from the module it names is the code's
        // failure; imported from a module the task does not name, the test's.
        let lost_mean = "def spread(xs):\n    return max(xs) - min(xs)\n";
        let (code, output) = run_on_stats(task, lost_mean, before, test);
        assert_eq!(code, Some(1), "{output}");
        let wrong_module = "from statistics_helpers import mean\nassert mean([]) == 0.0\n";
        let (code, _) = run_on_stats(task, right, before, wrong_module);
        assert_eq!(code, Some(TEST_BROKEN_EXIT));
        // A test whose only failures are about other code, and that checks nothing of
        // the task, is broken itself (rewritten once, then skipped), never a pass.
        let beside_the_point = "from stats import spread\nassert spread([]) == 0.0\n";
        let (code, output) = run_on_stats(task, right, before, beside_the_point);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
    }

    #[test]
    fn a_failing_comparison_says_what_each_side_was() {
        if !installed("python3") {
            return;
        }
        let task = "Fix total in stats.py: it ignores the last item.";
        let wrong = "def total(xs):\n    return sum(xs[:-1])\n";
        let test = "from stats import total\n\ndef test_total():\n    assert total([2, 3, 4]) == 2 + 3 + 4\n    assert total([5]) in (5, 6)\n";
        let (exit, output) = run_on_stats(task, wrong, wrong, test);
        assert_eq!(exit, Some(1), "{output}");
        assert!(
            output.contains(
                "The left side, `total([2, 3, 4])`, is 5; the right side, `2 + 3 + 4`, is 9."
            ),
            "{output}"
        );
        assert!(output.contains("`total([5])`, is 0"), "{output}");
        // The code raising is no comparison to show.
        let raising = "def total(xs):\n    raise ValueError('no')\n";
        let (exit, output) = run_on_stats(task, raising, wrong, test);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("The left side"), "{output}");
    }

    #[test]
    fn an_expected_value_the_arithmetic_beside_it_contradicts_takes_the_arithmetic() {
        if !installed("python3") {
            return;
        }
        let task = "Write weighted_mean(pairs) in stats.py: the mean of (value, weight) pairs.";
        let right = "def weighted_mean(pairs):\n    return sum(v * w for v, w in pairs) / sum(w for _, w in pairs)\n";
        let wrong = "def weighted_mean(pairs):\n    return sum(v for v, _ in pairs) / len(pairs)\n";
        // The model's sums slip (3.5, 10); the arithmetic it wrote beside them does not.
        // A comment with no arithmetic, or one that agrees, leaves the assert as written.
        let test = "from stats import weighted_mean\n\n\
assert weighted_mean([(2, 1), (5, 2)]) == 3.5  # (2*1 + 5*2) / (1 + 2) = 3.5\n\
assert weighted_mean([(1, 3), (4, 1)]) == 10  # (1*3 + 4*1) / 4\n\
assert weighted_mean([(6, 1)]) == 6  # one pair\n\
assert weighted_mean([(3, 2), (3, 5)]) == 3.0  # (3*2 + 3*5) / 7 = 3.0\n";
        let (exit, output) = run_on_stats(task, right, "", test);
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains("::rule repair.test-own-arithmetic"),
            "{output}"
        );
        assert!(
            output.contains("the expected value 3.5 is not what the arithmetic written beside it gives ((2*1 + 5*2) / (1 + 2) is 4.0)"),
            "{output}"
        );
        assert_eq!(
            output.matches("the arithmetic is taken").count(),
            2,
            "{output}"
        );
        // Wrong code still fails the mended asserts.
        let (exit, output) = run_on_stats(task, wrong, "", test);
        assert_eq!(exit, Some(1), "{output}");
        // Switched off, the test's own sums count, and fail right code.
        let (exit, output) = run_on_stats_with(
            task,
            right,
            "",
            test,
            "first",
            r#"["repair.test-own-arithmetic"]"#,
        );
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("the arithmetic is taken"), "{output}");
    }

    #[test]
    fn an_assert_comparing_a_call_with_the_same_call_checks_nothing() {
        if !installed("python3") {
            return;
        }
        let task = "Fix total in stats.py: it ignores the last item.";
        let before = "def total(xs):\n    return sum(xs[:-1])\n";
        let right = "def total(xs):\n    return sum(xs)\n";
        // Holds for the wrong code as well as the right one: broken, never a pass.
        let itself = "from stats import total\nassert total([1, 2, 3]) == total([1, 2, 3])\n";
        for code in [before, right] {
            let (exit, output) = run_on_stats(task, code, before, itself);
            assert_eq!(exit, Some(TEST_BROKEN_EXIT), "{output}");
            assert!(
                output.contains("::rule acceptance.compares-code-with-itself"),
                "{output}"
            );
        }
        // Beside an assert that checks something, it is only not counted; an expected
        // result written as arithmetic is worked out by Python, and checks the code.
        let beside = "from stats import total\nassert total([1, 2]) == total([1, 2])\nassert total([1, 2, 3]) == 1 + 2 + 3\n";
        let (exit, output) = run_on_stats(task, right, before, beside);
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains("ignored: `assert total([1, 2]) == total([1, 2])`"),
            "{output}"
        );
        let (exit, _) = run_on_stats(task, before, before, beside);
        assert_eq!(exit, Some(1), "the wrong code fails the arithmetic");
        // A property of the result is a check, not a comparison with itself.
        let sorted = "from stats import total\nassert sorted([total([2]), total([1])]) == [total([1]), total([2])]\n";
        let (exit, output) = run_on_stats(task, right, before, sorted);
        assert_eq!(exit, Some(0), "{output}");
        // Switched off, the comparison counts as it stands.
        let (exit, _) = run_on_stats_with(
            task,
            before,
            before,
            itself,
            "first",
            r#"["acceptance.compares-code-with-itself"]"#,
        );
        assert_eq!(exit, Some(0));
    }

    #[test]
    fn the_task_s_own_examples_outweigh_the_team_s_test() {
        if !installed("python3") {
            return;
        }
        let right = "def double(x):\n    return 2 * x\n";
        let wrong = "def double(x):\n    return x + 2\n";
        // A test that passes wrong code (2 + 2 == 2 * 2) is not the last word: the
        // task's example is.
        let weak = "from stats import double\nassert double(2) == 4\n";
        let in_text = "Write the function double(x) in stats.py.\n\n>>> double(3)\n6\n";
        let (exit, output) = run_on_stats(in_text, wrong, "", weak);
        assert_eq!(exit, Some(1), "{output}");
        assert!(
            output.contains("`double(3)` should give 6, the task says; it gives 5")
                && output.contains("::rule tests.examples"),
            "{output}"
        );
        let (exit, output) = run_on_stats(in_text, right, "", weak);
        assert_eq!(exit, Some(0), "{output}");
        // The pass says the examples were given, which is what a completion rests on.
        let check = |detail: &str| CheckResult {
            kind: "tests".into(),
            name: NAME.into(),
            status: CheckStatus::Passed,
            files: Vec::new(),
            detail: detail.into(),
            subtask_id: None,
            at: chrono::Utc::now(),
            rules: Vec::new(),
        };
        assert_eq!(
            Evidence::of(&[check(output.trim())]),
            Evidence::TaskExamples,
            "{output}"
        );
        let (_, without_examples) =
            run_on_stats("Write the function double(x) in stats.py.", right, "", weak);
        assert_eq!(
            Evidence::of(&[check(without_examples.trim())]),
            Evidence::OwnTestOnly,
            "{without_examples}"
        );
        let project = CheckResult {
            name: "python3 -m pytest -q".into(),
            ..check("")
        };
        assert_eq!(
            Evidence::of(&[check(""), project.clone()]),
            Evidence::ProjectTests
        );
        let failed = CheckResult {
            status: CheckStatus::Failed,
            ..project
        };
        assert_eq!(Evidence::of(&[failed]), Evidence::Nothing);
        // Switched off, the team's test decides.
        let off = r#"["tests.examples"]"#;
        assert_eq!(
            run_on_stats_with(in_text, wrong, "", weak, "first", off).0,
            Some(0)
        );
        // The examples of a function the task found unwritten are the task's too.
        let stub = "def double(x):\n    \"\"\"Twice x.\n\n    >>> double(3)\n    6\n    \"\"\"\n";
        let implement = "Implement double in stats.py.";
        assert_eq!(run_on_stats(implement, wrong, stub, weak).0, Some(1));
        assert_eq!(run_on_stats(implement, right, stub, weak).0, Some(0));
        // Not those of code already written, which the task may be there to change.
        let written = "def double(x):\n    \"\"\"Twice x.\n\n    >>> double(3)\n    6\n    \"\"\"\n    return 2 * x\n";
        let change = "Change double in stats.py so that it gives three times x.";
        let triple = "def double(x):\n    return 3 * x\n";
        let test = "from stats import double\nassert double(3) == 9\n";
        let (exit, output) = run_on_stats(change, triple, written, test);
        assert_eq!(exit, Some(0), "{output}");
        // An assert against the task's example for the same call is the test's
        // mistake: ignored and said, while the test's other asserts still count.
        let contradicting =
            "from stats import double\nassert double(3) == 9\nassert double(5) == 10\n";
        let (exit, output) = run_on_stats(in_text, right, "", contradicting);
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains("::rule acceptance.contradicts-example"),
            "{output}"
        );
        let also_wrong =
            "from stats import double\nassert double(3) == 9\nassert double(5) == 11\n";
        assert_eq!(run_on_stats(in_text, right, "", also_wrong).0, Some(1));
    }

    /// The acceptance check as it is kept on a task after the runner passed the test
    /// with `output`, the rule `rule` having acted.
    fn passed_check(output: &str, rule: &str) -> CheckResult {
        CheckResult {
            kind: "tests".into(),
            name: NAME.into(),
            status: CheckStatus::Passed,
            files: Vec::new(),
            detail: output.to_string(),
            subtask_id: None,
            at: chrono::Utc::now(),
            rules: vec!["tests.acceptance".into(), rule.into()],
        }
    }

    #[test]
    fn a_failing_assert_a_second_solution_fails_the_same_way_is_disputed() {
        if !installed("python3") {
            return;
        }
        let task = "Write total(xs) in stats.py: the sum of the even numbers in xs.\n\n>>> total([1, 2])\n2\n";
        let code = "def total(xs):\n    return sum(x for x in xs if x % 2 == 0)\n";
        // The second assert's expected value counts the odd 5.
        let test =
            "from stats import total\nassert total([2, 4]) == 6\nassert total([2, 4, 5]) == 11\n";
        let run = |second: Option<&str>, disabled: &str| {
            run_on_stats_beside(task, code, "", test, "first", disabled, second)
        };
        // Alone, the failure is the code's, and a second solution could settle it.
        let (exit, output) = run(None, "[]");
        assert_eq!(exit, Some(1), "{output}");
        assert!(output.contains("::disputable"), "{output}");
        // Another way to the same values: the assert is disputed and set aside.
        let looped = "def total(xs):\n    t = 0\n    for x in xs:\n        if x % 2 == 0:\n            t += x\n    return t\n";
        let (exit, output) = run(Some(looped), "[]");
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains(
                "disputed, set aside: `assert total([2, 4, 5]) == 11`: `total([2, 4, 5])` is 6"
            ) && output.contains("::rule acceptance.disputed-assert")
                && !output.contains("::disputable"),
            "{output}"
        );
        let check = passed_check(&output, "acceptance.disputed-assert");
        assert_eq!(Evidence::of(&[check]), Evidence::Disputed);
        assert!(Evidence::Disputed.asks_for_review());
        // A second solution that gives what the test expects backs the test.
        let with_odd_fives =
            "def total(xs):\n    return sum(x for x in xs if x % 2 == 0 or x == 5)\n";
        let (exit, output) = run(Some(with_odd_fives), "[]");
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("disputed"), "{output}");
        // One that does not give the task's own example settles nothing.
        let off_example = looped.replace("t = 0", "t = 0 if xs != [1, 2] else 5");
        let (exit, output) = run(Some(&off_example), "[]");
        assert_eq!(exit, Some(1), "{output}");
        assert!(
            output.contains("does not give the task's own examples"),
            "{output}"
        );
        // Nor does the team's code written out again: it is no second opinion.
        let again = "def total(xs):\n    \"\"\"The even ones.\"\"\"\n    return sum(x for x in xs if x % 2 == 0)\n";
        let (exit, output) = run(Some(again), "[]");
        assert_eq!(exit, Some(1), "{output}");
        assert!(output.contains("it is the team's code again"), "{output}");
        // Switched off, the assert counts; a second solution is still wanted, for the
        // fix loop to try in place of the code.
        let off = r#"["acceptance.disputed-assert"]"#;
        let (exit, output) = run(Some(looped), off);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("disputed"), "{output}");
        let (exit, output) = run(None, off);
        assert_eq!(exit, Some(1), "{output}");
        assert!(output.contains("::disputable"), "{output}");
        // A program's output says nothing of a second solution: the team's program ran.
        let program = "import subprocess, sys\nr = subprocess.run([sys.executable, \"stats.py\"], capture_output=True, text=True)\nassert r.stdout == \"6\"\n";
        let script =
            "Write stats.py, a program that prints the sum of the even numbers 2, 4 and 5.";
        let (exit, output) = run_on_stats_beside(script, code, "", program, "first", "[]", None);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("::disputable"), "{output}");
    }

    #[test]
    fn a_value_the_code_s_inverse_function_gives_is_set_aside_for_review() {
        if !installed("python3") {
            return;
        }
        let task = "Write stats.py with c_to_f(celsius), Celsius to Fahrenheit, and f_to_c(fahrenheit), Fahrenheit to Celsius.";
        let code = "def c_to_f(celsius):\n    return celsius * 9 / 5 + 32\n\n\ndef f_to_c(fahrenheit):\n    return (fahrenheit - 32) * 5 / 9\n";
        // The second assert expects of c_to_f what f_to_c gives (written rounded).
        let test = "from stats import c_to_f, f_to_c\nassert c_to_f(100) == 212\nassert c_to_f(0) == -17.78\n";
        let (exit, output) = run_on_stats(task, code, "", test);
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains("set aside, the completion asks for a review: `assert c_to_f(0) == -17.78`: `c_to_f(0)` is 32.0; the test expects -17.78, what `f_to_c(0)` gives")
                && output.contains("::rule acceptance.inverse-value"),
            "{output}"
        );
        let check = passed_check(&output, "acceptance.inverse-value");
        assert_eq!(Evidence::of(&[check]), Evidence::Disputed);
        // Switched off, the assert counts against the code.
        let off = r#"["acceptance.inverse-value"]"#;
        let (exit, output) = run_on_stats_with(task, code, "", test, "first", off);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("set aside"), "{output}");

        // A pair with a second argument: a shift cipher, the decoder expected to encode.
        let cipher = "def encode(s, k):\n    return ''.join(chr((ord(c) - 97 + k) % 26 + 97) for c in s)\n\n\ndef decode(s, k):\n    return ''.join(chr((ord(c) - 97 - k) % 26 + 97) for c in s)\n";
        let test = "from stats import decode\nassert decode('hello', 5) == 'mjqqt'\n";
        let (exit, output) = run_on_stats("Write encode and decode in stats.py.", cipher, "", test);
        assert_eq!(exit, Some(0), "{output}");
        assert!(
            output.contains("::rule acceptance.inverse-value"),
            "{output}"
        );

        // Wrong code with no inverse in it still fails: only a pair that undoes each
        // other in the code speaks for it.
        let wrong = "def c_to_f(celsius):\n    return celsius * 2\n\n\ndef f_to_c(fahrenheit):\n    return (fahrenheit - 32) * 5 / 9\n";
        let test = "from stats import c_to_f\nassert c_to_f(0) == 32\n";
        let (exit, output) = run_on_stats(task, wrong, "", test);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("set aside"), "{output}");
        // Nor does a value another function gives by chance, when the two do not undo
        // each other.
        let unrelated = "def double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x * x\n";
        let test = "from stats import double\nassert double(3) == 9\n";
        let (exit, output) = run_on_stats("Write double(x) in stats.py.", unrelated, "", test);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("set aside"), "{output}");
        // A function that reaches outside the program is never called beyond what the
        // test called: this decoder would write a file, so no pair is looked for.
        let writes = cipher.replace(
            "def decode(s, k):\n",
            "def decode(s, k):\n    print('decode ran')\n    open('decoded.txt', 'w').write(s)\n",
        );
        let test = "from stats import encode\nassert encode('mjqqt', 5) == 'hello'\n";
        let (exit, output) =
            run_on_stats("Write encode and decode in stats.py.", &writes, "", test);
        assert_eq!(exit, Some(1), "{output}");
        assert!(
            !output.contains("set aside") && !output.contains("decode ran"),
            "{output}"
        );
    }

    #[test]
    fn one_malformed_example_does_not_hide_the_others() {
        if !installed("python3") {
            return;
        }
        // The first example's argument holds a line break (an escape a docstring turned
        // into a real one): doctest rejects the whole text for it. The second example
        // is well formed and still judges the code.
        let stub = "def double(x):\n    \"\"\"Twice x; strings too.\n\n    >>> double(\"a\n\")\n    'a\\na\\n'\n    >>> double(3)\n    6\n    \"\"\"\n";
        let implement = "Implement double in stats.py.";
        let weak = "from stats import double\nassert double(2) == 4\n";
        let wrong = "def double(x):\n    return x + 2\n";
        let right = "def double(x):\n    return 2 * x\n";
        let (exit, output) = run_on_stats(implement, wrong, stub, weak);
        assert_eq!(exit, Some(1), "{output}");
        assert!(
            output.contains("`double(3)` should give 6, the task says; it gives 5"),
            "{output}"
        );
        let (exit, output) = run_on_stats(implement, right, stub, weak);
        assert_eq!(exit, Some(0), "{output}");
    }

    #[test]
    fn each_judging_rule_names_itself_and_switched_off_lets_the_test_count() {
        if !installed("python3") {
            return;
        }
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
        // (rule, a test it calls broken, the exit with the rule switched off:
        // 1 = counted against the code, 0 = passed, None = cannot be switched off).
        let cases: &[(&str, &str, Option<i32>)] = &[
            ("acceptance.runs-nothing", "assert 1 + 1 == 2\n", Some(0)),
            (
                "acceptance.test-exits",
                "import sys\nfrom stats import mean\nsys.exit(4)\n",
                Some(1),
            ),
            (
                "acceptance.test-error",
                "from stats import mean\nassert mean([2]) == 2\nassert {}['missing'] == 1\n",
                Some(1),
            ),
            (
                "acceptance.no-assert",
                "from stats import mean\nmean([1, 2])\n",
                Some(0),
            ),
            (
                "acceptance.unreadable",
                "assert mean([]) = 0.0\nfrom stats import mean\nassert mean([2]) == 2\nassert mean([]) == 0.0\n",
                None,
            ),
        ];
        for (rule, test, off) in cases {
            let (exit, output) = run_on_stats(task, right, before, test);
            assert_eq!(exit, Some(TEST_BROKEN_EXIT), "{rule}: {output}");
            assert!(
                output.contains(&format!("::rule {rule}")),
                "{rule}: {output}"
            );
            let disabled = format!("[\"{rule}\"]");
            let (exit, output) = run_on_stats_with(task, right, before, test, "first", &disabled);
            match off {
                Some(off) => {
                    assert_eq!(exit, Some(*off), "{rule} off: {output}");
                    assert!(!output.contains("::rule"), "{rule} off: {output}");
                }
                None => assert_eq!(exit, Some(TEST_BROKEN_EXIT), "{rule} off: {output}"),
            }
        }
        // A repair says what it mended; switched off, the test runs as written.
        let own_said = format!(
            "{}def said(text):\n    return text\n\nfrom stats import mean\nassert said('Mean: 2') == said('mean 2')\n",
            said_prelude(&Intent::read(task, &|_| false))
        );
        let (exit, output) = run_on_stats(task, right, before, &own_said);
        assert_eq!(exit, Some(0), "{output}");
        assert!(output.contains("::rule repair.test-own-said"), "{output}");
        let disabled = r#"["repair.test-own-said"]"#;
        let (exit, output) = run_on_stats_with(task, right, before, &own_said, "first", disabled);
        assert_eq!(exit, Some(1), "{output}");
        assert!(!output.contains("::rule"), "{output}");
    }

    #[test]
    fn a_long_expected_value_written_by_hand_that_fails_is_a_broken_first_test() {
        if !installed("python3") {
            return;
        }
        // A long list written out by hand, wrong in one item: it fails right code, and
        // no fix of the code can pass it.
        let task = "Implement evens(n) in stats.py: the even numbers below n.";
        let evens = "def evens(n):\n    return [i for i in range(0, n, 2)]\n";
        let long = "from stats import evens\nassert evens(4) == [0, 2]\nassert evens(19) == [0, 2, 4, 6, 8, 10, 12, 14, 16, 17]\n";
        let (code, output) = run_on_stats(task, evens, "", long);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(output.contains("long expected values"), "{output}");
        assert!(output.contains("assert evens(19) =="), "{output}");
        // The rewrite is judged as written: its long value counts.
        let (code, _) = run_on_stats_as(task, evens, "", long, "rewritten");
        assert_eq!(code, Some(1));
        // A long value the code matches is a check like any other: a right one is
        // not thrown away.
        let right =
            "from stats import evens\nassert evens(19) == [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]\n";
        assert_eq!(run_on_stats(task, evens, "", right).0, Some(0));
        // Long inputs are not expected values.
        let long_input = "from stats import evens\nassert len(evens(20)) == 10\nassert max([evens(n)[-1] for n in [3, 5, 7, 9, 11, 13, 15, 17, 19]]) == 18\n";
        assert_eq!(run_on_stats(task, evens, "", long_input).0, Some(0));
    }

    #[test]
    fn a_failing_test_that_runs_the_code_on_a_file_no_one_wrote_is_broken() {
        if !installed("python3") {
            return;
        }
        // A program and a function that read the file they are given, tested on a
        // placeholder path that is not there: what they print or raise then says
        // nothing of how they count.
        let task = "Write stats.py: count_words(path) returns the number of words in the file at path, and running stats.py PATH prints it.";
        let right = "import sys\n\n\ndef count_words(path):\n    with open(path) as f:\n        return len(f.read().split())\n\n\nif __name__ == '__main__':\n    print(count_words(sys.argv[1]))\n";
        let program = "import subprocess, sys\nr = subprocess.run([sys.executable, 'stats.py', 'path/to/your_file.txt'], capture_output=True, text=True)\nassert r.stdout.strip() == '3'\n";
        let (code, output) = run_on_stats(task, right, "", program);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("::rule acceptance.missing-input"),
            "{output}"
        );
        assert!(
            broken_because(&output).starts_with(
                "the test runs the code on `path/to/your_file.txt`, which is not there"
            ),
            "{output}"
        );
        let function = "from stats import count_words\nassert count_words('words.txt') == 3\n";
        let (code, output) = run_on_stats(task, right, "", function);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("`words.txt`, which is not there"),
            "{output}"
        );
        // The code failing to open it outside any assert is the same.
        let outside =
            "from stats import count_words\nn = count_words('words.txt')\nassert n == 3\n";
        let (code, output) = run_on_stats(task, right, "", outside);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("`words.txt`, which is not there"),
            "{output}"
        );
        // Switched off, the failure counts against the code.
        let off = r#"["acceptance.missing-input"]"#;
        let (code, output) = run_on_stats_with(task, right, "", outside, "first", off);
        assert_eq!(code, Some(1), "{output}");
        let (code, output) = run_on_stats_with(task, right, "", function, "first", off);
        assert_eq!(code, Some(1), "{output}");
        assert!(!output.contains("::rule"), "{output}");

        // A test that writes its input first judges the code: right code passes it,
        // wrong code fails it, whether the path is written out or held in a name.
        let writes_it = "from stats import count_words\nwith open('words.txt', 'w') as f:\n    f.write('a b c')\nassert count_words('words.txt') == 3\n";
        assert_eq!(run_on_stats(task, right, "", writes_it).0, Some(0));
        let counts_lines = "def count_words(path):\n    with open(path) as f:\n        return len(f.readlines())\n";
        let (code, output) = run_on_stats(task, counts_lines, "", writes_it);
        assert_eq!(code, Some(1), "{output}");
        let written_then_removed = "import os\nfrom stats import count_words\npath = 'words.txt'\nwith open(path, 'w') as f:\n    f.write('a b c')\nassert count_words('words.txt') == 3\nos.remove(path)\n";
        let (code, output) = run_on_stats(task, counts_lines, "", written_then_removed);
        assert_eq!(code, Some(1), "{output}");
        // A file the task names is the task's own word: code that fails on it when it
        // is missing is the code's failure.
        let named = "Write stats.py: count_words(path) returns the number of words in the file at path, or 0 when there is no file; count_words('missing.txt') is 0.";
        let missing = "from stats import count_words\nassert count_words('missing.txt') == 0\n";
        let (code, output) = run_on_stats(named, right, "", missing);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("FileNotFoundError"), "{output}");
        // A domain is not a file: wrong code given one fails.
        let domains = "Implement tld(name) in stats.py: the last part of a domain name.";
        let first_part = "def tld(name):\n    return name.split('.')[0]\n";
        let test = "from stats import tld\nassert tld('example.com') == 'com'\n";
        let (code, output) = run_on_stats(domains, first_part, "", test);
        assert_eq!(code, Some(1), "{output}");
    }

    #[test]
    fn a_passing_test_that_checks_nothing_the_task_names_is_broken() {
        if !installed("python3") {
            return;
        }
        // A flag task passed by a test of a helper alone, which never runs the program
        // with the flag.
        let now = "import sys\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef spread(xs):\n    return max(xs) - min(xs)\n\n\nif __name__ == '__main__':\n    print(mean([1, 2]) if '--mean' in sys.argv else spread([1, 2]))\n";
        let helper_only = "from stats import mean\nassert mean([2, 4]) == 3\n";
        let (code, output) = run_on_stats("Add a --mean flag to stats.py.", now, "", helper_only);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("--mean, a command-line flag, but the test never runs the program"),
            "{output}"
        );
        let runs_it = "import subprocess, sys\nr = subprocess.run([sys.executable, 'stats.py', '--mean'], capture_output=True, text=True)\nassert r.stdout == '1.5'\n";
        assert_eq!(
            run_on_stats("Add a --mean flag to stats.py.", now, "", runs_it).0,
            Some(0)
        );

        let task = "Implement spread(xs) in stats.py.";
        let (code, output) = run_on_stats(task, now, "", helper_only);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(
            output.contains("checks only mean, which the task does not name; it must check spread"),
            "{output}"
        );
        let about_it = "from stats import mean, spread\nassert mean([2, 4]) == 3\nresult = spread([1, 5])\nassert result == 4\n";
        assert_eq!(run_on_stats(task, now, "", about_it).0, Some(0));
    }

    #[test]
    fn what_a_program_printed_is_compared_without_its_line_break() {
        if !installed("python3") {
            return;
        }
        // `result.stdout == "hello world"` must not fail right code over the line
        // break print() adds.
        let task = "Write a program stats.py that prints hello world.";
        let test = |expected: &str| {
            format!(
                "import subprocess, sys\nresult = subprocess.run([sys.executable, 'stats.py'], capture_output=True, text=True)\nassert result.stdout == {expected:?}\n"
            )
        };
        let hello = "print('hello world')\n";
        assert_eq!(
            run_on_stats(task, hello, "", &test("hello world")).0,
            Some(0)
        );
        assert_eq!(run_on_stats(task, hello, "", &test("hello")).0, Some(1));
    }

    #[test]
    fn a_float_written_out_is_compared_at_the_precision_it_is_written() {
        if !installed("python3") {
            return;
        }
        // A value rounded by hand (`f_to_c(0) == -17.78`) must not fail right code.
        let mean = "def mean(xs):\n    return sum(xs) / len(xs)\n";
        let task = "Write mean(xs) in stats.py.";
        let code = |test: &str, task: &str| run_on_stats(task, mean, "", test).0;
        let test = "from stats import mean\nassert mean([1, 2, 2]) == 1.67\nassert mean([0.1, 0.2]) == 0.15\n";
        assert_eq!(code(test, task), Some(0));
        let unittest = "import unittest\nfrom stats import mean\nclass T(unittest.TestCase):\n    def test_mean(self):\n        self.assertAlmostEqual(mean([1, 2, 2]), 1.6667, places=3)\n";
        assert_eq!(code(unittest, task), Some(0));
        // A whole number written as one takes a float result's ordinary error too
        // (ten times the mean of 0.1, 0.2 and 0.3 is 2.0000000000000004).
        let whole = "from stats import mean\nassert mean([0.1, 0.2, 0.3]) * 10 == 2\nassert mean([2, 4]) == 3\n";
        assert_eq!(code(whole, task), Some(0));
        assert_eq!(
            code("from stats import mean\nassert mean([2, 5]) == 3\n", task),
            Some(1)
        );
        // One decimal is not a rounded value, and a wrong value stays wrong.
        assert_eq!(
            code(
                "from stats import mean\nassert mean([1, 2, 2]) == 1.7\n",
                task
            ),
            Some(1)
        );
        assert_eq!(
            code(
                "from stats import mean\nassert mean([1, 2, 2]) == 1.66\n",
                task
            ),
            Some(1)
        );
        // When the task is about rounding, the digits are what it asks for.
        let rounding = "Write mean(xs) in stats.py, rounded to 2 decimal places.";
        assert_eq!(
            code(
                "from stats import mean\nassert mean([1, 2, 2]) == 1.67\n",
                rounding
            ),
            Some(1)
        );
    }

    #[test]
    fn a_unittest_style_test_runs_its_checks_as_asserts() {
        if !installed("python3") {
            return;
        }
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n";
        let right = "def mean(xs):\n    return sum(xs) / len(xs) if xs else 0.0\n";
        // A TestCase ending in unittest.main(), which in the runner would run no test,
        // and `sys` used without its import.
        let test = "import unittest\nfrom stats import mean\n\n\nclass TestMean(unittest.TestCase):\n    def test_empty(self):\n        self.assertEqual(mean([]), 0.0)\n\n    def test_two(self):\n        self.assertTrue(mean([1, 3]) == 2)\n        self.assertIn(sys.platform, (sys.platform,))\n\n\nif __name__ == \"__main__\":\n    unittest.main(argv=[''])\n";
        let (code, output) = run_on_stats(task, right, before, test);
        assert_eq!(code, Some(0), "{output}");
        let (code, output) = run_on_stats(task, before, before, test);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("ZeroDivisionError"), "{output}");
    }

    #[test]
    fn a_test_that_never_runs_the_project_is_broken() {
        if !installed("python3") {
            return;
        }
        let task = "Write a Python program in the file stats.py that prints hello world.";
        let code = "print('hello world')\n";
        // Asserts on a helper the test defined itself: whether they pass or fail says
        // nothing of the team's code, and a fix of the code cannot mend them.
        let test = "import subprocess\n\ndef say(s):\n    return s.replace(' ', '')\n\nassert say('hello world') == 'helloworld'\nassert say('Hello, world!') == 'helloworld'\n";
        let (exit, output) = run_on_stats(task, code, "", test);
        assert_eq!(exit, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(output.contains("never runs the team's code"), "{output}");
        // Running the script is running the project.
        let runs = "import subprocess, sys\nout = subprocess.run([sys.executable, 'stats.py'], capture_output=True, text=True).stdout\nassert out.strip() == 'hello world'\n";
        let (exit, output) = run_on_stats(task, code, "", runs);
        assert_eq!(exit, Some(0), "{output}");
    }

    #[test]
    fn an_exit_of_the_test_itself_is_a_broken_test_and_of_the_code_a_failure() {
        if !installed("python3") {
            return;
        }
        let task = "Change the function mean in stats.py so that it returns 0.0 for an empty list.";
        let before = "def mean(xs):\n    return sum(xs) / len(xs)\n";
        // A "test" that is a copy of the script, exiting on its missing argument.
        let script_copy = "import sys\nif len(sys.argv) != 2:\n    print('Usage: python stats.py <file>')\n    sys.exit(1)\n";
        let (code, output) = run_on_stats(task, before, before, script_copy);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        // The code under test exiting is the code's failure.
        let exits = "import sys\n\n\ndef mean(xs):\n    sys.exit(2)\n";
        let test = "from stats import mean\nassert mean([]) == 0.0\n";
        let (code, output) = run_on_stats(task, exits, before, test);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("the test exited with 2"), "{output}");
    }

    #[test]
    fn a_javascript_test_runs_from_the_project_root_and_tells_wrong_code_from_a_broken_test_by_rule()
     {
        if !installed("node") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let checks = dir.path().join(".conclave/checks/t");
        std::fs::create_dir_all(&checks).unwrap();
        let task = checks.join("task.txt");
        std::fs::write(
            &task,
            "Implement slugify(text) in slugify.js. Keep it exported.",
        )
        .unwrap();
        let run_with = |code: &str, test: &str, disabled: &str| {
            std::fs::write(dir.path().join("slugify.js"), code).unwrap();
            let path = checks.join("acceptance_test.js");
            std::fs::write(&path, test).unwrap();
            let out = std::process::Command::new("node")
                .args(["-e", JS_RUNNER])
                .arg(&path)
                .arg(&task)
                .arg(disabled)
                .current_dir(dir.path())
                .output()
                .unwrap();
            (
                out.status.code(),
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stderr),
                    String::from_utf8_lossy(&out.stdout)
                ),
            )
        };
        let run = |code: &str, test: &str| run_with(code, test, "[]");
        let test = "const assert = require('assert');\nconst { slugify } = require('./slugify.js');\n\
                    assert.strictEqual(slugify('Hello, World!'), 'hello-world');\n";
        let right = "module.exports = { slugify: (t) => t.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') };\n";
        assert_eq!(run(right, test).0, Some(0));
        // Every character replaced on its own, so runs of them make "hello--world":
        // wrong code that only a test that runs it can catch.
        let wrong = "module.exports = { slugify: (t) => t.toLowerCase().replace(/[^a-z0-9]/g, '-').replace(/^-|-$/g, '') };\n";
        let (code, output) = run(wrong, test);
        assert_eq!(code, Some(1), "{output}");
        assert!(output.contains("hello--world"), "{output}");
        let throws = "module.exports = { slugify: (t) => t.nope() };\n";
        assert_eq!(
            run(throws, test).0,
            Some(1),
            "an error inside the code is the code's"
        );
        let misnamed = test
            .replace("{ slugify }", "{ slug }")
            .replace("slugify('", "slug('");
        assert_eq!(
            run(right, &misnamed).0,
            Some(TEST_BROKEN_EXIT),
            "a name the test got wrong"
        );
        let missing = test.replace("./slugify.js", "./slug.js");
        let (code, output) = run(right, &missing);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "a module the test got wrong");
        assert!(output.contains("::rule acceptance.test-error"), "{output}");
        // Switched off, the rule does not judge: the error counts against the code.
        let off = r#"["acceptance.test-error"]"#;
        let (code, output) = run_with(right, &missing, off);
        assert_eq!(code, Some(1), "{output}");
        assert!(!output.contains("::rule"), "{output}");
        // A test that does not parse is broken whatever is switched off.
        let unparsable =
            "const assert = require('assert');\nassert.strictEqual(slugify('A'), 'a'\n";
        let (code, output) = run_with(right, unparsable, off);
        assert_eq!(code, Some(TEST_BROKEN_EXIT), "{output}");
        assert!(output.contains("::rule acceptance.unreadable"), "{output}");
        // The export the task said to keep is dropped. The test is right; the code
        // lacks what the task names.
        let unexported = "function slugify(t) {\n  return t.toLowerCase();\n}\n";
        let (code, output) = run(unexported, test);
        assert_eq!(code, Some(1), "{output}");
        assert!(
            output.contains("does not export a function the task names"),
            "{output}"
        );
    }
}
