//! One `conclave serve` per workspace: two servers on one store and one team would each
//! resume the other's tasks. The lock is an advisory `flock` on
//! `.conclave/serve.lock`, so the kernel releases it whenever the holder dies, however
//! it dies; the file keeps the holder's pid for the message a second server prints.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// Held for as long as the server runs; dropping it releases the workspace.
#[derive(Debug)]
pub struct WorkspaceLock {
    _file: File,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another `conclave serve`{} is already serving {}; close that editor window (or stop that process) first",
        .pid.map(|p| format!(" (pid {p})")).unwrap_or_default(),
        .workspace.display()
    )]
    Held {
        workspace: PathBuf,
        pid: Option<u32>,
    },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl WorkspaceLock {
    /// Takes the workspace's lock without waiting.
    pub fn acquire(workspace: &Path) -> Result<WorkspaceLock, LockError> {
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
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let error = std::io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(LockError::Held {
                    workspace: workspace.to_path_buf(),
                    pid: holder.trim().parse().ok(),
                });
            }
            return Err(io(error));
        }
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(WorkspaceLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_workspace_is_refused_until_the_first_is_dropped() {
        let workspace = tempfile::tempdir().unwrap();
        let first = WorkspaceLock::acquire(workspace.path()).unwrap();
        let second = WorkspaceLock::acquire(workspace.path()).unwrap_err();
        match &second {
            LockError::Held { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        assert!(second.to_string().contains("already serving"), "{second}");
        drop(first);
        WorkspaceLock::acquire(workspace.path()).expect("free again once released");
    }
}
