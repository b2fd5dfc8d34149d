//! The store: one SQLite database per workspace (`.conclave/conclave.db`, WAL mode) that
//! keeps the audit log — agents, status transitions, messages, whiteboard versions,
//! decisions and arbitrations.
//!
//! One dedicated thread owns the connection. Everything else hands it [`Record`]s over a
//! channel, which costs the sender a few dozen nanoseconds; the thread writes whatever
//! has queued up in one transaction. Reads are closures run on the same thread, after
//! every record sent before them, so a reader always sees what it recorded.

pub mod checkpoint;
mod files;
mod history;
mod schema;

pub use files::{FileBefore, FileTouch};
pub use history::{Compaction, LogEntry};

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use crate::ids::{AgentId, TaskId};
use crate::records::{
    AgentConfig, AgentStatus, ApprovalAnswer, ApprovalRequest, ArbitrationResult, Decision,
    Message, RecoveryEvent, Snapshot, TaskRecord, Transition,
};

/// One thing to remember.
#[derive(Clone, Debug)]
pub enum Record {
    AgentCreated(Box<AgentConfig>),
    AgentRemoved {
        agent: AgentId,
        at: DateTime<Utc>,
    },
    Transition(Transition),
    Message(Arc<Message>),
    WhiteboardVersion {
        snapshot: Snapshot,
        author: AgentId,
    },
    Decision(Arc<Decision>),
    Arbitration(Arc<ArbitrationResult>),
    /// The whole task as it stands: its latest checkpoint.
    TaskCheckpoint(Arc<TaskRecord>),
    Recovery(Arc<RecoveryEvent>),
    ApprovalRequested(Arc<ApprovalRequest>),
    /// `answer` is `None` when the approval was withdrawn, for `reason`.
    ApprovalResolved {
        approval_id: uuid::Uuid,
        task_id: TaskId,
        answer: Option<ApprovalAnswer>,
        reason: Option<String>,
    },
    /// A file a task touched (`files.rs`).
    FileTouched(Arc<FileTouch>),
    /// Records that are committed together or not at all (an event and the task
    /// checkpoint it caused).
    Group(Vec<Record>),
}

impl Record {
    /// Whether losing this record in a crash would lose task state: such batches are
    /// committed with `synchronous=FULL`.
    fn is_checkpoint(&self) -> bool {
        match self {
            Record::TaskCheckpoint(_)
            | Record::Recovery(_)
            | Record::ApprovalRequested(_)
            | Record::ApprovalResolved { .. }
            | Record::FileTouched(_) => true,
            Record::Group(records) => records.iter().any(Record::is_checkpoint),
            _ => false,
        }
    }
}

type Query = Box<dyn FnOnce(&Connection) + Send>;

enum Command {
    Record(Record),
    Query(Query),
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store at {}: {message}. {}", path.display(), advice(message))]
    Open { path: PathBuf, message: String },
    #[error("the store failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the store has shut down")]
    Closed,
}

/// What a person can do about a store that cannot be opened. Conclave never replaces it
/// with a fresh one by itself: that would lose the workspace's history.
fn advice(message: &str) -> &'static str {
    let lower = message.to_ascii_lowercase();
    if lower.contains("not a database") || lower.contains("malformed") || lower.contains("corrupt")
    {
        "It is damaged, or not a Conclave store, and Conclave will not overwrite it: restore it \
         from a backup, or move it aside (for example to conclave.db.broken) to start a fresh \
         history"
    } else if lower.contains("newer conclave") {
        "Run the Conclave that wrote it, or move it aside to start a fresh history with this one"
    } else if lower.contains("locked") || lower.contains("busy") {
        "Another process holds it (another Conclave on this workspace, or a tool reading the \
         database): stop that process, or try again when it is done"
    } else if lower.contains("readonly")
        || lower.contains("read-only")
        || lower.contains("permission")
        || lower.contains("disk")
        || lower.contains("full")
    {
        "Check that the folder is writable and that the disk has room"
    } else {
        "Nothing was changed in it"
    }
}

