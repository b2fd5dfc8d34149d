//! The process group a command runs in: everything it started, killed together, so a
//! timed-out, cancelled or finished command leaves no process behind, and a program that
//! keeps starting copies of itself is stopped before it exhausts the machine.

/// More processes than this in one command's group at once is a runaway, stopped.
pub const RUNAWAY_PROCESSES: usize = 64;

/// Kills a process group when dropped, so that a cancelled or timed-out command cannot
/// leave processes behind.
pub struct GroupKiller {
    pgid: libc::pid_t,
}

impl GroupKiller {
    /// For the group of `pid`, a child spawned with `process_group(0)`. `None` for an id
    /// that cannot be such a group (0 or 1 would be our own group or init's).
    pub fn new(pid: u32) -> Option<GroupKiller> {
        libc::pid_t::try_from(pid)
            .ok()
            .filter(|&pgid| pgid > 1)
            .map(|pgid| GroupKiller { pgid })
    }

    pub fn pgid(&self) -> libc::pid_t {
        self.pgid
    }

    pub fn kill(&self) {
        // SAFETY: killpg only takes integers. `pgid` is the id of a group we created for
        // our child (checked > 1 at construction), never 0, which would be our own group.
        unsafe {
            libc::killpg(self.pgid, libc::SIGKILL);
        }
    }

    /// How many processes are in the group now (Linux: from /proc; elsewhere `None`).
    pub fn size(&self) -> Option<usize> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let entries = std::fs::read_dir("/proc").ok()?;
        let group = self.pgid.to_string();
        let count = entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .bytes()
                    .all(|b| b.is_ascii_digit())
            })
            .filter(|e| {
                // /proc/PID/stat: "pid (comm) state ppid pgrp …"; comm may hold spaces.
                std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| {
                    stat.rsplit_once(')')
                        .and_then(|(_, rest)| rest.split_whitespace().nth(2).map(|g| g == group))
                        .unwrap_or(false)
                })
            })
            .count();
        Some(count)
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
