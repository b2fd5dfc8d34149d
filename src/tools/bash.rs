//! `bash {command, timeout_ms?}`: runs `bash -c` in the workspace root.
//!
//! - The command runs in its own process group. On timeout, on cancellation (the future
//!   is dropped) and after the shell exits, the whole group is killed with SIGKILL, so
//!   background children never outlive the call or hold its output pipes open.
//! - Its environment is the server's minus anything that looks like a credential
//!   (`*_API_KEY`, `*_TOKEN`, `*SECRET*`, `*_PASSWORD`, ...) and the configured key
//!   variable, so a model cannot `env` its way to the API key.
//! - stdout and stderr are each capped, keeping their head and tail.
//! - The `approvals.commands` policy decides whether it runs: `deny` refuses without
//!   running, `ask` consults the [`ApprovalHook`] (the editor, later), `auto` runs.

use std::ffi::OsString;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::io::AsyncReadExt;

use super::process_group::{GroupKiller, RUNAWAY_PROCESSES};
use super::sandbox::Sandbox;
use super::{Args, CallContext, HeadTail, Tool, ToolError, ToolOutput};
use crate::config::CommandPolicy;
use crate::model::ToolSpec;

/// A command waiting for someone's approval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandApprovalRequest {
    pub command: String,
    /// Where it would run (the workspace root).
    pub workdir: PathBuf,
    pub subtask_id: Option<String>,
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
    /// Extra variable names to remove from the command's environment (the configured
    /// `llm.apiKeyEnv`), on top of every credential-looking name.
    pub scrub_env: Vec<String>,
    /// Variables added to the inherited environment before scrubbing (tests use this
    /// instead of mutating the process environment).
    pub extra_env: Vec<(String, String)>,
    /// After the group is killed, how long to wait for its output pipes to close.
    pub kill_grace: Duration,
}

impl Default for BashSettings {
    fn default() -> Self {
        BashSettings {
            shell: PathBuf::from("bash"),
            default_timeout: Duration::from_secs(120),
            max_timeout: Duration::from_secs(600),
            max_output_bytes: 16 * 1024,
            scrub_env: Vec::new(),
            extra_env: Vec::new(),
            kill_grace: Duration::from_secs(1),
        }
    }
}

/// Whether an environment variable name looks like it holds a credential.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const SUFFIXES: [&str; 7] = [
        "_API_KEY",
        "APIKEY",
        "_TOKEN",
        "_PASSWORD",
        "_PASSWD",
        "_CREDENTIALS",
        "PRIVATE_KEY",
    ];
    upper == "API_KEY"
        || upper == "TOKEN"
        || upper.contains("SECRET")
        || SUFFIXES.iter().any(|suffix| upper.ends_with(suffix))
}

/// The `bash` tool.
pub struct Bash {
    sandbox: Sandbox,
    settings: BashSettings,
    policy: CommandPolicy,
    approver: Option<Arc<dyn ApprovalHook>>,
}

impl Bash {
    pub fn new(
        sandbox: Sandbox,
        settings: BashSettings,
        policy: CommandPolicy,
        approver: Option<Arc<dyn ApprovalHook>>,
    ) -> Bash {
        Bash {
            sandbox,
            settings,
            policy,
            approver,
        }
    }

