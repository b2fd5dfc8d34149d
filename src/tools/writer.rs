//! How generated files reach the workspace.
//!
//! Tools never write files themselves: they hand whole-file contents to a
//! [`WorkspaceWriter`]. [`DiskWriter`] writes atomically (temp file in the same
//! directory, then rename); the LSP layer plugs in a `workspace/applyEdit` writer behind
//! the same trait. Writing content identical to what is there is a no-op reported as
//! [`WriteStatus::Unchanged`], so replaying a step after a restart never writes a file
//! twice.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::sandbox::{PathOutsideWorkspace, Sandbox};

/// A stable 64-bit content hash (FNV-1a). Stable across Rust releases and platforms,
/// unlike `std`'s `DefaultHasher`, so it can be stored and compared after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash(pub u64);

impl ContentHash {
    pub fn of(bytes: &[u8]) -> ContentHash {
        let mut hasher = Fnv1a::new();
        hasher.write(bytes);
        ContentHash(hasher.finish())
    }
}

impl fmt::Display for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// FNV-1a, 64-bit: tiny, stable, and fast enough for source files and argument hashes.
#[derive(Clone, Copy, Debug)]
pub struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    pub fn new() -> Fnv1a {
        Fnv1a(Self::OFFSET)
    }

    pub fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a::new()
    }
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteStatus {
    Created,
    Updated,
    /// The file already held exactly this content; nothing was written.
    Unchanged,
}

impl WriteStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WriteStatus::Created => "created",
            WriteStatus::Updated => "updated",
            WriteStatus::Unchanged => "unchanged",
        }
    }
}

/// The result of one whole-file write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Workspace-relative path of the file.
    pub path: PathBuf,
    pub status: WriteStatus,
    /// Hash of the content now in the file.
    pub hash: ContentHash,
    pub bytes: usize,
}

/// Why a write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    OutsideWorkspace(#[from] PathOutsideWorkspace),
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The editor (or the user through it) declined the change.
    #[error("the change to {} was rejected: {reason}", path.display())]
    Rejected { path: PathBuf, reason: String },
}

/// Writes whole files into the workspace. Implementations must refuse paths outside the
/// workspace root themselves, whoever calls them.
#[async_trait]
pub trait WorkspaceWriter: Send + Sync {
    /// Replaces the whole file at `path` (workspace-relative or absolute inside the
    /// root) with `content`, creating parent directories as needed.
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError>;

    /// The text of the file at `absolute` as the editor has it (unsaved changes
    /// included), when this writer goes through an editor that can say; `Ok(None)` means
    /// "read the disk", `Err(why)` that the editor refused to let it be read (then it is
    /// not read at all). The caller has checked the path against the root.
    async fn read_text(&self, absolute: &Path) -> Result<Option<String>, String> {
        let _ = absolute;
        Ok(None)
    }

    /// Removes the file at `path` (taking back a file a task created); `Ok(false)` when
    /// there was none. Writers that cannot remove files say so.
    async fn remove_file(&self, path: &Path) -> Result<bool, WriteError> {
        Err(WriteError::Io {
            path: path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::Unsupported,
                "this writer cannot remove files",
            ),
        })
    }

    /// Before a shell command runs: a watch on the files it may change behind the
    /// writer's back, so that they are noted as this writer notes its own changes (the
    /// task's file history, `crate::undo`). `None` when this writer notes nothing.
    async fn watch_command(&self) -> Option<Box<dyn CommandWatch>> {
        None
    }
}

/// What a writer watches while a shell command runs ([`WorkspaceWriter::watch_command`]).
#[async_trait]
pub trait CommandWatch: Send {
    /// After the command: notes what it created, changed or removed; returns those paths.
    async fn finish(self: Box<Self>) -> Vec<String>;
}

/// Writes straight to disk, atomically: readers see the old file or the new one, never
/// half of it, even if the process is killed mid-write.
#[derive(Clone, Debug)]
pub struct DiskWriter {
    sandbox: Sandbox,
}

impl DiskWriter {
    pub fn new(sandbox: Sandbox) -> DiskWriter {
        DiskWriter { sandbox }
    }
}

#[async_trait]
impl WorkspaceWriter for DiskWriter {
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError> {
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        let hash = ContentHash::of(content.as_bytes());
        let bytes = content.len();
        let content = content.to_owned();
        let io_path = relative.clone();
        // The blocking part runs to completion even if the caller is cancelled, which is
        // what keeps the temp-file-and-rename sequence whole.
        let status = tokio::task::spawn_blocking(move || write_atomically(&absolute, &content))
            .await
            .map_err(|join| WriteError::Io {
                path: io_path.clone(),
                source: io::Error::other(join.to_string()),
            })?
            .map_err(|source| WriteError::Io {
                path: io_path,
                source,
            })?;
        tracing::debug!(path = %relative.display(), status = status.as_str(), %hash, "file written");
        Ok(WriteOutcome {
            path: relative,
            status,
            hash,
            bytes,
        })
    }

    async fn remove_file(&self, path: &Path) -> Result<bool, WriteError> {
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        match tokio::fs::remove_file(&absolute).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(WriteError::Io {
                path: relative,
                source,
            }),
        }
    }
}

