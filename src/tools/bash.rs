//! `bash {command, timeout_ms?}`: runs `bash -c` in the workspace root.
//!
//! - The `approvals.commands` policy decides whether it runs: `deny` refuses without
//!   running, `ask` consults the [`ApprovalHook`] (the person, shown how the command
//!   will be confined), `auto` runs.
//! - It runs through the one runner ([`crate::exec`]): confined by the sandbox, with
//!   a scrubbed environment (a model cannot `env` its way to the API key), in a process
//!   group killed whole at its end, its timeout or its cancellation, stdout and stderr
//!   each capped to their head and tail.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::sandbox::Sandbox;
use super::writer::WorkspaceWriter;
use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use crate::config::CommandPolicy;
use crate::exec::{Confinement, RUNAWAY_PROCESSES, RunError, RunSpec, Runner};
use crate::model::ToolSpec;

/// A command waiting for someone's approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandApprovalRequest {
    pub command: String,
    /// Where it would run (the workspace root).
    pub workdir: PathBuf,
    pub subtask_id: Option<String>,
    /// How it will be confined, for the person deciding ([`Runner::describe`]).
    pub sandbox: String,
}

/// The answer to a [`CommandApprovalRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    Approved,
    /// Not approved; the reason is shown to the model. A hook that gives up waiting
    /// should answer this, never `Approved`.
    Denied {
        reason: String,
    },
}

/// A change of a file that needs approval (`approvals.fileChanges = "ask"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChangeRequest {
    /// Workspace-relative.
    pub path: PathBuf,
    /// The current content; `None` when the file does not exist yet.
    pub before: Option<String>,
    pub after: String,
    pub subtask_id: Option<String>,
}

/// A call of a tool that acts outside the workspace's files (an MCP server's tool),
/// waiting for approval under the commands policy.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolApprovalRequest {
    /// The name the model called it by (`mcp__tracker__create_issue`).
    pub tool: String,
    /// Where it runs, for the person: `the MCP server tracker (https://…)`.
    pub provider: String,
    /// What the server says it does (cut short).
    pub description: String,
    pub arguments: serde_json::Value,
    /// The server's own claim that the tool only reads (a hint, not a promise).
    pub read_only_hint: bool,
    pub subtask_id: Option<String>,
}

impl ToolApprovalRequest {
    /// One line naming the call: `mcp__db__query {"sql":"select 1"}`.
    pub fn call_line(&self) -> String {
        format!("{} {}", self.tool, self.arguments)
    }
}

/// Asks whoever decides (the user through the editor) whether a command may run or a
/// file may change.
#[async_trait]
pub trait ApprovalHook: Send + Sync {
    async fn approve_command(&self, request: &CommandApprovalRequest) -> ApprovalOutcome;

    async fn approve_file_change(&self, request: &FileChangeRequest) -> ApprovalOutcome {
        let _ = request;
        ApprovalOutcome::Denied {
            reason: "file changes need approval and no one can be asked".into(),
        }
    }

    /// Why `request`'s exact change (path and content) was refused earlier in the same
    /// task, if it was: a refusal is final, so it is neither asked nor written again.
    fn refused_before(&self, request: &FileChangeRequest) -> Option<String> {
        let _ = request;
        None
    }

    /// Remembers that `request`'s change was refused, by the person or by the editor.
    fn note_refusal(&self, request: &FileChangeRequest, reason: &str) {
        let _ = (request, reason);
    }

    /// Whether an MCP tool may be called with these arguments: asked as a command is,
    /// unless the hook shows it as a call of its own.
    async fn approve_tool(&self, request: &ToolApprovalRequest) -> ApprovalOutcome {
        self.approve_command(&CommandApprovalRequest {
            command: request.call_line(),
            workdir: PathBuf::new(),
            subtask_id: request.subtask_id.clone(),
            sandbox: request.provider.clone(),
        })
        .await
    }

