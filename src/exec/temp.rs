//! The runs' private temp directory, and sweeping up after processes that died without
//! removing theirs.
//!
//! A runner's directory is removed when the runner is dropped, which a killed process
//! never does. Each directory's name carries the id of the process that made it
//! (`conclave-run-<pid>-…`), so a new runner removes those of processes that are gone.

use std::path::Path;

const PREFIX: &str = "conclave-run-";

/// A new private temp directory for this process's runs, under `root`, after removing
/// the ones under it whose process is gone.
pub fn make(root: &Path) -> std::io::Result<tempfile::TempDir> {
    sweep_abandoned(root);
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-", std::process::id()))
        .tempdir_in(root)
}

/// Removes the run directories under `root` left by processes no longer running. Those
/// of running processes (this one included) stay, and so does anything not named as a
/// run directory; what cannot be removed is left for the next sweep.
pub fn sweep_abandoned(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || is_running(pid) {
            continue;
        }
        let path = entry.path();
        // Only directories this user made; never follow a link somewhere else.
        if entry.file_type().is_ok_and(|t| t.is_dir()) && owned_by_me(&path) {
            match std::fs::remove_dir_all(&path) {
                Ok(()) => {
                    tracing::debug!(path = %path.display(), "removed the temp directory of a process that is gone")
                }
                Err(e) => {
                    tracing::debug!(path = %path.display(), "could not remove an abandoned temp directory: {e}")
                }
            }
        }
    }
}

/// Whether a process with this id exists (a signal 0 is delivered or refused for lack of
/// permission, not for lack of a process).
fn is_running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 checks that the process exists and sends nothing.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

fn owned_by_me(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == me)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directories_of_gone_processes_are_swept_and_the_rest_kept() {
        let root = tempfile::tempdir().unwrap();
        // Above Linux's highest possible pid: no such process can be running.
        let gone = root.path().join(format!("{PREFIX}999999999-abc"));
        std::fs::create_dir_all(gone.join("sub")).unwrap();
        std::fs::write(gone.join("sub/left.txt"), "x").unwrap();
        let unrelated = root.path().join("conclave-run-notapid-x");
        std::fs::create_dir(&unrelated).unwrap();
        let other = root.path().join("someone-else");
        std::fs::create_dir(&other).unwrap();
        // The parent of this process is running.
        let parent = root.path().join(format!(
            "{PREFIX}{}-def",
            std::os::unix::process::parent_id()
        ));
        std::fs::create_dir(&parent).unwrap();

        let mine = make(root.path()).unwrap();

        assert!(!gone.exists(), "a gone process's directory is swept");
        assert!(unrelated.exists() && other.exists() && parent.exists());
        assert!(mine.path().exists());
        let name = mine
            .path()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        assert!(
            name.starts_with(&format!("{PREFIX}{}-", std::process::id())),
            "{name}"
        );
        // A second runner of this process leaves the first one's directory alone.
        let second = make(root.path()).unwrap();
        assert!(mine.path().exists() && second.path().exists());
    }
}
