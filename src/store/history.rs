//! Reading the audit log back (`conclave log`) and keeping it bounded (`conclave gc`).

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};
use serde::Serialize;
use serde_json::{Value, json};

use super::{Store, StoreError, millis, parse_checkpoint};
use crate::records::{RevertedBy, TaskRecord};

/// One line of a task's history.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    pub at: DateTime<Utc>,
    /// `transition`, `message`, `decision`, `recovery`, `file`, `summary`, `undo` or
    /// `report` (a line of the top agent's final report).
    pub kind: String,
    /// Who: an agent's name (or id), or `system`.
    pub actor: String,
    /// One line for people.
    pub text: String,
    /// The whole record.
    pub detail: Value,
}

impl LogEntry {
    /// The entry as one line for people: time, kind, actor, text (what `conclave log`
    /// prints and `conclave/taskLog` returns).
    pub fn line(&self) -> String {
        format!(
            "{}  {:<10}  {:<14}  {}",
            self.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            self.kind,
            self.actor,
            self.text
        )
    }
}

/// What a compaction removed.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    pub tasks: usize,
    pub messages: usize,
    pub recovery_steps: usize,
    pub whiteboard_versions: usize,
    pub transitions: usize,
    /// Files of the compacted tasks' file history: those tasks can no longer be undone.
    pub files: usize,
}

impl Store {
    /// The history of one task (or of everything), oldest first: agent transitions of
    /// the agents that worked on it while it ran, its messages, decisions, recovery steps
    /// and files written.
    pub async fn history(&self, task: Option<String>) -> Result<Vec<LogEntry>, StoreError> {
        self.query(move |conn| history(conn, task.as_deref())).await
    }

    /// Folds the events of tasks finished before `before` into one summary row each, and
    /// drops old whiteboard versions (keeping each board's latest) and old transitions of
    /// agents that are gone. The task checkpoints themselves are kept.
    pub async fn compact(&self, before: DateTime<Utc>) -> Result<Compaction, StoreError> {
        self.query(move |conn| compact(conn, before)).await
    }
}

fn names(conn: &Connection) -> rusqlite::Result<std::collections::HashMap<String, String>> {
    let mut stmt = conn.prepare("SELECT id, name FROM agents")?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
    })?;
    let mut names: std::collections::HashMap<String, String> =
        rows.collect::<rusqlite::Result<_>>()?;
    names.insert(uuid::Uuid::nil().to_string(), "system".into());
    names.insert("system".into(), "system".into());
    Ok(names)
}

