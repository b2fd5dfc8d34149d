//! A whole file answered in a code block instead of a tool call.
//!
//! A small model often replies "Here is the updated greet.py:" with the file in a
//! ```` ```python ```` block and no tool call, and again after it is told to use its
//! tools. While the subtask is not done (nothing changed yet, or the last change failed),
//! such a block is taken as a `file_write` of that file when it is clearly one whole file
//! the task names:
//! - the fence's language is the file's, or it names none;
//! - the block leaves nothing out (no `...` line, no "rest of the code" comment);
//! - the file is not there yet, or the block is all of it: it keeps most of the file's
//!   words in order ([`is_whole_file`]), and it differs from it;
//! - one such file fits, or the text just before the block names the one it is.
//!
//! The last such block wins: an answer ends with its final version. The write then goes
//! through the `file_write` tool like any other (approval, the checks that follow).

use serde_json::json;

use super::TargetFile;
use super::text_calls::fences;
use crate::model::ToolCall;
use crate::tools::edit_match::is_whole_file;

/// How far before a block the text may name its file ("Here is the updated greet.py:").
const NAMED_WITHIN_BYTES: usize = 200;

/// The `file_write` call a code block of `text` stands for, if one clearly does: the
/// last of [`whole_files_in`].
pub fn file_write_in(text: &str, targets: &[TargetFile]) -> Option<ToolCall> {
    let (path, content) = whole_files_in(text, targets).pop()?;
    Some(ToolCall {
        id: String::new(),
        name: "file_write".into(),
        arguments: json!({ "path": path, "content": content }),
    })
}

/// Once the model holds the subtask done: the `file_write` of the last whole file in
/// `text` that has a name the task asks for (`--shout`) which the file as it is now
/// (`targets`, read again) lacks: an edit may "succeed" without the name, and the
/// answer after it show the whole file with it. A block that only restates the file in
/// other words is a summary, and is left alone.
pub fn missing_names_written_in(
    text: &str,
    targets: &[TargetFile],
    task_names: &[String],
) -> Option<ToolCall> {
    let (path, content) = whole_files_in(text, targets)
        .into_iter()
        .rfind(|(path, content)| {
            let now = targets
                .iter()
                .find(|t| t.path == *path)
                .and_then(|t| t.content.as_deref())
                .unwrap_or_default();
            task_names
                .iter()
                .any(|name| has_word(content, name) && !has_word(now, name))
        })?;
    Some(ToolCall {
        id: String::new(),
        name: "file_write".into(),
        arguments: json!({ "path": path, "content": content }),
    })
}

/// Whether `text` has `name` as a word of its own (`--shout`, not `--shouty`).
fn has_word(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    text.match_indices(name).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(word)
            && !text[at + name.len()..].chars().next().is_some_and(word)
    })
}

/// Each code block of `text` that is clearly one whole file of `targets` (see the module
/// documentation), in order, as (path, content ending in a line break).
pub fn whole_files_in(text: &str, targets: &[TargetFile]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for fence in fences(text) {
        let body = fence.body.trim_matches('\n');
        if body.trim().is_empty() || leaves_something_out(body) {
            continue;
        }
        let before_start =
            floor_char_boundary(text, fence.start.saturating_sub(NAMED_WITHIN_BYTES));
        let before = &text[before_start..fence.start];
        let named = |t: &&TargetFile| names(before, &t.path) || names(&fence.info, &t.path);
        let fits: Vec<&TargetFile> = targets
            .iter()
            .filter(|t| language_fits(&fence.info, &t.path))
            .filter(|t| match &t.content {
                None => true,
                Some(now) => now.trim_end() != body.trim_end() && is_whole_file(now, body),
            })
            .collect();
        // A block the text says is another file is that file's, never one that fits.
        let named_any = targets.iter().any(|t| named(&t));
        let target = match fits.as_slice() {
            [only] if !named_any || named(only) => Some(*only),
            _ => fits.iter().copied().find(named),
        };
        if let Some(target) = target {
            found.push((target.path.clone(), format!("{body}\n")));
        }
    }
    found
}