    /// The inherited environment, plus `extra_env`, minus credentials, plus settings
    /// that keep tools from waiting for a terminal that is not there.
    fn environment(&self) -> Vec<(OsString, OsString)> {
        let inherited = std::env::vars_os().chain(
            self.settings
                .extra_env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let mut env: Vec<(OsString, OsString)> = inherited
            .filter(|(name, _)| {
                let name = name.to_string_lossy();
                !is_secret_env_name(&name) && !self.settings.scrub_env.iter().any(|s| *s == name)
            })
            .collect();
        for (name, value) in [
            ("PAGER", "cat"),
            ("GIT_PAGER", "cat"),
            ("GIT_TERMINAL_PROMPT", "0"),
        ] {
            env.push((name.into(), value.into()));
        }
        env
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
                };
                match approver.approve_command(&request).await {
                    ApprovalOutcome::Approved => Ok(()),
                    ApprovalOutcome::Denied { reason } => {
                        Err(denied(format!("the user declined it: {reason}")))
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
        // `timeout_ms: 0` (seen on a small model) means "no particular limit", not "none at all".
        let mut timeout = args
            .opt_u64("timeout_ms")?
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .unwrap_or(self.settings.default_timeout)
            .min(self.settings.max_timeout);
        if let Some(step) = ctx.step_timeout {
            timeout = timeout.min(step);
        }
        let run = run_command(
            &self.settings,
            command,
            self.sandbox.root(),
            self.environment(),
            timeout,
            &ctx.cancel,
        )
        .await?;
        let shown = render_streams(&run.stdout, &run.stderr);
        let short = one_line(command, 60);
        match run.status.code() {
            Some(0) => Ok(ToolOutput {
                content: format!("exit code: 0\n{shown}"),
                summary: format!("ran `{short}` (exit 0)"),
                progress: true,
                files_written: Vec::new(),
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

/// A line for the model when the program a command runs is not installed. Seen on the
/// real model: `pytest -v` four times over on a machine without pytest, until the loop
/// stopped it, when `python3 -m unittest` would have run the same tests.
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

/// What a finished command left behind.
struct CommandRun {
    status: ExitStatus,
    stdout: HeadTail,
    stderr: HeadTail,
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

async fn run_command(
    settings: &BashSettings,
    command: &str,
    workdir: &std::path::Path,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CommandRun, ToolError> {
    let mut child = tokio::process::Command::new(&settings.shell)
        .arg("-c")
        .arg(command)
        .current_dir(workdir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| ToolError::io(&settings.shell, &e))?;
    let killer = child
        .id()
        .and_then(GroupKiller::new)
        .ok_or_else(|| ToolError::Io {
            path: settings.shell.clone(),
            kind: std::io::ErrorKind::Other,
            message: "the shell exited before its process group could be tracked".to_string(),
        })?;
    tracing::debug!(
        pgid = killer.pgid(),
        timeout_ms = timeout.as_millis() as u64,
        "command started"
    );

    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError::Io {
            path: settings.shell.clone(),
            kind: std::io::ErrorKind::Other,
            message: "the command's output pipes were not set up".to_string(),
        });
    };
    let mut out = HeadTail::new(settings.max_output_bytes);
    let mut err = HeadTail::new(settings.max_output_bytes);
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let (mut out_open, mut err_open) = (true, true);
    let mut status: Option<ExitStatus> = None;
    let mut timed_out = false;
    let mut cancelled = false;
    // How often the group's processes are counted: a command that keeps starting
    // copies of itself is stopped long before its timeout (see `process_group`).
    let mut census = tokio::time::interval(Duration::from_millis(500));
    let mut runaway = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // Armed once the group is killed: how long the pipes may take to close.
    let mut grace: Option<Pin<Box<tokio::time::Sleep>>> = None;

    while out_open || err_open {
        let finished = status.is_some() || timed_out || cancelled || runaway;
        tokio::select! {
            read = stdout.read(&mut out_buf), if out_open => match read {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => out.push(&out_buf[..n]),
            },
            read = stderr.read(&mut err_buf), if err_open => match read {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => err.push(&err_buf[..n]),
            },
            exited = child.wait(), if !finished => {
                status = Some(exited.map_err(|e| ToolError::io(&settings.shell, &e))?);
                // Background jobs die with the shell; their pipes close with them.
                killer.kill();
                grace = Some(Box::pin(tokio::time::sleep(settings.kill_grace)));
            },
            () = &mut deadline, if !finished => {
                timed_out = true;
                killer.kill();
                grace = Some(Box::pin(tokio::time::sleep(settings.kill_grace)));
            },
            _ = census.tick(), if !finished => {
                if killer.size().is_some_and(|n| n > RUNAWAY_PROCESSES) {
                    runaway = true;
                    killer.kill();
                    grace = Some(Box::pin(tokio::time::sleep(settings.kill_grace)));
                }
            },
            () = cancel.cancelled(), if !finished => {
                // Kill and wait for the pipes like a timeout, so that when the call
                // returns, the command's processes are gone.
                cancelled = true;
                killer.kill();
                grace = Some(Box::pin(tokio::time::sleep(settings.kill_grace)));
            },
            () = async { if let Some(grace) = grace.as_mut() { grace.await } }, if grace.is_some() => {
                // Something left the group (setsid) and kept a pipe open; stop reading.
                tracing::warn!(pgid = killer.pgid(), "command output still open after its group was killed");
                break;
            },
        }
    }

    if timed_out || cancelled || runaway {
        // Reap the killed shell; SIGKILL cannot be ignored, so this is quick.
        let _ = tokio::time::timeout(settings.kill_grace, child.wait()).await;
    }
    if runaway {
        tracing::info!(
            pgid = killer.pgid(),
            "command stopped: a runaway process group"
        );
        return Err(ToolError::CommandFailed {
            exit_code: None,
            output: format!(
                "stopped: the command started more than {RUNAWAY_PROCESSES} processes at once (does the program run itself?)\n{}",
                render_streams(&out, &err)
            ),
        });
    }
    if cancelled {
        tracing::info!(
            pgid = killer.pgid(),
            "command cancelled; process group killed"
        );
        return Err(ToolError::Cancelled);
    }
    if timed_out {
        tracing::info!(
            pgid = killer.pgid(),
            timeout_ms = timeout.as_millis() as u64,
            "command timed out; process group killed"
        );
        return Err(ToolError::Timeout {
            timeout,
            output: render_streams(&out, &err),
        });
    }
    let status = match status {
        Some(status) => status,
        // Both pipes closed before the shell was seen to exit (it closed them itself).
        None => {
            let remaining = deadline
                .deadline()
                .saturating_duration_since(tokio::time::Instant::now());
            match tokio::time::timeout(remaining, child.wait()).await {
                Ok(exited) => exited.map_err(|e| ToolError::io(&settings.shell, &e))?,
                Err(_) => {
                    killer.kill();
                    return Err(ToolError::Timeout {
                        timeout,
                        output: render_streams(&out, &err),
                    });
                }
            }
        }
    };
    drop(killer);
    Ok(CommandRun {
        status,
        stdout: out,
        stderr: err,
    })
}

/// stdout, then stderr under a marker if there was any.
fn render_streams(stdout: &HeadTail, stderr: &HeadTail) -> String {
    match (stdout.is_empty(), stderr.is_empty()) {
        (true, true) => "(no output)".to_string(),
        (false, true) => stdout.render(),
        (true, false) => format!("[stderr]\n{}", stderr.render()),
        (false, false) => format!("{}\n[stderr]\n{}", stdout.render(), stderr.render()),
    }
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
    fn credential_names_are_recognised() {
        for name in [
            "OPENAI_API_KEY",
            "anthropic_api_key",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "API_KEY",
            "MYSERVICEAPIKEY",
        ] {
            assert!(is_secret_env_name(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "TOKENIZERS_PARALLELISM",
            "CARGO_HOME",
            "KEYMAP",
        ] {
            assert!(!is_secret_env_name(name), "{name}");
        }
    }

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