    /// Why this exact call (tool and arguments) was refused earlier in the same task,
    /// if it was: it is not asked again.
    fn tool_refused_before(&self, request: &ToolApprovalRequest) -> Option<String> {
        let _ = request;
        None
    }

    /// Remembers that `request`'s call was refused.
    fn note_tool_refusal(&self, request: &ToolApprovalRequest, reason: &str) {
        let _ = (request, reason);
    }
}

/// How commands run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BashSettings {
    /// The shell binary, looked up in `PATH` when relative.
    pub shell: PathBuf,
    /// When the model gives no `timeout_ms`.
    pub default_timeout: Duration,
    /// The most the model may ask for (the step timeout caps it further).
    pub max_timeout: Duration,
    /// Kept of each of stdout and stderr (half from the start, half from the end).
    pub max_output_bytes: usize,
    /// Variables added to the command's environment, scrubbed like the rest (tests use
    /// this instead of mutating the process environment).
    pub extra_env: Vec<(String, String)>,
}

impl Default for BashSettings {
    fn default() -> Self {
        BashSettings {
            shell: PathBuf::from("bash"),
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 16 * 1024,
            extra_env: Vec::new(),
        }
    }
}

pub use crate::exec::env::is_secret_env_name;

/// The `bash` tool.
pub struct Bash {
    sandbox: Sandbox,
    settings: BashSettings,
    policy: CommandPolicy,
    approver: Option<Arc<dyn ApprovalHook>>,
    runner: Runner,
    /// The writer whose history notes what a command changes (`crate::undo`).
    writer: Option<Arc<dyn WorkspaceWriter>>,
}

impl Bash {
    pub fn new(
        sandbox: Sandbox,
        settings: BashSettings,
        policy: CommandPolicy,
        approver: Option<Arc<dyn ApprovalHook>>,
        runner: Runner,
    ) -> Bash {
        Bash {
            sandbox,
            settings,
            policy,
            approver,
            runner,
            writer: None,
        }
    }

    /// Has `writer` watch each command, so the files it creates, changes or removes are
    /// in the task's history as the writer's own changes are, and can be taken back.
    pub fn with_writer(mut self, writer: Arc<dyn WorkspaceWriter>) -> Bash {
        self.writer = Some(writer);
        self
    }
}