/// A handle to the store, cheap to clone. The writer thread ends when the last handle
/// is dropped, after writing everything it was sent.
#[derive(Clone)]
pub struct Store {
    commands: mpsc::Sender<Command>,
    location: Arc<Option<PathBuf>>,
}

/// Records written per transaction at most; larger backlogs take several.
const BATCH: usize = 4096;

impl Store {
    /// Opens (creating if needed) the database file and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open_error = |message: String| StoreError::Open {
            path: path.to_path_buf(),
            message,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| open_error(e.to_string()))?;
        }
        let conn = Connection::open(path).map_err(|e| open_error(e.to_string()))?;
        // A lock held a moment by another process is waited for, not an error.
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| open_error(e.to_string()))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| open_error(e.to_string()))?;
        Store::start(conn, Some(path.to_path_buf())).map_err(|e| open_error(e.to_string()))
    }

    /// A private in-memory database, for tests and `--no-store` runs.
    pub fn in_memory() -> Result<Store, StoreError> {
        Store::start(Connection::open_in_memory()?, None)
    }

    /// The default location inside a workspace.
    pub fn default_path(workspace: &Path) -> PathBuf {
        workspace.join(".conclave").join("conclave.db")
    }

    fn start(conn: Connection, location: Option<PathBuf>) -> Result<Store, StoreError> {
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        schema::migrate(&conn)?;
        let (commands, inbox) = mpsc::channel();
        std::thread::Builder::new()
            .name("conclave-store".into())
            .spawn({
                let location = location.clone();
                move || writer(conn, inbox, location)
            })
            .map_err(|e| StoreError::Open {
                path: location.clone().unwrap_or_default(),
                message: e.to_string(),
            })?;
        Ok(Store {
            commands,
            location: Arc::new(location),
        })
    }

    pub fn path(&self) -> Option<&Path> {
        self.location.as_deref()
    }

    /// Queues a record. Never blocks; a record sent after the writer died is logged and dropped.
    pub fn record(&self, record: Record) {
        if self.commands.send(Command::Record(record)).is_err() {
            tracing::error!("the store's writer has stopped; a record was lost");
        }
    }

    /// Runs `read` on the writer thread after every record queued before it.
    pub async fn query<T, F>(&self, read: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let run: Query = Box::new(move |conn| {
            let _ = reply.send(read(conn));
        });
        self.commands
            .send(Command::Query(run))
            .map_err(|_| StoreError::Closed)?;
        Ok(answer.await.map_err(|_| StoreError::Closed)??)
    }

    /// Waits until every record queued so far is committed.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.query(|_| Ok(())).await
    }

    pub async fn transitions(&self, agent: Option<AgentId>) -> Result<Vec<Transition>, StoreError> {
        self.query(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT agent_id, from_status, to_status, reason, at FROM transitions
                 WHERE ?1 IS NULL OR agent_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![agent.map(|a| a.to_string())], |row| {
                Ok(Transition {
                    agent_id: parse_text(row.get::<_, String>(0)?, 0)?,
                    from: parse_status(row.get(1)?, 1)?,
                    to: parse_status(row.get(2)?, 2)?,
                    reason: row.get(3)?,
                    at: millis(row.get(4)?),
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// Recorded messages, oldest first, decoded back from their JSON form.
    pub async fn messages(&self, task_id: Option<String>) -> Result<Vec<Message>, StoreError> {
        self.query(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT body FROM messages WHERE ?1 IS NULL OR task_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![task_id], |row| {
                parse_json::<Message>(row.get::<_, String>(0)?, 0)
            })?;
            rows.collect()
        })
        .await
    }

    pub async fn message_count(&self) -> Result<u64, StoreError> {
        self.query(|conn| conn.query_row("SELECT count(*) FROM messages", [], |r| r.get(0)))
            .await
    }

    /// Every recorded version of one board, oldest first: (version, content).
    pub async fn whiteboard_history(
        &self,
        board: String,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        self.query(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT version, content FROM whiteboard_versions WHERE board = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![board], |row| Ok((row.get(0)?, row.get(1)?)))?;
            rows.collect()
        })
        .await
    }

    pub async fn decisions(&self) -> Result<Vec<Decision>, StoreError> {
        self.query(|conn| {
            let mut stmt = conn.prepare("SELECT body FROM decisions ORDER BY created_at, id")?;
            let rows = stmt.query_map([], |row| parse_json(row.get::<_, String>(0)?, 0))?;
            rows.collect()
        })
        .await
    }

    /// The latest checkpoint of every task, oldest first.
    pub async fn tasks(&self) -> Result<Vec<TaskRecord>, StoreError> {
        self.query(|conn| {
            let mut stmt =
                conn.prepare("SELECT id, encoding, body FROM tasks ORDER BY created_at, id")?;
            let rows = stmt.query_map([], |row| {
                parse_checkpoint(row.get(0)?, row.get(1)?, row.get(2)?)
            })?;
            rows.collect()
        })
        .await
    }

    /// The agents of the last run that were never shut down (the process was killed).
    pub async fn unremoved_agents(&self) -> Result<Vec<AgentConfig>, StoreError> {
        self.query(|conn| {
            let mut stmt = conn.prepare(
                "SELECT config FROM agents WHERE removed_at IS NULL ORDER BY created_at, id",
            )?;
            let rows = stmt.query_map([], |row| parse_json(row.get::<_, String>(0)?, 0))?;
            rows.collect()
        })
        .await
    }

    /// Marks agents that will not come back as removed.
    pub async fn mark_removed(&self, agents: Vec<AgentId>) -> Result<(), StoreError> {
        for agent in agents {
            self.record(Record::AgentRemoved {
                agent,
                at: Utc::now(),
            });
        }
        self.flush().await
    }

    /// The latest version of every whiteboard: (board, version, content, time).
    pub async fn latest_boards(
        &self,
    ) -> Result<Vec<(String, u64, String, DateTime<Utc>)>, StoreError> {
        self.query(|conn| {
            let mut stmt = conn.prepare(
                "SELECT board, version, content, at FROM whiteboard_versions w
                 WHERE seq = (SELECT max(seq) FROM whiteboard_versions WHERE board = w.board)
                 ORDER BY board",
            )?;
            let rows = stmt.query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, millis(row.get(3)?)))
            })?;
            rows.collect()
        })
        .await
    }

    /// Recorded recovery steps, oldest first, optionally of one task.
    pub async fn recovery_steps(
        &self,
        task_id: Option<String>,
    ) -> Result<Vec<RecoveryEvent>, StoreError> {
        self.query(move |conn| {
            let mut stmt = conn.prepare(
                "SELECT body FROM recovery_steps WHERE ?1 IS NULL OR task_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map(params![task_id], |row| {
                parse_json(row.get::<_, String>(0)?, 0)
            })?;
            rows.collect()
        })
        .await
    }

    /// Approvals still waiting for an answer, oldest first.
    pub async fn pending_approvals(&self) -> Result<Vec<ApprovalRequest>, StoreError> {
        self.query(|conn| {
            let mut stmt = conn.prepare(
                "SELECT request FROM approvals WHERE status = 'pending' ORDER BY created_at, id",
            )?;
            let rows = stmt.query_map([], |row| parse_json(row.get::<_, String>(0)?, 0))?;
            rows.collect()
        })
        .await
    }

    pub async fn agents(&self) -> Result<Vec<AgentConfig>, StoreError> {
        self.query(|conn| {
            let mut stmt = conn.prepare("SELECT config FROM agents ORDER BY created_at, id")?;
            let rows = stmt.query_map([], |row| parse_json(row.get::<_, String>(0)?, 0))?;
            rows.collect()
        })
        .await
    }
}

