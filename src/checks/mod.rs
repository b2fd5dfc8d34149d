//! The checks of the team's work as named rules: each has a stable id, says what it
//! catches, and can be switched off (`verify.disabled = ["rule-id", …]`). Every finding
//! carries the id of the rule that made it (`CheckResult.rules`), on the task's detail,
//! in its events and in the log. docs/checks.md lists them all.
//!
//! - [`RULES`]: the registry.
//! - [`intent`]: the task read once: what it names, asks for, renames and removes.
//! - [`defines`]: what a code file defines, one reader a language.
//! - `python/checks.py`: the rules that read Python code, one program kept as a file with
//!   its own tests (`python/test_checks.py`), run isolated (`python3 -I`).
//!
//! Running the rules (through `exec`, under the approval policy) is `team/check/`'s: the pipeline of checks, by stage.

pub mod defines;
pub mod intent;

use std::sync::LazyLock;

use serde::Deserialize;

/// What a rule is about, as `CheckResult.kind` says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Syntax,
    Stubs,
    Contracts,
    Tests,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Syntax => "syntax",
            Kind::Stubs => "stubs",
            Kind::Contracts => "contracts",
            Kind::Tests => "tests",
        }
    }
}

/// One rule of the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable: configuration and reports name rules by it.
    pub id: &'static str,
    pub kind: Kind,
    /// What it catches, in a line.
    pub catches: &'static str,
}

