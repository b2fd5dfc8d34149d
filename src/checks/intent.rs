//! The task, read once, for every rule that depends on what it asks: the flags and
//! functions it names, the renames it asks for, whether it asks for changes at all,
//! whether it takes something of the code away (then a name or a file it gives may
//! rightly be gone), and what it is about (a program, letter case, rounding). The
//! acceptance test's runner gets the same reading as JSON.
//!
//! Removal is read from the sentence, not from a word anywhere: "remove" counts when what
//! it removes is code — a file path, a `--flag`, a name in backticks, a `name(`, a name
//! the task's files define, or a word that says so ("the function", "the import") —
//! and not when it is data ("remove every word shorter than three letters"). Removing
//! docstrings or comments counts too, when its own phrase names them.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// What a task asks, for the checks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Intent {
    /// The flags (`--shout`) and functions (`perimeter(width, height)`) the task asks for
    /// by name; none when it removes or renames code.
    pub names: Vec<String>,
    /// (old, new) for each "rename OLD … to NEW".
    pub renames: Vec<(String, String)>,
    /// Whether the task takes something of the code away or moves it.
    pub removes: bool,
    /// Whether it asks for changes ([`asks_for_changes`]) rather than a question or a
    /// read-only job.
    pub changes: bool,
    /// The words it gives as names of code: `name(`, in backticks, after "function"
    /// (method, class, def), or spelt like code (an underscore or a digit). "hello" in
    /// "prints hello world" is no name of code.
    pub code_names: BTreeSet<String>,
    /// Every identifier the task writes (ASCII), code or not: what a rule asks when it
    /// wants to know whether the task mentions a module or a definition at all.
    pub mentions: BTreeSet<String>,
    /// Whether it is about a program (what it prints, its arguments or flags) rather
    /// than a function: then a test may rightly run it.
    pub about_program: bool,
    /// Whether it says something about letter case: then case counts when printed text
    /// is compared.
    pub about_case: bool,
    /// Whether it is about rounding: then a float's digits are what is asked.
    pub about_rounding: bool,
}

/// Words of a task about a program rather than a function.
const PROGRAM_WORDS: &[&str] = &[
    "print",
    "prints",
    "printed",
    "output",
    "outputs",
    "program",
    "script",
    "command",
    "argument",
    "arguments",
    "argv",
    "cli",
    "flag",
    "stdout",
    "console",
    "run",
    "runs",
];

/// Words of a task about rounding.
const ROUNDING_WORDS: &[&str] = &[
    "round",
    "rounded",
    "rounding",
    "rounds",
    "decimal",
    "decimals",
    "places",
    "precision",
    "digits",
];

/// Phrases of a task about letter case.
const CASE_PHRASES: &[&str] = &[
    "upper case",
    "uppercase",
    "upper-case",
    "lower case",
    "lowercase",
    "lower-case",
    "capital",
    "case-sensitive",
    "case sensitive",
    "title case",
];

/// Verbs of a task that asks for changes.
const CHANGE_VERBS: &[&str] = &[
    "write",
    "create",
    "implement",
    "add",
    "fix",
    "edit",
    "modify",
    "update",
    "change",
    "refactor",
    "rename",
    "remove",
    "delete",
    "make",
    "build",
    "generate",
    "replace",
    "move",
    "convert",
    "append",
    "insert",
    "rewrite",
    "install",
    "patch",
    "save",
    "complete",
    "define",
    "extend",
    "port",
    "translate",
    "initialize",
    "initialise",
    "scaffold",
    "setup",
    "configure",
];

/// Whether a task or subtask asks for changes (so finishing without any is no
/// progress), rather than being a question or a read-only job ("explain", "list", "run
/// the tests"). Judged by its verbs; when in doubt, it asks for changes only if one of
/// them is there.
pub fn asks_for_changes(description: &str) -> bool {
    description
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .any(|word| CHANGE_VERBS.contains(&word.as_str()))
}

