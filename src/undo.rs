//! Taking a task back.
//!
//! Every write a task makes goes through the team's `SwappableWriter`, which notes the
//! file here before the task first changes it ([`FileHistory`]): its content then (or
//! that there was none) and a hash of what the task left, in the store's `file_history`
//! (`src/store/files.rs`). From that, [`plan`] says what taking the task back would do
//! to each file, with a unified diff and whether the person changed the file since the
//! task did; [`apply`] does it through a writer (the editor's, or the disk).
//!
//! A task's shell commands change files behind the writer's back: a [`HistoryWatch`]
//! looks at the workspace before each command and after it, and notes what the command
//! created, changed or removed in the same history.
//!
//! A task that fails is taken back at once unless `undo.onFailure = "keep"`
//! (`team/coordinate.rs`); any finished task can be undone later by a person
//! (`conclave undo`, `conclave/undoTask`). Neither ever overwrites a file
//! the person changed after the task without being told to.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::Serialize;

use crate::runtime::{KeptFile, Reverted, RevertedBy, TaskId, TaskRecord, TaskStatus, Tasks};
use crate::store::{FileBefore, FileTouch, Record, Store};
use crate::tools::{ContentHash, Sandbox, WorkspaceWriter};

/// The file history of the tasks this process runs: the store has it durably; the
/// in-memory copy serves runs without a store and says which files a task touched
/// already.
pub struct FileHistory {
    store: Option<Store>,
    tasks: Tasks,
    max_file_bytes: u64,
    live: DashMap<TaskId, BTreeMap<String, FileTouch>>,
    /// When this process started noting: the history of a task created since is all in
    /// memory.
    started: DateTime<Utc>,
    /// Whether the log said already that the workspace is too large to watch commands in.
    said_too_large: AtomicBool,
}

impl FileHistory {
    pub fn new(store: Option<Store>, tasks: Tasks, max_file_bytes: u64) -> Arc<FileHistory> {
        Arc::new(FileHistory {
            store,
            tasks,
            max_file_bytes,
            live: DashMap::new(),
            started: Utc::now(),
            said_too_large: AtomicBool::new(false),
        })
    }

    /// The task the calling code works for: the subtask attempt a bottom agent runs, or
    /// the usage scope of a coordinator; `None` for work of no task.
    pub fn current_task(&self) -> Option<TaskId> {
        if let Ok((task, _, _)) = crate::runtime::WORK.try_with(|w| *w) {
            return Some(task);
        }
        let scope = crate::model::metered::current_scope()?;
        scope
            .task
            .or_else(|| scope.subtask.and_then(|s| self.tasks.task_of(s)))
    }

    /// Whether `task` touched `path` already in this process.
    pub fn touched(&self, task: TaskId, path: &str) -> bool {
        self.live
            .get(&task)
            .is_some_and(|files| files.contains_key(path))
    }

    /// The file at `absolute` as it is now, as a `before` (capped at `undo.maxFileBytes`).
    pub async fn read_before(&self, absolute: &Path) -> FileBefore {
        match tokio::fs::metadata(absolute).await {
            Ok(meta) if meta.len() > self.max_file_bytes => {
                FileBefore::NotKept { bytes: meta.len() }
            }
            Ok(_) => match tokio::fs::read(absolute).await {
                Ok(bytes) => FileBefore::Content(bytes),
                Err(_) => FileBefore::Absent,
            },
            Err(_) => FileBefore::Absent,
        }
    }

    /// Notes that `task` left `path` holding `after` (`None`: no file). `before` counts
    /// only on the task's first touch of the path.
    pub fn note(&self, task: TaskId, path: &str, before: FileBefore, after: Option<&[u8]>) {
        let (touch, first) = {
            let mut files = self.live.entry(task).or_default();
            let first = !files.contains_key(path);
            let entry = files.entry(path.to_string()).or_insert_with(|| FileTouch {
                task_id: task,
                path: path.to_string(),
                before,
                after_hash: None,
                at: Utc::now(),
            });
            entry.after_hash = after.map(|bytes| ContentHash::of(bytes).0);
            entry.at = Utc::now();
            (entry.clone(), first)
        };
        if let (true, FileBefore::NotKept { bytes }) = (first, &touch.before) {
            tracing::info!(
                task = %task,
                path,
                bytes,
                "the file is larger than undo.maxFileBytes: its content before the task is not kept, so the task cannot put it back"
            );
        }
        if let Some(store) = &self.store {
            store.record(Record::file_touched(touch));
        }
    }

