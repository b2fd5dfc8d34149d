//! What a task ends with: partial results, the verify loop, ERROR_REPORT.md, cancel and
//! retry, and recovery under steady transient faults.

use crate::support::common::python_available;
use conclave::engine::{EngineError, SubmitTask};
use conclave::runtime::{
    ApprovalAnswer, ApprovalChoice, ApprovalKind, RuntimeEvent, SubtaskStatus, TaskId, TaskOptions,
    TaskStatus,
};
use serde_json::{Value, json};

use crate::support::team::{Team, config, plan, start, writes};

/// The team's configuration with a `verify.command` that passes only when answer.txt
/// says `answer = 42`, and says so, located, when it does not.
fn answer_42_config() -> conclave::config::Config {
    let mut config = config();
    config.verify.command = Some("grep -q '^answer = 42$' answer.txt || { echo 'answer.txt:1:1: expected answer = 42'; exit 1; }".into());
    config
}

/// The messages of the recovery steps the store kept for `task`, oldest first.
async fn recovery_messages(team: &Team, task: TaskId) -> Vec<String> {
    team.store
        .recovery_steps(Some(task.to_string()))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.message)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_task_that_cannot_finish_keeps_its_partial_results() {
    let mut config = config();
    // What the failed task leaves is the point here: its changes are kept.
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    config.executor.max_iterations = 2;
    let team = start(
        json!([
            plan(&["Port the whole parser"]),
            { "match": "could not be used", "text": "{\"action\": \"pause\", \"reason\": \"needs a person\"}", "repeat": true },
            { "match": "keeps failing", "text": "{\"action\": \"pause\", \"reason\": \"needs a person\"}", "repeat": true },
            { "toolCalls": [ { "name": "file_write", "arguments": { "path": "parser/lexer.rs", "content": "// lexer\n" } } ], "repeat": true }
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team
        .engine
        .submit(SubmitTask {
            description: "Port the parser".into(),
            options: TaskOptions {
                max_retries: Some(0),
                ..TaskOptions::default()
            },
            ..SubmitTask::default()
        })
        .unwrap();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::ApprovalRequested(request) => {
                assert_eq!(request.kind, ApprovalKind::Escalation);
                team.engine
                    .resolve_approval(
                        &request.approval_id.to_string(),
                        ApprovalAnswer::new(ApprovalChoice::Abort),
                    )
                    .unwrap();
            }
            RuntimeEvent::TaskUpdated(t) if t.status.is_finished() => break,
            _ => {}
        }
    }
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(detail.summary.status, TaskStatus::Failed);
    assert!(!detail.partial_results.is_empty(), "{detail:?}");
    assert!(
        detail
            .partial_results
            .iter()
            .any(|p| p.contains("parser/lexer.rs")),
        "{:?}",
        detail.partial_results
    );
    assert_eq!(detail.errors[0].failure.kind, "incomplete");
    assert!(
        detail.errors[0].failure.message.starts_with("Completed"),
        "{}",
        detail.errors[0].failure.message
    );
    assert_eq!(team.read("parser/lexer.rs"), "// lexer\n");
    team.engine.shutdown().await;
}

// Real time: the verify command is a real process, and a paused clock would jump to its
// time limit while the process runs.
#[tokio::test]
async fn the_verify_loop_fixes_a_failing_test() {
    let config = answer_42_config();
    let [w1, w2] = writes("Write answer.txt", "answer.txt", "answer = 41\n");
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            w1, w2,
            { "match": ["fails its checks", "expected answer = 42"], "text": "```json\n{\"files\": [{\"path\": \"answer.txt\", \"content\": \"answer = 42\\n\"}], \"confidence\": 90, \"explanation\": \"off by one\"}\n```" }
        ]),
        config,
    )
    .await;
    let task = team.submit("Record the answer");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    let messages = recovery_messages(&team, task).await;
    assert!(
        messages[0].contains("fix round 1 of 3 (confidence 90)"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("passes after 1 fix round"),
        "{messages:?}"
    );
    team.engine.shutdown().await;
}

/// "Record the answer" with `config`: the coder writes `answer = 41`, and the fix round
/// edits it to 42 only if its prompt holds each of `told`. The team, the task and how it
/// ended.
async fn answer_fixed_when_told(
    config: conclave::config::Config,
    told: &[&str],
) -> (Team, TaskId, conclave::wire::TaskSummary) {
    let [w1, w2] = writes("Write answer.txt", "answer.txt", "answer = 41\n");
    let mut fix_words = vec!["does not pass this check", "expected answer = 42"];
    fix_words.extend_from_slice(told);
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            w1, w2,
            { "match": fix_words,
              "toolCalls": [ { "name": "file_edit", "arguments": { "path": "answer.txt", "old_text": "answer = 41", "new_text": "answer = 42" } } ] },
            { "match": "updated answer.txt", "text": "Fixed the answer." }
        ]),
        config,
    )
    .await;
    let task = team.submit("Record the answer");
    let summary = team.engine.wait_for(task).await.unwrap();
    (team, task, summary)
}

