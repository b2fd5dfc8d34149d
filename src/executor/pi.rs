//! The pi-coding-agent executor: bottom agents' subtasks done by
//! [pi](https://www.npmjs.com/package/@mariozechner/pi-coding-agent) in its RPC mode.
//!
//! Each execution starts `pi --mode rpc` in the workspace root, waits until it answers
//! `get_state`, sends the subtask as one `prompt`, follows the event stream to the final
//! assistant message, and ends the process by closing its stdin. The model is the one
//! Conclave is configured with, handed to pi through a private agent directory (see
//! [`agent_dir`]); pi's retries follow `recovery.call`, and its failures come back as
//! [`ModelError`](crate::model::ModelError) variants where pi's message shows what
//! happened. `docs/pi-executor.md` describes the mapping and what pi cannot honour.
//!
//! The parts: [`events`] parses pi's stdout lines, [`run`] follows one run (and is
//! process-free, so recorded streams drive it in tests), [`process`] owns the child.

pub mod agent_dir;
pub mod errors;
pub mod events;
pub mod process;
pub mod run;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::agent_dir::{API_KEY_VAR, PROVIDER_ID, PiModel};
use self::errors::ErrorContext;
use self::process::{LiveSet, NotReady, PiProcess, SpawnSpec};
use self::run::{FollowEnd, RunEnd, RunTimers, RunTracker, follow_run};
use crate::config::{CallRetryConfig, CommandPolicy, Config};
use crate::executor::{ExecutionOutcome, Executor, ExecutorError, OutputSink, SubtaskSpec};

/// How much longer than `step_timeout` pi may stay silent before Conclave aborts it.
/// pi's own model-call timeout is `step_timeout` (it then retries per `recovery.call`),
/// so the margin lets pi's timeout, not this backstop, decide a slow model call.
const WATCHDOG_MARGIN: Duration = Duration::from_secs(5);

/// Everything a [`PiExecutor`] needs; [`PiSettings::from_config`] fills it from
/// Conclave's configuration.
#[derive(Clone, Debug)]
pub struct PiSettings {
    /// The `pi` program (`executor.piPath`, else `pi` on `PATH`).
    pub pi_path: PathBuf,
    /// pi's working directory; its tools resolve relative paths against it.
    pub workspace_root: PathBuf,
    pub model: PiModel,
    /// Model round trips (pi turns) before the run is stopped with partial results.
    pub max_iterations: u32,
    /// Whether pi gets its `bash` tool (only with `approvals.commands = "auto"`).
    pub allow_bash: bool,
    /// Becomes pi's own retry policy for failed model calls.
    pub call_retry: CallRetryConfig,
    /// One model call (pi's own request timeout) or tool call; pi silent for longer
    /// (plus a short margin) is aborted.
    pub step_timeout: Duration,
    /// The longest one execution may take.
    pub subtask_timeout: Duration,
    /// How long an error `agent_end` waits for pi's `auto_retry_start` before it counts
    /// (pi 0.73 announces the retry after the end).
    pub retry_grace: Duration,
    /// How long pi may take to answer its first `get_state`.
    pub startup_timeout: Duration,
    /// Each step of stopping pi (stdin closed, SIGTERM, SIGKILL) waits this long, and an
    /// abort waits this long for the run to wind down.
    pub shutdown_grace: Duration,
    /// `[sandbox]`: pi's process is confined like any command (its network only to the
    /// model's port, unless `network = true`).
    pub sandbox: crate::config::SandboxConfig,
    /// Variables pi's environment never carries (besides credential-looking ones; its own
    /// key goes in `CONCLAVE_PI_API_KEY`).
    pub scrub_env: Vec<String>,
}

impl PiSettings {
    pub const DEFAULT_RETRY_GRACE: Duration = Duration::from_millis(1500);
    pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