    /// The files `task` touched: from the store when there is one (it also has what a
    /// task resumed after a restart did before), else from memory.
    pub async fn files(&self, task: TaskId) -> Vec<FileTouch> {
        if let Some(store) = &self.store {
            match store.file_history(task).await {
                Ok(files) => return files,
                Err(e) => {
                    tracing::warn!("the file history could not be read ({e}); using this run's")
                }
            }
        }
        self.live
            .get(&task)
            .map(|files| files.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The files a task of this process touched, as it ends: from memory when the task
    /// began in this process (no wait on the store), else from the store, which also
    /// has what it did before a restart.
    pub async fn files_at_end(&self, task: &TaskRecord) -> Vec<FileTouch> {
        if task.created_at >= self.started || self.store.is_none() {
            return self
                .live
                .get(&task.id)
                .map(|files| files.values().cloned().collect())
                .unwrap_or_default();
        }
        self.files(task.id).await
    }

    /// Before a shell command runs for the current task: the workspace as it is, to note
    /// afterwards what the command changed (`CommandWatch::finish`). `None` for work of
    /// no task, and in a workspace too large to look through ([`MAX_WATCHED_FILES`]).
    pub async fn watch_command(self: &Arc<Self>, sandbox: &Sandbox) -> Option<HistoryWatch> {
        let task = self.current_task()?;
        let started = Utc::now();
        let touched: Vec<String> = self
            .live
            .get(&task)
            .map(|files| files.keys().cloned().collect())
            .unwrap_or_default();
        let root = sandbox.root().to_path_buf();
        let max_file_bytes = self.max_file_bytes;
        let files = tokio::task::spawn_blocking(move || {
            let listed = list_files(&root)?;
            let mut budget = MAX_WATCHED_BYTES;
            let files = listed
                .into_iter()
                .map(|(path, seen)| {
                    let before = if touched.contains(&path) {
                        // The history has this file as it was before the task already.
                        None
                    } else if seen.len <= max_file_bytes && seen.len <= budget {
                        match std::fs::read(root.join(&path)) {
                            Ok(bytes) => {
                                budget -= bytes.len() as u64;
                                Some(FileBefore::Content(bytes))
                            }
                            Err(_) => Some(FileBefore::NotKept { bytes: seen.len }),
                        }
                    } else {
                        Some(FileBefore::NotKept { bytes: seen.len })
                    };
                    (path, (seen, before))
                })
                .collect::<HashMap<_, _>>();
            Some(files)
        })
        .await
        .ok()
        .flatten();
        let Some(files) = files else {
            if !self.said_too_large.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "the workspace has more than {MAX_WATCHED_FILES} files: what the tasks' shell commands change in it is not in their file history, so taking a task back leaves those changes"
                );
            }
            return None;
        };
        Some(HistoryWatch {
            history: self.clone(),
            root: sandbox.root().to_path_buf(),
            task,
            started,
            files,
        })
    }

    /// Whether a task other than `task` noted `path` since `since`: a change a command
    /// saw that is that task's, not the command's.
    fn noted_by_another(&self, task: TaskId, path: &str, since: DateTime<Utc>) -> bool {
        self.live.iter().any(|entry| {
            *entry.key() != task && entry.value().get(path).is_some_and(|t| t.at >= since)
        })
    }

    /// Drops the in-memory copy of a finished task's history once the store has it.
    pub fn forget(&self, task: TaskId) {
        if self.store.is_some() {
            self.live.remove(&task);
        }
    }
}

/// Folders a command's changes are not looked for in: git's and Conclave's own state, and
/// the dependency and cache folders tools fill with files no one puts back one by one.
pub const UNWATCHED_DIRS: &[&str] = &[
    ".git",
    ".conclave",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
];

/// A workspace with more files than this (outside [`UNWATCHED_DIRS`]) is not looked
/// through around each command.
pub const MAX_WATCHED_FILES: usize = 20_000;

/// At most this much of the workspace's content is held while a command runs; a file
/// beyond it that the command changes is noted as not kept (it cannot be put back).
pub const MAX_WATCHED_BYTES: u64 = 64 * 1024 * 1024;

