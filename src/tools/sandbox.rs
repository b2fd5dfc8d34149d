//! The workspace sandbox: every path a tool or writer touches goes through
//! [`Sandbox::resolve`] first.
//!
//! A path is joined to the workspace root (absolute paths are taken as they are), then
//! canonicalised so that `..` and symlinks are resolved by the operating system rather
//! than by string games. A path that does not exist yet is handled by canonicalising its
//! deepest existing ancestor and checking that the rest contains no `..` and no symlink.
//! Whatever the result, it must lie inside the canonical root, or the call fails with
//! [`PathOutsideWorkspace`] (docs/protocol.md code 1005).
//!
//! The check is made before the file operation, so a process that swaps a directory for
//! a symlink in between could still race it; the agents' own tools cannot do that without
//! going through this check themselves, which is the threat this module addresses.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscapeReason {
    /// The path contains a NUL byte, which no file system path may hold.
    NulByte,
    /// `..` components climb above the root.
    ParentTraversal,
    /// An absolute path that names somewhere outside the root.
    AbsoluteOutside,
    /// A symlink (the file itself or a parent directory) points outside the root.
    SymlinkEscape,
    /// A symlink whose target does not exist; writing through it could create a file
    /// anywhere, so it is refused rather than followed.
    DanglingSymlink,
    /// A write into `.git/` (whose hooks and configuration run programs) or `.conclave/`
    /// (Conclave's own state).
    Protected,
    /// A write to a file with more than one name: the other may be outside the
    /// workspace, and an editor writes in place.
    HardLink,
}

impl EscapeReason {
    fn explain(self) -> &'static str {
        match self {
            EscapeReason::NulByte => "it contains a NUL byte",
            EscapeReason::ParentTraversal => "`..` climbs above the workspace root",
            EscapeReason::AbsoluteOutside => "it is an absolute path outside the workspace root",
            EscapeReason::SymlinkEscape => "a symlink on the way leads outside the workspace root",
            EscapeReason::DanglingSymlink => {
                "it goes through a symlink whose target does not exist"
            }
            EscapeReason::Protected => {
                "it is inside .git/ or .conclave/, which the team does not write"
            }
            EscapeReason::HardLink => {
                "the file has other names (a hard link), which may be outside the workspace"
            }
        }
    }
}

/// A path that resolves outside the workspace root (after `..` and symlinks).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("path `{path}` is outside the workspace: {}", reason.explain())]
pub struct PathOutsideWorkspace {
    /// The offending path, as it was given.
    pub path: String,
    pub reason: EscapeReason,
}

impl PathOutsideWorkspace {
    /// docs/protocol.md's application error code for PathOutsideWorkspace.
    pub const CODE: i64 = 1005;

    pub fn code(&self) -> i64 {
        Self::CODE
    }

    /// The JSON-RPC error `data` object, naming the offending value.
    pub fn data(&self) -> serde_json::Value {
        serde_json::json!({ "path": self.path })
    }
}

/// The workspace root, canonicalised once, and the resolution rules for paths in it.
/// Clones share the set of withheld files.
#[derive(Clone, Debug)]
pub struct Sandbox {
    root: PathBuf,
    /// Files the editor refused to let be read (ACP `fs/read_text_file` answered with
    /// an error): neither a tool nor the team's own reading takes them from disk.
    withheld: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<PathBuf>>>,
}

impl Sandbox {
    /// Canonicalises `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Sandbox> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        Ok(Sandbox {
            root,
            withheld: Default::default(),
        })
    }

    /// Withholds the file at `absolute` from every reader from now on.
    pub fn withhold(&self, absolute: &Path) {
        self.withheld
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(absolute.to_path_buf());
    }

    /// Whether the file at `path` (workspace-relative or absolute) was withheld.
    pub fn is_withheld(&self, path: &Path) -> bool {
        let withheld = self.withheld.lock().unwrap_or_else(|e| e.into_inner());
        if withheld.is_empty() {
            return false;
        }
        let absolute = if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.root.join(path)
        };
        withheld.contains(&absolute)
            || std::fs::canonicalize(&absolute).is_ok_and(|c| withheld.contains(&c))
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute inside it) to a canonical
    /// absolute path inside the root. The path need not exist yet.
    pub fn resolve(&self, path: impl AsRef<Path>) -> Result<PathBuf, PathOutsideWorkspace> {
        let given = path.as_ref();
        let refuse = |reason| PathOutsideWorkspace {
            path: given.display().to_string(),
            reason,
        };
        if given.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(refuse(EscapeReason::NulByte));
        }
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.root.join(given)
        };
        // Rebuilt from its components, `a/link/.` becomes `a/link`: otherwise the walk
        // below would drop `link` as the parent of `.` without checking it is a symlink.
        let joined: PathBuf = joined.components().collect();

        // Walk up until an ancestor canonicalises; remember what was cut off.
        let mut existing = joined.as_path();
        let mut rest: Vec<OsString> = Vec::new();
        let canonical = loop {
            match std::fs::canonicalize(existing) {
                Ok(canonical) => break canonical,
                Err(_) => {
                    // Something exists here but cannot be followed: a dangling or looping
                    // symlink. Following it on write could land anywhere.
                    if std::fs::symlink_metadata(existing)
                        .is_ok_and(|meta| meta.file_type().is_symlink())
                    {
                        return Err(refuse(EscapeReason::DanglingSymlink));
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_os_string());
                            existing = parent;
                        }
                        // Only a trailing `..` has no file name (the file-system root
                        // always canonicalises). A `..` after a path that does not exist
                        // is not trusted: once that path is created as a symlink, the OS
                        // would resolve the `..` somewhere else.
                        _ => return Err(refuse(EscapeReason::ParentTraversal)),
                    }
                }
            }
        };

        let mut resolved = canonical;
        for name in rest.into_iter().rev() {
            resolved.push(name);
        }
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(refuse(self.classify_escape(given)))
        }
    }

    /// [`Sandbox::resolve`] for a write: also refused inside `.git/` and `.conclave/`, and
    /// for a file that has other names (a hard link).
    pub fn resolve_for_write(
        &self,
        path: impl AsRef<Path>,
    ) -> Result<PathBuf, PathOutsideWorkspace> {
        let given = path.as_ref();
        let resolved = self.resolve(given)?;
        let refuse = |reason| PathOutsideWorkspace {
            path: given.display().to_string(),
            reason,
        };
        if [".git", ".conclave"]
            .iter()
            .any(|dir| resolved.starts_with(self.root.join(dir)))
        {
            return Err(refuse(EscapeReason::Protected));
        }
        {
            use std::os::unix::fs::MetadataExt;
            if std::fs::metadata(&resolved).is_ok_and(|m| m.is_file() && m.nlink() > 1) {
                return Err(refuse(EscapeReason::HardLink));
            }
        }
        Ok(resolved)
    }

    /// The path relative to the root, for messages and `files_written`; the root itself
    /// is `.`. Paths outside the root are returned unchanged.
    pub fn relative(&self, absolute: &Path) -> PathBuf {
        match absolute.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_path_buf(),
            Err(_) => absolute.to_path_buf(),
        }
    }

    /// Names the reason a path that resolved outside the root escaped, for the message.
    fn classify_escape(&self, given: &Path) -> EscapeReason {
        if given.is_absolute() && !lexically_inside(&self.root, given) {
            EscapeReason::AbsoluteOutside
        } else if given.components().any(|c| c == Component::ParentDir) {
            EscapeReason::ParentTraversal
        } else {
            EscapeReason::SymlinkEscape
        }
    }
}

