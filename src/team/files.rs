//! The task's files: which the task names (existing or to be written), their text as
//! the agents are shown it, the versions a coder proposed, and putting files back (what
//! a code file defines is `checks::defines`). Shared by the team's behaviours, so that none of them imports
//! another for these.

use std::path::Path;

use super::Services;
use crate::executor::ExecutionOutcome;
use crate::runtime::{TaskId, TaskRecord};
use crate::tools::WorkspaceWriter;

/// The most of one file shown in a bottom agent's prompt, and of all files together.
const SHOWN_FILE_MAX_BYTES: usize = 6 * 1024;

const SHOWN_FILES_MAX_BYTES: usize = 10 * 1024;

/// The files the task names, as they are now, so that the agent starts from the code
/// rather than spending its first call reading it (a retry sees its own last try); then
/// the other modules of a small project in the same languages, which a task may point to
/// without naming them ("from the project's default settings (see the other modules)").
/// Files too large to show are only named.
pub(super) fn named_files_now(sandbox: &crate::tools::Sandbox, task: &str) -> String {
    // What the editor withholds is not read behind its back.
    let named: Vec<String> = files_named(sandbox.root(), task)
        .into_iter()
        .filter(|path| !sandbox.is_withheld(std::path::Path::new(path)))
        .collect();
    let mut shown = String::new();
    let mut left = SHOWN_FILES_MAX_BYTES;
    for path in &named {
        let Ok(content) = std::fs::read_to_string(sandbox.root().join(path)) else {
            continue;
        };
        if content.len() > SHOWN_FILE_MAX_BYTES.min(left) {
            shown.push_str(&format!(
                "\n{path} ({} bytes, too long to show here: read it with file_read)\n",
                content.len()
            ));
            continue;
        }
        left -= content.len();
        shown.push_str(&fenced(path, &content));
    }
    let others = other_files_now(sandbox, task, &named);
    match (shown.is_empty(), others.is_empty()) {
        (true, _) => others,
        (false, true) => format!("{FILES_NOW}{shown}"),
        (false, false) => format!("{FILES_NOW}{shown}\n{others}"),
    }
}

/// Where the files' text begins in a context (always its last part).
const FILES_NOW: &str = "The files the task names, as they are now (already read for you):";

const OTHER_FILES_NOW: &str = "Other files of the project, as they are now:";

/// A project with more source files than this is not shown beyond the named files: the
/// agent searches it with its tools.
const OTHER_FILES_MAX: usize = 12;

/// The most of one other file shown, and of all of them together.
const OTHER_FILE_MAX_BYTES: usize = 2 * 1024;

const OTHER_FILES_MAX_BYTES: usize = 4 * 1024;

/// The other modules beside the files `task` names: the project's files in the same
/// languages (by extension) other than `except`, as they are now (the small ones shown,
/// the rest named). Empty when the task names no source file, or for a project of more
/// than [`OTHER_FILES_MAX`] such files.
pub(super) fn other_files_now(
    sandbox: &crate::tools::Sandbox,
    task: &str,
    except: &[String],
) -> String {
    let root = sandbox.root();
    let mut extensions: Vec<String> = Vec::new();
    for path in source_files_named(task) {
        if let Some(extension) = std::path::Path::new(&path).extension() {
            let extension = extension.to_string_lossy().to_ascii_lowercase();
            if !extensions.contains(&extension) {
                extensions.push(extension);
            }
        }
    }
    if extensions.is_empty() {
        return String::new();
    }
    let files = project_files(root, &extensions, OTHER_FILES_MAX);
    if files.len() > OTHER_FILES_MAX {
        return String::new();
    }
    let mut shown = String::new();
    let mut named = Vec::new();
    let mut left = OTHER_FILES_MAX_BYTES;
    for path in files
        .iter()
        .filter(|f| !except.contains(f) && !sandbox.is_withheld(std::path::Path::new(f)))
    {
        match std::fs::read_to_string(root.join(path)) {
            Ok(content) if content.len() <= OTHER_FILE_MAX_BYTES.min(left) => {
                left -= content.len();
                shown.push_str(&fenced(path, &content));
            }
            _ => named.push(path.as_str()),
        }
    }
    if !named.is_empty() {
        shown.push_str(&format!("\nAlso there (not shown): {}\n", named.join(", ")));
    }
    if shown.is_empty() {
        return shown;
    }
    format!("{OTHER_FILES_NOW}{shown}")
}

/// `path` and its text in a fence the text cannot close.
pub(super) fn fenced(path: &str, content: &str) -> String {
    let fence = if content.contains("```") {
        "~~~~"
    } else {
        "```"
    };
    let newline = if content.ends_with('\n') || content.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("\n{path}:\n{fence}\n{content}{newline}{fence}\n")
}

/// `context` with the files' text brought up to date, for another turn after the files
/// changed (the fix turn after a failed check): stale text would have the model edit
/// lines that are no longer there.
pub(super) fn with_files_now(context: &str, sandbox: &crate::tools::Sandbox, task: &str) -> String {
    let start = [FILES_NOW, OTHER_FILES_NOW]
        .iter()
        .filter_map(|header| context.find(header))
        .min();
    let before = start.map_or(context, |at| &context[..at]);
    let files = named_files_now(sandbox, task);
    match (before.trim_end().is_empty(), files.is_empty()) {
        (true, _) => files,
        (false, true) => before.trim_end().to_string(),
        (false, false) => format!("{}\n\n{files}", before.trim_end()),
    }
}