/// Whether a planned step asks for changes, so that ending it with nothing written,
/// edited or run is no progress: only in a task that asks for changes
/// ([`Intent::changes`]), and only a step whose own words ask for one. The team decides it
/// once for each step it hands out; executors read the answer, not the words.
pub fn step_asks_for_changes(task: &Intent, step: &str) -> bool {
    task.changes && asks_for_changes(step)
}

/// First words of a step that only looks (reads, checks, tests, verifies).
const LOOK_ONLY: &[&str] = &[
    "identify",
    "verify",
    "test",
    "check",
    "run",
    "review",
    "read",
    "analyze",
    "analyse",
    "examine",
    "inspect",
    "ensure",
    "confirm",
    "validate",
    "understand",
    "locate",
    "find",
    "investigate",
    "look",
    "determine",
    "explore",
    "study",
    "open",
];

/// Whether a planned step only looks (reads, checks, tests, verifies): its first word
/// says so ("Verify the fix by running…" is about the fix, not one), or no word asks for
/// a change ([`asks_for_changes`]).
pub fn only_looks(step: &str) -> bool {
    let first = step
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .find(|w| !w.is_empty())
        .map(str::to_lowercase)
        .unwrap_or_default();
    LOOK_ONLY.contains(&first.as_str()) || !asks_for_changes(step)
}

/// The identifiers of `task`, as written (ASCII).
fn words(task: &str) -> impl Iterator<Item = &str> {
    static WORD: OnceLock<Regex> = OnceLock::new();
    WORD.get_or_init(|| Regex::new("[A-Za-z_][A-Za-z0-9_]*").expect("a word"))
        .find_iter(task)
        .map(|m| m.as_str())
}

fn has_word(task: &str, list: &[&str]) -> bool {
    words(task).any(|w| list.contains(&w.to_ascii_lowercase().as_str()))
}

fn code_names(task: &str) -> BTreeSet<String> {
    static PATTERNS: OnceLock<[Regex; 3]> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            Regex::new(r"([A-Za-z_]\w*)\s*\(").expect("a call"),
            Regex::new(r"`([A-Za-z_]\w*)").expect("backticks"),
            Regex::new(r"(?i)\b(?:functions?|methods?|class|def)\s+`?([A-Za-z_]\w*)")
                .expect("a named definition"),
        ]
    });
    let mut names: BTreeSet<String> = patterns
        .iter()
        .flat_map(|p| p.captures_iter(task).map(|c| c[1].to_string()))
        .collect();
    names.extend(
        words(task)
            .filter(|w| {
                w.chars().any(|c| c.is_ascii_alphabetic())
                    && w.trim_matches('_')
                        .chars()
                        .any(|c| c == '_' || c.is_ascii_digit())
            })
            .map(String::from),
    );
    names
}

/// Words that take something away or move it (inlining or merging a function takes
/// its definition away).
const REMOVING: &[&str] = &[
    "remove", "removes", "removing", "delete", "deletes", "deleting", "drop", "drops", "dropping",
    "rename", "renames", "renaming", "move", "moves", "moving", "inline", "inlines", "inlining",
    "merge", "merges", "merging",
];

/// Words that say what follows is code.
const CODE_NOUNS: &[&str] = &[
    "function",
    "functions",
    "method",
    "methods",
    "class",
    "classes",
    "file",
    "files",
    "flag",
    "flags",
    "option",
    "options",
    "argument",
    "arguments",
    "parameter",
    "parameters",
    "import",
    "imports",
    "variable",
    "variables",
    "constant",
    "constants",
    "module",
    "modules",
    "field",
    "fields",
    "attribute",
    "attributes",
    "decorator",
    "endpoint",
    "command",
    "subcommand",
    "test",
    "tests",
    "block",
    "line",
    "lines",
    "print",
    "call",
    "calls",
    "definition",
    "helper",
];

impl Intent {
    /// The names whose definitions may be gone on purpose at the end of the task: every
    /// word it writes when it takes code away, else only the names it writes as code (a
    /// changed or replaced function). A word of prose ("after the area line") that is
    /// also a function's name does not excuse losing that function.
    pub fn may_lose(&self) -> &BTreeSet<String> {
        if self.removes {
            &self.mentions
        } else {
            &self.code_names
        }
    }