/// Every rule, in the order they run.
pub const RULES: &[Rule] = &[
    Rule {
        id: "syntax.python",
        kind: Kind::Syntax,
        catches: "Python that does not compile (`python3 -I -m py_compile`)",
    },
    Rule {
        id: "syntax.javascript",
        kind: Kind::Syntax,
        catches: "JavaScript that does not parse (`node --check`)",
    },
    Rule {
        id: "syntax.typescript",
        kind: Kind::Syntax,
        catches: "TypeScript that does not type-check (`tsc --noEmit`, with a tsconfig.json)",
    },
    Rule {
        id: "syntax.shell",
        kind: Kind::Syntax,
        catches: "shell scripts that do not parse (`bash -n`)",
    },
    Rule {
        id: "syntax.json",
        kind: Kind::Syntax,
        catches: "JSON files that do not parse",
    },
    Rule {
        id: "syntax.rust",
        kind: Kind::Syntax,
        catches: "Rust that does not build (`cargo check`, in a Cargo project)",
    },
    Rule {
        id: "python.stub",
        kind: Kind::Stubs,
        catches: "a Python function whose body is only a docstring, `pass`, `...` or NotImplementedError",
    },
    Rule {
        id: "stubs.marked",
        kind: Kind::Stubs,
        catches: "`todo!()` / `unimplemented!()` in Rust, a thrown \"not implemented\" in JavaScript or TypeScript",
    },
    Rule {
        id: "python.broken-import",
        kind: Kind::Contracts,
        catches: "an import of a name the project's module does not define (any more)",
    },
    Rule {
        id: "python.lost-definition",
        kind: Kind::Contracts,
        catches: "a function or class the file had before the task, gone though the task does not name it",
    },
    Rule {
        id: "python.unkept-return",
        kind: Kind::Contracts,
        catches: "a function whose annotation or docstring promises a value and that never returns one",
    },
    Rule {
        id: "python.unbound-name",
        kind: Kind::Contracts,
        catches: "a name the code reads that nothing binds (a lost import, constant or function)",
    },
    Rule {
        id: "python.unparsed-option",
        kind: Kind::Contracts,
        catches: "`args.x` read from an argparse parser that never adds `--x`",
    },
    Rule {
        id: "python.lost-main",
        kind: Kind::Contracts,
        catches: "an `if __name__ == \"__main__\":` block the file had before the task, gone",
    },
    Rule {
        id: "names.missing-file",
        kind: Kind::Contracts,
        catches: "a source file the task asks for that is not there at the end (or was written in another directory)",
    },
    Rule {
        id: "names.unchanged-file",
        kind: Kind::Contracts,
        catches: "a task that asks to change files it names, left as they were while nothing, or a same-named file elsewhere, was written",
    },
    Rule {
        id: "names.missing-name",
        kind: Kind::Contracts,
        catches: "a command-line flag or function the task asks for by name that no file the team wrote has",
    },
    Rule {
        id: "names.rename",
        kind: Kind::Contracts,
        catches: "a rename the task asks for not done: the old definition still there, or the new one missing",
    },
    Rule {
        id: "tests.command",
        kind: Kind::Tests,
        catches: "`verify.command` failing",
    },
    Rule {
        id: "tests.python",
        kind: Kind::Tests,
        catches: "the project's Python tests, or the tests the task wrote, failing (pytest or unittest)",
    },
    Rule {
        id: "tests.javascript",
        kind: Kind::Tests,
        catches: "`npm test`, or the JavaScript tests the task wrote (`node --test`), failing",
    },
    Rule {
        id: "tests.rust",
        kind: Kind::Tests,
        catches: "`cargo test` failing",
    },
    Rule {
        id: "tests.acceptance",
        kind: Kind::Tests,
        catches: "code that fails the acceptance test the team writes from the task when no other test ran",
    },
    Rule {
        id: "tests.examples",
        kind: Kind::Tests,
        catches: "code that does not give what the task's own examples say (doctest `>>>` examples in the task's text, or in the docstring of a function the task found unwritten), checked before the team's acceptance test",
    },
    // What makes the team's own acceptance test broken, so that it says nothing of the
    // code (`team/acceptance_runner.py`): a broken first test is written again; a second
    // broken one leaves the task unverified, never completed.
    Rule {
        id: "acceptance.unreadable",
        kind: Kind::Tests,
        catches: "a test that is not Python (cannot be switched off: it cannot run)",
    },
    Rule {
        id: "acceptance.runs-nothing",
        kind: Kind::Tests,
        catches: "a test that imports no module of the project and runs no program",
    },
    Rule {
        id: "acceptance.program-for-function",
        kind: Kind::Tests,
        catches: "a first test that only runs a program when the task is about a function it names",
    },
    Rule {
        id: "acceptance.test-exits",
        kind: Kind::Tests,
        catches: "a test that ends itself with sys.exit (off: counted against the code)",
    },
    Rule {
        id: "acceptance.test-error",
        kind: Kind::Tests,
        catches: "a test that raises in its own lines, or uses names neither the task nor the code has (off: counted against the code)",
    },
    Rule {
        id: "acceptance.missing-input",
        kind: Kind::Tests,
        catches: "a failing test that runs the code on a file no one wrote: not in the workspace, not written by the test, not named by the task",
    },
    Rule {
        id: "acceptance.long-expected-value",
        kind: Kind::Tests,
        catches: "a first test whose failing assert compares with a long value written out by hand",
    },
    Rule {
        id: "acceptance.compares-code-with-itself",
        kind: Kind::Tests,
        catches: "an assert that compares a call with the very same call (`f(2) == f(2)`), true of any code: not counted; a test left with no other passing assert is broken (off: it counts)",
    },
    Rule {
        id: "acceptance.no-assert",
        kind: Kind::Tests,
        catches: "a test that runs no assert (off: such a test passes)",
    },
    Rule {
        id: "acceptance.off-task",
        kind: Kind::Tests,
        catches: "a test that checks nothing the task names: it passes on other code only, or only its asserts about other code fail",
    },
    Rule {
        id: "acceptance.contradicts-example",
        kind: Kind::Tests,
        catches: "an assert that expects of a call other than the task's own example for the same call: ignored, and said (off: it counts)",
    },
    Rule {
        id: "acceptance.ignored-assert",
        kind: Kind::Tests,
        catches: "an assert about code the task does not name that the code before the task failed too: ignored, and said (off: it counts)",
    },
    Rule {
        id: "acceptance.inverse-value",
        kind: Kind::Tests,
        catches: "a comparison the code fails whose expected value is what another function of the same module gives for the same arguments, the two undoing each other in the code (`c_to_f(0) == -17.78` beside an f_to_c): the test took one for the other, or the code swapped them; set aside, and said; a task that passes so is handed to review, never called checked (off: it counts)",
    },
    Rule {
        id: "acceptance.disputed-assert",
        kind: Kind::Tests,
        catches: "a comparison the code fails that a second solution, written from the task alone and giving the task's own examples, fails with the very same values: set aside, and said; a task that passes so is handed to review, never called checked (off: it counts, and no second solution is asked for)",
    },
];

/// One repair of model output: what the model got wrong in a way that can be mended
/// without asking it again. Each says so when it mends something and can be switched
/// off by id like a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repair {
    pub id: &'static str,
    pub mends: &'static str,
}