    /// Settings from Conclave's configuration, the API key read from the environment.
    pub fn from_config(config: &Config, workspace_root: &Path) -> Result<Self, ExecutorError> {
        let model = PiModel::from_llm_config(&config.llm)?;
        if config.approvals.commands != CommandPolicy::Auto {
            tracing::info!(
                policy = ?config.approvals.commands,
                "pi cannot ask before running a command; its bash tool is disabled"
            );
        }
        Ok(PiSettings {
            pi_path: PathBuf::from(config.executor.pi_path.as_deref().unwrap_or("pi")),
            workspace_root: workspace_root.to_path_buf(),
            model,
            max_iterations: config.executor.max_iterations,
            allow_bash: config.approvals.commands == CommandPolicy::Auto,
            call_retry: config.recovery.call.clone(),
            step_timeout: Duration::from_millis(config.recovery.step_timeout_ms),
            subtask_timeout: Duration::from_millis(config.recovery.subtask_timeout_ms),
            retry_grace: Self::DEFAULT_RETRY_GRACE,
            startup_timeout: Self::DEFAULT_STARTUP_TIMEOUT,
            shutdown_grace: Self::DEFAULT_SHUTDOWN_GRACE,
            sandbox: config.sandbox.clone(),
            scrub_env: config.llm.key_variables(),
        })
    }
}

/// The sandbox of pi's processes: writes to the workspace and pi's own folder, the home
/// folder's secrets hidden, TCP only to the model's port (pi calls the model itself).
fn confine_pi(
    settings: &PiSettings,
    agent_dir: &Path,
) -> Result<Option<crate::exec::confine::Ruleset>, ExecutorError> {
    use crate::exec::confine::{self, ConfinePolicy, Network, Ruleset, Support};
    let temp = agent_dir.join("tmp");
    std::fs::create_dir_all(&temp)
        .map_err(|e| ExecutorError::Process(format!("cannot create pi's temp folder: {e}")))?;
    let port = reqwest::Url::parse(&settings.model.base_url)
        .ok()
        .and_then(|u| u.port_or_known_default());
    let network = match (settings.sandbox.network, port) {
        (true, _) | (false, None) => Network::On,
        (false, Some(port)) => Network::Ports(vec![port]),
    };
    let mut hidden = confine::home_secrets();
    hidden.extend(
        settings
            .sandbox
            .hidden_paths
            .iter()
            .map(std::path::PathBuf::from),
    );
    let mut writable = vec![
        settings.workspace_root.clone(),
        agent_dir.to_path_buf(),
        temp,
    ];
    writable.extend(
        settings
            .sandbox
            .writable_paths
            .iter()
            .map(std::path::PathBuf::from),
    );
    let policy = ConfinePolicy {
        writable,
        hidden,
        network,
    };
    let unavailable = |reason: String| {
        if settings.sandbox.required {
            Err(ExecutorError::Process(format!(
                "pi must run in the sandbox (sandbox.required = true), and {reason}"
            )))
        } else {
            tracing::warn!("pi runs UNCONFINED (sandbox.required = false): {reason}");
            Ok(None)
        }
    };
    match Support::probe() {
        Support::Missing { reason } => unavailable(reason),
        Support::Landlock { .. } => match Ruleset::build(&policy) {
            Ok(ruleset) => Ok(Some(ruleset)),
            Err(e) => unavailable(e.to_string()),
        },
    }
}

/// Runs subtasks through pi-coding-agent's RPC mode, one pi process per execution.
pub struct PiExecutor {
    settings: PiSettings,
    /// The private agent directory; removed when the executor is dropped. Its `tmp/`
    /// is pi's temp folder.
    agent_dir: tempfile::TempDir,
    /// The sandbox pi's processes enter; `None` where there is none and it is not
    /// required.
    confinement: Option<crate::exec::confine::Ruleset>,
    errors: ErrorContext,
    live: LiveSet,
}

