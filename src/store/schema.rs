//! Versioned migrations. `PRAGMA user_version` holds how many have been applied; each
//! runs once, in its own transaction, in order.

use rusqlite::Connection;

const MIGRATIONS: &[&str] = &[
    // 1: the audit log of the runtime core.
    "CREATE TABLE agents (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        layer TEXT NOT NULL,
        role TEXT NOT NULL,
        supervisor TEXT,
        config TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        removed_at INTEGER
    );
    CREATE TABLE transitions (
        seq INTEGER PRIMARY KEY,
        agent_id TEXT NOT NULL,
        from_status TEXT NOT NULL,
        to_status TEXT NOT NULL,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE INDEX transitions_by_agent ON transitions (agent_id);
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL,
        sender TEXT NOT NULL,
        recipient TEXT NOT NULL,
        kind TEXT NOT NULL,
        priority TEXT NOT NULL,
        task_id TEXT,
        at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX messages_by_task ON messages (task_id);
    CREATE TABLE whiteboard_versions (
        seq INTEGER PRIMARY KEY,
        board TEXT NOT NULL,
        version INTEGER NOT NULL,
        content TEXT NOT NULL,
        author TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE INDEX whiteboard_versions_by_board ON whiteboard_versions (board, version);
    CREATE TABLE decisions (
        id TEXT PRIMARY KEY,
        proposer TEXT NOT NULL,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE arbitrations (
        conflict_id TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        at INTEGER NOT NULL
    );",
    // 2: tasks (their latest checkpoint), recovery steps and approvals.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE TABLE recovery_steps (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        subtask_id TEXT,
        agent_id TEXT NOT NULL,
        action TEXT NOT NULL,
        severity TEXT NOT NULL,
        body TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE INDEX recovery_steps_by_task ON recovery_steps (task_id);
    CREATE TABLE approvals (
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        status TEXT NOT NULL,
        request TEXT NOT NULL,
        answer TEXT,
        created_at INTEGER NOT NULL
    );",
    // 3: compacted history: one row per finished task whose events were folded away.
    "CREATE TABLE task_summaries (
        task_id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        status TEXT NOT NULL,
        summary TEXT NOT NULL,
        compacted_at INTEGER NOT NULL
    );",
    // 4: what each task did to each file, so a task can be taken back: the file as the
    // task first found it (absent, its bytes, or too large to keep) and a hash of what
    // the task left (NULL: the task left no file there).
    "CREATE TABLE file_history (
        task_id TEXT NOT NULL,
        path TEXT NOT NULL,
        before_kind TEXT NOT NULL,
        before BLOB,
        before_bytes INTEGER NOT NULL,
        after_hash TEXT,
        first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL,
        PRIMARY KEY (task_id, path)
    );",
    // 5: which encoding each task checkpoint is in (`checkpoint.rs`); rows written before
    // it are in the first.
    "ALTER TABLE tasks ADD COLUMN encoding INTEGER NOT NULL DEFAULT 1;",
];

/// Applies the migrations the database has not seen yet.
pub fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let applied: usize = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if applied > MIGRATIONS.len() {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "the store was written by a newer Conclave (schema {applied}, this one knows {})",
            MIGRATIONS.len()
        )));
    }
    for (index, migration) in MIGRATIONS.iter().enumerate().skip(applied) {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(migration)?;
        tx.pragma_update(None, "user_version", index + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op() {
        let conn = Connection::open_in_memory().unwrap();
        migrate(&conn).unwrap();
        migrate(&conn).unwrap();
        let version: usize = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
        assert!(migrate(&conn).unwrap_err().to_string().contains("newer"));
    }
}