/// Every repair with an id.
pub const REPAIRS: &[Repair] = &[
    Repair {
        id: "repair.test-cut-off",
        mends: "a test cut off by the model's token limit: its complete part runs (cannot be switched off)",
    },
    Repair {
        id: "repair.test-own-said",
        mends: "a test that defines `said()` again: the given one, which compares printed text as a person reads it, is used",
    },
    Repair {
        id: "repair.text-tool-calls",
        mends: "tool calls written as text (a ```json block, `<tool_call>` tags) in an answer with no native tool call: they are run as calls",
    },
    Repair {
        id: "repair.repeated-tool-calls",
        mends: "an answer whose tool calls began repeating (a call made again exactly, or more than 32 calls): the answer is stopped there and the calls before the repetition are run (cannot be switched off)",
    },
    Repair {
        id: "repair.code-answer",
        mends: "a whole file of the task answered in a code block with no tool call while the subtask is not done: written as the file_write it stands for",
    },
    Repair {
        id: "repair.code-answer-names",
        mends: "a final answer whose code block has a flag or function the task asks for that the file lacks: that file is written",
    },
    Repair {
        id: "repair.partial-file-write",
        mends: "a file_write that would replace an existing file with part of it (it keeps neither most of the file's words nor half of its functions and classes): not written, however often it is sent; the model is told what the file would lose and to add, change or take out the part with file_edit, or give the whole file",
    },
    Repair {
        id: "repair.edit-escapes",
        mends: "a file_edit whose old_text was escaped twice (`\\n`, `\\\"` as two characters): matched with its escapes decoded",
    },
    Repair {
        id: "repair.edit-loose-match",
        mends: "a file_edit whose old_text differs from the file only in indentation or quote style: matched loosely, new_text at the file's indentation",
    },
    Repair {
        id: "repair.edit-approximate-match",
        mends: "a file_edit whose old_text is at least 90% like one run of the file's lines (a typo, a line left out): matched there",
    },
    Repair {
        id: "repair.edit-whole-file",
        mends: "a file_edit whose old_text is empty or not found and whose new_text is the whole file (most of its words in order, and at least half of its functions and classes): the file becomes new_text",
    },
    Repair {
        id: "repair.edit-same-texts",
        mends: "a file_edit whose old_text and new_text are the same Python definitions, which the file does not have: they replace the file's definitions of those names",
    },
    Repair {
        id: "repair.edit-already-made",
        mends: "a file_edit whose old_text is not in the file and whose new_text (20 characters or more) already is, exactly or ignoring indentation: the edit was made before, so the file is left as it is and the call is not an error",
    },
    Repair {
        id: "repair.python-escapes",
        mends: "Python whose `\\n` line breaks were escaped once too often or too few, a one-line docstring's period written after its closing quote, or a docstring over lines opened and closed with one quote instead of three: written as meant",
    },
    Repair {
        id: "repair.python-definitions",
        mends: "a top-level Python function or class that was in a file when the task began, which a rewrite dropped and the task does not name as code, when the task takes no code away: it is put back as it was, next to the definition it followed",
    },
    Repair {
        id: "repair.python-docstrings",
        mends: "a Python function or class whose docstring, there when the task began, a rewrite dropped (or turned into comments), when the task takes no code away: the docstring is put back as it was",
    },
    Repair {
        id: "repair.stdlib-imports",
        mends: "Python that uses a standard-library module it does not import: the import is added",
    },
    Repair {
        id: "repair.json",
        mends: "a JSON answer (a plan, a review, a fix) with raw line breaks in strings, trailing commas or a file in triple quotes: read as meant (cannot be switched off; in the log only)",
    },
    Repair {
        id: "repair.test-own-arithmetic",
        mends: "a Python test whose expected number contradicts the arithmetic written beside it in a comment (`== 10  # 2*1 + 4*3 = 10`): the expected value becomes that arithmetic",
    },
    Repair {
        id: "repair.test-missing-import",
        mends: "a test that uses a module of the project, or a name exactly one module defines, without importing it: the import is added",
    },
];

/// The rule called `id`.
pub fn rule(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}

/// Whether the rule `id` runs under `disabled` (`verify.disabled`).
pub fn enabled(id: &str, disabled: &[String]) -> bool {
    !disabled.iter().any(|d| d == id)
}

/// The Python rules' program (`python/checks.py`), as it runs.
pub static PYTHON_CHECKS: LazyLock<String> =
    LazyLock::new(|| python_program(include_str!("python/checks.py")));

/// The one reader of Python definitions (`python/definitions.py`): what a module defines,
/// binds and leaves unwritten, for every Python program Conclave runs.
const PYTHON_DEFINITIONS: &str = include_str!("python/definitions.py");

