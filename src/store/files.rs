//! The file history of tasks (`file_history`): for each file a task touched, the file as
//! the task first found it and what the task left, so that a task can be taken back
//! (`crate::undo`). The first touch's `before` is kept; later touches move `after` on.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::{Record, Store, StoreError, millis};
use crate::ids::TaskId;

/// A file as the task first found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileBefore {
    /// There was no file: taking the task back removes it.
    Absent,
    Content(Vec<u8>),
    /// Larger than `undo.maxFileBytes`, so not kept: it cannot be put back.
    NotKept {
        bytes: u64,
    },
}

impl FileBefore {
    fn kind(&self) -> &'static str {
        match self {
            FileBefore::Absent => "absent",
            FileBefore::Content(_) => "content",
            FileBefore::NotKept { .. } => "not_kept",
        }
    }
}

/// One file a task touched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileTouch {
    pub task_id: TaskId,
    /// Workspace-relative.
    pub path: String,
    pub before: FileBefore,
    /// `ContentHash` of what the task left; `None` when it left no file there.
    pub after_hash: Option<u64>,
    pub at: DateTime<Utc>,
}

impl Record {
    pub fn file_touched(touch: FileTouch) -> Record {
        Record::FileTouched(Arc::new(touch))
    }
}

pub(super) fn insert(conn: &Connection, touch: &FileTouch) -> rusqlite::Result<()> {
    let (content, bytes): (Option<&[u8]>, u64) = match &touch.before {
        FileBefore::Absent => (None, 0),
        FileBefore::Content(content) => (Some(content), content.len() as u64),
        FileBefore::NotKept { bytes } => (None, *bytes),
    };
    conn.prepare_cached(
        "INSERT INTO file_history
           (task_id, path, before_kind, before, before_bytes, after_hash, first_at, last_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
         ON CONFLICT (task_id, path) DO UPDATE
           SET after_hash = excluded.after_hash, last_at = excluded.last_at",
    )?
    .execute(params![
        touch.task_id.to_string(),
        touch.path,
        touch.before.kind(),
        content,
        bytes as i64,
        touch.after_hash.map(|h| format!("{h:016x}")),
        touch.at.timestamp_millis(),
    ])?;
    Ok(())
}

fn read(conn: &Connection, task: TaskId) -> rusqlite::Result<Vec<FileTouch>> {
    let mut stmt = conn.prepare(
        "SELECT path, before_kind, before, before_bytes, after_hash, last_at FROM file_history
         WHERE task_id = ?1 ORDER BY path",
    )?;
    let rows = stmt.query_map(params![task.to_string()], |row| {
        let kind: String = row.get(1)?;
        let before = match kind.as_str() {
            "absent" => FileBefore::Absent,
            "content" => FileBefore::Content(row.get::<_, Option<Vec<u8>>>(2)?.unwrap_or_default()),
            _ => FileBefore::NotKept {
                bytes: row.get::<_, i64>(3)?.max(0) as u64,
            },
        };
        let after_hash = row
            .get::<_, Option<String>>(4)?
            .and_then(|h| u64::from_str_radix(&h, 16).ok());
        Ok(FileTouch {
            task_id: task,
            path: row.get(0)?,
            before,
            after_hash,
            at: millis(row.get(5)?),
        })
    })?;
    rows.collect()
}

impl Store {
    /// The files `task` touched, by path.
    pub async fn file_history(&self, task: TaskId) -> Result<Vec<FileTouch>, StoreError> {
        self.query(move |conn| read(conn, task)).await
    }

    /// When `task`'s history was compacted away (`conclave gc`), if it was.
    pub async fn compacted_at(&self, task: TaskId) -> Result<Option<DateTime<Utc>>, StoreError> {
        self.query(move |conn| {
            let mut stmt =
                conn.prepare("SELECT compacted_at FROM task_summaries WHERE task_id = ?1")?;
            let mut rows = stmt.query(params![task.to_string()])?;
            Ok(match rows.next()? {
                Some(row) => Some(millis(row.get(0)?)),
                None => None,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(task: TaskId, path: &str, before: FileBefore, after: Option<u64>) -> Record {
        Record::file_touched(FileTouch {
            task_id: task,
            path: path.into(),
            before,
            after_hash: after,
            at: Utc::now(),
        })
    }

    #[tokio::test]
    async fn the_first_before_is_kept_and_the_last_after_wins() {
        let store = Store::in_memory().unwrap();
        let (task, other) = (TaskId::new(), TaskId::new());
        store.record(touch(
            task,
            "a.py",
            FileBefore::Content(b"v1\n".to_vec()),
            Some(2),
        ));
        store.record(touch(task, "new.py", FileBefore::Absent, Some(7)));
        store.record(touch(
            task,
            "a.py",
            FileBefore::Content(b"v2\n".to_vec()),
            Some(3),
        ));
        store.record(touch(
            task,
            "big.bin",
            FileBefore::NotKept { bytes: 9 },
            None,
        ));
        store.record(touch(other, "a.py", FileBefore::Absent, Some(1)));
        let files = store.file_history(task).await.unwrap();
        let seen: Vec<(&str, &FileBefore, Option<u64>)> = files
            .iter()
            .map(|f| (f.path.as_str(), &f.before, f.after_hash))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("a.py", &FileBefore::Content(b"v1\n".to_vec()), Some(3)),
                ("big.bin", &FileBefore::NotKept { bytes: 9 }, None),
                ("new.py", &FileBefore::Absent, Some(7)),
            ]
        );
    }
}