/// A file as a command's watch saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    len: u64,
    modified: Option<SystemTime>,
}

/// The workspace's files (relative paths, `/`-separated) with their size and time, not
/// following links; `None` when there are more than [`MAX_WATCHED_FILES`].
fn list_files(root: &Path) -> Option<Vec<(String, Seen)>> {
    let mut files = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                let name = entry.file_name();
                if !UNWATCHED_DIRS.iter().any(|d| name == *d) {
                    todo.push(path);
                }
                continue;
            }
            if !kind.is_file() {
                continue;
            }
            let Ok(meta) = entry.metadata() else {
                continue;
            };
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let relative = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            files.push((
                relative,
                Seen {
                    len: meta.len(),
                    modified: meta.modified().ok(),
                },
            ));
            if files.len() > MAX_WATCHED_FILES {
                return None;
            }
        }
    }
    Some(files)
}

/// The workspace as it was before a task's shell command ran
/// ([`FileHistory::watch_command`]).
pub struct HistoryWatch {
    history: Arc<FileHistory>,
    root: PathBuf,
    task: TaskId,
    started: DateTime<Utc>,
    /// Each file then, with its content unless the task's history has it already.
    files: HashMap<String, (Seen, Option<FileBefore>)>,
}

#[async_trait::async_trait]
impl crate::tools::writer::CommandWatch for HistoryWatch {
    /// After the command: notes every file it created, changed or removed in the task's
    /// history, as the writer notes its own writes; returns those paths, sorted. A file
    /// another task wrote meanwhile is that task's.
    async fn finish(self: Box<Self>) -> Vec<String> {
        let root = self.root.clone();
        let now = tokio::task::spawn_blocking(move || list_files(&root))
            .await
            .ok()
            .flatten();
        let Some(now) = now else {
            return Vec::new();
        };
        let now: HashMap<String, Seen> = now.into_iter().collect();
        let mut changed: Vec<&String> = now
            .iter()
            .filter(|(path, seen)| self.files.get(*path).is_none_or(|(was, _)| was != *seen))
            .map(|(path, _)| path)
            .chain(self.files.keys().filter(|path| !now.contains_key(*path)))
            .collect();
        changed.sort();
        let mut noted = Vec::new();
        for path in changed {
            if self.history.noted_by_another(self.task, path, self.started) {
                continue;
            }
            let after = if now.contains_key(path) {
                match tokio::fs::read(self.root.join(path)).await {
                    Ok(bytes) => Some(bytes),
                    Err(_) => continue,
                }
            } else {
                None
            };
            let before = match self.files.get(path) {
                None => FileBefore::Absent,
                Some((_, Some(before))) => before.clone(),
                // Touched by the task before: the history keeps what it had.
                Some((_, None)) => FileBefore::Absent,
            };
            if let (FileBefore::Content(before), Some(after)) = (&before, &after)
                && before == after
            {
                // Touched, not changed.
                continue;
            }
            self.history.note(self.task, path, before, after.as_deref());
            noted.push(path.clone());
        }
        if !noted.is_empty() {
            tracing::debug!(task = %self.task, files = ?noted, "noted the files a command changed");
        }
        noted
    }
}

/// What taking a task back does to one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UndoAction {
    /// Its content is put back as it was before the task.
    Restore,
    /// The task created it: it is removed.
    Remove,
    /// The task removed it: it is written again.
    Recreate,
    /// It is as it was before the task already.
    Unchanged,
    /// Its content before the task was not kept (too large): it stays as it is.
    NotKept,
}

/// One file of an [`UndoPlan`].
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedFile {
    pub path: String,
    pub action: UndoAction,
    /// The file is no longer what the task left: someone changed it since.
    pub edited_since: bool,
    /// What taking the task back changes in it, as a unified diff (now → before).
    pub diff: String,
    #[serde(skip)]
    before: FileBefore,
    /// The file as the plan saw it, to notice a change made before [`apply`].
    #[serde(skip)]
    seen: Option<u64>,
}

impl PlannedFile {
    fn changes(&self) -> bool {
        matches!(
            self.action,
            UndoAction::Restore | UndoAction::Remove | UndoAction::Recreate
        )
    }
}