/// `program` as Conclave runs it (`python3 -c`, so no file of Conclave's is on the
/// module path): `definitions.py` joined ahead of it, and the program's own `from
/// definitions import …` line, which is how it runs in the repository, left out.
pub fn python_program(program: &str) -> String {
    let own: Vec<&str> = program
        .lines()
        .filter(|line| !line.starts_with("from definitions import "))
        .collect();
    format!("{PYTHON_DEFINITIONS}\n\n{}\n", own.join("\n"))
}

/// One problem a rule found.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub message: String,
}

/// The findings of a run of the Python rules (one JSON object a line).
pub fn parse_findings(output: &str) -> Result<Vec<Finding>, String> {
    output
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line).map_err(|e| format!("unreadable finding ({e}): {line}"))
        })
        .collect()
}

/// The ids that `verify.disabled` names and no rule or repair has (a typo, most likely).
pub fn unknown_ids(disabled: &[String]) -> Vec<&str> {
    disabled
        .iter()
        .map(String::as_str)
        .filter(|id| rule(id).is_none() && !REPAIRS.iter().any(|r| r.id == *id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_and_every_python_rule_is_registered() {
        let mut ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        let count = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), count, "duplicate rule ids");
        for found in regex::Regex::new(r#""(python\.[a-z-]+)""#)
            .unwrap()
            .captures_iter(&PYTHON_CHECKS)
        {
            assert!(rule(&found[1]).is_some(), "{} is not registered", &found[1]);
        }
        let runner = include_str!("../team/acceptance_runner.py");
        let named: Vec<&str> = regex::Regex::new(r#""((?:acceptance|repair)\.[a-z-]+)""#)
            .unwrap()
            .captures_iter(runner)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert!(named.len() >= 10, "{named:?}");
        // The repairs the executor, the file tools and the JSON reader make.
        let made = [
            crate::executor::builtin::REPAIR_TEXT_CALLS,
            crate::executor::builtin::REPAIR_CODE_ANSWER,
            crate::executor::builtin::REPAIR_CODE_ANSWER_NAMES,
            crate::tools::edit_match::REPAIR_EDIT_ESCAPES,
            crate::tools::edit_match::REPAIR_EDIT_LOOSE,
            crate::tools::edit_match::REPAIR_EDIT_APPROXIMATE,
            crate::tools::edit_match::REPAIR_EDIT_WHOLE_FILE,
            crate::tools::edit_match::REPAIR_EDIT_SAME_TEXTS,
            crate::tools::edit_match::REPAIR_EDIT_ALREADY_MADE,
            crate::tools::file::REPAIR_PYTHON_ESCAPES,
            crate::tools::file::REPAIR_STDLIB_IMPORTS,
            crate::tools::file::REPAIR_PARTIAL_WRITE,
            crate::model::structured::REPAIR_JSON,
        ];
        let named: Vec<&str> = named.into_iter().chain(made).collect();
        for id in named {
            assert!(
                unknown_ids(&[id.to_string()]).is_empty(),
                "{id} is not registered"
            );
        }
    }

    #[test]
    fn findings_are_read_and_garbage_is_said_to_be() {
        let findings =
            parse_findings("{\"rule\": \"python.stub\", \"message\": \"m.py:1: x\"}\n\n").unwrap();
        assert_eq!(findings[0].rule, "python.stub");
        assert!(parse_findings("Traceback (most recent call last)").is_err());
        assert_eq!(
            unknown_ids(&["python.stub".into(), "pyton.stub".into()]),
            ["pyton.stub"]
        );
    }

    /// The Python rules' own tests, run by cargo test.
    #[test]
    fn the_python_rules_pass_their_own_tests() {
        let found = std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok();
        if !found {
            assert!(std::env::var_os("CI").is_none(), "CI needs python3");
            eprintln!("SKIPPED: python3 is not installed");
            return;
        }
        for tests in ["test_checks.py", "test_definitions.py"] {
            let run = std::process::Command::new("python3")
                .arg(format!(
                    "{}/src/checks/python/{tests}",
                    env!("CARGO_MANIFEST_DIR")
                ))
                .output()
                .unwrap();
            assert!(
                run.status.success(),
                "{tests}: {}{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            );
        }
    }

    #[test]
    fn a_python_program_runs_with_the_definitions_joined_ahead_of_it() {
        let program =
            python_program("import os\nfrom definitions import unbound\nprint(unbound)\n");
        assert!(program.starts_with(PYTHON_DEFINITIONS));
        assert!(
            program.ends_with("import os\nprint(unbound)\n"),
            "{program}"
        );
        assert!(!PYTHON_CHECKS.contains("\nfrom definitions import "));
        assert!(PYTHON_CHECKS.contains("def bound_at_top(tree):"));
    }
}