// Real time, as above.
#[tokio::test]
async fn with_error_strategies_off_the_task_s_fix_round_is_told_only_to_try_another_way() {
    let mut config = answer_42_config();
    config.team.error_strategies = false;
    let generic = conclave::recovery::strategy::GENERIC_NEXT_STEP;
    let (team, _task, summary) = answer_fixed_when_told(config, &[generic]).await;
    assert_eq!(summary.status, TaskStatus::Completed, "{summary:?}");
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    // The round's step matched only on the generic words, not on the next step for a
    // wrong result.
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fix_round_is_first_made_by_a_coder_with_its_tools() {
    // A coder with its tools reads and edits the file it fixes; a structured answer
    // is only the fallback.
    // Told the task, and the next step for a wrong result from the one table of next steps.
    let (team, task, summary) = answer_fixed_when_told(
        answer_42_config(),
        &[
            "Record the answer",
            "The code runs but gives a wrong result",
        ],
    )
    .await;
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    // verify.command ran the code: the strongest evidence there is.
    assert_eq!(
        team.engine
            .task(&task.to_string())
            .unwrap()
            .summary
            .checked_by,
        Some(conclave::runtime::Evidence::ProjectTests)
    );
    let messages = recovery_messages(&team, task).await;
    assert!(
        messages[0].contains("fix round 1 of 3 with tools wrote answer.txt"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("passes after 1 fix round"),
        "{messages:?}"
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn with_fresh_start_the_second_fix_round_does_the_task_anew_from_the_files_as_they_were() {
    // The coder's answer is wrong, and its fix is wrong too: the second round puts the
    // named file back as it was before the task and has a coder do the task anew, told
    // what failed. The fresh attempt edits the file as it was (its old_text is only
    // there once the team's code is taken back).
    let mut config = answer_42_config();
    config.verify.fresh_start = true;
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            { "match": ["A first solution of this task failed", "expected answer = 42", "answer = 0"],
              "toolCalls": [ { "name": "file_edit", "arguments": { "path": "answer.txt", "old_text": "answer = 0", "new_text": "answer = 42" } } ] },
            { "match": ["does not pass this check", "expected answer = 42"],
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "answer.txt", "content": "answer = 43\n" } } ] },
            { "match": "Write answer.txt",
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "answer.txt", "content": "answer = 41\n" } } ] },
            { "match": "updated answer.txt", "text": "Done.\n\nConfidence: 90", "repeat": true }
        ]),
        config,
    )
    .await;
    std::fs::write(team.workspace.path().join("answer.txt"), "answer = 0\n").unwrap();
    let task = team.submit("Record the answer in answer.txt");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    let messages = recovery_messages(&team, task).await;
    assert!(
        messages[0].contains("fix round 1 of 3 with tools wrote answer.txt"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains(
            "fix round 2 of 3 started afresh from answer.txt as before the task, and wrote answer.txt"
        ),
        "{messages:?}"
    );
    assert!(
        messages[2].contains("passes after 2 fix round"),
        "{messages:?}"
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fresh_start_that_writes_nothing_leaves_the_team_s_code_for_the_next_step() {
    // Taking the team's code back is only worth it for a new attempt: one that writes
    // nothing must not leave the files as they were before the task.
    let mut config = answer_42_config();
    config.verify.fresh_start = true;
    config.verify.max_rounds = 2;
    // What the fix loop leaves is the point here, not the failed task's undo.
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            { "match": "A first solution of this task failed", "text": "I cannot see what is wrong." },
            { "match": "not done", "text": "Still nothing to change." },
            { "match": ["does not pass this check", "expected answer = 42"],
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "answer.txt", "content": "answer = 43\n" } } ] },
            { "match": "Write answer.txt",
              "toolCalls": [ { "name": "file_write", "arguments": { "path": "answer.txt", "content": "answer = 41\n" } } ] },
            { "match": "updated answer.txt", "text": "Done.\n\nConfidence: 90", "repeat": true },
            // Asked for the files whole, the model sees the team's code (43), not the file
            // as it was before the task.
            { "match": ["fails its checks", "answer = 43"], "text": "```json\n{\"files\": [{\"path\": \"answer.txt\", \"content\": \"answer = 44\\n\"}], \"confidence\": 90, \"explanation\": \"from the team's code\"}\n```" }
        ]),
        config,
    )
    .await;
    std::fs::write(team.workspace.path().join("answer.txt"), "answer = 0\n").unwrap();
    let task = team.submit("Record the answer in answer.txt");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Failed);
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    // A failed loop puts back what the subtasks wrote.
    assert_eq!(team.read("answer.txt"), "answer = 41\n");
    team.engine.shutdown().await;
}

