//! One Conclave per workspace (`serve`, `acp`, `run` or `demo`): two teams on one store
//! would each resume the other's tasks and write the same files. The lock is an advisory
//! `flock` on `.conclave/serve.lock`, so the kernel releases it whenever the holder dies,
//! however it dies. The file describes the holder ([`Holder`]: pid, since when, which
//! editor or command), for the error a second one answers and for taking over from a
//! holder whose editor is gone.
//!
//! A holder is *orphaned* when the editor that started it is gone: the `processId` its
//! editor gave in `initialize` is dead, or (when none was given) the holder's parent
//! process changed since it took the lock. Such a server serves nobody; a new one asks
//! it to stop (SIGTERM, on which `conclave serve` shuts down cleanly), waits for the
//! lock, and as a last resort ends it with SIGKILL (the store survives a kill).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};

/// How long an orphaned holder is given to shut down cleanly after SIGTERM.
const TAKEOVER_GRACE: Duration = Duration::from_secs(8);
/// After SIGKILL, how long the kernel is given to release the lock.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Held for as long as the server runs; dropping it releases the workspace.
#[derive(Debug)]
pub struct WorkspaceLock {
    _file: File,
    /// The holder this server took over from, if any.
    pub took_over: Option<Holder>,
}

/// Who holds a workspace: what `.conclave/serve.lock` holds, as one line of JSON.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub pid: u32,
    /// When it took the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<DateTime<Utc>>,
    /// Its parent process when it took the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_pid: Option<u32>,
    /// The `processId` its editor gave in `initialize`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editor_pid: Option<u32>,
    /// The editor's `clientInfo` (`{ name, version? }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientName>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientName {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl Holder {
    /// This process, started by `client` whose process is `editor_pid`.
    pub fn this_process(client: Option<ClientName>, editor_pid: Option<u32>) -> Holder {
        Holder {
            pid: std::process::id(),
            since: Some(Utc::now()),
            // SAFETY: getppid has no preconditions and cannot fail.
            parent_pid: Some(unsafe { libc::getppid() } as u32),
            editor_pid,
            client,
        }
    }

    /// Reads the lock file's text: JSON, or a bare pid as older servers wrote it.
    fn parse(text: &str) -> Option<Holder> {
        let text = text.trim();
        serde_json::from_str(text).ok().or_else(|| {
            text.parse().ok().map(|pid| Holder {
                pid,
                ..Holder::default()
            })
        })
    }

    /// "pid 123, since 18:20:11 UTC, for Visual Studio Code 1.100.3"
    pub fn describe(&self) -> String {
        let mut text = format!("pid {}", self.pid);
        if let Some(since) = self.since {
            text.push_str(&format!(
                ", since {}",
                since.to_rfc3339_opts(SecondsFormat::Secs, true)
            ));
        }
        if let Some(client) = &self.client {
            text.push_str(&format!(", for {}", client.name));
            if let Some(version) = &client.version {
                text.push_str(&format!(" {version}"));
            }
        }
        if let Some(editor) = self.editor_pid {
            text.push_str(&format!(" (editor pid {editor})"));
        }
        text
    }

    /// Why this holder serves nobody any more, if it does not.
    pub fn orphaned(&self) -> Option<String> {
        if !process_alive(self.pid) {
            return Some(format!("its process {} has ended", self.pid));
        }
        match self.editor_pid {
            Some(editor) if !process_alive(editor) => {
                Some(format!("the editor that started it (pid {editor}) is gone"))
            }
            Some(_) => None,
            None => match (self.parent_pid, parent_of(self.pid)) {
                (Some(was), Some(now)) if was != now => {
                    Some(format!("the process that started it (pid {was}) is gone"))
                }
                _ => None,
            },
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another Conclave server ({}) is already serving {}. Close that editor window, or stop that server (`kill {}`), then start Conclave here again",
        .holder.as_ref().map(Holder::describe).unwrap_or_else(|| "pid unknown".into()),
        .workspace.display(),
        .holder.as_ref().map(|h| h.pid.to_string()).unwrap_or_else(|| "<pid>".into())
    )]
    Held {
        workspace: PathBuf,
        holder: Option<Holder>,
    },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl LockError {
    /// The holder's pid, when known.
    pub fn holder_pid(&self) -> Option<u32> {
        match self {
            LockError::Held { holder, .. } => holder.as_ref().map(|h| h.pid),
            LockError::Io { .. } => None,
        }
    }
}