/// The source files `task` names, with their text now: an executor writes a whole one
/// that the model answered in a code block instead of a tool call.
pub(super) fn target_files_now(
    sandbox: &crate::tools::Sandbox,
    task: &str,
) -> Vec<crate::executor::TargetFile> {
    source_files_named(task)
        .into_iter()
        .filter(|path| !sandbox.is_withheld(std::path::Path::new(path)))
        .map(|path| crate::executor::TargetFile {
            content: std::fs::read_to_string(sandbox.root().join(&path)).ok(),
            path,
        })
        .collect()
}

/// The workspace files `text` names (`solution.py`, `src/app.js`), in the order named,
/// each once: words with an extension that are relative paths to existing files under
/// `root`. Nothing outside the workspace can be named (no `..`, no absolute paths).
pub(super) fn files_named(root: &Path, text: &str) -> Vec<String> {
    let Ok(root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    path_words(text)
        .into_iter()
        // Canonical, so that a symlink cannot lead out of the workspace.
        .filter(|word| {
            std::fs::canonicalize(root.join(word))
                .is_ok_and(|p| p.starts_with(&root) && p.is_file())
        })
        .collect()
}

/// Extensions of the source and text files a task works on.
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "js", "mjs", "cjs", "ts", "tsx", "jsx", "rs", "go", "java", "kt", "c", "h", "cc",
    "cpp", "hpp", "cs", "rb", "php", "swift", "lua", "sh", "bash", "toml", "json", "yaml", "yml",
    "md", "txt", "html", "css", "scss", "sql", "xml", "ini", "cfg", "csv", "vue", "svelte",
];

fn has_source_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The source and text files `text` names, whether they exist yet or not: paths whose
/// extension is a known one (so that "e.g." or "v1.5" is not taken for a file).
pub(super) fn source_files_named(text: &str) -> Vec<String> {
    path_words(text)
        .into_iter()
        .filter(|word| has_source_extension(Path::new(word)))
        .collect()
}

/// The workspace's files with one of `extensions` (workspace-relative, sorted), never
/// `.gitignore`d or hidden ones (`.conclave/`, `.git/`). At most `limit` + 1 of them, so
/// that a caller can tell a big project from a small one without walking it all.
pub(super) fn project_files(root: &Path, extensions: &[String], limit: usize) -> Vec<String> {
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(Some(4))
        .require_git(false)
        .build();
    for entry in walker.flatten() {
        if files.len() > limit {
            break;
        }
        let path = entry.path();
        if entry.file_type().is_some_and(|t| t.is_file())
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| extensions.iter().any(|x| x.eq_ignore_ascii_case(e)))
            && let Ok(relative) = path.strip_prefix(root)
        {
            files.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
    files.sort();
    files
}

/// Words of `text` shaped like a relative path with an extension, each once, in order.
fn path_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "`'\"()[]{},;:".contains(c)) {
        let word = word.trim_end_matches('.');
        let path = Path::new(word);
        let inside = path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let has_extension = path.extension().is_some_and(|e| !e.is_empty())
            && path.file_stem().is_some_and(|s| !s.is_empty());
        if inside && has_extension && !words.iter().any(|w| w == word) {
            words.push(word.to_string());
        }
    }
    words
}

/// The task's background as a prompt shows it: marked as what came before, so that the
/// model does not take it for more work.
pub(super) fn background_for_prompt(background: &str) -> String {
    format!(
        "Background (what came before this task, for reference; do only what the task asks):\n{}",
        background.trim_end()
    )
}

/// The task as the person gave it.
pub(super) fn task_text(task: &TaskRecord) -> &str {
    if task.description.trim().is_empty() {
        &task.title
    } else {
        &task.description
    }
}

/// Writes back each of `before` (path, content) that differs now, through the editor
/// when there is one. Returns the paths written.
pub(super) async fn put_back(s: &Services, before: &[(String, String)]) -> Vec<String> {
    let mut restored = Vec::new();
    for (path, content) in before {
        let now = match s.sandbox.resolve(path) {
            Ok(absolute) => tokio::fs::read_to_string(&absolute).await.ok(),
            Err(_) => continue,
        };
        if now.as_deref() == Some(content.as_str()) {
            continue;
        }
        match s
            .writer
            .write_file(std::path::Path::new(path), content)
            .await
        {
            Ok(_) => restored.push(path.clone()),
            Err(e) => tracing::warn!("{path} not put back: {e}"),
        }
    }
    restored
}

/// Keeps the files a coder's final answer showed and did not write, for
/// [`try_proposed`].
pub(super) fn keep_proposed(s: &Services, task_id: TaskId, outcome: &ExecutionOutcome) {
    if outcome.proposed_files.is_empty() {
        return;
    }
    let mut state = s.task_state.entry(task_id).or_default();
    let kept = &mut state.proposed_files;
    for file in &outcome.proposed_files {
        if !kept.contains(file) {
            kept.push(file.clone());
        }
    }
}
