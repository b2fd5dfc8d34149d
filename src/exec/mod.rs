//! One runner for everything Conclave executes: the `bash` tool, the checks, the
//! acceptance runner, the project's tests. Every run gets the same treatment:
//!
//! - a **scrubbed environment** ([`env`]): no credential of any provider, nothing named
//!   by the configured key variables, a private temp directory ([`temp`]);
//! - **confinement** ([`confine`]): Landlock keeps writes to the workspace and the temp
//!   directory, hides the home folder's secrets, and switches TCP off unless
//!   `sandbox.network = true`; without Landlock a run is refused, or goes on unconfined
//!   only when `sandbox.required = false`;
//! - **a process group**, killed whole when the run ends, times out, is cancelled or
//!   starts more than [`group::RUNAWAY_PROCESSES`] processes;
//! - **a time limit** on the wall clock (a child process is not a tokio timer, and tests
//!   pause tokio's clock), and **output caps** keeping both ends of each stream;
//! - **git's hooks and configuration** put back as they were ([`guard`]).
//!
//! Whether a run may happen at all (the approval policy) is decided by the caller before
//! it asks; the runner only carries it out.

pub mod confine;
pub mod env;
pub mod group;
pub mod guard;
mod output;
pub mod service;
pub mod temp;

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

pub use confine::{ConfinePolicy, Network, Support};
pub use group::{GroupKiller, RUNAWAY_PROCESSES};
pub use output::HeadTail;

/// How runs are confined, from `[sandbox]` and the workspace.
#[derive(Clone, Debug, PartialEq)]
pub struct RunnerSettings {
    pub workspace: PathBuf,
    /// `sandbox.network`: whether commands may use the network.
    pub network: bool,
    /// `sandbox.required`: refuse to run anything when it cannot be confined.
    pub required: bool,
    /// `sandbox.writablePaths`: places besides the workspace commands may write.
    pub writable: Vec<PathBuf>,
    /// `sandbox.hiddenPaths`: places besides the home folder's secrets commands may not
    /// read.
    pub hidden: Vec<PathBuf>,
    /// Variable names removed from every environment besides credential-looking ones
    /// (`llm.apiKeyEnv` and the layers' key variables).
    pub scrub_env: Vec<String>,
    /// After the group is killed, how long to wait for its output pipes to close.
    pub kill_grace: Duration,
}

impl RunnerSettings {
    pub fn new(workspace: impl Into<PathBuf>) -> RunnerSettings {
        RunnerSettings {
            workspace: workspace.into(),
            network: false,
            required: true,
            writable: Vec::new(),
            hidden: Vec::new(),
            scrub_env: Vec::new(),
            kill_grace: Duration::from_secs(1),
        }
    }

    pub fn from_config(config: &crate::config::Config, workspace: &Path) -> RunnerSettings {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let expand = |p: &String| match (p.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => workspace.join(p),
        };
        RunnerSettings {
            network: config.sandbox.network,
            required: config.sandbox.required,
            writable: config.sandbox.writable_paths.iter().map(expand).collect(),
            hidden: config.sandbox.hidden_paths.iter().map(expand).collect(),
            scrub_env: config.llm.key_variables(),
            ..RunnerSettings::new(workspace)
        }
    }
}

/// How this runner's children are confined.
#[derive(Debug)]
pub enum Confinement {
    /// Landlock, with the ruleset children enter.
    Confined {
        ruleset: confine::Ruleset,
        support: Support,
    },
    /// No sandbox, and `sandbox.required = false` allows running anyway.
    Unconfined { reason: String },
    /// No sandbox, and it is required: nothing runs.
    Refused { reason: String },
}

/// One program to run.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Workspace-relative or absolute inside it; the workspace root when `None`.
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    /// Kept of each stream (half from the start, half from the end).
    pub max_output_bytes: usize,
    /// stderr into the same stream as stdout, interleaved as written (checks read the
    /// output as one text).
    pub merge_output: bool,
    /// Added to the scrubbed environment (never a credential).
    pub env: Vec<(String, String)>,
}