// Real time: python3 runs for real.
#[tokio::test]
async fn a_file_a_coder_showed_in_its_answer_and_did_not_write_is_tried_by_the_checks() {
    // The wrong code written back, then the right code in the answer's code block: the
    // block is the fix.
    if !python_available() {
        return;
    }
    let buggy = "def word_count(text):\n    return len(text.split(\" \"))\n";
    let fixed = "def word_count(text):\n    return len(text.split())\n";
    let team = start(
        json!([
            plan(&["Fix the bug in textutil.py"]),
            { "match": "Fix the bug", "toolCalls": [ { "name": "file_write", "arguments": { "path": "textutil.py", "content": format!("# counts words\n{buggy}") } } ] },
            { "match": "updated textutil.py", "text": format!("To fix it, word_count should look like this:\n\n```python\n# counts words\n{fixed}```\n") }
        ]),
        config(),
    )
    .await;
    std::fs::write(team.workspace.path().join("textutil.py"), buggy).unwrap();
    std::fs::write(
        team.workspace.path().join("test_textutil.py"),
        "import unittest\n\nfrom textutil import word_count\n\n\nclass T(unittest.TestCase):\n    def test_any_whitespace(self):\n        self.assertEqual(word_count(\"a  b c\"), 3)\n",
    )
    .unwrap();
    let task = team.submit(
        "The test in test_textutil.py fails. Fix the bug in textutil.py so that the test passes.",
    );
    let summary = team.engine.wait_for(task).await.unwrap();
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(summary.status, TaskStatus::Completed, "{:?}", detail.checks);
    assert_eq!(team.read("textutil.py"), format!("# counts words\n{fixed}"));
    let steps = team
        .store
        .recovery_steps(Some(task.to_string()))
        .await
        .unwrap();
    assert!(
        steps.iter().any(|s| s.message.contains(
            "the version of textutil.py a coder gave in its answer and did not write passes"
        )),
        "{:?}",
        steps.iter().map(|s| &s.message).collect::<Vec<_>>()
    );
    assert!(
        team.model.unused_steps().is_empty(),
        "{:?}",
        team.model.unused_steps()
    );
    team.engine.shutdown().await;
}