    /// Reads `task`; `defined` says whether a name is defined by the files the task
    /// names (as they were when it began).
    pub fn read(task: &str, defined: &dyn Fn(&str) -> bool) -> Intent {
        let renames = renames(task);
        let removes = removes_code(task, defined) || removes_docs(task) || !renames.is_empty();
        let lower = task.to_ascii_lowercase();
        Intent {
            names: if removes {
                Vec::new()
            } else {
                names_asked_for(task)
            },
            renames,
            removes,
            changes: asks_for_changes(task),
            code_names: code_names(task),
            mentions: words(task).map(String::from).collect(),
            about_program: has_word(task, PROGRAM_WORDS) || flag_like(task),
            about_case: CASE_PHRASES.iter().any(|p| lower.contains(p)),
            about_rounding: has_word(task, ROUNDING_WORDS),
        }
    }
}

/// Whether `task` has a word that starts like a command-line option (`-v`, `--all`).
fn flag_like(task: &str) -> bool {
    let mut before = ' ';
    let chars: Vec<char> = task.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '-' && before.is_whitespace() {
            let rest = &chars[i + 1..];
            let rest = rest.strip_prefix(&['-']).unwrap_or(rest);
            if rest.first().is_some_and(|c| c.is_ascii_alphabetic()) {
                return true;
            }
        }
        before = c;
    }
    false
}

/// Whether a removal word of `task` has code as its object, within its clause.
fn removes_code(task: &str, defined: &dyn Fn(&str) -> bool) -> bool {
    let lower = task.to_ascii_lowercase();
    if lower.contains("get rid of") {
        return clause_after(
            task,
            lower.find("get rid of").unwrap_or(0) + "get rid of".len(),
        )
        .iter()
        .any(|w| is_code(w, defined));
    }
    let mut at = 0;
    for word in task.split_inclusive(char::is_whitespace) {
        let bare = word
            .trim()
            .trim_matches(|c: char| !c.is_ascii_alphanumeric())
            .to_ascii_lowercase();
        at += word.len();
        if REMOVING.contains(&bare.as_str())
            && clause_after(task, at).iter().any(|w| is_code(w, defined))
        {
            return true;
        }
    }
    false
}

/// Words that name a program's documentation.
const DOC_NOUNS: &[&str] = &["docstring", "docstrings", "comment", "comments"];

/// Whether `task` takes documentation away: a removing word whose own phrase (up to
/// its first comma or the sentence's end) names docstrings or comments, as in "remove
/// the docstrings", and not "it removes repeated items, as its docstring says".
fn removes_docs(task: &str) -> bool {
    let words: Vec<&str> = task.split_whitespace().collect();
    words.iter().enumerate().any(|(i, word)| {
        let bare = |w: &str| {
            w.trim_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_ascii_lowercase()
        };
        if !REMOVING.contains(&bare(word).as_str()) || word.ends_with([',', '.', ';', ':']) {
            return false;
        }
        for next in words.iter().skip(i + 1).take(6) {
            if DOC_NOUNS.contains(&bare(next).as_str()) {
                return true;
            }
            if next.ends_with([',', '.', ';', ':', '!', '?']) {
                break;
            }
        }
        false
    })
}

/// Up to eight words after byte `at`, to the end of the sentence.
fn clause_after(task: &str, at: usize) -> Vec<&str> {
    let rest = task.get(at..).unwrap_or("");
    let mut words = Vec::new();
    for word in rest.split_whitespace().take(8) {
        words.push(word);
        // A period ends the clause unless it belongs to a file name (`main.py.`).
        let ends =
            word.ends_with(['.', ';', ':', '!', '?']) && !word.trim_end_matches('.').contains('.');
        if ends {
            break;
        }
    }
    words
}