/// Whether `path`, with `.`/`..` folded lexically, starts with `root`.
fn lexically_inside(root: &Path, path: &Path) -> bool {
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                folded.pop();
            }
            Component::CurDir => {}
            other => folded.push(other),
        }
    }
    folded.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        (dir, sandbox)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, sb) = sandbox();
        std::fs::create_dir(sb.root().join("src")).unwrap();
        assert_eq!(sb.resolve("src/a.rs").unwrap(), sb.root().join("src/a.rs"));
        assert_eq!(
            sb.resolve(sb.root().join("src/../b.rs")).unwrap(),
            sb.root().join("b.rs")
        );
        assert_eq!(
            sb.resolve("new/dir/c.rs").unwrap(),
            sb.root().join("new/dir/c.rs")
        );
        assert_eq!(
            sb.resolve("./src/./a.rs").unwrap(),
            sb.root().join("src/a.rs")
        );
        assert_eq!(sb.resolve("").unwrap(), sb.root());
    }

    #[test]
    fn escapes_are_refused_with_a_reason() {
        let (_dir, sb) = sandbox();
        let err = sb.resolve("../x").unwrap_err();
        assert_eq!(err.reason, EscapeReason::ParentTraversal);
        assert_eq!(err.code(), 1005);
        assert_eq!(err.path, "../x");
        assert_eq!(
            sb.resolve("/etc/passwd").unwrap_err().reason,
            EscapeReason::AbsoluteOutside
        );
        assert_eq!(
            sb.resolve("missing/../../x").unwrap_err().reason,
            EscapeReason::ParentTraversal
        );
        assert_eq!(
            sb.resolve("a\0b").unwrap_err().reason,
            EscapeReason::NulByte
        );
    }

    #[test]
    fn a_missing_directory_followed_by_dotdot_is_refused_even_inside() {
        // `missing/../x` would be inside, but `..` after a path we cannot canonicalise
        // is not trusted: the OS resolves it differently once `missing` is a symlink.
        let (_dir, sb) = sandbox();
        assert_eq!(
            sb.resolve("missing/../x").unwrap_err().reason,
            EscapeReason::ParentTraversal
        );
    }

    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let (_dir, sb) = sandbox();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), sb.root().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), sb.root().join("dirlink")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("nope"), sb.root().join("dangling"))
            .unwrap();
        assert_eq!(
            sb.resolve("link").unwrap_err().reason,
            EscapeReason::SymlinkEscape
        );
        assert_eq!(
            sb.resolve("dirlink/new.txt").unwrap_err().reason,
            EscapeReason::SymlinkEscape
        );
        assert_eq!(
            sb.resolve("dangling").unwrap_err().reason,
            EscapeReason::DanglingSymlink
        );
        // A trailing `.` must not hide the symlink before it (found by the property test).
        assert_eq!(
            sb.resolve("link/.").unwrap_err().reason,
            EscapeReason::SymlinkEscape
        );
    }

    #[test]
    fn symlinks_within_the_root_are_followed() {
        let (_dir, sb) = sandbox();
        std::fs::create_dir(sb.root().join("real")).unwrap();
        std::os::unix::fs::symlink(sb.root().join("real"), sb.root().join("alias")).unwrap();
        assert_eq!(
            sb.resolve("alias/f.txt").unwrap(),
            sb.root().join("real/f.txt")
        );
    }

    #[test]
    fn relative_strips_the_root() {
        let (_dir, sb) = sandbox();
        assert_eq!(sb.relative(&sb.root().join("a/b")), PathBuf::from("a/b"));
        assert_eq!(sb.relative(sb.root()), PathBuf::from("."));
    }
}