impl PiExecutor {
    /// Prepares the private agent directory (`models.json`, `settings.json`).
    pub fn new(settings: PiSettings) -> Result<Self, ExecutorError> {
        let agent_dir = tempfile::Builder::new()
            .prefix("conclave-pi-")
            .tempdir()
            .map_err(|e| {
                ExecutorError::Process(format!("cannot create pi's agent directory: {e}"))
            })?;
        agent_dir::write_agent_dir(
            agent_dir.path(),
            &settings.model,
            &settings.call_retry,
            settings.step_timeout,
        )
        .map_err(|e| ExecutorError::Process(format!("cannot write pi's configuration: {e}")))?;
        let errors = ErrorContext::new(
            settings.model.provider.clone(),
            settings.step_timeout,
            settings.model.api_key.as_ref().map(|k| k.expose()),
        );
        let confinement = confine_pi(&settings, agent_dir.path())?;
        tracing::debug!(agent_dir = %agent_dir.path().display(), model = %settings.model.model_id, "pi executor ready");
        Ok(PiExecutor {
            settings,
            agent_dir,
            confinement,
            errors,
            live: Arc::new(Mutex::new(Default::default())),
        })
    }

    /// [`PiSettings::from_config`] then [`PiExecutor::new`].
    pub fn from_config(config: &Config, workspace_root: &Path) -> Result<Self, ExecutorError> {
        PiExecutor::new(PiSettings::from_config(config, workspace_root)?)
    }

    pub fn settings(&self) -> &PiSettings {
        &self.settings
    }

    /// The private agent directory pi is pointed at (`PI_CODING_AGENT_DIR`).
    pub fn agent_dir(&self) -> &Path {
        self.agent_dir.path()
    }

    /// Pids of pi processes started by this executor and not yet reaped.
    pub fn live_processes(&self) -> Vec<u32> {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let mut pids: Vec<u32> = live.iter().copied().collect();
        pids.sort_unstable();
        pids
    }

