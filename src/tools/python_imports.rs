//! Standard-library imports a Python file plainly uses and never wrote, added before
//! the file is written: `re.sub(…)` with no `import re`, `List[int]` with no
//! `from typing import List`. Small models often write the right code without its
//! import, and may keep leaving it out through every fix round (saying "import re" in
//! prose and never writing it), so the NameError never goes away on its own.
//!
//! Conservative on purpose: a module is imported only when every use of its name is an
//! attribute (`re.` …) and nothing in the file binds the name, and a typing name only
//! when every use subscripts it (`List[` …). An import added in error is harmless (an
//! unused import); a missing one fails the code.

/// Modules whose names small models use without importing them.
const MODULES: &[&str] = &[
    "argparse",
    "bisect",
    "collections",
    "copy",
    "csv",
    "datetime",
    "functools",
    "glob",
    "hashlib",
    "heapq",
    "itertools",
    "json",
    "logging",
    "math",
    "operator",
    "os",
    "pathlib",
    "random",
    "re",
    "shutil",
    "statistics",
    "string",
    "subprocess",
    "sys",
    "tempfile",
    "textwrap",
    "time",
];

/// `typing` names written subscripted in annotations (`List[int]`).
const TYPING: &[&str] = &[
    "Callable", "Dict", "Iterable", "Iterator", "List", "Optional", "Sequence", "Set", "Tuple",
    "Union",
];

/// `text` with the imports it lacks added, and those import lines; `None` when it
/// lacks none.
pub(super) fn complete(text: &str) -> Option<(String, Vec<String>)> {
    let uses = uses(text);
    let lacking = |name: &str, after: u8| {
        let mut followers = uses
            .iter()
            .filter(|(word, _)| *word == name)
            .map(|(_, next)| *next)
            .peekable();
        followers.peek().is_some() && followers.all(|next| next == after)
    };
    let mut lines: Vec<String> = MODULES
        .iter()
        .filter(|m| lacking(m, b'.'))
        .map(|m| format!("import {m}"))
        .collect();
    if !text.contains("from typing import *") {
        let names: Vec<&str> = TYPING
            .iter()
            .copied()
            .filter(|t| lacking(t, b'['))
            .collect();
        if !names.is_empty() {
            lines.push(format!("from typing import {}", names.join(", ")));
        }
    }
    if lines.is_empty() {
        return None;
    }
    Some((insert(text, &lines), lines))
}

/// Each name in `text` that is not an attribute (`x.name`), with the byte after it
/// (spaces skipped; 0 at the end).
fn uses(text: &str) -> Vec<(&str, u8)> {
    let bytes = text.as_bytes();
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_')
            || (i > 0 && (word_byte(bytes[i - 1]) || bytes[i - 1] == b'.'))
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && word_byte(bytes[i]) {
            i += 1;
        }
        let mut next = i;
        while next < bytes.len() && bytes[next] == b' ' {
            next += 1;
        }
        found.push((&text[start..i], bytes.get(next).copied().unwrap_or(0)));
    }
    found
}

/// `lines` put with the file's imports: before its first top-level import, else after
/// its leading comments, module docstring and `from __future__` lines.
fn insert(text: &str, lines: &[String]) -> String {
    let block = lines.join("\n");
    let header = header_end(text);
    let mut at = header;
    for line in text[header..].split_inclusive('\n') {
        if line.starts_with("import ") || line.starts_with("from ") {
            return format!("{}{block}\n{}", &text[..at], &text[at..]);
        }
        at += line.len();
    }
    let (before, after) = text.split_at(header);
    let before = match before {
        "" => String::new(),
        b if b.ends_with("\n\n") => b.to_string(),
        b if b.ends_with('\n') => format!("{b}\n"),
        b => format!("{b}\n\n"),
    };
    let after = after.trim_start_matches('\n');
    if after.is_empty() {
        format!("{before}{block}\n")
    } else {
        format!("{before}{block}\n\n\n{after}")
    }
}

/// Where the leading comments, module docstring and `from __future__` lines end.
fn header_end(text: &str) -> usize {
    let mut at = 0;
    let mut in_docstring: Option<&str> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(quote) = in_docstring {
            if trimmed.contains(quote) {
                in_docstring = None;
            }
            at += line.len();
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || line.starts_with("from __future__") {
            at += line.len();
            continue;
        }
        let quote = ["\"\"\"", "'''"]
            .into_iter()
            .find(|q| trimmed.trim_start_matches(['r', 'u']).starts_with(q));
        match quote {
            Some(quote)
                if at == 0 || text[..at].trim().is_empty() || only_comments(&text[..at]) =>
            {
                if trimmed.matches(quote).count() < 2 {
                    in_docstring = Some(quote);
                }
                at += line.len();
            }
            _ => break,
        }
    }
    at
}

fn only_comments(text: &str) -> bool {
    text.lines()
        .all(|l| l.trim().is_empty() || l.trim().starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_used_and_never_imported_is_imported() {
        let code = "def is_palindrome(text: str) -> bool:\n    r = re.sub('[^a-z0-9]', '', text.lower())\n    return r == r[::-1]\n";
        let (done, added) = complete(code).unwrap();
        assert_eq!(added, ["import re"]);
        assert_eq!(done, format!("import re\n\n\n{code}"));
    }

    #[test]
    fn imports_go_with_the_files_imports_after_its_docstring() {
        let code = "#!/usr/bin/env python3\n\"\"\"Greets.\n\nUsage: greet.py NAME\n\"\"\"\nimport argparse\n\n\ndef main():\n    print(sys.argv, math.pi)\n";
        let (done, added) = complete(code).unwrap();
        assert_eq!(added, ["import math", "import sys"]);
        assert_eq!(
            done,
            "#!/usr/bin/env python3\n\"\"\"Greets.\n\nUsage: greet.py NAME\n\"\"\"\nimport math\nimport sys\nimport argparse\n\n\ndef main():\n    print(sys.argv, math.pi)\n"
        );
        let docstring_only = "\"\"\"Stats.\"\"\"\n\ndef mean(xs: List[float]) -> Optional[float]:\n    return statistics.mean(xs) if xs else None\n";
        let (done, _) = complete(docstring_only).unwrap();
        assert_eq!(
            done,
            "\"\"\"Stats.\"\"\"\n\nimport statistics\nfrom typing import List, Optional\n\n\ndef mean(xs: List[float]) -> Optional[float]:\n    return statistics.mean(xs) if xs else None\n"
        );
    }

    #[test]
    fn a_name_the_file_binds_or_imports_is_left_alone() {
        for code in [
            "import re\n\ndef f(s):\n    return re.sub('a', 'b', s)\n",
            "from os import path\n\ndef f():\n    return os.getcwd()\n",
            "def f(string):\n    return string.upper()\n",
            "import re as regex\nre = regex\nprint(re.sub('a', 'b', 'a'))\n",
            "class Walker:\n    def walk(self):\n        return self.os.walk()\n",
            "from typing import List\n\ndef f(x: List[int]):\n    return x\n",
            "from typing import *\n\ndef f(x: List[int]):\n    return x\n",
            "def f(xs):\n    List = list\n    return List[0]\n",
        ] {
            assert_eq!(complete(code), None, "{code}");
        }
    }
}