impl RunSpec {
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
    ) -> RunSpec {
        RunSpec {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: None,
            timeout: Duration::from_secs(120),
            max_output_bytes: 64 * 1024,
            merge_output: false,
            env: Vec::new(),
        }
    }

    /// `bash -c COMMAND`.
    pub fn shell(shell: impl Into<PathBuf>, command: &str) -> RunSpec {
        RunSpec::new(shell, ["-c", command])
    }

    pub fn timeout(mut self, timeout: Duration) -> RunSpec {
        self.timeout = timeout;
        self
    }

    pub fn max_output(mut self, bytes: usize) -> RunSpec {
        self.max_output_bytes = bytes;
        self
    }

    pub fn merged(mut self) -> RunSpec {
        self.merge_output = true;
        self
    }

    /// "python3 -m unittest -v", for messages.
    pub fn display(&self) -> String {
        std::iter::once(self.program.to_string_lossy().into_owned())
            .chain(self.args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A run that ended by itself.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: HeadTail,
    /// Empty when the output was merged.
    pub stderr: HeadTail,
    /// Protected files the run changed and that were put back ([`guard`]).
    pub restored: Vec<PathBuf>,
}

impl Finished {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// stdout, then stderr under a marker if there was any, then what was put back;
    /// "(no output)" when there was nothing.
    pub fn render(&self) -> String {
        let mut text = render_streams(&self.stdout, &self.stderr);
        if !self.restored.is_empty() {
            text.push_str(&restored_note(&self.restored));
        }
        text
    }

    /// As [`Finished::render`], but empty when there was no output (for output that is
    /// parsed).
    pub fn output(&self) -> String {
        if self.stdout.is_empty() && self.stderr.is_empty() && self.restored.is_empty() {
            return String::new();
        }
        self.render()
    }
}

fn restored_note(restored: &[PathBuf]) -> String {
    let list: Vec<String> = restored.iter().map(|p| p.display().to_string()).collect();
    format!(
        "\n[Conclave put back {}: commands may not change git's hooks or configuration]",
        list.join(", ")
    )
}

/// stdout, then stderr under a marker if there was any.
pub fn render_streams(stdout: &HeadTail, stderr: &HeadTail) -> String {
    match (stdout.is_empty(), stderr.is_empty()) {
        (true, true) => "(no output)".to_string(),
        (false, true) => stdout.render(),
        (true, false) => format!("[stderr]\n{}", stderr.render()),
        (false, false) => format!("{}\n[stderr]\n{}", stdout.render(), stderr.render()),
    }
}

/// Why a run did not end by itself.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{} is not installed", program.display())]
    NotInstalled { program: PathBuf },
    #[error("{} could not start: {message}", program.display())]
    Spawn { program: PathBuf, message: String },
    /// The sandbox is required and unavailable: nothing was run.
    #[error(
        "not run: commands must run in the sandbox, and {reason} (set sandbox.required = false to run them unconfined)"
    )]
    Unconfined { reason: String },
    #[error("did not finish within {} s", timeout.as_secs())]
    TimedOut { timeout: Duration, output: String },
    #[error(
        "stopped: it started more than {RUNAWAY_PROCESSES} processes at once (does the program run itself?)"
    )]
    Runaway { output: String },
    #[error("cancelled")]
    Cancelled,
}

/// Runs programs confined to a workspace. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    settings: RunnerSettings,
    /// The runs' private temp directory (removed with the runner).
    temp: tempfile::TempDir,
    confinement: Confinement,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("workspace", &self.inner.settings.workspace)
            .field("confinement", &self.describe())
            .finish()
    }
}

impl Runner {
    /// Builds the sandbox once; a workspace or temp directory that cannot be made is an
    /// error, a kernel without Landlock is not (see [`Runner::confinement`]).
    pub fn new(settings: RunnerSettings) -> std::io::Result<Runner> {
        let temp = temp::make(&std::env::temp_dir())?;
        let mut writable = vec![settings.workspace.clone(), temp.path().to_path_buf()];
        writable.extend(settings.writable.iter().cloned());
        let mut hidden = confine::home_secrets();
        hidden.extend(settings.hidden.iter().cloned());
        let policy = ConfinePolicy {
            writable,
            hidden,
            network: if settings.network {
                Network::On
            } else {
                Network::Off
            },
        };
        let confinement = Self::confine(&policy, settings.required);
        match &confinement {
            Confinement::Confined { support, .. } => {
                tracing::debug!(sandbox = %support.describe(), "commands are confined")
            }
            Confinement::Unconfined { reason } => {
                tracing::warn!("commands run UNCONFINED (sandbox.required = false): {reason}")
            }
            Confinement::Refused { reason } => tracing::warn!(
                "commands and checks will not run: {reason}, and sandbox.required = true"
            ),
        }
        Ok(Runner {
            inner: Arc::new(Inner {
                settings,
                temp,
                confinement,
            }),
        })
    }

