//! The task, read once, for every rule that depends on what it asks: the flags and
//! functions it names, the renames it asks for, and whether it takes something of the
//! code away (then a name or a file it gives may rightly be gone).
//!
//! Removal is read from the sentence, not from a word anywhere: "remove" counts when what
//! it removes is code — a file path, a `--flag`, a name in backticks, a `name(`, a name
//! the task's files define, or a word that says so ("the function", "the import") —
//! and not when it is data ("remove every word shorter than three letters").

/// What a task asks, for the checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intent {
    /// The flags (`--shout`) and functions (`perimeter(width, height)`) the task asks for
    /// by name; none when it removes or renames code.
    pub names: Vec<String>,
    /// (old, new) for each "rename OLD … to NEW".
    pub renames: Vec<(String, String)>,
    /// Whether the task takes something of the code away or moves it.
    pub removes: bool,
}

/// Words that take something away or move it.
const REMOVING: &[&str] = &[
    "remove", "removes", "removing", "delete", "deletes", "deleting", "drop", "drops", "dropping",
    "rename", "renames", "renaming", "move", "moves", "moving",
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
    /// Reads `task`; `defined` says whether a name is defined by the files the task
    /// names (as they were when it began).
    pub fn read(task: &str, defined: &dyn Fn(&str) -> bool) -> Intent {
        let renames = renames(task);
        let removes = removes_code(task, defined) || !renames.is_empty();
        Intent {
            names: if removes {
                Vec::new()
            } else {
                names_asked_for(task)
            },
            renames,
            removes,
        }
    }
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
/// to compute_total" gives (`calc`, `compute_total`); backticks, quotes and `()` are
/// dropped.
fn renames(task: &str) -> Vec<(String, String)> {
    const FILLER: &[&str] = &[
        "the", "a", "function", "method", "class", "variable", "constant", "def",
    ];
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
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if !word.to_ascii_lowercase().starts_with("rename") {
            continue;
        }
        let Some(old) = name_at(i + 1) else { continue };
        // "to" in the same sentence: "calc in mathx.py to compute_total".
        let to = words[i + 1..]
            .iter()
            .take_while(|w| !w.ends_with('.') || w.trim_end_matches('.').contains('.'))
            .position(|w| w.eq_ignore_ascii_case("to"));
        if let Some(to) = to
            && let Some(new) = name_at(i + 1 + to + 1)
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
    }
}
