//! The pure state behind the live views the bridge sends: whiteboard coalescing and
//! diagnostics on the files of troubled subtasks. No I/O here, so both are tested on
//! plain `Instant`s and summaries.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::runtime::{SubtaskId, SubtaskStatus};
use crate::wire::{SubtaskSummary, TaskSummary};

/// Whiteboard changes, at most one per board per `interval`, always ending on the
/// latest version: a change inside the interval is held (replacing any older held one)
/// and sent when the interval is over.
pub struct Coalescer {
    interval: Duration,
    boards: HashMap<String, Board>,
}

#[derive(Default)]
struct Board {
    last_sent: Option<Instant>,
    held: Option<(u64, Value)>,
    sent_version: u64,
}

impl Coalescer {
    pub fn new(interval: Duration) -> Coalescer {
        Coalescer {
            interval,
            boards: HashMap::new(),
        }
    }

    /// A new version of board `id`: returns the params to send now, or holds them.
    pub fn offer(&mut self, id: &str, version: u64, params: Value, now: Instant) -> Option<Value> {
        let board = self.boards.entry(id.to_string()).or_default();
        if version <= board.sent_version
            || board
                .held
                .as_ref()
                .is_some_and(|(held, _)| version <= *held)
        {
            return None;
        }
        match board.last_sent {
            Some(last) if now < last + self.interval => {
                board.held = Some((version, params));
                None
            }
            _ => {
                board.last_sent = Some(now);
                board.sent_version = version;
                board.held = None;
                Some(params)
            }
        }
    }

    /// The held changes whose interval is over, to send now.
    pub fn due(&mut self, now: Instant) -> Vec<Value> {
        let interval = self.interval;
        let mut out = Vec::new();
        for board in self.boards.values_mut() {
            let ready = board.last_sent.is_none_or(|last| now >= last + interval);
            if ready && let Some((version, params)) = board.held.take() {
                board.last_sent = Some(now);
                board.sent_version = version;
                out.push(params);
            }
        }
        out
    }

    /// When the next held change falls due.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.boards
            .values()
            .filter(|b| b.held.is_some())
            .map(|b| {
                b.last_sent
                    .map_or_else(Instant::now, |last| last + self.interval)
            })
            .min()
    }

    /// Forgets a board (unsubscribed): nothing held for it is sent.
    pub fn forget(&mut self, id: &str) {
        self.boards.remove(id);
    }
}

/// How a subtask's trouble shows on its files.
#[derive(Clone, Debug, PartialEq)]
pub struct FileNote {
    pub severity: NoteSeverity,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteSeverity {
    Information,
    Warning,
    Error,
}

/// The diagnostics Conclave has put on files, per file and subtask.
#[derive(Default)]
pub struct FileNotes {
    by_file: BTreeMap<String, BTreeMap<SubtaskId, FileNote>>,
    /// The latest recovery message about each subtask: a task's summary carries only
    /// its latest step, which may be about another subtask by the time this one fails.
    reasons: HashMap<String, String>,
}

impl FileNotes {
    /// Takes a task's new summary in; returns the files whose notes changed (publish
    /// `notes(file)` for each; an empty list clears the file).
    pub fn update(&mut self, summary: &TaskSummary) -> Vec<String> {
        if let Some(step) = &summary.recovery
            && let Some(subtask) = &step.subtask_id
            && !step.message.trim().is_empty()
        {
            self.reasons.insert(subtask.clone(), step.message.clone());
        }
        let mut changed = HashSet::new();
        for subtask in &summary.subtasks {
            let reason = self.reasons.get(&subtask.subtask_id.to_string());
            let note = note_for(subtask, reason.map(String::as_str));
            for file in &subtask.files {
                let notes = self.by_file.entry(file.clone()).or_default();
                let previous = match &note {
                    Some(note) => notes.insert(subtask.subtask_id, note.clone()),
                    None => notes.remove(&subtask.subtask_id),
                };
                if previous != note {
                    changed.insert(file.clone());
                }
            }
        }
        self.by_file.retain(|_, notes| !notes.is_empty());
        let mut changed: Vec<String> = changed.into_iter().collect();
        changed.sort();
        changed
    }

