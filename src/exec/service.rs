//! A long-lived child that talks over its stdin and stdout (an MCP server): started the
//! way every run is (the runner's sandbox, the scrubbed environment, the workspace as its
//! folder, a process group of its own) and killed with its whole group when dropped.
//!
//! Unlike [`Runner::run`](super::Runner::run) nothing waits for it to end: the caller
//! speaks a protocol over the pipes, and dropping the [`Service`] is how it stops.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::{Confinement, GroupKiller, RunError, Runner, env};

/// Lines of a service's stderr kept for messages about why it stopped.
const STDERR_TAIL_LINES: usize = 20;

/// What to start.
#[derive(Clone, Debug)]
pub struct ServiceSpec {
    /// Looked up in `PATH` when it has no slash.
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Added to the scrubbed environment as they are: the person named them for this
    /// program, credentials included (an MCP server's token).
    pub env: Vec<(String, String)>,
    /// For logs: whose process this is (`MCP server db`).
    pub label: String,
}

/// A running service. Dropping it kills its process group.
pub struct Service {
    child: Child,
    stdio: Option<(ChildStdout, ChildStdin)>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    _group: Option<GroupKiller>,
}

impl Service {
    /// Its stdout and stdin, once: the protocol's transport.
    pub fn take_stdio(&mut self) -> Option<(ChildStdout, ChildStdin)> {
        self.stdio.take()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The last lines it wrote to stderr, oldest first.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Whether it has exited, with its status when it has.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Runner {
    /// Starts `spec` as a service: confined like every run (refused when the sandbox is
    /// required and missing), in the workspace, with the scrubbed environment plus
    /// `spec.env`, in a process group of its own.
    pub fn spawn_service(&self, spec: &ServiceSpec) -> Result<Service, RunError> {
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
        let mut environment = env::scrubbed(
            std::env::vars_os(),
            &inner.settings.scrub_env,
            &[],
            Some(inner.temp.path()),
        );
        for (name, value) in &spec.env {
            environment.retain(|(n, _)| n.as_os_str() != name.as_str());
            environment.push((name.into(), value.into()));
        }
        let mut command = tokio::process::Command::new(&spec.program);
        command
            .args(&spec.args)
            .current_dir(&inner.settings.workspace)
            .env_clear()
            .envs(environment)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            // A safety net: the group killer below is what stops everything it started.
            .kill_on_drop(true);
        if let Some(fd) = ruleset {
            // SAFETY: `confine::enter` makes two system calls and nothing else, which is
            // what may run between fork and exec.
            unsafe {
                command.pre_exec(move || super::confine::enter(fd));
            }
        }
        let mut child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => RunError::NotInstalled {
                program: spec.program.clone(),
            },
            _ => RunError::Spawn {
                program: spec.program.clone(),
                message: e.to_string(),
            },
        })?;
        let group = child.id().and_then(GroupKiller::new);
        tracing::debug!(pid = ?child.id(), service = %spec.label, "started");
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            let tail = stderr_tail.clone();
            let label = spec.label.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    // Through redaction like every log line: a server may print its token.
                    tracing::debug!(service = %label, "stderr: {line}");
                    let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        let stdio = child.stdout.take().zip(child.stdin.take());
        Ok(Service {
            child,
            stdio,
            stderr_tail,
            _group: group,
        })
    }
}