#[async_trait]
impl Tool for Bash {
    fn name(&self) -> &str {
        "bash"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a shell command in the workspace root (non-interactive). Returns exit code and output.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": { "type": "string" },
                    "timeout_ms": { "type": "integer" }
                },
                "required": ["command"]
            }),
        }
    }

    async fn authorize(&self, args: &Args, ctx: &CallContext) -> Result<(), ToolError> {
        let command = args.str("command")?;
        if command.trim().is_empty() {
            // Refused before anyone is asked to approve nothing.
            return Err(ToolError::invalid("`command` is empty"));
        }
        let denied = |reason: String| ToolError::CommandDenied {
            command: command.to_string(),
            reason,
        };
        // Without the sandbox it requires, nothing is run, and no one is asked to
        // approve what cannot happen.
        if let Confinement::Refused { reason } = self.runner.confinement() {
            return Err(denied(format!(
                "commands must run in the sandbox, and {reason} (sandbox.required = true)"
            )));
        }
        match self.policy {
            CommandPolicy::Auto => Ok(()),
            CommandPolicy::Deny => Err(denied(
                "commands are disabled by the approvals policy (commands = \"deny\"); use the file tools instead"
                    .to_string(),
            )),
            CommandPolicy::Ask => {
                let Some(approver) = &self.approver else {
                    return Err(denied(
                        "commands need approval and no approver is connected".to_string(),
                    ));
                };
                let request = CommandApprovalRequest {
                    command: command.to_string(),
                    workdir: self.sandbox.root().to_path_buf(),
                    subtask_id: ctx.subtask_id.clone(),
                    sandbox: self.runner.describe(),
                };
                match approver.approve_command(&request).await {
                    ApprovalOutcome::Approved => Ok(()),
                    ApprovalOutcome::Denied { reason } => {
                        Err(denied(format!("the person declined it ({reason})")))
                    }
                }
            }
        }
    }

    /// A command killed by its timeout runs again only when that cannot change anything
    /// twice: a read-only command or a check.
    fn repeatable(&self, args: &Args) -> bool {
        args.str("command").is_ok_and(repeatable_command)
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let command = args.str("command")?;
        if command.trim().is_empty() {
            return Err(ToolError::invalid("`command` is empty"));
        }
        // `timeout_ms: 0` means "no particular limit", not "none at all".
        let mut timeout = args
            .opt_u64("timeout_ms")?
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .unwrap_or(self.settings.default_timeout)
            .min(self.settings.max_timeout);
        if let Some(step) = ctx.step_timeout {
            timeout = timeout.min(step);
        }
        let mut spec = RunSpec::shell(&self.settings.shell, command)
            .timeout(timeout)
            .max_output(self.settings.max_output_bytes);
        spec.env.clone_from(&self.settings.extra_env);
        let watch = match &self.writer {
            Some(writer) => writer.watch_command().await,
            None => None,
        };
        let run = self.runner.run(spec, &ctx.cancel).await;
        if let Some(watch) = watch {
            watch.finish().await;
        }
        let run = match run {
            Ok(run) => run,
            Err(RunError::TimedOut { timeout, output }) => {
                return Err(ToolError::Timeout { timeout, output });
            }
            Err(RunError::Cancelled) => return Err(ToolError::Cancelled),
            Err(RunError::Runaway { output }) => {
                return Err(ToolError::CommandFailed {
                    exit_code: None,
                    output: format!(
                        "stopped: the command started more than {RUNAWAY_PROCESSES} processes at once (does the program run itself?)\n{output}"
                    ),
                });
            }
            Err(e @ RunError::Unconfined { .. }) => {
                return Err(ToolError::CommandDenied {
                    command: command.to_string(),
                    reason: e.to_string(),
                });
            }
            Err(e) => {
                return Err(ToolError::Io {
                    path: self.settings.shell.clone(),
                    kind: std::io::ErrorKind::Other,
                    message: e.to_string(),
                });
            }
        };
        let shown = run.render();
        let short = one_line(command, 60);
        match run.code() {
            Some(0) => Ok(ToolOutput {
                content: format!("exit code: 0\n{shown}"),
                summary: format!("ran `{short}` (exit 0)"),
                progress: true,
                files_written: Vec::new(),
                repairs: Vec::new(),
            }),
            exit_code => Err(ToolError::CommandFailed {
                exit_code,
                output: match missing_program_hint(exit_code, &shown) {
                    Some(hint) => format!("{shown}\n{hint}"),
                    None => shown,
                },
            }),
        }
    }
}

/// A line for the model when the program a command runs is not installed: otherwise a
/// model may retry the same command (`pytest -v` on a machine without pytest) until the
/// loop stops it, when another (`python3 -m unittest`) would run the same tests.
fn missing_program_hint(exit_code: Option<i32>, output: &str) -> Option<String> {
    let not_found = exit_code == Some(127);
    if output.contains("No module named pytest") || (not_found && output.contains("pytest")) {
        return Some(
            "pytest is not installed here: run the tests with `python3 -m unittest -v` \
             (it finds test_*.py files), or one test file with `python3 test_FILE.py`"
                .into(),
        );
    }
    not_found.then(|| {
        "exit code 127: that program is not installed here; do not run it again, use \
         another command"
            .into()
    })
}

