//! Taking a finished task back through the engine (`conclave/undoTask`):
//! the plan from the task's file history, then the files put back through the current
//! writer (the editor's, when one is connected), and the task marked as undone.

use serde_json::json;

use super::{Engine, EngineError};
use crate::runtime::{Reverted, RevertedBy, TaskId};
use crate::undo::{EditedFiles, UndoPlan, UndoRefusal};

impl Engine {
    /// The task a person typed: its whole id, or the start of one that no other task's
    /// id starts with (the short ids the editors show).
    pub fn task_id(&self, typed: &str) -> Result<TaskId, EngineError> {
        let ids = self.services.tasks.records().into_iter().map(|t| t.id);
        crate::undo::resolve_id(ids, typed).map_err(|e| match e {
            crate::undo::IdError::Unknown => EngineError::TaskNotFound(typed.to_string()),
            ambiguous @ crate::undo::IdError::Ambiguous(_) => EngineError::InvalidState {
                message: ambiguous.to_string(),
                value: json!({ "taskId": typed }),
            },
        })
    }

    /// What undoing the task would do, file by file, with the diff.
    pub async fn undo_plan(&self, typed: &str) -> Result<UndoPlan, EngineError> {
        let id = self.task_id(typed)?;
        let record = self.record(&id.to_string())?;
        let files = self.services.history.files(id).await;
        let compacted = match &self.services.runtime.store {
            Some(store) => store.compacted_at(id).await.ok().flatten(),
            None => None,
        };
        crate::undo::prepare(&record, files, compacted, &self.services.sandbox)
            .map_err(|refusal| refused(id, &refusal))
    }

    /// Undoes the task: every file it changed put back as it was before it. A file
    /// changed since by someone else is overwritten or kept as `edited` says; without a
    /// word on it (`None`) nothing is done and the answer names those files (1007).
    pub async fn undo(
        &self,
        typed: &str,
        edited: Option<EditedFiles>,
    ) -> Result<(UndoPlan, Reverted), EngineError> {
        let _one_at_a_time = self.undoing.lock().await;
        let plan = self.undo_plan(typed).await?;
        let conflicts = plan.conflicts();
        let edited = match edited {
            Some(edited) => edited,
            None if conflicts.is_empty() => EditedFiles::Keep,
            None => {
                return Err(EngineError::InvalidState {
                    message: format!(
                        "{} changed after the task changed {}: undoing it would lose those edits; say whether to overwrite or keep them",
                        conflicts.join(", "),
                        if conflicts.len() == 1 { "it" } else { "them" }
                    ),
                    value: json!({ "taskId": plan.task_id, "conflicts": conflicts }),
                });
            }
        };
        let reverted = crate::undo::apply(
            &plan,
            &*self.services.writer.untracked(),
            &self.services.sandbox,
            edited,
            RevertedBy::Undo,
        )
        .await;
        tracing::info!(task = %plan.task_id, "undone: {}", reverted.describe());
        self.services.tasks.update(plan.task_id, |t| {
            t.reverted = Some(reverted.clone());
        });
        self.durable().await;
        Ok((plan, reverted))
    }
}

fn refused(id: TaskId, refusal: &UndoRefusal) -> EngineError {
    let reason = match refusal {
        UndoRefusal::Unfinished { .. } => "unfinished",
        UndoRefusal::AlreadyUndone { .. } => "already_undone",
        UndoRefusal::Compacted { .. } => "compacted",
        UndoRefusal::NoHistory { .. } => "no_history",
    };
    EngineError::InvalidState {
        message: refusal.to_string(),
        value: json!({ "taskId": id, "reason": reason }),
    }
}