fn history(conn: &Connection, task: Option<&str>) -> rusqlite::Result<Vec<LogEntry>> {
    let names = names(conn)?;
    let name = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());
    let mut entries = Vec::new();

    let record: Option<TaskRecord> = match task {
        Some(id) => conn
            .query_row(
                "SELECT id, encoding, body FROM tasks WHERE id = ?1",
                params![id],
                |row| parse_checkpoint(row.get(0)?, row.get(1)?, row.get(2)?),
            )
            .map(Some)
            .or_else(|e| {
                if matches!(e, rusqlite::Error::QueryReturnedNoRows) {
                    Ok(None)
                } else {
                    Err(e)
                }
            })?,
        None => None,
    };

    // Transitions: everything, or those of the task's agents while it ran.
    let (workers, window): (Vec<String>, Option<(i64, i64)>) = match &record {
        Some(t) => {
            let mut ids: Vec<String> = t
                .subtasks
                .iter()
                .filter_map(|s| s.assignee.map(|a| a.to_string()))
                .collect();
            ids.extend(t.coordinator.map(|c| c.to_string()));
            (
                ids,
                Some((
                    t.created_at.timestamp_millis(),
                    t.updated_at.timestamp_millis(),
                )),
            )
        }
        None => (Vec::new(), None),
    };
    if task.is_none() || !workers.is_empty() {
        let mut stmt = conn.prepare(
            "SELECT agent_id, from_status, to_status, reason, at FROM transitions ORDER BY seq",
        )?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, i64>(4)?,
            ))
        })?;
        for row in rows {
            let (agent, from, to, reason, at) = row?;
            if let Some((start, end)) = window
                && (!workers.contains(&agent) || at < start || at > end)
            {
                continue;
            }
            entries.push(LogEntry {
                at: millis(at),
                kind: "transition".into(),
                actor: name(&agent),
                text: format!("{from} → {to} ({reason})"),
                detail: json!({ "agentId": agent, "from": from, "to": to, "reason": reason }),
            });
        }
    }

    let mut stmt = conn.prepare("SELECT sender, recipient, kind, at, body FROM messages WHERE ?1 IS NULL OR task_id = ?1 ORDER BY seq")?;
    let rows = stmt.query_map(params![task], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
            row.get::<_, String>(4)?,
        ))
    })?;
    for row in rows {
        let (from, to, kind, at, body) = row?;
        if kind == "heartbeat" {
            continue;
        }
        let detail: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        // What the message says, when it says it in a line: a report's summary, an
        // escalation's message, a verdict and its reason.
        let payload = &detail["payload"];
        let gist = payload["summary"]
            .as_str()
            .or(payload["message"].as_str())
            .map(str::to_string)
            .or_else(|| {
                Some(format!(
                    "{} ({})",
                    payload["verdict"].as_str()?,
                    payload["reason"].as_str()?
                ))
            })
            .map(|gist| format!(": {gist}"))
            .unwrap_or_default();
        entries.push(LogEntry {
            at: millis(at),
            kind: "message".into(),
            actor: name(&from),
            text: format!("{kind} → {}{gist}", name(&to)),
            detail,
        });
    }

    let mut stmt = conn.prepare("SELECT body, updated_at FROM decisions ORDER BY created_at")?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
    })?;
    for row in rows {
        let (body, at) = row?;
        let detail: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if let Some(id) = task
            && detail["content"]["taskId"] != id
        {
            continue;
        }
        entries.push(LogEntry {
            at: millis(at),
            kind: "decision".into(),
            actor: name(detail["proposer"].as_str().unwrap_or("")),
            text: format!(
                "\"{}\" {} ({} signature(s), {} veto(es))",
                detail["title"].as_str().unwrap_or(""),
                detail["status"].as_str().unwrap_or(""),
                detail["signatures"].as_array().map_or(0, Vec::len),
                detail["vetoes"].as_array().map_or(0, Vec::len)
            ),
            detail,
        });
    }

    let mut stmt = conn.prepare("SELECT agent_id, action, severity, at, body FROM recovery_steps WHERE ?1 IS NULL OR task_id = ?1 ORDER BY seq")?;
    let rows = stmt.query_map(params![task], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
            row.get::<_, String>(4)?,
        ))
    })?;
    for row in rows {
        let (agent, action, severity, at, body) = row?;
        let detail: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        entries.push(LogEntry {
            at: millis(at),
            kind: "recovery".into(),
            actor: name(&agent),
            text: format!(
                "{action} [{severity}] {}",
                detail["message"].as_str().unwrap_or("")
            ),
            detail,
        });
    }

    let mut stmt = conn.prepare("SELECT task_id, title, status, summary, compacted_at FROM task_summaries WHERE ?1 IS NULL OR task_id = ?1")?;
    let rows = stmt.query_map(params![task], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, String>(3)?,
            row.get::<_, i64>(4)?,
        ))
    })?;
    for row in rows {
        let (id, title, status, summary, at) = row?;
        let detail: Value = serde_json::from_str(&summary).unwrap_or(Value::Null);
        entries.push(LogEntry {
            at: millis(at),
            kind: "summary".into(),
            actor: "system".into(),
            text: format!("\"{title}\" {status}: history compacted ({detail})"),
            detail: json!({ "taskId": id, "summary": detail }),
        });
    }

    if let Some(t) = &record {
        for subtask in &t.subtasks {
            for file in &subtask.files {
                entries.push(LogEntry {
                    at: millis(t.updated_at.timestamp_millis()),
                    kind: "file".into(),
                    actor: subtask
                        .assignee
                        .map(|a| name(&a.to_string()))
                        .unwrap_or_default(),
                    text: format!("wrote {file}"),
                    detail: json!({ "path": file, "subtaskId": subtask.id }),
                });
            }
        }
    }
    if let Some(reverted) = record.as_ref().and_then(|t| t.reverted.as_ref()) {
        entries.push(LogEntry {
            at: reverted.at,
            kind: "undo".into(),
            actor: "system".into(),
            text: match reverted.by {
                RevertedBy::Failure => {
                    format!("the task failed: {}", reverted.describe())
                }
                RevertedBy::Undo => format!("undone: {}", reverted.describe()),
            },
            detail: serde_json::to_value(reverted).unwrap_or(Value::Null),
        });
    }
    if let Some(report) = record.as_ref().and_then(|t| t.final_report.as_ref()) {
        // One entry a line of the report, in its order (the sort below is stable).
        let detail = serde_json::to_value(report).unwrap_or(Value::Null);
        for (i, line) in report.text.lines().enumerate() {
            entries.push(LogEntry {
                // Stored times are in milliseconds: the report's too, so it sorts with them.
                at: millis(report.at.timestamp_millis()),
                kind: "report".into(),
                actor: report.by.clone(),
                text: if i == 0 {
                    format!("final report: {line}")
                } else {
                    line.to_string()
                },
                detail: detail.clone(),
            });
        }
    }
    entries.sort_by_key(|e| e.at);
    Ok(entries)
}