/// Whether a shell command only looks at things (every part of a pipeline or list is a
/// read-only command and nothing is redirected into a file).
pub fn read_only_command(command: &str) -> bool {
    const READ_ONLY: &[&str] = &[
        "ls", "cat", "head", "tail", "pwd", "find", "grep", "rg", "wc", "tree", "echo", "which",
        "type", "file", "stat", "du", "df", "env", "printenv", "whoami", "date", "diff", "less",
        "more", "sort", "uniq", "true", "cd",
    ];
    if command.contains('>') || command.contains("-delete") || command.contains("-exec") {
        return false;
    }
    command
        .split(['|', ';', '&', '\n'])
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .all(|part| {
            let program = part.split_whitespace().next().unwrap_or_default();
            let program = program.rsplit('/').next().unwrap_or(program);
            READ_ONLY.contains(&program)
        })
}

/// Whether running a command a second time can do no harm: it only looks at things, or
/// it is a check (a compile, a test run, a lint) whose effects are its report. Only such
/// a command is run again after its time ran out ([`Tool::repeatable`]).
pub fn repeatable_command(command: &str) -> bool {
    const CHECKS: &[&[&str]] = &[
        &["pytest"],
        &["python", "-m", "pytest"],
        &["python3", "-m", "pytest"],
        &["python", "-m", "unittest"],
        &["python3", "-m", "unittest"],
        &["python", "-m", "py_compile"],
        &["python3", "-m", "py_compile"],
        &["cargo", "test"],
        &["cargo", "check"],
        &["cargo", "clippy"],
        &["npm", "test"],
        &["npm", "run", "test"],
        &["node", "--check"],
        &["tsc", "--noEmit"],
        &["npx", "tsc", "--noEmit"],
        &["go", "test"],
        &["go", "vet"],
    ];
    if read_only_command(command) {
        return true;
    }
    if command.contains('>') {
        return false;
    }
    command
        .split("&&")
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .all(|part| {
            if read_only_command(part) {
                return true;
            }
            let words: Vec<&str> = part.split_whitespace().collect();
            !part.contains(['|', ';', '&', '\n'])
                && CHECKS.iter().any(|check| words.starts_with(check))
        })
}

/// The first line of `text`, at most `max` characters, for one-line summaries.
fn one_line(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or_default();
    let mut short: String = first.chars().take(max).collect();
    if short.len() < text.trim_end().len() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_commands_are_recognised() {
        for command in ["ls -la", "cat a.py | grep def", "pwd && ls", "/bin/ls src"] {
            assert!(read_only_command(command), "{command}");
        }
        for command in [
            "echo hi > a.txt",
            "python3 -m pytest",
            "ls; rm a.txt",
            "find . -name '*.pyc' -delete",
            "sed -i s/a/b/ f",
        ] {
            assert!(!read_only_command(command), "{command}");
        }
    }

    #[test]
    fn checks_and_looks_may_run_again_but_changes_may_not() {
        for command in [
            "ls -la",
            "python3 -m pytest -q",
            "pytest tests/test_cli.py",
            "cd app && cargo test",
            "node --check main.js && npm test",
        ] {
            assert!(repeatable_command(command), "{command}");
        }
        for command in [
            "pip install requests",
            "python3 solution.py",
            "pytest > log.txt",
            "cargo test; rm -rf target",
            "rm -rf build && pytest",
            "git commit -am wip",
        ] {
            assert!(!repeatable_command(command), "{command}");
        }
    }

    #[test]
    fn a_program_that_is_not_installed_gets_a_way_on() {
        let pytest = missing_program_hint(Some(127), "sh: 1: pytest: not found").unwrap();
        assert!(pytest.contains("python3 -m unittest -v"), "{pytest}");
        let module = "/usr/bin/python3: No module named pytest";
        assert_eq!(missing_program_hint(Some(1), module), Some(pytest));
        let other = missing_program_hint(Some(127), "sh: 1: cowsay: not found").unwrap();
        assert!(other.contains("not installed here"), "{other}");
        assert_eq!(missing_program_hint(Some(1), "FAILED test_a"), None);
    }

    #[test]
    fn summaries_are_one_short_line() {
        assert_eq!(one_line("cargo test", 60), "cargo test");
        assert_eq!(one_line("a\nb", 60), "a…");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }
}