/// Whether `word` of a task names code.
fn is_code(word: &str, defined: &dyn Fn(&str) -> bool) -> bool {
    let trimmed = word.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    if trimmed.starts_with('`') || trimmed.starts_with("--") {
        return true;
    }
    let bare = trimmed.trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | '(' | ')'));
    if bare.contains('(') || trimmed.ends_with("()") {
        return true;
    }
    let path = std::path::Path::new(bare);
    if path
        .extension()
        .is_some_and(|e| !e.is_empty() && e.len() <= 5)
        && path.file_stem().is_some_and(|s| !s.is_empty())
        && bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/".contains(c))
    {
        return true;
    }
    let lower = bare.to_ascii_lowercase();
    CODE_NOUNS.contains(&lower.as_str())
        || (bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !bare.is_empty()
            && defined(bare))
}

/// The command-line flags and functions `task` asks for by name.
fn names_asked_for(task: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    };
    let chars: Vec<char> = task.chars().collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(ident(chars[i - 1]) || chars[i - 1] == '-');
        // `--flag`
        if starts_word && chars[i..].starts_with(&['-', '-']) {
            let end = (i + 2..chars.len())
                .find(|&j| !(ident(chars[j]) || chars[j] == '-'))
                .unwrap_or(chars.len());
            if end > i + 2 && chars[i + 2].is_ascii_alphabetic() {
                push(&chars[i..end].iter().collect::<String>());
            }
            i = end.max(i + 1);
            continue;
        }
        // `name(`: a function the task names
        if starts_word && (chars[i].is_ascii_alphabetic() || chars[i] == '_') {
            let end = (i..chars.len())
                .find(|&j| !ident(chars[j]))
                .unwrap_or(chars.len());
            if chars.get(end) == Some(&'(') {
                push(&chars[i..end].iter().collect::<String>());
            }
            i = end;
            continue;
        }
        i += 1;
    }
    names
}