// Real time: python3 and bash run for real.
#[tokio::test]
async fn a_fix_round_that_rewrites_the_acceptance_test_with_bash_does_not_pass_the_task() {
    // A fix round's coder must not make the team's test pass by rewriting it. The file
    // tools refuse `.conclave/`; `bash` does not, and the task must still not pass.
    if !python_available() {
        return;
    }
    let mut config = config();
    config.approvals.commands = conclave::config::CommandPolicy::Auto;
    let tamper = "for t in .conclave/checks/*/acceptance_test.py; do printf 'import calc\\nassert True\\n' > \"$t\"; done";
    let team = start(
        json!([
            plan(&["Implement double in calc.py."]),
            { "match": "Implement double", "toolCalls": [ { "name": "file_write", "arguments": { "path": "calc.py", "content": "def double(x):\n    return x + 1\n" } } ] },
            { "match": "updated calc.py", "text": "Implemented double." },
            { "match": "short Python test script", "text": "```python\nfrom calc import double\nassert double(2) == 4\n```" },
            { "match": "does not pass this check", "toolCalls": [ { "name": "bash", "arguments": { "command": tamper } } ], "repeat": true },
            { "match": "exit code", "text": "The test passes now.", "repeat": true },
            { "match": "fails its checks", "text": "The test passes now.", "repeat": true },
            { "match": "Reply again", "text": "The test passes now.", "repeat": true }
        ]),
        config,
    )
    .await;
    std::fs::write(
        team.workspace.path().join("calc.py"),
        "def double(x):\n    pass\n",
    )
    .unwrap();
    let task = team.submit("Implement double in calc.py.");
    let summary = team.engine.wait_for(task).await.unwrap();
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_ne!(summary.status, TaskStatus::Completed, "{:?}", detail.checks);
    let test = team
        .workspace
        .path()
        .join(".conclave/checks/task-1/acceptance_test.py");
    let test = std::fs::read_to_string(test).unwrap();
    assert!(test.contains("assert double(2) == 4"), "{test}");
    let acceptance = detail
        .checks
        .iter()
        .rev()
        .find(|c| c.name == "acceptance test (written by the team)")
        .expect("the acceptance check is on the task");
    assert_eq!(acceptance.status, conclave::runtime::CheckStatus::Failed);
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fix_written_the_way_small_models_write_it_still_lands_in_the_right_file() {
    // Two ways small models write a fix: the path copied from the answer format's
    // example, the file's content in Python's triple quotes.
    let config = answer_42_config();
    let [w1, w2] = writes("Write answer.txt", "answer.txt", "answer = 41\n");
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            w1, w2,
            { "match": ["fails its checks", "expected answer = 42"], "text": "```json\n{\"files\": [{\"path\": \"relative/path/to/answer.txt\", \"content\": \"\"\"answer = 42\n\"\"\"}], \"confidence\": 90, \"explanation\": \"off by one\"}\n```" }
        ]),
        config,
    )
    .await;
    let task = team.submit("Record the answer");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    assert!(
        !team.workspace.path().join("relative").exists(),
        "no file under the example's path"
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fix_under_the_format_s_placeholder_path_lands_in_the_file_it_is_a_version_of() {
    // A fix whose path is the answer format's own words (`"path": "a path as shown
    // above"`) with a whole task file as content: it lands in that file.
    let mut config = config();
    config.verify.command = Some(
        "grep -q 'return sum' inventory.py || { echo 'inventory.py:4:1: the last item is ignored'; exit 1; }"
            .into(),
    );
    let wrong = "def total_value(items):\n    \"\"\"The total value of (price, quantity) pairs.\"\"\"\n    total = 0\n    for price, quantity in items[:-1]:\n        total += price * quantity\n    return total\n";
    let right = "def total_value(items):\n    \"\"\"The total value of (price, quantity) pairs.\"\"\"\n    return sum(price * quantity for price, quantity in items)\n";
    let [w1, w2] = writes("Fix total_value in inventory.py", "inventory.py", wrong);
    let fix = json!({ "files": [
        { "path": "a path as shown above", "content": right },
        { "path": "a path as shown above", "content": "def said(text):\n    return text\n" }
    ], "confidence": 90, "explanation": "sum every item" });
    let team = start(
        json!([
            plan(&["Fix total_value in inventory.py"]),
            w1, w2,
            { "match": ["fails its checks", "the last item is ignored"], "text": fix.to_string() }
        ]),
        config,
    )
    .await;
    let task = team.submit("Fix total_value in inventory.py");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("inventory.py"), right);
    assert!(
        !team.workspace.path().join("a path as shown above").exists(),
        "no file under the format's words"
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fix_s_two_parts_of_one_file_are_joined_not_written_over_each_other() {
    // Two parts of one file's fix (`mean` and `spread` of stats.py) under the format's
    // placeholder path: both land in stats.py, the second beside the first, not over it.
    let mut config = config();
    config.verify.command = Some(
        "grep -q 'if not values' stats.py && grep -q 'def spread' stats.py || { echo 'stats.py:1:1: mean([]) raises'; exit 1; }"
            .into(),
    );
    let wrong = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef spread(values):\n    return max(values) - min(values)\n";
    let mean = "def mean(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n";
    let spread = "def spread(values):\n    return max(values) - min(values)\n";
    let [w1, w2] = writes("Fix mean in stats.py", "stats.py", wrong);
    let fix = json!({ "files": [
        { "path": "a path as shown above", "content": mean },
        { "path": "a path as shown above", "content": spread }
    ], "confidence": 90, "explanation": "0.0 for an empty list" });
    let team = start(
        json!([
            plan(&["Fix mean in stats.py"]),
            w1, w2,
            { "match": ["fails its checks", "mean([]) raises"], "text": fix.to_string() }
        ]),
        config,
    )
    .await;
    let task = team.submit("Fix mean in stats.py");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(
        team.read("stats.py"),
        format!("{}\n\n\n{spread}", mean.trim_end())
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_fix_never_rewrites_a_test_of_the_project() {
    // "Fix the bug so that the test passes. Do not change the test.": the fix loop must
    // not write the code under test over the test file.
    let config = answer_42_config();
    let [w1, w2] = writes("Write answer.txt", "answer.txt", "answer = 41\n");
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            w1, w2,
            { "match": ["fails its checks", "expected answer = 42"], "text": "{\"files\": [{\"path\": \"test_answer.py\", \"content\": \"answer = 42\\n\"}, {\"path\": \"answer.txt\", \"content\": \"answer = 42\\n\"}], \"confidence\": 90, \"explanation\": \"fixed\"}" }
        ]),
        config,
    )
    .await;
    std::fs::write(
        team.workspace.path().join("test_answer.py"),
        "assert True\n",
    )
    .unwrap();
    let task = team.submit("Record the answer");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(
        summary.status,
        TaskStatus::Completed,
        "{:?}",
        team.engine.task(&task.to_string())
    );
    assert_eq!(team.read("answer.txt"), "answer = 42\n");
    assert_eq!(
        team.read("test_answer.py"),
        "assert True\n",
        "the project's test is untouched"
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn fixes_that_do_not_pass_are_rolled_back_to_what_the_team_wrote() {
    // The check can never pass; the one fix round replaces the file with junk. The task
    // fails, honestly, and the file is back as the subtask wrote it.
    let mut config = config();
    // What the failed task leaves is the point here: its changes are kept.
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    config.verify.max_rounds = 1;
    config.verify.command =
        Some("echo 'answer.txt:1:1: the oracle is never pleased'; exit 1".into());
    let [w1, w2] = writes("Write answer.txt", "answer.txt", "answer = 41\n");
    let team = start(
        json!([
            plan(&["Write answer.txt"]),
            w1, w2,
            { "match": ["fails its checks", "never pleased"], "text": "{\"files\": [{\"path\": \"answer.txt\", \"content\": \"import answer\\nassert answer\\n\"}], \"confidence\": 90, \"explanation\": \"rewrote it\"}" }
        ]),
        config,
    )
    .await;
    let task = team.submit("Record the answer");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Failed);
    assert_eq!(
        team.read("answer.txt"),
        "answer = 41\n",
        "the fix was rolled back"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    let message = &detail.errors.last().unwrap().failure.message;
    assert!(
        message.contains("answer.txt restored as before the fixes"),
        "{message}"
    );
    team.engine.shutdown().await;
}

// Real time, as above.
#[tokio::test]
async fn a_failed_loop_reports_what_fails_in_the_files_it_leaves_not_in_the_fix_it_undid() {
    // The test never passes; the one fix round writes Python that does not parse. The
    // file is put back, and the task reports the failing test the file has, not the
    // syntax error of a fix that is gone.
    if !python_available() {
        return;
    }
    let mut config = config();
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    config.verify.max_rounds = 1;
    config.verify.command =
        Some("echo 'answer.py:1:1: the oracle is never pleased'; exit 1".into());
    let [w1, w2] = writes("Write answer.py", "answer.py", "answer = 41\n");
    let team = start(
        json!([
            plan(&["Write answer.py"]),
            w1, w2,
            { "match": ["fails its checks", "never pleased"], "text": "{\"files\": [{\"path\": \"answer.py\", \"content\": \"answer = = 42\\n\"}], \"confidence\": 90, \"explanation\": \"rewrote it\"}" }
        ]),
        config,
    )
    .await;
    let task = team.submit("Record the answer in answer.py");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Failed);
    assert_eq!(team.read("answer.py"), "answer = 41\n");
    let detail = team.engine.task(&task.to_string()).unwrap();
    let message = &detail.errors.last().unwrap().failure.message;
    assert!(message.contains("never pleased"), "{message}");
    assert!(!message.contains("SyntaxError"), "{message}");
    let failing: Vec<&str> = detail
        .checks
        .iter()
        .filter(|c| c.status == conclave::runtime::CheckStatus::Failed)
        .flat_map(|c| c.rules.iter().map(String::as_str))
        .collect();
    assert_eq!(failing, ["tests.command"], "{:?}", detail.checks);
    // The fix's syntax error was found, and is counted, though it is gone.
    assert_eq!(detail.rule_findings.get("syntax.python"), Some(&1));
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_low_confidence_fix_is_asked_for_and_not_applied_when_rejected() {
    let mut config = config();
    // What the failed task leaves is the point here: its changes are kept.
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    config.verify.command = Some("grep -q fixed state.txt".into());
    let [w1, w2] = writes("Write state.txt", "state.txt", "broken\n");
    let team = start(
        json!([
            plan(&["Write state.txt"]),
            w1, w2,
            { "match": "fails its checks", "text": "{\"files\": [{\"path\": \"state.txt\", \"content\": \"fixed\\n\"}], \"confidence\": 30, \"explanation\": \"a guess\"}" }
        ]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Write state.txt");
    let approval = loop {
        if let RuntimeEvent::ApprovalRequested(request) = events.recv().await.unwrap() {
            break request;
        }
    };
    assert_eq!(approval.kind, ApprovalKind::FileChange);
    let diff = approval.diff.clone().expect("a diff");
    assert_eq!(
        (diff.before.as_str(), diff.after.as_str()),
        ("broken\n", "fixed\n")
    );
    assert!(diff.uri.ends_with("state.txt"));
    team.engine
        .resolve_approval(
            &approval.approval_id.to_string(),
            ApprovalAnswer::new(ApprovalChoice::Reject),
        )
        .unwrap();
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Failed);
    assert_eq!(
        team.read("state.txt"),
        "broken\n",
        "a rejected fix is not written"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    // The person's no ends the task as refused, not as code the team failed to fix.
    assert_eq!(detail.errors.last().unwrap().failure.kind, "refused");
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_error_report_of_a_mixed_run() {
    let [w1, w2] = writes("Create ok.txt", "ok.txt", "ok\n");
    let team = start(
        json!([
            plan(&["Create ok.txt", "Create forbidden.txt"]),
            w1, w2,
            { "match": "Create forbidden.txt", "error": { "kind": "http", "status": 403, "body": "{\"error\": \"region not allowed\"}" }, "repeat": true }
        ]),
        config(),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Mixed bag");
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::ApprovalRequested(r) => team
                .engine
                .resolve_approval(
                    &r.approval_id.to_string(),
                    ApprovalAnswer::new(ApprovalChoice::Abort),
                )
                .unwrap(),
            RuntimeEvent::TaskUpdated(t) if t.status.is_finished() => break,
            _ => {}
        }
    }
    let report = team
        .engine
        .error_report(Some(&task.to_string()))
        .await
        .unwrap();
    let md = &report.markdown;
    assert!(report.path.ends_with("ERROR_REPORT.md") && report.path.exists());
    assert!(
        report.path.starts_with(
            team.workspace
                .path()
                .canonicalize()
                .unwrap()
                .join(".conclave/sessions")
        )
    );
    assert!(md.starts_with("# Error Report\n\n**Generated**: "), "{md}");
    assert!(
        md.contains("**Mode**: serve\n**Continue on Error**: false"),
        "{md}"
    );
    assert!(
        md.contains(
            "| Total Tasks | 2 |\n| Completed | 1 |\n| Failed | 1 |\n| Success Rate | 50% |"
        ),
        "{md}"
    );
    let detail = team.engine.task(&task.to_string()).unwrap();
    let failed = detail
        .summary
        .subtasks
        .iter()
        .find(|s| s.status == SubtaskStatus::Failed)
        .unwrap();
    assert!(
        md.contains(&format!("### {}: Create forbidden.txt", failed.subtask_id)),
        "{md}"
    );
    assert!(
        md.contains("**Error Type**: permission (critical, fatal)"),
        "{md}"
    );
    assert!(md.contains("region not allowed"), "{md}");
    assert!(md.contains("- **permission**: 1"), "{md}");
    assert!(md.contains("| Escalations | 1 |"), "{md}");
    assert!(md.contains("| Recovery Rate | 0% |"), "{md}");
    assert!(
        md.contains("## Recommendations\n\n1. Check the API key"),
        "{md}"
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn with_steady_transient_faults_every_subtask_still_completes() {
    // 20 subtasks; 6 of them (30%) hit a transient fault on their first model call.
    let descriptions: Vec<String> = (1..=20)
        .map(|n| format!("Create file-{n:02}.txt"))
        .collect();
    let refs: Vec<&str> = descriptions.iter().map(String::as_str).collect();
    let mut steps: Vec<Value> = vec![plan(&refs)];
    let faults = ["rate_limited", "timeout", "connection"];
    for (n, description) in descriptions.iter().enumerate() {
        if n % 10 < 3 {
            steps.push(json!({ "match": description, "error": faults[n % 3] }));
        }
        let [w1, w2] = writes(description, &format!("file-{:02}.txt", n + 1), "x\n");
        steps.push(w1);
        steps.push(w2);
    }
    let team = start(Value::Array(steps), config()).await;
    let task = team.submit("Make twenty files");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert!(
        summary
            .subtasks
            .iter()
            .all(|s| s.status == SubtaskStatus::Completed)
    );
    // Provider trouble is waited out: no subtask spent a second attempt on it.
    assert!(summary.subtasks.iter().all(|s| s.attempts == 1));
    let report = team
        .engine
        .error_report(Some(&task.to_string()))
        .await
        .unwrap();
    assert!(
        report
            .markdown
            .contains("| Subtasks With Errors | 6 |\n| Recovered | 6 |\n| Recovery Rate | 100% |"),
        "{}",
        report.markdown
    );
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_work_and_retry_reruns_only_what_did_not_complete() {
    let [w1, w2] = writes("Create first.txt", "first.txt", "1\n");
    let [x1, x2] = writes("Create second.txt", "second.txt", "2\n");
    let team = start(
        json!([
            plan(&["Create first.txt", "Create second.txt"]),
            w1, w2,
            { "match": "Create second.txt", "text": "working on it", "delayMs": 3600000, "times": 1 },
            x1, x2
        ]),
        config(),
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team.submit("Two files");
    let id = task.to_string();
    // Wait until the first subtask is done and the second is running.
    loop {
        if let RuntimeEvent::TaskUpdated(t) = events.recv().await.unwrap()
            && t.subtasks
                .iter()
                .any(|s| s.status == SubtaskStatus::Completed)
            && t.subtasks
                .iter()
                .any(|s| s.status == SubtaskStatus::Running)
        {
            break;
        }
    }
    assert!(team.engine.cancel(&id).unwrap());
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Cancelled);
    let statuses: Vec<SubtaskStatus> = summary.subtasks.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [SubtaskStatus::Completed, SubtaskStatus::Cancelled]
    );
    assert!(matches!(
        team.engine.cancel(&id),
        Err(EngineError::InvalidState { .. })
    ));
    assert!(!team.workspace.path().join("second.txt").exists());

    assert_eq!(team.engine.retry(&id).unwrap(), task);
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert_eq!(
        summary.subtasks[0].attempts, 1,
        "the completed subtask did not run again"
    );
    assert_eq!(team.read("second.txt"), "2\n");
    assert!(matches!(
        team.engine.retry(&id),
        Err(EngineError::InvalidState { .. })
    ));
    team.engine.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn bad_requests_get_typed_errors() {
    let team = start(json!([]), config()).await;
    assert_eq!(team.engine.task("nope").unwrap_err().code(), 1001);
    assert_eq!(
        team.engine
            .cancel(&uuid::Uuid::new_v4().to_string())
            .unwrap_err()
            .code(),
        1001
    );
    let approval = team.engine.resolve_approval(
        &uuid::Uuid::new_v4().to_string(),
        ApprovalAnswer::new(ApprovalChoice::Approve),
    );
    assert_eq!(approval.unwrap_err().code(), 1002);
    assert_eq!(
        team.engine.whiteboard("layer:nowhere").unwrap_err().code(),
        1003
    );
    assert_eq!(team.engine.whiteboard("global").unwrap().version, 0);
    team.engine.shutdown().await;

    // No model configured at all: 1004, saying how to configure one.
    let dir = tempfile::tempdir().unwrap();
    let engine = conclave::engine::Engine::start(conclave::engine::EngineSetup::new(
        dir.path(),
        conclave::config::Config::default(),
    ))
    .await
    .unwrap();
    let err = engine
        .submit(SubmitTask {
            description: "anything".into(),
            ..SubmitTask::default()
        })
        .unwrap_err();
    assert_eq!(err.code(), 1004);
    assert!(
        err.to_string().contains("OPENAI_API_KEY") && err.to_string().contains("Ollama"),
        "{err}"
    );
    engine.shutdown().await;
}

async fn run_with_a_broken_dependency(
    continue_on_error: bool,
    error: &str,
) -> (Vec<SubtaskStatus>, Vec<String>, bool) {
    let [w1, w2] = writes("Write the docs", "docs.md", "docs\n");
    let plan = json!({ "match": "Plan this task", "text": json!({ "subtasks": [
        { "description": "Generate the schema" },
        { "description": "Write the docs", "dependsOn": [0] }
    ] }).to_string() });
    let mut config = config();
    // Whether the dependant ran is read from what it wrote: the failed task keeps it.
    config.undo.on_failure = conclave::config::OnFailure::Keep;
    let team = start(
        json!([plan, { "match": "Generate the schema", "error": error, "repeat": true }, w1, w2]),
        config,
    )
    .await;
    let mut events = team.engine.subscribe();
    let task = team
        .engine
        .submit(SubmitTask {
            description: "Schema and docs".into(),
            options: TaskOptions {
                continue_on_error: Some(continue_on_error),
                ..TaskOptions::default()
            },
            ..SubmitTask::default()
        })
        .unwrap();
    loop {
        match events.recv().await.unwrap() {
            RuntimeEvent::ApprovalRequested(r) => team
                .engine
                .resolve_approval(
                    &r.approval_id.to_string(),
                    ApprovalAnswer::new(ApprovalChoice::Abort),
                )
                .unwrap(),
            RuntimeEvent::TaskUpdated(t) if t.status.is_finished() => break,
            _ => {}
        }
    }
    let detail = team.engine.task(&task.to_string()).unwrap();
    let statuses = detail.summary.subtasks.iter().map(|s| s.status).collect();
    let mut kinds: Vec<String> = detail
        .errors
        .iter()
        .map(|e| e.failure.kind.to_string())
        .collect();
    kinds.dedup();
    let wrote = team.workspace.path().join("docs.md").exists();
    team.engine.shutdown().await;
    (statuses, kinds, wrote)
}

#[tokio::test(start_paused = true)]
async fn a_failed_dependency_skips_its_dependents_unless_continue_on_error() {
    let (statuses, kinds, wrote) = run_with_a_broken_dependency(false, "context_overflow").await;
    assert_eq!(statuses, [SubtaskStatus::Failed, SubtaskStatus::Failed]);
    assert_eq!(kinds, ["context_overflow", "skipped"]);
    assert!(!wrote);

    let (statuses, kinds, wrote) = run_with_a_broken_dependency(true, "context_overflow").await;
    assert_eq!(statuses, [SubtaskStatus::Failed, SubtaskStatus::Completed]);
    assert_eq!(kinds, ["context_overflow"]);
    assert!(
        wrote,
        "with continueOnError the dependent subtask ran anyway"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fatal_failure_stops_the_task_even_with_continue_on_error() {
    let (statuses, kinds, wrote) = run_with_a_broken_dependency(true, "forbidden").await;
    assert_eq!(statuses, [SubtaskStatus::Failed, SubtaskStatus::Failed]);
    assert_eq!(kinds, ["permission", "skipped"]);
    assert!(!wrote, "nothing starts after a fatal failure");
}

#[tokio::test(start_paused = true)]
async fn repairs_of_the_model_s_output_are_counted_on_the_task_by_id() {
    let team = start(
        json!([
            // A plan with a trailing comma: read as meant (`repair.json`).
            { "match": "Plan this task", "text": "{\"subtasks\": [{\"description\": \"Create notes.txt\"},]}" },
            { "match": "Create notes.txt", "text": "```json\n{\"name\": \"file_write\", \"arguments\": {\"path\": \"notes.txt\", \"content\": \"hello\\n\"}}\n```" },
            { "match": "notes.txt", "text": "Wrote notes.txt." }
        ]),
        config(),
    )
    .await;
    let task = team.submit("Create notes.txt");
    let summary = team.engine.wait_for(task).await.unwrap();
    assert_eq!(summary.status, TaskStatus::Completed);
    assert_eq!(team.read("notes.txt"), "hello\n");
    let detail = team.engine.task(&task.to_string()).unwrap();
    assert_eq!(
        detail.rule_findings.get("repair.text-tool-calls"),
        Some(&1),
        "{:?}",
        detail.rule_findings
    );
    assert_eq!(
        detail.rule_findings.get("repair.json"),
        Some(&1),
        "{:?}",
        detail.rule_findings
    );
    team.engine.shutdown().await;
}

// Real time: the checks run python3.
#[tokio::test]
async fn a_function_a_coder_s_rewrite_dropped_is_put_back_unless_the_task_takes_it_away() {
    if !python_available() {
        return;
    }
    let before = "def mean(values):\n    return sum(values) / len(values)\n\n\ndef spread(values):\n    return max(values) - min(values)\n";
    // The coder rewrites the file as only the function it changed.
    let rewrite = "def mean(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n";
    let run = |task: &'static str| async move {
        let mut config = config();
        config.verify.command = Some("true".into());
        let [w1, w2] = writes("stats.py", "stats.py", rewrite);
        let team = start(json!([plan(&[task]), w1, w2]), config).await;
        std::fs::write(team.workspace.path().join("stats.py"), before).unwrap();
        let id = team.submit(task);
        let summary = team.engine.wait_for(id).await.unwrap();
        let detail = team.engine.task(&id.to_string()).unwrap();
        let repaired = detail
            .rule_findings
            .get("repair.python-definitions")
            .copied();
        // Put back right after the coder's subtask, on the coder's board.
        let board = team.board_of("bottom-1-1");
        let file = team.read("stats.py");
        team.engine.shutdown().await;
        (summary.status, file, repaired, board)
    };

    let (status, file, repaired, board) =
        run("Make mean in stats.py return 0.0 for an empty list").await;
    assert_eq!(status, TaskStatus::Completed);
    assert_eq!(
        file,
        "def mean(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n\n\ndef spread(values):\n    return max(values) - min(values)\n"
    );
    assert_eq!(repaired, Some(1));
    assert!(
        board.contains("stats.py: `spread` were dropped by a rewrite: put back as they were"),
        "{board}"
    );

    // A task that takes it away gets what it asked for.
    let (_, file, repaired, _) = run("Remove spread from stats.py and keep mean").await;
    assert_eq!(file, rewrite);
    assert_eq!(repaired, None);
}

#[tokio::test]
async fn a_docstring_a_coder_dropped_is_put_back_unless_the_task_removes_it() {
    if !python_available() {
        return;
    }
    let stub =
        "def median(values):\n    \"\"\"The middle value of a sorted copy of values.\"\"\"\n";
    let body = "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n";
    let run = |task: &'static str| async move {
        let mut config = config();
        config.verify.command = Some("true".into());
        let [w1, w2] = writes("stats.py", "stats.py", body);
        let team = start(json!([plan(&[task]), w1, w2]), config).await;
        std::fs::write(team.workspace.path().join("stats.py"), stub).unwrap();
        let id = team.submit(task);
        let summary = team.engine.wait_for(id).await.unwrap();
        assert_eq!(summary.status, TaskStatus::Completed);
        let detail = team.engine.task(&id.to_string()).unwrap();
        let repaired = detail
            .rule_findings
            .get("repair.python-docstrings")
            .copied();
        // Put back right after the coder's subtask, on the coder's board.
        let board = team.board_of("bottom-1-1");
        let file = team.read("stats.py");
        team.engine.shutdown().await;
        (file, repaired, board)
    };

    let (file, repaired, board) = run("Implement median in stats.py").await;
    assert_eq!(
        file,
        "def median(values):\n    \"\"\"The middle value of a sorted copy of values.\"\"\"\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
    );
    assert_eq!(repaired, Some(1));
    assert!(
        board
            .contains("stats.py: the docstring(s) of `median` were dropped by a rewrite: put back"),
        "{board}"
    );

    // A task that takes the docstring away gets what it asked for.
    let (file, repaired, _) = run("Remove the docstring of median in stats.py").await;
    assert_eq!(file, body);
    assert_eq!(repaired, None);
}