/// What taking a task back would do.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoPlan {
    pub task_id: TaskId,
    pub files: Vec<PlannedFile>,
}

impl UndoPlan {
    /// The files it would change.
    pub fn changing(&self) -> impl Iterator<Item = &PlannedFile> {
        self.files.iter().filter(|f| f.changes())
    }

    /// Files it would change that someone changed after the task: overwriting them loses
    /// those edits.
    pub fn conflicts(&self) -> Vec<String> {
        self.changing()
            .filter(|f| f.edited_since)
            .map(|f| f.path.clone())
            .collect()
    }

    /// The whole diff, file after file.
    pub fn diff(&self) -> String {
        self.changing().map(|f| f.diff.as_str()).collect()
    }
}

/// Why a task cannot be taken back.
#[derive(Debug, thiserror::Error)]
pub enum UndoRefusal {
    #[error("task {id} is still {status}: cancel it first, then undo it")]
    Unfinished { id: TaskId, status: String },
    #[error("task {id} was undone already ({when}): {what}")]
    AlreadyUndone {
        id: TaskId,
        when: String,
        what: String,
    },
    #[error(
        "task {id}'s file history was compacted by `conclave gc` on {0}, so it cannot be undone",
        at.format("%Y-%m-%d")
    )]
    Compacted { id: TaskId, at: DateTime<Utc> },
    #[error(
        "task {id} changed no files that Conclave kept a history of (tasks from before Conclave kept file histories cannot be undone)"
    )]
    NoHistory { id: TaskId },
}

/// Whether `record` may be taken back, and the plan for it from its file history.
pub fn prepare(
    record: &TaskRecord,
    files: Vec<FileTouch>,
    compacted: Option<DateTime<Utc>>,
    sandbox: &Sandbox,
) -> Result<UndoPlan, UndoRefusal> {
    if !record.status.is_finished() {
        let status = serde_json::to_value(record.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
            .replace('_', " ");
        return Err(UndoRefusal::Unfinished {
            id: record.id,
            status,
        });
    }
    if let Some(reverted) = &record.reverted {
        return Err(UndoRefusal::AlreadyUndone {
            id: record.id,
            when: match reverted.by {
                RevertedBy::Failure => format!(
                    "its files were put back when it failed, {}",
                    reverted.at.format("%Y-%m-%d %H:%M UTC")
                ),
                RevertedBy::Undo => reverted.at.format("%Y-%m-%d %H:%M UTC").to_string(),
            },
            what: reverted.describe(),
        });
    }
    if files.is_empty() {
        return Err(match compacted {
            Some(at) => UndoRefusal::Compacted { id: record.id, at },
            None => UndoRefusal::NoHistory { id: record.id },
        });
    }
    Ok(plan(record.id, &files, sandbox))
}

/// What taking `task` back would do to each of `files`, looking at them now.
pub fn plan(task: TaskId, files: &[FileTouch], sandbox: &Sandbox) -> UndoPlan {
    let files = files
        .iter()
        .map(|touch| {
            let now = sandbox
                .resolve(&touch.path)
                .ok()
                .and_then(|absolute| std::fs::read(absolute).ok());
            let seen = now.as_deref().map(|bytes| ContentHash::of(bytes).0);
            let action = match (&touch.before, &now) {
                (FileBefore::NotKept { .. }, _) => UndoAction::NotKept,
                (FileBefore::Absent, None) => UndoAction::Unchanged,
                (FileBefore::Absent, Some(_)) => UndoAction::Remove,
                (FileBefore::Content(_), None) => UndoAction::Recreate,
                (FileBefore::Content(before), Some(now)) if before == now => UndoAction::Unchanged,
                (FileBefore::Content(_), Some(_)) => UndoAction::Restore,
            };
            let before = match &touch.before {
                FileBefore::Content(bytes) => Some(bytes.as_slice()),
                _ => None,
            };
            let diff = if matches!(action, UndoAction::Unchanged | UndoAction::NotKept) {
                String::new()
            } else {
                unified_diff(&touch.path, now.as_deref(), before)
            };
            PlannedFile {
                path: touch.path.clone(),
                action,
                edited_since: seen != touch.after_hash,
                diff,
                before: touch.before.clone(),
                seen,
            }
        })
        .collect();
    UndoPlan {
        task_id: task,
        files,
    }
}

/// `now` → `before` as a unified diff with `a/` and `b/` names (`/dev/null` for a file
/// that is not there); a file that is not text is one line saying so.
pub fn unified_diff(path: &str, now: Option<&[u8]>, before: Option<&[u8]>) -> String {
    let text = |bytes: Option<&[u8]>| match bytes {
        None => Ok(String::new()),
        Some(bytes) => String::from_utf8(bytes.to_vec()).map_err(|_| ()),
    };
    let (Ok(old), Ok(new)) = (text(now), text(before)) else {
        return format!(
            "Binary file {path}: {} bytes now, {} after the undo\n",
            now.map_or(0, <[u8]>::len),
            before.map_or(0, <[u8]>::len)
        );
    };
    let old_name = if now.is_some() {
        format!("a/{path}")
    } else {
        "/dev/null".into()
    };
    let new_name = if before.is_some() {
        format!("b/{path}")
    } else {
        "/dev/null".into()
    };
    let diff = similar::TextDiff::from_lines(&old, &new);
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        out.push_str(&hunk.to_string());
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Why a typed task id names no one task.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("no task has that id")]
    Unknown,
    #[error("more than one task's id starts with that: {}", .0.iter().map(|id| id.to_string()).collect::<Vec<_>>().join(", "))]
    Ambiguous(Vec<TaskId>),
}