/// The renames a task asks for, old name first: "Rename the function calc in mathx.py
/// to compute_total", "rename `Cfg` as `Config`" and "calc should be renamed to
/// compute_total" give the old name and the new; backticks, quotes and `()` are
/// dropped.
fn renames(task: &str) -> Vec<(String, String)> {
    const FILLER: &[&str] = &[
        "the", "a", "function", "method", "class", "variable", "constant", "def",
    ];
    // What joins the old name to the new.
    const CONNECTORS: &[&str] = &["to", "as", "into"];
    // What stands between a name and "renamed" in the passive ("calc should be renamed").
    const AUXILIARIES: &[&str] = &[
        "be", "is", "was", "are", "get", "gets", "should", "must", "will", "needs", "need", "has",
        "have", "been", "to",
    ];
    let connector = |word: &str| CONNECTORS.iter().any(|c| word.eq_ignore_ascii_case(c));
    // Not the end of a sentence: a word ending in "." that is not a file name.
    let in_sentence =
        |word: &&&str| !word.ends_with('.') || word.trim_end_matches('.').contains('.');
    let words: Vec<&str> = task.split_whitespace().collect();
    let identifier = |word: &str| {
        let bare = word
            .trim_matches(|c: char| matches!(c, '`' | '\'' | '"' | ',' | '.' | ';' | ':'))
            .trim_end_matches("()");
        let ok = bare
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && bare.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        ok.then(|| bare.to_string())
    };
    // The first word from `from` that is not filler, as a name.
    let name_at = |from: usize| {
        words[from.min(words.len())..]
            .iter()
            .find(|w| !FILLER.contains(&w.to_ascii_lowercase().as_str()))
            .and_then(|w| identifier(w))
    };
    // The name before `at` in its sentence, past the auxiliaries and filler of a passive
    // and the file it is in ("calc in mathx.py should be renamed").
    let name_before = |at: usize| {
        words[..at]
            .iter()
            .rev()
            .take_while(in_sentence)
            .filter(|w| {
                let lower = w.to_ascii_lowercase();
                !AUXILIARIES.contains(&lower.as_str())
                    && !FILLER.contains(&lower.as_str())
                    && !matches!(lower.as_str(), "in" | "of" | "from")
            })
            .find_map(|w| identifier(w))
    };
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if !word.to_ascii_lowercase().starts_with("rename") {
            continue;
        }
        let passive = words.get(i + 1).is_some_and(|w| connector(w));
        let old = if passive {
            name_before(i)
        } else {
            name_at(i + 1)
        };
        let Some(old) = old else { continue };
        // The first connector in the same sentence: "calc in mathx.py to compute_total".
        let joined = words[i + 1..]
            .iter()
            .take_while(in_sentence)
            .position(|w| connector(w));
        if let Some(at) = joined
            && let Some(new) = name_at(i + 1 + at + 1)
            && new != old
        {
            found.push((old, new));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(task: &str) -> Intent {
        Intent::read(task, &|_| false)
    }

    #[test]
    fn flags_and_functions_asked_for_by_name() {
        assert_eq!(
            read("Add a --shout flag to greet.py: with it, the greeting is upper case.").names,
            ["--shout"]
        );
        assert_eq!(
            read("Create temperature.py with c_to_f(celsius) and f_to_c(fahrenheit).").names,
            ["c_to_f", "f_to_c"]
        );
        assert_eq!(
            read("Add a function perimeter(width, height) to geometry.py and call perimeter() from report.py.").names,
            ["perimeter"]
        );
        assert!(
            read("Write hello.py that prints hello world (in lower case).")
                .names
                .is_empty()
        );
        assert!(read("a well-known x--y thing").names.is_empty());
    }

    #[test]
    fn removing_code_is_read_from_its_object() {
        for task in [
            "Remove the --verbose flag and the helper log(msg).",
            "Delete utils.py and move its one function into app.py.",
            "Drop the unused import from report.py.",
            "Get rid of `legacy_total` in stats.py.",
            "Remove the docstrings; the README documents the module.",
            "Delete the comments that repeat the code.",
        ] {
            let intent = read(task);
            assert!(intent.removes, "{task}");
            assert!(intent.names.is_empty(), "{task}");
        }
        // Data, not code: the names and files the task gives are still asked for.
        for task in [
            "From a list of words, remove every word shorter than three letters. Implement keep_long(words) in words.py.",
            "Write strip_vowels(text) in text.py: it removes every vowel from the text.",
            "Implement shift(xs, k) in rotate.py, which moves every item k places to the right.",
            "Implement dedupe(xs) in lists.py: it removes repeated items, as its docstring says.",
        ] {
            let intent = read(task);
            assert!(!intent.removes, "{task}");
            assert!(!intent.names.is_empty(), "{task}");
        }
    }

    #[test]
    fn a_name_the_files_define_is_code() {
        let defined = |name: &str| name == "old_total";
        assert!(Intent::read("Remove old_total; nothing calls it.", &defined).removes);
        assert!(!Intent::read("Remove duplicates; keep the order.", &defined).removes);
    }

    #[test]
    fn only_code_the_task_takes_away_or_names_as_code_may_be_lost() {
        let defined = |name: &str| ["area", "helper", "main"].contains(&name);
        let add = Intent::read(
            "Add perimeter(width, height) to geometry.py and print it after the area line.",
            &defined,
        );
        assert!(add.may_lose().contains("perimeter"));
        assert!(
            !add.may_lose().contains("area"),
            "area is a word of prose here"
        );
        for task in [
            "Inline helper into main.",
            "Merge helper into main.",
            "Remove helper.",
        ] {
            let intent = Intent::read(task, &defined);
            assert!(intent.removes, "{task}");
            assert!(intent.may_lose().contains("helper"), "{task}");
        }
    }

    #[test]
    fn renames_are_read_old_name_first() {
        let intent =
            read("Rename the function calc in mathx.py to compute_total, and update main.py.");
        assert_eq!(
            intent.renames,
            [("calc".to_string(), "compute_total".to_string())]
        );
        assert!(intent.removes && intent.names.is_empty());
        assert_eq!(
            read("Rename `Cfg` to `Config` in settings.py and app.py.").renames,
            [("Cfg".to_string(), "Config".to_string())]
        );
        assert_eq!(
            read("Please rename calc to 'compute_total'").renames,
            [("calc".to_string(), "compute_total".to_string())]
        );
        assert!(read("Rename calc(a) to compute_total(a).").names.is_empty());
        // A file, prose, or a rename with no new name is none.
        assert!(read("Rename old.py to new.py.").renames.is_empty());
        assert!(
            read("Rename the module. Then write a test to check it.")
                .renames
                .is_empty()
        );
        assert!(
            read("Fix calc in mathx.py to return a total.")
                .renames
                .is_empty()
        );
        assert!(read("Rename it.").renames.is_empty());
        // The other ways a person asks for one.
        for (task, old, new) in [
            (
                "Rename class Cfg as Config in settings.py.",
                "Cfg",
                "Config",
            ),
            ("Rename `parse` into `parse_args`.", "parse", "parse_args"),
            (
                "The function `calc` in mathx.py should be renamed to `compute_total`.",
                "calc",
                "compute_total",
            ),
            (
                "Make sure Shape is renamed to Polygon everywhere",
                "Shape",
                "Polygon",
            ),
        ] {
            assert_eq!(
                read(task).renames,
                [(old.to_string(), new.to_string())],
                "{task}"
            );
        }
        assert!(read("Renamed files keep their tests.").renames.is_empty());
        assert!(
            read("The module was renamed to utils.py last week.")
                .renames
                .is_empty()
        );
    }

    #[test]
    fn subtasks_that_ask_for_changes_are_told_from_questions() {
        for asks in [
            "Write hello.py that prints hello world",
            "Implement add() in solution.py",
            "Fix the failing test in tests/test_a.py",
            "Add a --verbose flag to cli.py",
            "README.md: update the usage section",
        ] {
            assert!(asks_for_changes(asks), "{asks}");
        }
        for question in [
            "Explain what main.py does",
            "List the Python files and summarise them",
            "Run the tests and report the result",
            "Read notes.txt",
        ] {
            assert!(!asks_for_changes(question), "{question}");
        }
    }

    #[test]
    fn a_step_asks_for_changes_only_in_a_task_that_does() {
        let change = read("Add a --verbose flag to cli.py.");
        let question = read("Explain what cli.py does with its arguments.");
        assert!(step_asks_for_changes(
            &change,
            "Add the flag to the parser in cli.py"
        ));
        assert!(!step_asks_for_changes(&change, "Read cli.py"));
        // The planner may word a step of a question as a change; the person asked a
        // question, so an answer with nothing written is no failure.
        assert!(!step_asks_for_changes(
            &question,
            "Update your notes on cli.py"
        ));
    }

    #[test]
    fn what_a_task_is_about_is_read_from_its_words() {
        let program =
            read("Write count.py: it prints how many lines the file given as its argument has.");
        assert!(program.about_program && program.changes);
        assert!(read("Add a -v option to cli.py.").about_program);
        let function = read("Implement median(xs) in stats.py; return the middle value.");
        assert!(!function.about_program && !function.about_case && !function.about_rounding);
        assert!(read("Return the name in upper case.").about_case);
        assert!(read("Round the mean to two decimal places.").about_rounding);
        // Inside a longer word, a word of the list is not read.
        assert!(!read("Implement surround(text) in wrap.py.").about_rounding);
        assert!(!read("Explain what main.py does").changes);
    }

    #[test]
    fn names_of_code_are_those_written_as_code() {
        let intent = read(
            "Fix the function total in `basket.py`: add_item(x) must keep item_2 and MAX1. It prints hello world.",
        );
        let names: Vec<&str> = intent.code_names.iter().map(String::as_str).collect();
        assert_eq!(names, ["MAX1", "add_item", "basket", "item_2", "total"]);
    }

    #[test]
    fn steps_that_only_look_change_nothing() {
        for look in [
            "Identify the bug in textutil.py",
            "Verify the fix by running the test in test_textutil.py",
            "Check the existing logic of the mean function in stats.py.",
            "Test the new mean function for an empty list to ensure it returns 0.0.",
        ] {
            assert!(only_looks(look), "{look}");
        }
        for change in [
            "Write the fix for the identified bug in textutil.py",
            "Implement the new mean function for an empty list in stats.py.",
            "Add a --shout flag to greet.py",
            "Write tests for the parser in test_parser.py",
        ] {
            assert!(!only_looks(change), "{change}");
        }
    }
}
