//! Confinement: what a command, a check or an executor's process may touch, enforced by
//! the kernel (Landlock, Linux 5.13+), whoever wrote the program.
//!
//! - **Writes** only under the writable paths: the workspace, the run's private temp
//!   directory, and what `sandbox.writablePaths` adds. Links and renames out of them are
//!   refused too (Landlock's `REFER` right exists only between writable places).
//! - **Reads** everywhere else, except the hidden paths: the home folder's secrets
//!   (`~/.ssh`, `~/.aws`, `~/.config`, …) and `sandbox.hiddenPaths`. Landlock only
//!   grants, so "all but these" is granted as every sibling along the way to each
//!   hidden path.
//! - **Network**: TCP `connect` and `bind` refused when it is off (ABI 4+), or allowed
//!   to a list of ports (an executor that must reach its model).
//! - **Scopes** (ABI 6+): no signals to processes outside the sandbox (the server
//!   itself, the editor) and no connections to abstract UNIX sockets outside it.
//!
//! The ruleset is built once, in the server; a child enters it between `fork` and
//! `exec` with two system calls ([`enter`]), which is all that may run there.

use std::collections::BTreeSet;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

/// Whether commands may use the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Network {
    Off,
    On,
    /// TCP connections only to these ports (and no listening).
    Ports(Vec<u16>),
}

/// What a confined process may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfinePolicy {
    /// Where it may write (and read); must exist.
    pub writable: Vec<PathBuf>,
    /// What it may not even read.
    pub hidden: Vec<PathBuf>,
    pub network: Network,
}

/// The home folder's places that hold credentials, never readable by a command.
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".aws",
    ".config",
    ".gnupg",
    ".netrc",
    ".docker",
    ".kube",
    ".azure",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    ".password-store",
    ".local/share/keyrings",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// The home folder's secrets, as absolute paths (whether they exist or not).
pub fn home_secrets() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return Vec::new();
    };
    let home = PathBuf::from(home);
    HOME_SECRETS.iter().map(|s| home.join(s)).collect()
}

/// What this kernel offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    Landlock { abi: i32 },
    Missing { reason: String },
}

impl Support {
    /// The kernel's Landlock ABI, asked once.
    pub fn probe() -> Support {
        static PROBED: std::sync::OnceLock<Support> = std::sync::OnceLock::new();
        PROBED.get_or_init(probe_kernel).clone()
    }

    /// One line for people: "Landlock ABI 7" or why there is none.
    pub fn describe(&self) -> String {
        match self {
            Support::Landlock { abi } => format!("Landlock ABI {abi}"),
            Support::Missing { reason } => reason.clone(),
        }
    }

    /// Whether TCP can be switched off (ABI 4+).
    pub fn controls_network(&self) -> bool {
        matches!(self, Support::Landlock { abi } if *abi >= 4)
    }
}

#[cfg(target_os = "linux")]
fn probe_kernel() -> Support {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) answers the ABI.
    // SAFETY: with a null attribute and size 0 this call reads and writes no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    if abi >= 1 {
        return Support::Landlock { abi: abi as i32 };
    }
    let error = io::Error::last_os_error();
    Support::Missing {
        reason: match error.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no Landlock (Linux 5.13 or later needed)".into(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built into this kernel but not enabled (boot with lsm=…,landlock)"
                    .into()
            }
            _ => format!("Landlock is unavailable: {error}"),
        },
    }
}

#[cfg(not(target_os = "linux"))]
fn probe_kernel() -> Support {
    Support::Missing {
        reason: "commands cannot be confined on this operating system (Landlock is Linux's)".into(),
    }
}

/// Why a ruleset could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the sandbox could not be set up: {0}")]
pub struct ConfineError(pub String);

/// A Landlock ruleset, ready for children to enter.
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
}

impl Ruleset {
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Builds the ruleset for `policy` on this kernel.
    #[cfg(target_os = "linux")]
    pub fn build(policy: &ConfinePolicy) -> Result<Ruleset, ConfineError> {
        use landlock::{
            ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, Ruleset as Rules,
            RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
        };
        let abi_number = match Support::probe() {
            Support::Landlock { abi } => abi,
            Support::Missing { reason } => return Err(ConfineError(reason)),
        };
        let abi = ABI::from(abi_number);
        let fail = |e: landlock::RulesetError| ConfineError(e.to_string());
        let mut rules = Rules::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .map_err(fail)?;
        if abi_number >= 4 && policy.network != Network::On {
            rules = rules
                .handle_access(AccessNet::from_all(abi))
                .map_err(fail)?;
        }
        if abi_number >= 6 {
            rules = rules
                .scope(Scope::AbstractUnixSocket | Scope::Signal)
                .map_err(fail)?;
        }
        let mut created = rules.create().map_err(fail)?;

        let hidden: Vec<PathBuf> = policy
            .hidden
            .iter()
            .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
            .collect();
        let readable = readable_except(Path::new("/"), &hidden);
        created = created
            .add_rules(path_beneath_rules(&readable, AccessFs::from_read(abi)))
            .map_err(fail)?;
        // Devices programs write to as a matter of course.
        let devices = [
            "/dev/null",
            "/dev/zero",
            "/dev/full",
            "/dev/tty",
            "/dev/shm",
        ];
        created = created
            .add_rules(path_beneath_rules(devices, AccessFs::from_all(abi)))
            .map_err(fail)?;
        let writable: Vec<&PathBuf> = policy.writable.iter().filter(|p| p.exists()).collect();
        created = created
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
            .map_err(fail)?;
        if let Network::Ports(ports) = &policy.network
            && abi_number >= 4
        {
            for port in ports {
                created = created
                    .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                    .map_err(fail)?;
            }
        }
        let fd: Option<OwnedFd> = created.into();
        fd.map(|fd| Ruleset { fd })
            .ok_or_else(|| ConfineError("the kernel gave no ruleset".into()))
    }