/// The task `typed` names among `ids`: a whole id, or the start of exactly one (the
/// short ids `conclave run`, `:Conclave tasks` and the VS Code tree show).
pub fn resolve_id(ids: impl IntoIterator<Item = TaskId>, typed: &str) -> Result<TaskId, IdError> {
    let typed = typed.trim().to_ascii_lowercase();
    if typed.is_empty() {
        return Err(IdError::Unknown);
    }
    let mut found: Vec<TaskId> = ids
        .into_iter()
        .filter(|id| id.to_string().starts_with(&typed))
        .collect();
    found.sort_by_key(|id| id.to_string());
    found.dedup();
    match found.len() {
        0 => Err(IdError::Unknown),
        1 => Ok(found[0]),
        _ => match found.iter().find(|id| id.to_string() == typed) {
            Some(id) => Ok(*id),
            None => Err(IdError::Ambiguous(found)),
        },
    }
}

/// What to do with a file someone changed after the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditedFiles {
    /// Leave it as it is (and say so).
    Keep,
    /// Put it back as before the task all the same: the person said so.
    Overwrite,
}

/// Carries out `plan` through `writer` (files that are not text go straight to disk).
/// A file that changed since the plan looked at it is left alone, as is one edited
/// after the task unless `edited` says to overwrite it.
pub async fn apply(
    plan: &UndoPlan,
    writer: &dyn WorkspaceWriter,
    sandbox: &Sandbox,
    edited: EditedFiles,
    by: RevertedBy,
) -> Reverted {
    let mut restored = Vec::new();
    let mut kept = Vec::new();
    for file in &plan.files {
        let mut keep = |reason: String| {
            kept.push(KeptFile {
                path: file.path.clone(),
                reason,
            })
        };
        if file.action == UndoAction::NotKept {
            keep("it was too large to keep a copy of before the task (undo.maxFileBytes)".into());
            continue;
        }
        if !file.changes() {
            continue;
        }
        if file.edited_since && edited == EditedFiles::Keep {
            keep("it was changed after the task changed it".into());
            continue;
        }
        let now = sandbox
            .resolve(&file.path)
            .ok()
            .and_then(|absolute| std::fs::read(absolute).ok())
            .map(|bytes| ContentHash::of(&bytes).0);
        if now != file.seen {
            keep("it changed while the undo was being decided".into());
            continue;
        }
        let path = Path::new(&file.path);
        let done = match &file.before {
            FileBefore::Absent => writer.remove_file(path).await.map(|_| ()),
            FileBefore::Content(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => writer.write_file(path, text).await.map(|_| ()),
                Err(_) => write_bytes(sandbox, path, bytes),
            },
            FileBefore::NotKept { .. } => continue,
        };
        match done {
            Ok(()) => restored.push(file.path.clone()),
            Err(e) => keep(format!("it could not be put back: {e}")),
        }
    }
    Reverted {
        by,
        at: Utc::now(),
        restored,
        kept,
    }
}

