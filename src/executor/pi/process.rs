//! One pi process in RPC mode: spawning, the stdin/stdout/stderr plumbing, the
//! readiness probe, and a shutdown that always reaps the child.
//!
//! stdout is split on `\n` only (pi's framing: JSON strings may contain U+2028) and
//! handed out as lines through a channel. Commands go through another channel to a
//! writer task that owns stdin; dropping the sender closes stdin, which is how pi is
//! asked to exit. stderr goes to `tracing` and a short tail is kept for error messages.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::errors::ErrorContext;
use super::events::{PiLine, parse_line};

/// How often `get_state` is sent while waiting for pi to start answering.
const PROBE_INTERVAL: Duration = Duration::from_millis(250);

/// Lines of pi's stderr kept for error messages.
const STDERR_TAIL_LINES: usize = 20;

/// Stdout lines buffered between the reader task and the run.
const LINE_BUFFER: usize = 1024;

/// The id prefix of readiness probes; their late answers are ignored.
const PROBE_ID_PREFIX: &str = "conclave-ready-";

/// Pids of the pi processes an executor has spawned and not yet reaped.
pub type LiveSet = Arc<Mutex<HashSet<u32>>>;

/// What to start.
pub struct SpawnSpec<'a> {
    pub program: &'a Path,
    pub args: Vec<OsString>,
    pub cwd: &'a Path,
    /// pi's own variables, added to the scrubbed environment as they are.
    pub env: Vec<(&'static str, String)>,
    /// Removed from the inherited environment besides credential-looking names.
    pub scrub_env: &'a [String],
    pub temp_dir: std::path::PathBuf,
    /// The Landlock ruleset the process enters, when it is confined.
    pub confinement: Option<std::os::fd::RawFd>,
}

/// Why pi did not become ready.
#[derive(Debug)]
pub enum NotReady {
    Cancelled,
    TimedOut,
    /// stdout closed: pi exited (see the stderr tail).
    Exited,
}

/// How a pi process ended.
#[derive(Debug)]
pub struct Exited {
    /// `None` when the status could not be observed.
    pub status: Option<ExitStatus>,
    /// The last lines pi wrote to stderr.
    pub stderr_tail: String,
}

/// A running pi.
pub struct PiProcess {
    child: Child,
    pid: Option<u32>,
    lines: mpsc::Receiver<String>,
    commands: mpsc::UnboundedSender<String>,
    tasks: Vec<JoinHandle<()>>,
    stderr_task: Option<JoinHandle<()>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    live: LiveSet,
}