    fn spawn(&self, system_prompt: Option<&Path>) -> Result<PiProcess, ExecutorError> {
        let tools = if self.settings.allow_bash {
            "read,bash,edit,write"
        } else {
            // Without bash, pi's read-only search tools are its only way to look around.
            "read,edit,write,grep,find,ls"
        };
        let mut args: Vec<OsString> = [
            "--mode",
            "rpc",
            "--no-session",
            "--provider",
            PROVIDER_ID,
            "--model",
            &self.settings.model.model_id,
            "--tools",
            tools,
            "--no-extensions",
            "--no-skills",
            "--no-prompt-templates",
            "--no-themes",
        ]
        .into_iter()
        .map(OsString::from)
        .collect();
        if let Some(path) = system_prompt {
            // pi reads the file when the argument names an existing one.
            args.push("--append-system-prompt".into());
            args.push(path.into());
        }
        let env = vec![
            (
                "PI_CODING_AGENT_DIR",
                self.agent_dir.path().display().to_string(),
            ),
            (
                API_KEY_VAR,
                self.settings.model.api_key_for_child().to_string(),
            ),
            // No update checks, tool downloads or install telemetry from inside Conclave.
            ("PI_OFFLINE", "1".to_string()),
            ("PI_SKIP_VERSION_CHECK", "1".to_string()),
            ("PI_TELEMETRY", "0".to_string()),
        ];
        let spec = SpawnSpec {
            program: &self.settings.pi_path,
            args,
            cwd: &self.settings.workspace_root,
            env,
            scrub_env: &self.settings.scrub_env,
            temp_dir: self.agent_dir.path().join("tmp"),
            confinement: self.confinement.as_ref().map(|r| r.raw_fd()),
        };
        PiProcess::spawn(spec, &self.errors, &self.live).map_err(|e| {
            let message = format!(
                "cannot start pi ({}): {e}; install it with `npm install -g @mariozechner/pi-coding-agent` or set executor.piPath",
                self.settings.pi_path.display()
            );
            match e.kind() {
                // Not there or not runnable: configuration, which no retry fixes.
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    ExecutorError::NotInstalled(message)
                }
                // Out of processes or memory for the moment.
                _ => ExecutorError::Crashed(message),
            }
        })
    }

    /// Writes the agent's system prompt where pi can read it, if there is one.
    fn system_prompt_file(
        &self,
        spec: &SubtaskSpec,
    ) -> Result<Option<tempfile::NamedTempFile>, ExecutorError> {
        if spec.system_prompt.trim().is_empty() {
            return Ok(None);
        }
        let write = || -> std::io::Result<tempfile::NamedTempFile> {
            let mut file = tempfile::Builder::new()
                .prefix("system-")
                .suffix(".md")
                .tempfile_in(self.agent_dir.path())?;
            std::io::Write::write_all(&mut file, spec.system_prompt.as_bytes())?;
            Ok(file)
        };
        write().map(Some).map_err(|e| {
            ExecutorError::Process(format!("cannot write the system prompt for pi: {e}"))
        })
    }

    /// Everything between spawn and shutdown.
    async fn drive(
        &self,
        pi: &mut PiProcess,
        spec: &SubtaskSpec,
        timers: &RunTimers,
        cancel: &CancellationToken,
        on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, Stop> {
        let ready_by = timers
            .subtask_deadline
            .min(Instant::now() + self.settings.startup_timeout);
        match pi.wait_ready(ready_by, cancel).await {
            Ok(()) => {}
            Err(NotReady::Cancelled) => return Err(Stop::Error(ExecutorError::Cancelled)),
            Err(NotReady::Exited) => return Err(Stop::Exited("before it was ready")),
            Err(NotReady::TimedOut) => {
                return Err(Stop::Error(ExecutorError::Unresponsive(format!(
                    "pi did not answer within {} ms of starting",
                    self.settings.startup_timeout.as_millis()
                ))));
            }
        }
        pi.send(&serde_json::json!({
            "id": "conclave-prompt",
            "type": "prompt",
            "message": prompt_message(spec),
        }));

        let mut tracker = RunTracker::new(
            &self.settings.workspace_root,
            self.settings.max_iterations,
            self.errors.clone(),
        );
        let (lines, commands) = pi.channels();
        let end = follow_run(
            lines,
            &mut tracker,
            timers,
            cancel,
            commands,
            &mut *on_output,
        )
        .await;
        let (error, reason) = match end {
            // "Done" with no write, edit or command on a subtask that asks for changes
            // is no progress, as with the built-in executor: an agent that ends at once
            // with nothing written has not done the work.
            FollowEnd::Finished(RunEnd::Completed(outcome))
                if outcome.success
                    && crate::recovery::strategy::nothing_done(
                        spec.asks_for_changes,
                        !outcome.partial_results.is_empty(),
                    ) =>
            {
                let reason = format!(
                    "the subtask asked for changes and pi made none; it said: {}",
                    crate::executor::builtin::first_line(&outcome.summary, 160)
                );
                return Err(Stop::Error(ExecutorError::NoProgress(
                    reason,
                    Box::new(outcome),
                )));
            }
            FollowEnd::Finished(RunEnd::Completed(outcome)) => return Ok(outcome),
            FollowEnd::Finished(RunEnd::Failed(error)) => return Err(Stop::Error(error)),
            FollowEnd::Finished(RunEnd::Aborted) => {
                return Err(Stop::Error(ExecutorError::Process(
                    "pi aborted the run by itself".to_string(),
                )));
            }
            FollowEnd::Closed => return Err(Stop::Exited("during the run")),
            FollowEnd::Finished(RunEnd::IterationLimit) => (None, "iteration limit"),
            FollowEnd::Cancelled => (Some(ExecutorError::Cancelled), "cancelled"),
            FollowEnd::StepTimeout(after) | FollowEnd::SubtaskTimeout(after) => {
                (Some(ExecutorError::StepTimeout(after)), "timeout")
            }
        };

        // Stop pi's run and let it wind down, so the last tool results are counted.
        tracing::info!(pid = ?pi.pid(), reason, "aborting pi's run");
        pi.send(&serde_json::json!({ "id": "conclave-abort", "type": "abort" }));
        let wind_down = RunTimers {
            step_timeout: self.settings.shutdown_grace,
            subtask_deadline: Instant::now() + self.settings.shutdown_grace,
            subtask_timeout: self.settings.shutdown_grace,
            retry_grace: Duration::ZERO,
        };
        let (lines, commands) = pi.channels();
        let never = CancellationToken::new();
        follow_run(lines, &mut tracker, &wind_down, &never, commands, on_output).await;

        match error {
            None => Ok(tracker.unfinished_outcome(&format!(
                "it needed more than {} model round trips",
                self.settings.max_iterations
            ))),
            Some(error) => {
                let kept = tracker.unfinished_outcome(reason);
                tracing::info!(
                    partial_results = ?kept.partial_results,
                    files_written = ?kept.files_written,
                    "pi's run ended early"
                );
                Err(Stop::Error(error))
            }
        }
    }
}