/// The name prefix of the writer's temp files.
pub const TEMP_PREFIX: &str = ".conclave-write-";

/// Removes temp files a killed process left behind mid-write (the files they were for
/// are untouched: the rename never happened). Skips what .gitignore ignores. Returns how
/// many were removed.
pub fn sweep_stale_temp_files(root: &Path) -> usize {
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .filter_entry(|entry| entry.file_name() != ".git" && entry.file_name() != ".conclave")
        .build();
    let mut removed = 0;
    for entry in walker.flatten() {
        let stale = entry.file_type().is_some_and(|t| t.is_file())
            && entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX);
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Writes `content` to `path` through a temp file in the same directory and a rename.
fn write_atomically(path: &Path, content: &str) -> io::Result<WriteStatus> {
    let existing = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "it is a directory",
            ));
        }
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(meta) = &existing {
        // Compare cheaply by length first; only read files that could be identical.
        if meta.len() == content.len() as u64 && std::fs::read(path)? == content.as_bytes() {
            return Ok(WriteStatus::Unchanged);
        }
    }
    let parent = path.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no parent directory",
        )
    })?;
    std::fs::create_dir_all(parent)?;

    let mut temp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(parent)?;
    temp.write_all(content.as_bytes())?;
    // Keep an existing file's mode; new files get the usual 0644 instead of the temp
    // file's private 0600.
    let permissions = match &existing {
        Some(meta) => meta.permissions(),
        None => std::os::unix::fs::PermissionsExt::from_mode(0o644),
    };
    temp.as_file().set_permissions(permissions)?;
    temp.as_file().sync_data()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(if existing.is_some() {
        WriteStatus::Updated
    } else {
        WriteStatus::Created
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temp_files_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/.conclave-write-abc123"), "half").unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), "whole").unwrap();
        std::fs::write(dir.path().join(".conclave-write-x"), "half").unwrap();
        assert_eq!(sweep_stale_temp_files(dir.path()), 2);
        assert!(dir.path().join("src/lib.rs").exists());
        assert!(!dir.path().join("src/.conclave-write-abc123").exists());
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(ContentHash::of(b"").0, 0xcbf2_9ce4_8422_2325);
        assert_eq!(ContentHash::of(b"a").0, 0xaf63_dc4c_8601_ec8c);
        assert_eq!(ContentHash::of(b"foobar").0, 0x8594_4171_f739_67e8);
        assert_eq!(ContentHash(0xab).to_string(), "00000000000000ab");
    }

    /// A real full disk (a 64 KiB tmpfs): the write fails naming the file and the cause,
    /// the file keeps its old content and no temporary file is left. Mounting needs
    /// privileges a test machine may not give: then the test says SKIPPED.
    #[test]
    fn a_full_disk_fails_the_write_and_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("SKIPPED: a tmpfs cannot be mounted here (needs privileges)");
            return;
        }
        let unmount = || {
            let _ = std::process::Command::new("umount")
                .arg(dir.path())
                .status();
        };
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "before\n").unwrap();
        let error = write_atomically(&path, &"x".repeat(256 * 1024)).unwrap_err();
        let after = std::fs::read_to_string(&path).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        unmount();
        assert_eq!(error.kind(), io::ErrorKind::StorageFull, "{error}");
        let tool_error = crate::tools::ToolError::from(WriteError::Io {
            path: path.clone(),
            source: error,
        });
        assert!(tool_error.is_disk_unavailable());
        assert!(tool_error.to_string().contains("notes.txt"), "{tool_error}");
        assert_eq!(after, "before\n");
        assert_eq!(left, ["notes.txt"], "no temporary file is left");
    }

    #[tokio::test]
    async fn writes_create_update_and_skip_identical_content() {
        let dir = tempfile::tempdir().unwrap();
        let writer = DiskWriter::new(Sandbox::new(dir.path()).unwrap());
        let first = writer
            .write_file(Path::new("a/b/c.txt"), "one")
            .await
            .unwrap();
        assert_eq!(first.status, WriteStatus::Created);
        assert_eq!(first.path, PathBuf::from("a/b/c.txt"));
        assert_eq!(first.hash, ContentHash::of(b"one"));
        let again = writer
            .write_file(Path::new("a/b/c.txt"), "one")
            .await
            .unwrap();
        assert_eq!(again.status, WriteStatus::Unchanged);
        let second = writer
            .write_file(Path::new("a/b/c.txt"), "two")
            .await
            .unwrap();
        assert_eq!(second.status, WriteStatus::Updated);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "two"
        );
        // No temp files are left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("c.txt")]);
    }

    #[tokio::test]
    async fn existing_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        std::fs::write(&script, "old").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let writer = DiskWriter::new(Sandbox::new(dir.path()).unwrap());
        writer.write_file(Path::new("run.sh"), "new").await.unwrap();
        let mode = std::fs::metadata(&script).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[tokio::test]
    async fn paths_outside_are_refused_even_when_called_directly() {
        let dir = tempfile::tempdir().unwrap();
        let writer = DiskWriter::new(Sandbox::new(dir.path()).unwrap());
        let err = writer
            .write_file(Path::new("../escape.txt"), "x")
            .await
            .unwrap_err();
        assert!(matches!(err, WriteError::OutsideWorkspace(_)), "{err}");
        assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    }
}