    pub fn notes(&self, file: &str) -> Vec<FileNote> {
        self.by_file
            .get(file)
            .map(|notes| notes.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// The diagnostic for a subtask's files, saying why when the reason is known.
fn note_for(subtask: &SubtaskSummary, reason: Option<&str>) -> Option<FileNote> {
    let why = reason.map(|r| format!(": {r}")).unwrap_or_default();
    let name = &subtask.description;
    let (severity, message) = match subtask.status {
        SubtaskStatus::Recovering => (
            NoteSeverity::Information,
            format!(
                "Conclave is recovering the subtask “{name}” (attempt {}){why}",
                subtask.attempts
            ),
        ),
        SubtaskStatus::Escalated => (
            NoteSeverity::Warning,
            format!("The subtask “{name}” is escalated and waits for a decision{why}"),
        ),
        SubtaskStatus::Failed => (
            NoteSeverity::Error,
            match reason {
                Some(_) => format!("The subtask “{name}” failed{why}"),
                None => format!(
                    "The subtask “{name}” failed after {} attempt(s); the task's error report says why",
                    subtask.attempts
                ),
            },
        ),
        _ => return None,
    };
    Some(FileNote { severity, message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{TaskId, TaskStatus};
    use chrono::Utc;
    use serde_json::json;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_first_change_goes_at_once_and_a_burst_ends_on_the_latest_version() {
        let start = Instant::now();
        let mut c = Coalescer::new(50 * MS);
        assert_eq!(c.offer("global", 1, json!(1), start), Some(json!(1)));
        assert_eq!(c.offer("global", 2, json!(2), start + 10 * MS), None);
        assert_eq!(c.offer("global", 3, json!(3), start + 20 * MS), None);
        assert_eq!(c.next_deadline(), Some(start + 50 * MS));
        assert!(c.due(start + 49 * MS).is_empty(), "not before 50 ms");
        assert_eq!(c.due(start + 50 * MS), vec![json!(3)], "only the latest");
        assert_eq!(c.next_deadline(), None);
        assert!(c.due(start + 500 * MS).is_empty());
        // A change long after the last one goes at once again.
        assert_eq!(
            c.offer("global", 4, json!(4), start + 200 * MS),
            Some(json!(4))
        );
    }

    #[test]
    fn boards_are_coalesced_separately_and_old_versions_are_dropped() {
        let start = Instant::now();
        let mut c = Coalescer::new(50 * MS);
        assert!(c.offer("global", 5, json!("g5"), start).is_some());
        assert!(c.offer("layer:mid", 1, json!("m1"), start).is_some());
        assert_eq!(c.offer("global", 4, json!("g4"), start + 60 * MS), None);
        assert!(
            c.due(start + 200 * MS).is_empty(),
            "an older version is never sent"
        );
        c.offer("global", 6, json!("g6"), start + 201 * MS);
        c.offer("global", 7, json!("g7"), start + 202 * MS);
        c.forget("global");
        assert!(
            c.due(start + 400 * MS).is_empty(),
            "forgotten boards send nothing"
        );
    }

    fn summary(status: SubtaskStatus, files: &[&str]) -> TaskSummary {
        TaskSummary {
            task_id: TaskId::new(),
            title: "t".into(),
            status: TaskStatus::Running,
            progress: 0,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            subtasks: vec![SubtaskSummary {
                subtask_id: SubtaskId::new(),
                description: "Write a.rs".into(),
                assignee: None,
                assignee_name: None,
                status,
                attempts: 2,
                files: files.iter().map(|f| f.to_string()).collect(),
            }],
            recovery: None,
            unchecked: None,
            checked_by: None,
            parked: None,
            reverted_by: None,
            usage_total: None,
            check_counts: None,
        }
    }

    #[test]
    fn notes_follow_the_subtask_and_clear_when_it_completes() {
        let mut notes = FileNotes::default();
        let mut task = summary(SubtaskStatus::Running, &["a.rs"]);
        assert!(
            notes.update(&task).is_empty(),
            "a running subtask puts nothing"
        );
        task.subtasks[0].status = SubtaskStatus::Recovering;
        assert_eq!(notes.update(&task), ["a.rs"]);
        assert_eq!(notes.notes("a.rs")[0].severity, NoteSeverity::Information);
        assert!(
            notes.update(&task).is_empty(),
            "unchanged: nothing to publish"
        );
        task.subtasks[0].status = SubtaskStatus::Escalated;
        notes.update(&task);
        assert_eq!(notes.notes("a.rs")[0].severity, NoteSeverity::Warning);
        task.subtasks[0].status = SubtaskStatus::Failed;
        notes.update(&task);
        assert_eq!(notes.notes("a.rs")[0].severity, NoteSeverity::Error);
        task.subtasks[0].status = SubtaskStatus::Completed;
        assert_eq!(notes.update(&task), ["a.rs"], "cleared");
        assert!(notes.notes("a.rs").is_empty());
    }

    #[test]
    fn a_failed_file_says_why_even_after_a_later_step_about_another_subtask() {
        let mut notes = FileNotes::default();
        let mut task = summary(SubtaskStatus::Recovering, &["a.rs"]);
        let step = |subtask: SubtaskId, message: &str| crate::recovery::RecoveryEvent {
            task_id: task_id_string(),
            subtask_id: Some(subtask.to_string()),
            agent_id: String::new(),
            action: crate::recovery::RecoveryAction::Retry,
            severity: crate::recovery::Severity::Medium,
            attempt: 1,
            max_attempts: 3,
            delay_ms: None,
            message: message.into(),
            scope: Default::default(),
            provider: None,
            files: None,
            task_ids: Vec::new(),
            at: Utc::now(),
        };
        let ours = task.subtasks[0].subtask_id;
        task.recovery = Some(step(ours, "python3 -m py_compile failed"));
        notes.update(&task);
        task.recovery = Some(step(SubtaskId::new(), "another one"));
        task.subtasks[0].status = SubtaskStatus::Failed;
        notes.update(&task);
        let note = &notes.notes("a.rs")[0];
        assert_eq!(note.severity, NoteSeverity::Error);
        assert!(
            note.message
                .ends_with("failed: python3 -m py_compile failed"),
            "{}",
            note.message
        );

        let mut unknown = FileNotes::default();
        unknown.update(&summary(SubtaskStatus::Failed, &["b.rs"]));
        assert!(
            unknown.notes("b.rs")[0]
                .message
                .contains("error report says why"),
            "{}",
            unknown.notes("b.rs")[0].message
        );
    }

    fn task_id_string() -> String {
        TaskId::new().to_string()
    }
}