    fn confine(policy: &ConfinePolicy, required: bool) -> Confinement {
        let support = Support::probe();
        let unavailable = |reason: String| {
            if required {
                Confinement::Refused { reason }
            } else {
                Confinement::Unconfined { reason }
            }
        };
        if let Support::Missing { reason } = &support {
            return unavailable(reason.clone());
        }
        if policy.network == Network::Off && !support.controls_network() {
            return unavailable(format!(
                "{} cannot switch the network off (ABI 4 needed; or set sandbox.network = true)",
                support.describe()
            ));
        }
        match confine::Ruleset::build(policy) {
            Ok(ruleset) => Confinement::Confined { ruleset, support },
            Err(e) => unavailable(e.to_string()),
        }
    }

    pub fn settings(&self) -> &RunnerSettings {
        &self.inner.settings
    }

    pub fn workspace(&self) -> &Path {
        &self.inner.settings.workspace
    }

    pub fn confinement(&self) -> &Confinement {
        &self.inner.confinement
    }

    /// A warning for people when runs are not confined; `None` when they are.
    pub fn warning(&self) -> Option<String> {
        match &self.inner.confinement {
            Confinement::Confined { .. } => None,
            Confinement::Unconfined { reason } => Some(format!(
                "Commands and checks run UNCONFINED: {reason}. They can read and write whatever you can (sandbox.required = false)."
            )),
            Confinement::Refused { reason } => Some(format!(
                "Commands and checks will not run: {reason}. Set sandbox.required = false in conclave.toml to run them unconfined."
            )),
        }
    }

    /// One line: how runs are confined, for approvals and logs.
    pub fn describe(&self) -> String {
        let network = if self.inner.settings.network {
            "network on (sandbox.network = true)"
        } else {
            "network off"
        };
        match &self.inner.confinement {
            Confinement::Confined { support, .. } => format!(
                "sandboxed ({}): writes only inside the workspace, home secrets hidden, {network}",
                support.describe()
            ),
            Confinement::Unconfined { reason } => format!("NOT sandboxed ({reason})"),
            Confinement::Refused { reason } => format!("refused: no sandbox ({reason})"),
        }
    }

    /// Runs `spec` to its end (or its time limit, or `cancel`). Dropping the future
    /// stops the run too.
    pub async fn run(
        &self,
        spec: RunSpec,
        cancel: &CancellationToken,
    ) -> Result<Finished, RunError> {
        let stop = cancel.child_token();
        let _stop_on_drop = stop.clone().drop_guard();
        let runner = self.clone();
        let program = spec.program.clone();
        tokio::task::spawn_blocking(move || runner.run_blocking(spec, &stop))
            .await
            .unwrap_or_else(|e| {
                Err(RunError::Spawn {
                    program,
                    message: e.to_string(),
                })
            })
    }