fn writer(mut conn: Connection, inbox: mpsc::Receiver<Command>, location: Option<PathBuf>) {
    let mut records = Vec::with_capacity(BATCH);
    let mut durability = Durability::Normal;
    while let Ok(first) = inbox.recv() {
        let mut next = Some(first);
        while let Some(command) = next.take() {
            match command {
                Command::Record(record) => records.push(record),
                Command::Query(read) => {
                    // Reads come after the records queued before them.
                    write_batch(&mut conn, &mut records, &mut durability, &location);
                    read(&conn);
                }
            }
            if records.len() >= BATCH {
                write_batch(&mut conn, &mut records, &mut durability, &location);
            }
            next = inbox.try_recv().ok();
        }
        write_batch(&mut conn, &mut records, &mut durability, &location);
    }
}

/// The `synchronous` setting the connection is in. In WAL mode NORMAL may lose the last
/// commits on power loss (never corrupting the file); FULL syncs the WAL at each commit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    Normal,
    Full,
}

/// Whether a failed commit may succeed later (another process holds the lock, the disk
/// is full or failing, the file became read-only): then the batch waits and is tried
/// again, never dropped.
fn commit_may_succeed_later(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        error.sqlite_error_code(),
        Some(
            ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
        )
    )
}

fn write_batch(
    conn: &mut Connection,
    records: &mut Vec<Record>,
    durability: &mut Durability,
    location: &Option<PathBuf>,
) {
    if records.is_empty() {
        return;
    }
    let wanted = if records.iter().any(Record::is_checkpoint) {
        Durability::Full
    } else {
        Durability::Normal
    };
    if wanted != *durability {
        let value = if wanted == Durability::Full {
            "FULL"
        } else {
            "NORMAL"
        };
        match conn.pragma_update(None, "synchronous", value) {
            Ok(()) => *durability = wanted,
            Err(e) => tracing::error!("cannot set synchronous={value}: {e}"),
        }
    }
    drop_superseded_checkpoints(records);
    let mut pause = std::time::Duration::from_millis(100);
    let mut told = false;
    loop {
        let result = (|| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            for record in records.iter() {
                if let Err(e) = insert(&tx, record) {
                    if commit_may_succeed_later(&e) {
                        return Err(e);
                    }
                    tracing::error!("a record could not be stored: {e}");
                }
            }
            tx.commit()
        })();
        match result {
            Ok(()) => {
                if told {
                    tracing::warn!(
                        count = records.len(),
                        "the store is written again; nothing was lost"
                    );
                }
                break;
            }
            Err(e) if commit_may_succeed_later(&e) => {
                if !told {
                    let path = location
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "in memory".into());
                    tracing::error!(
                        count = records.len(),
                        "the store at {path} cannot be written ({e}). {}; what happens meanwhile is kept and written as soon as it can be",
                        advice(&e.to_string())
                    );
                    told = true;
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_secs(5));
            }
            Err(e) => {
                tracing::error!(
                    count = records.len(),
                    "a batch of records could not be committed: {e}"
                );
                break;
            }
        }
    }
    records.clear();
}