impl PiProcess {
    pub fn spawn(
        spec: SpawnSpec<'_>,
        errors: &ErrorContext,
        live: &LiveSet,
    ) -> std::io::Result<Self> {
        let mut command = Command::new(spec.program);
        command
            .args(&spec.args)
            .current_dir(spec.cwd)
            .env_clear()
            .envs(crate::exec::env::scrubbed(
                std::env::vars_os(),
                spec.scrub_env,
                &[],
                Some(&spec.temp_dir),
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A safety net for a dropped execution; the normal path reaps explicitly.
            .kill_on_drop(true);
        for (key, value) in &spec.env {
            command.env(key, value);
        }
        if let Some(ruleset) = spec.confinement {
            // SAFETY: `confine::enter` makes system calls only, as may run between fork
            // and exec.
            unsafe {
                command.pre_exec(move || crate::exec::confine::enter(ruleset));
            }
        }
        let mut child = command.spawn()?;
        let pid = child.id();
        if let Some(pid) = pid {
            lock(live).insert(pid);
        }
        tracing::debug!(?pid, program = %spec.program.display(), "pi started");

        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (line_tx, lines) = mpsc::channel(LINE_BUFFER);
        let (commands, command_rx) = mpsc::unbounded_channel();
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let mut tasks = Vec::new();
        if let Some(stdout) = stdout {
            tasks.push(tokio::spawn(read_stdout(stdout, line_tx)));
        }
        if let Some(stdin) = stdin {
            tasks.push(tokio::spawn(write_stdin(stdin, command_rx)));
        }
        let stderr_task = stderr.map(|stderr| {
            tokio::spawn(read_stderr(
                stderr,
                Arc::clone(&stderr_tail),
                errors.clone(),
                pid,
            ))
        });
        Ok(PiProcess {
            child,
            pid,
            lines,
            commands,
            tasks,
            stderr_task,
            stderr_tail,
            live: Arc::clone(live),
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The stdout lines and the command sender, for following a run.
    pub fn channels(&mut self) -> (&mut mpsc::Receiver<String>, &mpsc::UnboundedSender<String>) {
        (&mut self.lines, &self.commands)
    }

    /// Queues one JSON command for pi's stdin.
    pub fn send(&self, command: &serde_json::Value) {
        // A closed channel means stdin is gone; stdout closing reports that.
        let _ = self.commands.send(command.to_string());
    }

    /// Probes with `get_state` until pi answers. pi announces nothing when it is ready,
    /// and commands sent before it reads stdin simply wait in the pipe.
    pub async fn wait_ready(
        &mut self,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<(), NotReady> {
        let mut probes = 0u32;
        let mut next_probe = Instant::now();
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(NotReady::Cancelled),
                line = self.lines.recv() => {
                    let Some(line) = line else { return Err(NotReady::Exited) };
                    if let Ok(Some(PiLine::Response(response))) = parse_line(&line) {
                        if response.id.as_deref().is_some_and(|id| id.starts_with(PROBE_ID_PREFIX)) {
                            tracing::debug!(pid = ?self.pid, probes, "pi is ready");
                            return Ok(());
                        }
                    }
                }
                () = tokio::time::sleep_until(next_probe) => {
                    probes += 1;
                    self.send(&serde_json::json!({
                        "id": format!("{PROBE_ID_PREFIX}{probes}"),
                        "type": "get_state",
                    }));
                    next_probe = Instant::now() + PROBE_INTERVAL;
                }
                () = tokio::time::sleep_until(deadline) => return Err(NotReady::TimedOut),
            }
        }
    }

    /// Ends pi and reaps it: close stdin (pi exits when its input ends), then SIGTERM,
    /// then SIGKILL, each after `grace`.
    pub async fn shutdown(mut self, grace: Duration) -> Exited {
        // Stop delivering lines; the reader keeps draining stdout so pi never blocks.
        self.lines.close();
        // Replacing the only sender with a dead one ends the writer task, closing stdin.
        self.commands = mpsc::unbounded_channel().0;
        let status = self.reap(grace).await;
        if let Some(pid) = self.pid {
            lock(&self.live).remove(&pid);
        }
        // Children of pi's bash tool may keep stdout open; the readers are not needed.
        for task in self.tasks.drain(..) {
            task.abort();
        }
        if let Some(stderr_task) = self.stderr_task.take() {
            // Let stderr drain so the tail is complete, but never wait on a grandchild.
            if tokio::time::timeout(grace, stderr_task).await.is_err() {
                tracing::debug!(pid = ?self.pid, "pi's stderr stayed open after exit");
            }
        }
        tracing::debug!(pid = ?self.pid, ?status, "pi stopped");
        let stderr_tail = lock(&self.stderr_tail)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
        Exited {
            status,
            stderr_tail,
        }
    }

    async fn reap(&mut self, grace: Duration) -> Option<ExitStatus> {
        if let Ok(Ok(status)) = tokio::time::timeout(grace, self.child.wait()).await {
            return Some(status);
        }
        if let Some(pid) = self.pid {
            tracing::warn!(
                pid,
                "pi did not exit after its stdin closed; terminating it"
            );
            terminate(pid);
            if let Ok(Ok(status)) = tokio::time::timeout(grace, self.child.wait()).await {
                return Some(status);
            }
            tracing::warn!(pid, "pi ignored SIGTERM; killing it");
        }
        if let Err(error) = self.child.start_kill() {
            tracing::error!(pid = ?self.pid, %error, "could not kill pi");
        }
        self.child.wait().await.ok()
    }
}

impl Drop for PiProcess {
    fn drop(&mut self) {
        // Reached without `shutdown` only when the execution future was dropped;
        // `kill_on_drop` ends the child and tokio reaps it in the background.
        if let Some(pid) = self.pid {
            lock(&self.live).remove(&pid);
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

#[cfg(unix)]
fn terminate(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our unreaped child.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

#[cfg(not(unix))]
fn terminate(_pid: u32) {}

async fn read_stdout(stdout: tokio::process::ChildStdout, lines: mpsc::Sender<String>) {
    let mut reader = BufReader::new(stdout);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer).await {
            Ok(0) => return,
            Ok(_) => {
                if buffer.last() == Some(&b'\n') {
                    buffer.pop();
                }
                let line = String::from_utf8_lossy(&buffer).into_owned();
                // Nobody listens any more (shutting down): keep draining regardless,
                // because node blocks on a full stdout pipe and could not exit.
                let _ = lines.send(line).await;
            }
            Err(error) => {
                tracing::warn!(%error, "reading pi's stdout failed");
                return;
            }
        }
    }
}

async fn write_stdin(mut stdin: ChildStdin, mut commands: mpsc::UnboundedReceiver<String>) {
    while let Some(mut command) = commands.recv().await {
        command.push('\n');
        let written = async {
            stdin.write_all(command.as_bytes()).await?;
            stdin.flush().await
        };
        if let Err(error) = written.await {
            tracing::debug!(%error, "pi's stdin is closed");
            return;
        }
    }
    // All senders are gone: dropping stdin here closes it, and pi exits.
}

async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    errors: ErrorContext,
    pid: Option<u32>,
) {
    let mut reader = BufReader::new(stderr);
    let mut buffer = Vec::new();
    // Read to the end whatever the bytes are: an undrained stderr would block pi.
    while let Ok(read) = reader.read_until(b'\n', &mut buffer).await {
        if read == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&buffer);
        let line = errors.redact(text.trim_end());
        buffer.clear();
        tracing::debug!(target: "conclave::executor::pi::stderr", ?pid, "{line}");
        let mut tail = lock(&tail);
        if tail.len() == STDERR_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// A poisoned lock only means another thread panicked mid-update of plain data.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