/// Whether `text` names `path` as a word of its own (`test_greet.py` does not name
/// `greet.py`).
fn names(text: &str, path: &str) -> bool {
    let part_of_name = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    text.match_indices(path).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(part_of_name)
            && !text[at + path.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// A block that shows part of a file and elides the rest.
fn leaves_something_out(body: &str) -> bool {
    body.lines().any(|line| {
        let line = line.trim().to_ascii_lowercase();
        let comment = line
            .strip_prefix('#')
            .or_else(|| line.strip_prefix("//"))
            .map(str::trim);
        matches!(line.as_str(), "..." | "…")
            || comment.is_some_and(|c| {
                c.starts_with("...")
                    || c.starts_with('…')
                    || [
                        "rest of",
                        "existing code",
                        "unchanged",
                        "same as before",
                        "remains the same",
                    ]
                    .iter()
                    .any(|words| c.contains(words))
            })
    })
}

/// Whether a fence's info string (`python`, `py`, `js`, empty) suits the file's language.
fn language_fits(info: &str, path: &str) -> bool {
    let language = info.split([' ', ':', '{']).next().unwrap_or("");
    if language.is_empty() {
        return true;
    }
    let extension = std::path::Path::new(path)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let names: &[&str] = match extension.as_str() {
        "py" => &["python", "python3", "py"],
        "js" | "mjs" | "cjs" | "jsx" => &["javascript", "js", "node", "jsx"],
        "ts" | "tsx" | "mts" | "cts" => &["typescript", "ts", "tsx"],
        "rs" => &["rust", "rs"],
        "sh" | "bash" => &["bash", "sh", "shell", "zsh"],
        "rb" => &["ruby", "rb"],
        "go" => &["go", "golang"],
        "c" | "h" => &["c"],
        "cc" | "cpp" | "cxx" | "hpp" => &["cpp", "c++"],
        _ => &[],
    };
    language == extension || names.contains(&language)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(path: &str, content: Option<&str>) -> TargetFile {
        TargetFile {
            path: path.into(),
            content: content.map(str::to_string),
        }
    }

    fn written(call: Option<ToolCall>) -> Option<(String, String)> {
        call.map(|c| {
            assert_eq!(c.name, "file_write");
            (
                c.arguments["path"].as_str().unwrap().to_string(),
                c.arguments["content"].as_str().unwrap().to_string(),
            )
        })
    }

    const STUB: &str =
        "def fizzbuzz(n: int) -> list:\n    \"\"\"Return the strings for 1..n.\"\"\"\n    pass\n";

    #[test]
    fn a_whole_file_in_prose_is_its_file_write() {
        let answer = "To implement the function fizzbuzz in solution.py, you can use the file_write function.\n\n```python\ndef fizzbuzz(n: int) -> list:\n    \"\"\"Return the strings for 1..n.\"\"\"\n    return [str(i) for i in range(1, n + 1)]\n```\n\nTo verify it, you can run:\n```bash\npython3 -c 'import solution'\n```";
        assert_eq!(
            written(file_write_in(answer, &[target("solution.py", Some(STUB))])),
            Some((
                "solution.py".into(),
                "def fizzbuzz(n: int) -> list:\n    \"\"\"Return the strings for 1..n.\"\"\"\n    return [str(i) for i in range(1, n + 1)]\n".into()
            ))
        );
        // A new file: any block in its language.
        let new = "Here it is:\n```python\nimport sys\nprint(len(open(sys.argv[1]).read().splitlines()))\n```";
        assert_eq!(
            written(file_write_in(new, &[target("count_lines.py", None)])).map(|w| w.0),
            Some("count_lines.py".into())
        );
    }

    #[test]
    fn parts_echoes_and_other_languages_are_not_writes() {
        let file = "import argparse\n\n\ndef main():\n    args = parse()\n    print(args.name)\n\n\nmain()\n";
        let targets = [target("greet.py", Some(file))];
        // Only the changed function: not the whole file.
        let part = "Change main:\n```python\ndef main():\n    args = parse()\n    print(args.name.upper())\n```";
        assert_eq!(file_write_in(part, &targets), None);
        // The whole file with the rest elided.
        let elided = "```python\nimport argparse\n\n\ndef main():\n    args = parse()\n    # ... rest of the code\n\n\nmain()\n```";
        assert_eq!(file_write_in(elided, &targets), None);
        // The file as it already is.
        assert_eq!(
            file_write_in(&format!("```python\n{file}```"), &targets),
            None
        );
        // A shell block.
        assert_eq!(
            file_write_in(
                "```bash\npython3 greet.py Ada\n```",
                &[target("greet.py", None)]
            ),
            None
        );
    }

    #[test]
    fn with_two_files_the_text_before_the_block_says_which() {
        let targets = [target("geometry.py", None), target("report.py", None)];
        let unnamed = "```python\ndef perimeter(w, h):\n    return 2 * (w + h)\n```";
        assert_eq!(file_write_in(unnamed, &targets), None);
        let named = "The new `report.py`:\n```python\nfrom geometry import perimeter\nprint(perimeter(2, 3))\n```";
        assert_eq!(
            written(file_write_in(named, &targets)).map(|w| w.0),
            Some("report.py".into())
        );
        // Named as a file that does not fit (a test file): not written to the one that does.
        let test = "And test_greet.py:\n```python\nimport greet\n```";
        assert_eq!(
            file_write_in(
                test,
                &[
                    target("greet.py", None),
                    target("test_greet.py", Some("x\ny\nz\n"))
                ]
            ),
            None
        );
    }
}