/// Removes every task checkpoint that a later one of the same task in this batch
/// replaces. The batch is one transaction, so the older states would be overwritten
/// before anyone could read them; skipping them keeps a busy team's commits small
/// (a task is checkpointed several times per step).
fn drop_superseded_checkpoints(records: &mut Vec<Record>) {
    fn sweep(records: &mut Vec<Record>, later: &mut HashSet<TaskId>) {
        let mut keep = vec![true; records.len()];
        for (index, record) in records.iter_mut().enumerate().rev() {
            match record {
                Record::TaskCheckpoint(task) => keep[index] = later.insert(task.id),
                Record::Group(group) => sweep(group, later),
                _ => {}
            }
        }
        let mut index = 0;
        records.retain(|_| {
            index += 1;
            keep[index - 1]
        });
    }
    sweep(records, &mut HashSet::new());
}

fn insert(conn: &Connection, record: &Record) -> rusqlite::Result<()> {
    match record {
        Record::Group(records) => {
            for record in records {
                insert(conn, record)?;
            }
        }
        Record::FileTouched(touch) => files::insert(conn, touch)?,
        Record::AgentCreated(config) => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO agents (id, name, layer, role, supervisor, config, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                config.id.to_string(),
                config.name,
                config.layer.as_str(),
                config.role,
                config.supervisor.map(|s| s.to_string()),
                to_json(&**config),
                Utc::now().timestamp_millis(),
            ])?;
        }
        Record::AgentRemoved { agent, at } => {
            conn.prepare_cached("UPDATE agents SET removed_at = ?2 WHERE id = ?1")?
                .execute(params![agent.to_string(), at.timestamp_millis()])?;
        }
        Record::Transition(t) => {
            conn.prepare_cached(
                "INSERT INTO transitions (agent_id, from_status, to_status, reason, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                t.agent_id.to_string(),
                t.from.as_str(),
                t.to.as_str(),
                t.reason,
                t.at.timestamp_millis()
            ])?;
        }
        Record::Message(m) => {
            conn.prepare_cached(
                "INSERT INTO messages (id, sender, recipient, kind, priority, task_id, at, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                m.id.hyphenated()
                    .encode_lower(&mut uuid::Uuid::encode_buffer()) as &str,
                m.from.to_string(),
                m.to.to_string(),
                m.kind.as_str(),
                m.priority.as_str(),
                m.task_id,
                m.at.timestamp_millis(),
                to_json(&**m),
            ])?;
        }
        Record::WhiteboardVersion { snapshot, author } => {
            conn.prepare_cached(
                "INSERT INTO whiteboard_versions (board, version, content, author, at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                snapshot.id.to_string(),
                snapshot.version,
                crate::redact::text(&snapshot.content),
                author.to_string(),
                snapshot.updated_at.timestamp_millis()
            ])?;
        }
        Record::Decision(d) => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO decisions (id, proposer, title, status, body, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                d.id.to_string(),
                d.proposer.to_string(),
                d.title,
                to_json(&d.status).trim_matches('"'),
                to_json(&**d),
                d.created_at.timestamp_millis(),
                decided_at(d).timestamp_millis()
            ])?;
        }
        Record::Arbitration(a) => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO arbitrations (conflict_id, body, at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![
                a.conflict_id.to_string(),
                to_json(&**a),
                a.at.timestamp_millis()
            ])?;
        }
        Record::TaskCheckpoint(task) => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO tasks (id, title, status, body, created_at, updated_at, encoding)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                task.id.to_string(),
                task.title,
                to_json(&task.status).trim_matches('"'),
                to_json(&**task),
                task.created_at.timestamp_millis(),
                task.updated_at.timestamp_millis(),
                checkpoint::ENCODING
            ])?;
        }
        Record::Recovery(event) => {
            conn.prepare_cached(
                "INSERT INTO recovery_steps (task_id, subtask_id, agent_id, action, severity, body, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                event.task_id,
                event.subtask_id,
                event.agent_id,
                event.action.as_str(),
                event.severity.as_str(),
                to_json(&**event),
                event.at.timestamp_millis()
            ])?;
        }
        Record::ApprovalRequested(request) => {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO approvals (id, task_id, status, request, answer, created_at)
                 VALUES (?1, ?2, 'pending', ?3, NULL, ?4)",
            )?
            .execute(params![
                request.approval_id.to_string(),
                request.task_id.to_string(),
                to_json(&**request),
                request.created_at.timestamp_millis()
            ])?;
        }
        Record::ApprovalResolved {
            approval_id,
            answer,
            ..
        } => {
            conn.prepare_cached("UPDATE approvals SET status = ?2, answer = ?3 WHERE id = ?1")?
                .execute(params![
                    approval_id.to_string(),
                    if answer.is_some() {
                        "answered"
                    } else {
                        "withdrawn"
                    },
                    answer.as_ref().map(to_json)
                ])?;
        }
    }
    Ok(())
}