/// Why [`PiExecutor::drive`] stopped short of an outcome.
enum Stop {
    Error(ExecutorError),
    /// pi's stdout closed; the message is completed once the exit status is known.
    Exited(&'static str),
}

#[async_trait]
impl Executor for PiExecutor {
    async fn execute(
        &self,
        spec: &SubtaskSpec,
        cancel: CancellationToken,
        on_output: OutputSink<'_>,
    ) -> Result<ExecutionOutcome, ExecutorError> {
        if cancel.is_cancelled() {
            return Err(ExecutorError::Cancelled);
        }
        let timers = RunTimers {
            step_timeout: self.settings.step_timeout + WATCHDOG_MARGIN,
            subtask_deadline: Instant::now() + self.settings.subtask_timeout,
            subtask_timeout: self.settings.subtask_timeout,
            retry_grace: self.settings.retry_grace,
        };
        // Kept alive until pi is gone; deleted on drop.
        let system_prompt = self.system_prompt_file(spec)?;
        let mut pi = self.spawn(system_prompt.as_ref().map(|f| f.path()))?;
        tracing::info!(pid = ?pi.pid(), subtask = %spec.subtask_id, "pi executes a subtask");

        let result = self.drive(&mut pi, spec, &timers, &cancel, on_output).await;
        let exited = pi.shutdown(self.settings.shutdown_grace).await;
        match result {
            Ok(outcome) => Ok(outcome),
            Err(Stop::Error(error)) => Err(error),
            Err(Stop::Exited(when)) => {
                let status = exited
                    .status
                    .map_or_else(|| "unknown".to_string(), |s| s.to_string());
                let tail = if exited.stderr_tail.is_empty() {
                    "no output on stderr".to_string()
                } else {
                    exited.stderr_tail
                };
                Err(ExecutorError::Crashed(format!(
                    "pi exited {when} (status {status}): {tail}"
                )))
            }
        }
    }
}

/// The user message pi receives: the whiteboard context, then the subtask verbatim.
fn prompt_message(spec: &SubtaskSpec) -> String {
    if spec.context.trim().is_empty() {
        return spec.description.clone();
    }
    format!(
        "# Context\n\n{}\n\n# Subtask\n\n{}",
        spec.context.trim_end(),
        spec.description
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_is_sent_verbatim_after_the_context() {
        let spec = SubtaskSpec {
            description: "  Add `fn two()`\n".into(),
            context: "Team notes\n\n".into(),
            ..SubtaskSpec::default()
        };
        assert_eq!(
            prompt_message(&spec),
            "# Context\n\nTeam notes\n\n# Subtask\n\n  Add `fn two()`\n"
        );
        let bare = SubtaskSpec {
            description: "just this".into(),
            ..SubtaskSpec::default()
        };
        assert_eq!(prompt_message(&bare), "just this");
    }
}