fn compact(conn: &Connection, before: DateTime<Utc>) -> rusqlite::Result<Compaction> {
    let cutoff = before.timestamp_millis();
    let tx = conn.unchecked_transaction()?;
    let mut done = Compaction::default();
    let finished: Vec<(String, String, String)> = {
        let mut stmt = tx.prepare(
            "SELECT id, title, status FROM tasks
             WHERE status IN ('completed', 'failed', 'cancelled') AND updated_at < ?1
             AND id NOT IN (SELECT task_id FROM task_summaries)",
        )?;
        let rows = stmt.query_map(params![cutoff], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (id, title, status) in finished {
        let count = |sql: &str| tx.query_row(sql, params![id], |row| row.get::<_, i64>(0));
        let messages = count("SELECT count(*) FROM messages WHERE task_id = ?1")?;
        let steps = count("SELECT count(*) FROM recovery_steps WHERE task_id = ?1")?;
        let mut by_action = serde_json::Map::new();
        {
            let mut stmt = tx.prepare(
                "SELECT action, count(*) FROM recovery_steps WHERE task_id = ?1 GROUP BY action",
            )?;
            let rows = stmt.query_map(params![id], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })?;
            for row in rows {
                let (action, n) = row?;
                by_action.insert(action, json!(n));
            }
        }
        let summary =
            json!({ "messages": messages, "recoverySteps": steps, "recovery": by_action });
        tx.execute(
            "INSERT INTO task_summaries (task_id, title, status, summary, compacted_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, title, status, summary.to_string(), Utc::now().timestamp_millis()],
        )?;
        done.messages += tx.execute("DELETE FROM messages WHERE task_id = ?1", params![id])?;
        done.recovery_steps +=
            tx.execute("DELETE FROM recovery_steps WHERE task_id = ?1", params![id])?;
        done.files += tx.execute("DELETE FROM file_history WHERE task_id = ?1", params![id])?;
        done.tasks += 1;
    }
    done.messages += tx.execute(
        "DELETE FROM messages WHERE task_id IS NULL AND at < ?1",
        params![cutoff],
    )?;
    done.whiteboard_versions += tx.execute(
        "DELETE FROM whiteboard_versions WHERE at < ?1
         AND seq NOT IN (SELECT max(seq) FROM whiteboard_versions GROUP BY board)",
        params![cutoff],
    )?;
    done.transitions += tx.execute(
        "DELETE FROM transitions WHERE at < ?1
         AND agent_id IN (SELECT id FROM agents WHERE removed_at IS NOT NULL)",
        params![cutoff],
    )?;
    tx.commit()?;
    Ok(done)
}