/// When a decision last changed: its latest signature or veto, else its creation.
fn decided_at(decision: &Decision) -> DateTime<Utc> {
    decision
        .signatures
        .iter()
        .map(|s| s.at)
        .chain(decision.vetoes.iter().map(|v| v.at))
        .max()
        .unwrap_or(decision.created_at)
}

/// The JSON stored for `value`, with every secret redacted (`crate::redact`).
fn to_json<T: serde::Serialize>(value: &T) -> String {
    crate::redact::string(
        serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"unserialisable\":\"{e}\"}}")),
    )
}

fn millis(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

fn conversion_error(
    column: usize,
    e: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e))
}

fn parse_text<T>(text: String, column: usize) -> rusqlite::Result<T>
where
    T: std::str::FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    text.parse().map_err(|e| conversion_error(column, e))
}

fn parse_status(text: String, column: usize) -> rusqlite::Result<AgentStatus> {
    serde_json::from_value(serde_json::Value::String(text)).map_err(|e| conversion_error(column, e))
}

/// A task's stored checkpoint (`checkpoint.rs`), its body in column 2.
fn parse_checkpoint(id: String, encoding: u32, body: String) -> rusqlite::Result<TaskRecord> {
    checkpoint::decode(&id, encoding, &body).map_err(|e| conversion_error(2, e))
}