    /// [`Runner::run`] on the calling thread.
    pub fn run_blocking(
        &self,
        spec: RunSpec,
        cancel: &CancellationToken,
    ) -> Result<Finished, RunError> {
        let inner = &self.inner;
        let ruleset = match &inner.confinement {
            Confinement::Confined { ruleset, .. } => Some(ruleset.raw_fd()),
            Confinement::Unconfined { .. } => None,
            Confinement::Refused { reason } => {
                return Err(RunError::Unconfined {
                    reason: reason.clone(),
                });
            }
        };
        let cwd = match &spec.cwd {
            Some(dir) if dir.is_absolute() => dir.clone(),
            Some(dir) => inner.settings.workspace.join(dir),
            None => inner.settings.workspace.clone(),
        };
        let environment = env::scrubbed(
            std::env::vars_os(),
            &inner.settings.scrub_env,
            &spec.env,
            Some(inner.temp.path()),
        );
        let spawn_error = |message: String| RunError::Spawn {
            program: spec.program.clone(),
            message,
        };
        let (out_read, out_write) = pipe().map_err(|e| spawn_error(e.to_string()))?;
        let (err_read, err_write) = if spec.merge_output {
            (
                None,
                out_write
                    .try_clone()
                    .map_err(|e| spawn_error(e.to_string()))?,
            )
        } else {
            let (r, w) = pipe().map_err(|e| spawn_error(e.to_string()))?;
            (Some(r), w)
        };

        let snapshot = guard::Snapshot::take(&inner.settings.workspace);
        let mut command = std::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .current_dir(&cwd)
            .env_clear()
            .envs(environment)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out_write))
            .stderr(Stdio::from(err_write));
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
            let parent = std::process::id();
            // SAFETY: `confine::die_with_parent` and `confine::enter` make a few system
            // calls and nothing else, which is what may run between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    confine::die_with_parent(parent)?;
                    match ruleset {
                        Some(fd) => confine::enter(fd),
                        None => Ok(()),
                    }
                });
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RunError::NotInstalled {
                    program: spec.program.clone(),
                });
            }
            Err(e) => return Err(spawn_error(e.to_string())),
        };
        // The write ends now belong to the child alone, so the pipes close when it and
        // everything it started are gone.
        drop(command);
        let group = GroupKiller::new(child.id());
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let stdout = read_into(out_read, spec.max_output_bytes, done_tx.clone());
        let stderr = match err_read {
            Some(r) => read_into(r, spec.max_output_bytes, done_tx),
            None => {
                drop(done_tx);
                Arc::new(Mutex::new(HeadTail::new(spec.max_output_bytes)))
            }
        };
        let readers = if spec.merge_output { 1 } else { 2 };

        enum End {
            Exited(ExitStatus),
            TimedOut,
            Cancelled,
            Runaway,
        }
        let started = Instant::now();
        let mut polls: u32 = 0;
        let end = loop {
            match child.try_wait() {
                Ok(Some(status)) => break End::Exited(status),
                Ok(None) => {}
                Err(e) => {
                    drop(group);
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(spawn_error(e.to_string()));
                }
            }
            polls += 1;
            if cancel.is_cancelled() {
                break End::Cancelled;
            }
            if started.elapsed() >= spec.timeout {
                break End::TimedOut;
            }
            if polls % 50 == 0
                && group
                    .as_ref()
                    .and_then(GroupKiller::size)
                    .is_some_and(|n| n > RUNAWAY_PROCESSES)
            {
                break End::Runaway;
            }
            // Quick commands answer quickly; long ones are polled less often.
            let pause = match polls {
                0..=20 => 1,
                21..=100 => 5,
                _ => 10,
            };
            std::thread::sleep(Duration::from_millis(pause));
        };
        // Background jobs die with the command; a killed command is reaped.
        if let Some(group) = &group {
            group.kill();
        }
        if !matches!(end, End::Exited(_)) {
            let _ = child.kill();
            let _ = child.wait();
        }
        // Something that left the group (setsid) may hold a pipe open: stop waiting for
        // it after the grace period.
        let grace_ends = Instant::now() + inner.settings.kill_grace;
        for _ in 0..readers {
            let left = grace_ends.saturating_duration_since(Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                tracing::warn!(
                    program = %spec.program.display(),
                    "command output still open after its group was killed"
                );
                break;
            }
        }
        drop(group);
        let restored = snapshot.restore();
        if !restored.is_empty() {
            tracing::warn!(
                program = %spec.program.display(),
                files = ?restored,
                "a command changed git's hooks or configuration; put back"
            );
        }
        let take = |buffer: Arc<Mutex<HeadTail>>| {
            std::mem::replace(
                &mut *buffer.lock().unwrap_or_else(|e| e.into_inner()),
                HeadTail::new(0),
            )
        };
        let (stdout, stderr) = (take(stdout), take(stderr));
        let output = || {
            let mut text = render_streams(&stdout, &stderr);
            if !restored.is_empty() {
                text.push_str(&restored_note(&restored));
            }
            text
        };
        match end {
            End::Exited(status) => Ok(Finished {
                status,
                stdout,
                stderr,
                restored,
            }),
            End::TimedOut => Err(RunError::TimedOut {
                timeout: spec.timeout,
                output: output(),
            }),
            End::Runaway => Err(RunError::Runaway { output: output() }),
            End::Cancelled => Err(RunError::Cancelled),
        }
    }
}

/// A pipe whose ends are closed on exec (the child gets its copies through `Stdio`).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Reads `pipe` to its end on a thread of its own, into a bounded buffer; says so on
/// `done` when the pipe closes.
fn read_into(
    pipe: OwnedFd,
    limit: usize,
    done: std::sync::mpsc::Sender<()>,
) -> Arc<Mutex<HeadTail>> {
    let buffer = Arc::new(Mutex::new(HeadTail::new(limit)));
    let filled = buffer.clone();
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(pipe);
        let mut chunk = vec![0u8; 8192];
        loop {
            match file.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => filled
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&chunk[..n]),
            }
        }
        let _ = done.send(());
    });
    buffer
}

#[cfg(test)]
mod tests;