    #[cfg(not(target_os = "linux"))]
    pub fn build(_policy: &ConfinePolicy) -> Result<Ruleset, ConfineError> {
        Err(ConfineError(Support::probe().describe()))
    }
}

/// Every path under `root` except the `hidden` ones: the children of each directory on
/// the way to a hidden path, and `root`'s other children whole. Landlock rules only
/// grant, and a grant on a directory covers everything beneath it.
pub fn readable_except(root: &Path, hidden: &[PathBuf]) -> Vec<PathBuf> {
    let hidden: Vec<&PathBuf> = hidden.iter().filter(|h| h.starts_with(root)).collect();
    if hidden.is_empty() {
        return vec![root.to_path_buf()];
    }
    let mut granted = Vec::new();
    let mut ancestors: BTreeSet<PathBuf> = BTreeSet::new();
    for h in &hidden {
        let mut at = h.parent();
        while let Some(dir) = at {
            if !dir.starts_with(root) {
                break;
            }
            ancestors.insert(dir.to_path_buf());
            at = dir.parent();
        }
    }
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if hidden.iter().any(|h| **h == path) {
                continue;
            }
            if ancestors.contains(&path) {
                todo.push(path);
            } else {
                granted.push(path);
            }
        }
    }
    granted.sort();
    granted
}

/// In the child, after `fork` and before `exec`: no capabilities, no new privileges,
/// then the ruleset. Only async-signal-safe system calls, as the moment requires.
#[cfg(target_os = "linux")]
pub fn enter(ruleset: RawFd) -> io::Result<()> {
    drop_capabilities();
    // SAFETY: both calls take integers only; `ruleset` is an open Landlock ruleset fd
    // inherited from the parent (it is closed on exec, which is after this call).
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// In the child, after `fork` and before `exec`: the child is killed when the thread
/// that started it ends, so a program the team started never runs on unsupervised once
/// Conclave is gone (killed, crashed). The thread that spawns a child waits for it
/// (`Runner::run_blocking`), so it ends only after the child does while Conclave lives.
/// `parent` is Conclave's pid: when it is no longer the parent, Conclave died before
/// this call, and the program is not started.
#[cfg(target_os = "linux")]
pub fn die_with_parent(parent: u32) -> io::Result<()> {
    // SAFETY: both calls take integers only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() as u32 != parent {
            return Err(io::Error::other(
                "Conclave ended before the program started",
            ));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn die_with_parent(_parent: u32) -> io::Result<()> {
    Ok(())
}

/// A server run as root would hand its capabilities down: reading other processes'
/// memory and environment (`CAP_SYS_PTRACE`), raw sockets past the network rule
/// (`CAP_NET_RAW`). The child keeps none: the bounding set is emptied (which needs
/// `CAP_SETPCAP`; a user without capabilities has nothing to drop), then every set.
#[cfg(target_os = "linux")]
fn drop_capabilities() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    // SAFETY: prctl takes integers; capset reads the two structs on this stack, laid
    // out as the kernel's `__user_cap_header_struct` and `__user_cap_data_struct[2]`.
    unsafe {
        for capability in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) != 0
                && *libc::__errno_location() == libc::EINVAL
            {
                break;
            }
        }
        let header = Header {
            version: VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        libc::syscall(libc::SYS_capset, &header, none.as_ptr());
    }
}

#[cfg(not(target_os = "linux"))]
pub fn enter(_ruleset: RawFd) -> io::Result<()> {
    Err(io::Error::other("no Landlock on this operating system"))
}

/// Keeps this process's environment and memory (the API key) from the processes it
/// starts: a process that is not dumpable can be read through `/proc` only with
/// `CAP_SYS_PTRACE`, which confined children never have ([`enter`]). For the server
/// binary's `main`.
pub fn protect_own_process() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl takes integers only.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_but_the_hidden_paths_is_readable() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        for dir in ["home/a/.ssh", "home/a/code", "home/b", "usr/bin"] {
            std::fs::create_dir_all(r.join(dir)).unwrap();
        }
        std::fs::write(r.join("home/a/.bashrc"), "").unwrap();
        let granted = readable_except(r, &[r.join("home/a/.ssh"), r.join("home/a/.aws")]);
        let rel: Vec<String> = granted
            .iter()
            .map(|p| p.strip_prefix(r).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["home/a/.bashrc", "home/a/code", "home/b", "usr"]);
        assert_eq!(readable_except(r, &[]), vec![r.to_path_buf()]);
    }
}
