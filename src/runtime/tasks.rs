//! Tasks: the live registry of the tasks the user asked for. It publishes every change
//! as `TaskUpdated` and checkpoints the task into the store. The task's record and its
//! parts are in [`crate::records`].

use std::sync::Arc;

use chrono::Utc;
use dashmap::{DashMap, DashSet};

use super::events::EventBus;
use super::journal::Journal;
use crate::ids::{SubtaskId, TaskId};
use crate::records::TaskRecord;
use crate::store::{Record, Store};

/// The live tasks, cheap to clone.
#[derive(Clone)]
pub struct Tasks {
    tasks: Arc<DashMap<TaskId, TaskRecord>>,
    /// The task each subtask looked up so far belongs to (a subtask never moves and
    /// tasks are never dropped, so an entry never goes stale): every model call asks.
    owners: Arc<DashMap<SubtaskId, TaskId>>,
    /// Tasks changed by [`Tasks::note`] since their last checkpoint.
    noted: Arc<DashSet<TaskId>>,
    journal: Journal,
}

impl Tasks {
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        Tasks {
            tasks: Arc::new(DashMap::new()),
            owners: Arc::new(DashMap::new()),
            noted: Arc::new(DashSet::new()),
            journal: Journal::new(events, store),
        }
    }

    /// Adds a task (new, or resumed from a checkpoint) and announces it.
    pub fn insert(&self, record: TaskRecord) {
        let id = record.id;
        self.tasks.insert(id, record);
        self.changed(id);
    }

    /// Brings back a finished task from the store, as it was: not announced, not
    /// checkpointed again.
    pub fn restore_finished(&self, record: TaskRecord) {
        self.tasks.insert(record.id, record);
    }

    /// Calls `visit` with every task in turn, without copying them (hot paths that
    /// count or look for something across all tasks).
    pub fn visit(&self, mut visit: impl FnMut(&TaskRecord)) {
        for task in self.tasks.iter() {
            visit(&task);
        }
    }

    /// The task a subtask belongs to.
    pub fn task_of(&self, subtask: SubtaskId) -> Option<TaskId> {
        if let Some(task) = self.owners.get(&subtask) {
            return Some(*task);
        }
        let task = self
            .tasks
            .iter()
            .find(|t| t.subtask(subtask).is_some())
            .map(|t| t.id)?;
        self.owners.insert(subtask, task);
        Some(task)
    }

    /// What `read` makes of the task, without copying it.
    pub fn read<T>(&self, id: TaskId, read: impl FnOnce(&TaskRecord) -> T) -> Option<T> {
        self.tasks.get(&id).map(|t| read(&t))
    }

    pub fn get(&self, id: TaskId) -> Option<TaskRecord> {
        self.tasks.get(&id).map(|t| t.clone())
    }

    pub fn contains(&self, id: TaskId) -> bool {
        self.tasks.contains_key(&id)
    }

    /// Applies `edit` to the task, stamps it, then publishes and checkpoints it.
    /// Returns what `edit` returned, or `None` for an unknown task.
    pub fn update<T>(&self, id: TaskId, edit: impl FnOnce(&mut TaskRecord) -> T) -> Option<T> {
        let result = {
            let mut task = self.tasks.get_mut(&id)?;
            let result = edit(&mut task);
            task.updated_at = Utc::now();
            result
        };
        self.changed(id);
        Some(result)
    }

    /// Applies `edit` to the task in memory only: the change is published and
    /// checkpointed with the task's next update, or by [`Tasks::checkpoint_noted`] at a
    /// clean stop. For counts that need not be heard at once and must not cost a
    /// checkpoint each; a kill loses only what was noted since the task's last checkpoint.
    pub fn note(&self, id: TaskId, edit: impl FnOnce(&mut TaskRecord)) {
        if let Some(mut task) = self.tasks.get_mut(&id) {
            edit(&mut task);
            self.noted.insert(id);
        }
    }

    /// Checkpoints every task changed by [`Tasks::note`] since its last checkpoint.
    pub fn checkpoint_noted(&self) {
        let noted: Vec<TaskId> = self.noted.iter().map(|id| *id).collect();
        for id in noted {
            self.changed(id);
        }
    }

    /// [`Tasks::update`], committing `records` (the event that caused the change) in the
    /// same store transaction as the task's checkpoint.
    pub fn update_with_records<T>(
        &self,
        id: TaskId,
        records: Vec<Record>,
        edit: impl FnOnce(&mut TaskRecord) -> T,
    ) -> Option<T> {
        let result = {
            let mut task = self.tasks.get_mut(&id)?;
            let result = edit(&mut task);
            task.updated_at = Utc::now();
            result
        };
        self.publish_and_checkpoint(id, records);
        Some(result)
    }

    pub fn records(&self) -> Vec<TaskRecord> {
        let mut all: Vec<TaskRecord> = self.tasks.iter().map(|t| t.clone()).collect();
        all.sort_by_key(|t| (t.created_at, t.id));
        all
    }

    fn changed(&self, id: TaskId) {
        self.publish_and_checkpoint(id, Vec::new());
    }

    /// Keeps `records` and the task's checkpoint in one transaction; subscribers hear of
    /// each record, then of the task as it now stands.
    fn publish_and_checkpoint(&self, id: TaskId, mut records: Vec<Record>) {
        self.noted.remove(&id);
        let Some(task) = self.tasks.get(&id).map(|t| t.clone()) else {
            return;
        };
        records.push(Record::TaskCheckpoint(Arc::new(task)));
        self.journal.keep(Record::Group(records));
    }
}
