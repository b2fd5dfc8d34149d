//! What a code file defines, read line by line, one reader for each language the team
//! writes tests in: the file tools (matching an edit to the definition it rewrites), the
//! names check, the fix loop and the acceptance test all ask here. The Python rules that
//! need the whole syntax tree read it in `python/checks.py`.

use std::path::Path;

/// The languages the team writes acceptance tests in, each for code of its own kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    Python,
    /// CommonJS (`.js`, `.cjs`), run by node.
    JavaScript,
}

impl Language {
    pub fn extension(self) -> &'static str {
        match self {
            Language::Python => "py",
            Language::JavaScript => "js",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::JavaScript => "JavaScript",
        }
    }
}

/// The language of a code file that is not itself a test.
pub fn language_of(path: &str) -> Option<Language> {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if name.ends_with(".py") && !name.starts_with("test_") && !name.ends_with("_test.py") {
        return Some(Language::Python);
    }
    let test_like = [".test.", ".spec.", "_test."]
        .iter()
        .any(|t| name.contains(t));
    ((name.ends_with(".js") || name.ends_with(".cjs"))
        && !test_like
        && !path.contains("node_modules/"))
    .then_some(Language::JavaScript)
}

/// The name a definition line (see [`is_definition`]) defines, when it names one.
pub fn defined_name(line: &str, language: Language) -> Option<String> {
    let l = line.trim_start();
    let starts: &[&str] = match language {
        Language::Python => &["async def ", "def ", "class "],
        Language::JavaScript => &[
            "async function ",
            "function ",
            "class ",
            "const ",
            "let ",
            "exports.",
        ],
    };
    let rest = starts.iter().find_map(|start| l.strip_prefix(start))?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The functions and classes `text` defines, read as code of `path`'s language (none for
/// other languages).
pub fn names_defined(path: &str, text: &str) -> std::collections::HashSet<String> {
    let Some(language) = language_of(path) else {
        return Default::default();
    };
    text.lines()
        .filter_map(|line| defined_name(line, language))
        .collect()
}

/// A line that defines something a test can call.
pub fn is_definition(line: &str, language: Language) -> bool {
    let l = line.trim_start();
    match language {
        Language::Python => {
            l.starts_with("def ") || l.starts_with("async def ") || l.starts_with("class ")
        }
        Language::JavaScript => {
            l.starts_with("function ")
                || l.starts_with("async function ")
                || l.starts_with("class ")
                || l.starts_with("module.exports")
                || l.starts_with("exports.")
                || ((l.starts_with("const ") || l.starts_with("let ")) && l.contains("=>"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_code_that_is_not_a_test_has_a_language() {
        assert_eq!(language_of("solution.py"), Some(Language::Python));
        assert_eq!(language_of("pkg/mod.py"), Some(Language::Python));
        assert_eq!(language_of("test_solution.py"), None);
        assert_eq!(language_of("solution_test.py"), None);
        assert_eq!(language_of("README.md"), None);
        assert_eq!(language_of("slugify.js"), Some(Language::JavaScript));
        assert_eq!(language_of("lib/util.cjs"), Some(Language::JavaScript));
        assert_eq!(language_of("slugify.test.js"), None);
        assert_eq!(language_of("node_modules/x/index.js"), None);
    }

    #[test]
    fn each_language_s_definitions_are_read_by_name() {
        let python = "import os\n\nclass Cart:\n    def add(self, item):\n        pass\n\nasync def fetch(url):\n    return url\n\ndef café():\n    return 1\n\nvalue = 3\n";
        let names = names_defined("shop.py", python);
        let mut names: Vec<&str> = names.iter().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["Cart", "add", "café", "fetch"]);
        assert!(!is_definition("value = 3", Language::Python));

        let js = "const slugify = (text) => text;\nfunction pad(s) { return s; }\nexports.trim = (s) => s;\nmodule.exports = { slugify };\n";
        let names = names_defined("util.js", js);
        assert!(
            ["slugify", "pad", "trim"]
                .iter()
                .all(|n| names.contains(*n)),
            "{names:?}"
        );
        assert!(is_definition(
            "module.exports = { slugify };",
            Language::JavaScript
        ));
        assert!(!is_definition("const limit = 3;", Language::JavaScript));

        assert!(names_defined("notes.md", "def not_code():").is_empty());
    }
}