fn write_bytes(
    sandbox: &Sandbox,
    path: &Path,
    bytes: &[u8],
) -> Result<(), crate::tools::WriteError> {
    let absolute = sandbox.resolve_for_write(path)?;
    let io = |source| crate::tools::WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = absolute.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::write(&absolute, bytes).map_err(io)
}

/// Whether a task that ended `status` has its changes put back: it failed, and neither
/// its options nor the configuration say to keep them.
pub fn restores_on_failure(record: &TaskRecord, config: &crate::config::Config) -> bool {
    record.status == TaskStatus::Failed
        && record.options.failure_policy(config) == crate::config::OnFailure::Restore
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &str, before: FileBefore, after: Option<&str>) -> FileTouch {
        FileTouch {
            task_id: TaskId::new(),
            path: path.into(),
            before,
            after_hash: after.map(|a| ContentHash::of(a.as_bytes()).0),
            at: Utc::now(),
        }
    }

    #[test]
    fn a_commands_watch_lists_the_projects_files_not_git_or_dependencies() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for path in [
            "a.py",
            "src/b.py",
            ".git/config",
            "node_modules/x/index.js",
            "pkg/__pycache__/b.pyc",
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), "x").unwrap();
        }
        let mut listed: Vec<String> = list_files(root)
            .unwrap()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        listed.sort();
        assert_eq!(listed, ["a.py", "src/b.py"]);
    }

    #[test]
    fn a_task_is_named_by_its_id_or_the_start_of_one() {
        let (a, b) = (TaskId::new(), TaskId::new());
        let ids = [a, b];
        assert_eq!(resolve_id(ids, &a.to_string()), Ok(a));
        assert_eq!(resolve_id(ids, &b.to_string()[..8].to_uppercase()), Ok(b));
        assert_eq!(resolve_id(ids, "zz"), Err(IdError::Unknown));
        assert_eq!(resolve_id(ids, ""), Err(IdError::Unknown));
        assert!(matches!(resolve_id(ids, ""), Err(IdError::Unknown)));
    }

    #[test]
    fn the_diff_goes_from_now_to_before() {
        let diff = unified_diff("a.py", Some(b"x = 2\n"), Some(b"x = 1\n"));
        assert_eq!(
            diff,
            "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 2\n+x = 1\n"
        );
        let removed = unified_diff("new.py", Some(b"print()\n"), None);
        assert_eq!(
            removed,
            "--- a/new.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-print()\n"
        );
        assert!(unified_diff("b.bin", Some(&[0xff, 0]), None).starts_with("Binary file b.bin"));
    }

    #[tokio::test]
    async fn a_plan_restores_removes_and_keeps_what_was_edited_since() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.py"), "task\n").unwrap();
        std::fs::write(dir.path().join("new.py"), "made\n").unwrap();
        std::fs::write(dir.path().join("mine.py"), "person\n").unwrap();
        let files = vec![
            touch(
                "a.py",
                FileBefore::Content(b"before\n".to_vec()),
                Some("task\n"),
            ),
            touch("new.py", FileBefore::Absent, Some("made\n")),
            touch(
                "mine.py",
                FileBefore::Content(b"orig\n".to_vec()),
                Some("task\n"),
            ),
            touch("same.py", FileBefore::Absent, None),
        ];
        let plan = plan(TaskId::new(), &files, &sandbox);
        let actions: Vec<_> = plan
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.action))
            .collect();
        assert_eq!(
            actions,
            vec![
                ("a.py", UndoAction::Restore),
                ("new.py", UndoAction::Remove),
                ("mine.py", UndoAction::Restore),
                ("same.py", UndoAction::Unchanged),
            ]
        );
        assert_eq!(plan.conflicts(), vec!["mine.py".to_string()]);
        let writer = crate::tools::DiskWriter::new(sandbox.clone());
        let reverted = apply(
            &plan,
            &writer,
            &sandbox,
            EditedFiles::Keep,
            RevertedBy::Undo,
        )
        .await;
        assert_eq!(reverted.restored, vec!["a.py", "new.py"]);
        assert_eq!(reverted.kept.len(), 1);
        assert_eq!(reverted.kept[0].path, "mine.py");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "before\n"
        );
        assert!(!dir.path().join("new.py").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("mine.py")).unwrap(),
            "person\n"
        );
    }
}