impl WorkspaceLock {
    /// Takes the workspace's lock for `me` without waiting on a live holder; an orphaned
    /// holder is stopped and its lock taken over.
    pub fn acquire(workspace: &Path, me: &Holder) -> Result<WorkspaceLock, LockError> {
        let dir = workspace.join(".conclave");
        let path = dir.join("serve.lock");
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let mut took_over = None;
        if !try_lock(&file).map_err(io)? {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder = Holder::parse(&text);
            let held = || LockError::Held {
                workspace: workspace.to_path_buf(),
                holder: holder.clone(),
            };
            let Some(old) = holder.clone() else {
                return Err(held());
            };
            let Some(why) = old.orphaned() else {
                return Err(held());
            };
            tracing::warn!(
                "taking the workspace over from the Conclave server ({}): {why}",
                old.describe()
            );
            if !take_over(&file, old.pid).map_err(io)? {
                return Err(held());
            }
            took_over = Some(old);
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let line = serde_json::to_string(me).unwrap_or_else(|_| me.pid.to_string());
        writeln!(file, "{line}").map_err(io)?;
        file.flush().map_err(io)?;
        Ok(WorkspaceLock {
            _file: file,
            took_over,
        })
    }
}

/// `flock` without waiting: `Ok(false)` when someone else holds it.
fn try_lock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock on a descriptor the caller owns; no memory is involved.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(error)
    }
}

/// Asks `pid` to stop (SIGTERM, with SIGCONT in case it is stopped), then insists
/// (SIGKILL), until the lock is ours. `Ok(false)` if it never came free.
fn take_over(file: &File, pid: u32) -> std::io::Result<bool> {
    for (signals, grace) in [
        (&[libc::SIGTERM, libc::SIGCONT][..], TAKEOVER_GRACE),
        (&[libc::SIGKILL][..], KILL_GRACE),
    ] {
        for &signal in signals {
            // SAFETY: kill has no memory preconditions; a vanished pid is ESRCH.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if try_lock(file)? {
                return Ok(true);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    try_lock(file)
}

/// Whether `pid` is a running process (a zombie is not).
pub fn process_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let exists = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && proc_stat(pid).is_none_or(|(state, _)| state != 'Z' && state != 'X')
}

/// The parent of `pid`, from `/proc`.
fn parent_of(pid: u32) -> Option<u32> {
    proc_stat(pid).map(|(_, parent)| parent)
}

/// (state, parent pid) of `pid` from `/proc/<pid>/stat`; `None` where there is no /proc.
fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: read after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_workspace_is_refused_until_the_first_is_dropped() {
        let workspace = tempfile::tempdir().unwrap();
        let me = Holder::this_process(
            Some(ClientName {
                name: "Test Editor".into(),
                version: Some("1.2".into()),
            }),
            Some(std::process::id()),
        );
        let first = WorkspaceLock::acquire(workspace.path(), &me).unwrap();
        let second = WorkspaceLock::acquire(workspace.path(), &me).unwrap_err();
        match &second {
            LockError::Held { holder, .. } => assert_eq!(holder.as_ref(), Some(&me)),
            other => panic!("expected Held, got {other:?}"),
        }
        let message = second.to_string();
        assert!(message.contains("already serving"), "{message}");
        assert!(message.contains("for Test Editor 1.2"), "{message}");
        assert!(
            message.contains(&format!("kill {}", std::process::id())),
            "{message}"
        );
        drop(first);
        WorkspaceLock::acquire(workspace.path(), &me).expect("free again once released");
    }

    #[test]
    fn holders_written_by_older_servers_still_name_their_pid() {
        assert_eq!(Holder::parse("4242\n").map(|h| h.pid), Some(4242));
        assert_eq!(Holder::parse("garbage"), None);
    }

    #[test]
    fn without_an_editor_pid_a_holder_whose_parent_changed_is_orphaned() {
        let me = Holder::this_process(None, None);
        assert_eq!(me.orphaned(), None, "its parent is the one it started with");
        let reparented = Holder {
            parent_pid: me.parent_pid.map(|p| p + 1),
            ..me
        };
        let why = reparented.orphaned().expect("its parent changed");
        assert!(why.contains("is gone"), "{why}");
    }

    #[test]
    fn a_holder_whose_editor_is_gone_is_orphaned() {
        let mut editor = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let holder = Holder {
            pid: std::process::id(),
            editor_pid: Some(editor.id()),
            ..Holder::default()
        };
        assert_eq!(holder.orphaned(), None, "the editor is alive");
        editor.kill().unwrap();
        editor.wait().unwrap();
        let why = holder.orphaned().expect("the editor is gone");
        assert!(why.contains("is gone"), "{why}");
    }
}