fn parse_json<T: serde::de::DeserializeOwned>(text: String, column: usize) -> rusqlite::Result<T> {
    serde_json::from_str(&text).map_err(|e| conversion_error(column, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{TaskContext, TaskOptions, TaskStatus};

    fn task(title: &str) -> TaskRecord {
        TaskRecord::new(
            title.into(),
            String::new(),
            TaskContext::default(),
            TaskOptions::default(),
        )
    }

    fn checkpoint(task: &TaskRecord, status: TaskStatus) -> Record {
        let mut state = task.clone();
        state.status = status;
        Record::TaskCheckpoint(Arc::new(state))
    }

    #[tokio::test]
    async fn a_burst_of_checkpoints_stores_each_task_as_it_last_stood() {
        let store = Store::in_memory().unwrap();
        let (a, b) = (task("a"), task("b"));
        let agent = AgentId::new();
        // As a busy team sends them: each change is its event grouped with the task's
        // checkpoint, and the tasks' changes interleave.
        for (record, status) in [
            (&a, TaskStatus::Planning),
            (&b, TaskStatus::Planning),
            (&a, TaskStatus::Running),
            (&b, TaskStatus::Completed),
            (&a, TaskStatus::Failed),
        ] {
            store.record(Record::Group(vec![
                Record::AgentRemoved {
                    agent,
                    at: Utc::now(),
                },
                checkpoint(record, status),
            ]));
        }
        store.flush().await.unwrap();
        let mut stored: Vec<(String, TaskStatus)> = store
            .tasks()
            .await
            .unwrap()
            .into_iter()
            .map(|t| (t.title, t.status))
            .collect();
        stored.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(
            stored,
            vec![
                ("a".to_string(), TaskStatus::Failed),
                ("b".to_string(), TaskStatus::Completed)
            ]
        );
    }

    #[test]
    fn only_checkpoints_replaced_later_in_the_batch_are_skipped() {
        let (a, b) = (task("a"), task("b"));
        let transition = |reason: &str| {
            Record::Transition(Transition {
                agent_id: AgentId::new(),
                from: AgentStatus::Idle,
                to: AgentStatus::Working,
                reason: reason.into(),
                at: Utc::now(),
            })
        };
        let mut batch = vec![
            Record::Group(vec![transition("1"), checkpoint(&a, TaskStatus::Planning)]),
            checkpoint(&b, TaskStatus::Planning),
            transition("2"),
            Record::Group(vec![checkpoint(&a, TaskStatus::Running), transition("3")]),
        ];
        drop_superseded_checkpoints(&mut batch);
        let shape: Vec<String> = batch
            .iter()
            .map(|record| match record {
                Record::Group(group) => format!(
                    "group[{}]",
                    group.iter().map(describe).collect::<Vec<_>>().join(", ")
                ),
                other => describe(other),
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                "group[transition 1]",
                "checkpoint b planning",
                "transition 2",
                "group[checkpoint a running, transition 3]"
            ]
        );
    }

    fn describe(record: &Record) -> String {
        match record {
            Record::TaskCheckpoint(task) => format!(
                "checkpoint {} {}",
                task.title,
                serde_json::to_string(&task.status)
                    .unwrap()
                    .trim_matches('"')
            ),
            Record::Transition(t) => format!("transition {}", t.reason),
            _ => "other".into(),
        }
    }

    /// A task checkpoint, a recovery step, an approval and an agent as the store wrote
    /// them before the records moved out of the runtime (one of each, every field that
    /// is written present): they read back, and are written again byte for byte alike.
    #[tokio::test]
    async fn records_written_by_earlier_versions_still_read() {
        const TASK: &str = r#"{
            "id":"6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71",
            "title":"Add a flag",
            "description":"Add --verbose",
            "context":{"files":["file:///w/cli.py"],"selection":null},
            "options":{"continueOnError":null,"timeoutMs":600000,"maxRetries":null,"onFailure":"restore"},
            "status":"failed",
            "createdAt":"2026-11-20T10:00:00Z",
            "updatedAt":"2026-11-20T10:05:00Z",
            "subtasks":[{"id":"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","description":"Write cli.py","dependsOn":[],"assignee":"9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","assigneeName":"bottom-1","status":"failed","attempts":3,"result":null,"partialResults":["half"],"files":["cli.py"]}],
            "recovery":{"taskId":"6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71","subtaskId":"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","agentId":"9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","action":"gave_up","severity":"high","attempt":3,"maxAttempts":3,"message":"out of retries","scope":"subtask","at":"2026-11-20T10:04:00Z"},
            "filesWritten":["cli.py"],
            "result":null,
            "partialResults":[],
            "errors":[{"kind":"tool","code":"command_failed","severity":"medium","transient":false,"fatal":false,"message":"exit 1","rootCause":{"kind":"timeout","message":"slow"},"scope":"subtask","taskId":"6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71","subtaskId":"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","at":"2026-11-20T10:03:00Z"}],
            "coordinator":null,
            "planDecision":"0a0b0c0d-0e0f-4a1b-8c2d-3e4f5a6b7c8d",
            "checks":[{"kind":"stubs","name":"stub scan","status":"failed","files":["cli.py"],"detail":"pass","subtaskId":null,"at":"2026-11-20T10:02:00Z","rules":["python.stub"]}],
            "ruleFindings":{"python.stub":2},
            "usage":{"total":{"inputTokens":1200,"outputTokens":34,"calls":2,"estimatedCalls":1,"costUsd":0.0042},"bySubtask":{"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f":{"inputTokens":1200,"outputTokens":34,"calls":2,"estimatedCalls":1,"costUsd":0.0042}},"byAgent":{},"tokenLimit":5000},
            "owner":"acp:s1",
            "reverted":{"by":"failure","at":"2026-11-20T10:05:00Z","restored":["cli.py"],"kept":[{"path":"notes.txt","reason":"changed since"}]}
        }"#;
        const STEP: &str = r#"{"taskId":"","agentId":"00000000-0000-0000-0000-000000000000","action":"circuit_open","severity":"medium","attempt":1,"maxAttempts":5,"delayMs":30000,"message":"paused","scope":"provider","provider":"anthropic","taskIds":["6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71"],"at":"2026-11-20T10:01:00Z"}"#;
        const APPROVAL: &str = r#"{"approvalId":"5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b","kind":"escalation","taskId":"6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71","subtaskId":"1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f","agentId":"9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","severity":"high","title":"[1/1] Write cli.py keeps failing","detail":"**Task**: Add a flag","proposedSolution":"Modify it","diff":{"uri":"file:///w/cli.py","before":"a","after":"b"},"command":"pytest","subtaskDescription":"Write cli.py","options":[{"id":"retry","title":"Retry"},{"id":"abort","title":"Abort the subtask"}],"createdAt":"2026-11-20T10:04:30Z"}"#;
        const AGENT: &str = r#"{"id":"9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","name":"top-1","layer":"top","role":"power","supervisor":null,"subordinates":[],"capabilities":["plan","reflect","review","arbitrate"],"model":{"model":"gpt-4o-mini","temperature":0.2},"maxRetries":3,"timeoutMs":300000,"power":{"powerType":"power_a","voteWeight":1.5,"seniority":0}}"#;
        // The checkpoint is one line, as the store writes it.
        let task_body: String = TASK.lines().map(str::trim).collect();
        let store = Store::in_memory().unwrap();
        store
            .query(move |conn| {
                conn.execute(
                    "INSERT INTO tasks (id, title, status, body, created_at, updated_at)
                     VALUES ('6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71', 'Add a flag', 'failed', ?1, 1, 2)",
                    params![task_body],
                )?;
                conn.execute(
                    "INSERT INTO recovery_steps (task_id, subtask_id, agent_id, action, severity, body, at)
                     VALUES ('', NULL, '00000000-0000-0000-0000-000000000000', 'circuit_open', 'medium', ?1, 1)",
                    params![STEP],
                )?;
                conn.execute(
                    "INSERT INTO approvals (id, task_id, status, request, answer, created_at)
                     VALUES ('5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b', '6f9a3c1e-0b8d-4b7e-9a55-2d1f0c3e4a71', 'pending', ?1, NULL, 1)",
                    params![APPROVAL],
                )?;
                conn.execute(
                    "INSERT INTO agents (id, name, layer, role, supervisor, config, created_at)
                     VALUES ('9b8a7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', 'top-1', 'top', 'power', NULL, ?1, 1)",
                    params![AGENT],
                )?;
                Ok(())
            })
            .await
            .unwrap();
        // Written again as the store writes (`to_json`), the same JSON as was stored.
        let same = |stored: &str, written: String| {
            let value = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
            assert_eq!(value(&written), value(stored));
        };

        let tasks = store.tasks().await.unwrap();
        let [task] = &tasks[..] else {
            panic!("one task: {tasks:?}")
        };
        assert_eq!(task.status, TaskStatus::Failed);
        assert_eq!(task.subtasks[0].assignee_name.as_deref(), Some("bottom-1"));
        assert_eq!(
            task.errors[0].failure.kind,
            crate::records::FailureKind::Tool
        );
        assert_eq!(task.errors[0].subtask_id(), Some(task.subtasks[0].id));
        assert_eq!(task.usage.total.estimated_calls, 1);
        assert_eq!(task.usage.token_limit, Some(5000));
        assert_eq!(task.rule_findings["python.stub"], 2);
        assert_eq!(
            task.reverted.as_ref().map(|r| r.by),
            Some(crate::records::RevertedBy::Failure)
        );
        same(TASK, to_json(task));

        let steps = store.recovery_steps(None).await.unwrap();
        assert_eq!(steps[0].scope, crate::records::EventScope::Provider);
        assert_eq!(steps[0].task_ids.len(), 1);
        same(STEP, to_json(&steps[0]));

        let approvals = store.pending_approvals().await.unwrap();
        assert_eq!(approvals[0].options.len(), 2);
        assert_eq!(approvals[0].diff.as_ref().unwrap().after, "b");
        same(APPROVAL, to_json(&approvals[0]));

        let agents = store.unremoved_agents().await.unwrap();
        assert_eq!(agents[0].power.unwrap().vote_weight, 1.5);
        same(AGENT, to_json(&agents[0]));
    }
}
