//! `conclave demo --editor [DIR]`: a workspace for trying Conclave in an editor with no
//! API key. Nothing runs here; the editor starts `conclave serve` in the directory, and
//! the scripted model (`editor-script.json`, embedded, written as `try-script.json`)
//! answers what is submitted there:
//!
//! 1. "Write a word counter in Python: wordcount.py and its tests" — a plan of two
//!    subtasks signed by the top layer; the first call hits a scripted HTTP 503, visibly
//!    recovered by a retry; each file is a file-change approval with its diff
//!    (`approvals.fileChanges = "ask"`), written once approved.
//! 2. "Add a --top option to wordcount.py" — one subtask, one approval whose diff
//!    changes an existing file.
//! 3. Anything else — a one-subtask plan whose answer says, politely, what the try-out
//!    can do and how to configure a model: never a script running dry.
//!
//! Every step of the script can be used again, so the tasks can be submitted again and
//! again (the retry happens the first time only).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use conclave::config::Config;
use conclave::model::Script;

use super::{CANNOT_RUN, prepare, without_pauses};

const SCRIPT: &str = include_str!("editor-script.json");
pub const SCRIPT_FILE: &str = "try-script.json";
/// What the suggested tasks write; removed when the directory is prepared again.
const OUTPUTS: [&str; 2] = ["wordcount.py", "test_wordcount.py"];
/// The tasks the script knows, as a person would type them.
pub const SUGGESTED: [&str; 2] = [
    "Write a word counter in Python: wordcount.py and its tests",
    "Add a --top option to wordcount.py",
];

const CONFIG: &str = r#"# Written by `conclave demo --editor`: try Conclave in your editor without an API key.
# The team, the recovery ladder, approvals and file writes are the real thing; the
# model's answers come from try-script.json (see TRY.md for the tasks it knows).
# To work on your own code, point [llm] at a real model instead (see Conclave's README).
heartbeatMs = 2000

[llm]
provider = "scripted"
script = "try-script.json"

[governance]
review = "rules"          # the top layer signs plans by fixed rules, without a model call

[approvals]
fileChanges = "ask"       # every file change comes to you as a diff to approve
commands = "deny"

[recovery.call]
maxAttempts = 1           # no quiet call-level retries: the scripted failure shows as a retry

[recovery.severity.medium]
baseDelayMs = 1500

[recovery.breaker]
minCalls = 10             # one injected failure must not pause the provider
"#;

const SAMPLE: &str = "The quick brown fox jumps over the lazy dog.\n\
The dog sleeps; the fox runs on, and the quick fox is gone.\n";

fn guide(dir: &Path) -> String {
    format!(
        "# Trying Conclave in your editor\n\n\
         This folder was made by `conclave demo --editor`. Its `conclave.toml` runs the real \
         Conclave team on a scripted model (`{SCRIPT_FILE}`), so no API key is needed.\n\n\
         1. Open this folder in your editor with the Conclave extension or plugin \
         (VS Code: `code {dir}`; Neovim: `nvim {dir}`, then `:Conclave submit`).\n\
         2. Submit these tasks, in this order, as written:\n   \
         - `{}`\n   - `{}`\n\
         3. Watch the plan being signed, a retry after a scripted failure, and each file \
         change coming to you as a diff: approve it and the file is written.\n\n\
         Anything else you submit gets a short scripted answer saying what this try-out can \
         do. To have your own tasks done, configure a model in `conclave.toml` (`[llm]`, \
         see Conclave's README) and restart the server.\n\n\
         Conclave keeps its state in `.conclave/` here; `{}` is the text to count words in.\n",
        SUGGESTED[0],
        SUGGESTED[1],
        "sample.txt",
        dir = dir.display(),
    )
}

/// Prepares the directory and says what to do next.
pub fn run(dir: Option<&Path>, fast: bool) -> anyhow::Result<ExitCode> {
    let dir = match prepare(dir, &OUTPUTS) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("conclave: {e:#}");
            return Ok(ExitCode::from(CANNOT_RUN));
        }
    };
    let script = without_pauses(SCRIPT, fast)?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .with_context(|| format!("cannot write {name} into {}", dir.display()))
    };
    write(SCRIPT_FILE, &script)?;
    write("conclave.toml", CONFIG)?;
    write("sample.txt", SAMPLE)?;
    write("TRY.md", &guide(&dir))?;
    // What was written must load, or the editor would meet the error instead.
    Config::load(&dir, None)?;
    Script::parse(&script).map_err(anyhow::Error::msg)?;
    println!("{}", dir.display());
    eprintln!(
        "A workspace for trying Conclave in your editor, without an API key, is ready in {dir}.\n\n\
         Open it in your editor (VS Code: `code {dir}`; Neovim: `nvim {dir}`) and submit:\n  \
         1. {}\n  2. {}\n\
         Each file change comes to you as a diff to approve. Anything else gets a short scripted \
         answer. TRY.md in the folder says the same.",
        SUGGESTED[0],
        SUGGESTED[1],
        dir = dir.display(),
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_editor_script_and_config_load() {
        let script = Script::parse(SCRIPT).expect("the editor script parses");
        assert!(script.steps.len() >= 10);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conclave.toml"), CONFIG).unwrap();
        let config = Config::load(dir.path(), None).unwrap();
        assert_eq!(
            config.approvals.file_changes,
            conclave::config::FileChangePolicy::Ask
        );
        assert_eq!(config.recovery.call.max_attempts, 1);
    }
}
