//! `/undo`: taking a task back from an ACP client (docs/acp.md, "Undo").
//!
//! A session offers the command in `available_commands_update`. A prompt that starts
//! with `/undo` is the command, not a task: it takes back the session's last finished
//! task whose changes are still in place (or the task whose id starts with what follows
//! `/undo`). The diff goes out as an agent message, the person is asked with
//! `session/request_permission` (undo or cancel; overwrite or keep their edits when
//! files changed since the task), and the files are put back through the writer the
//! session's tasks use (`fs/write_text_file` when the client offers it). A refusal is
//! final: nothing is asked again. The turn ends `end_turn` with a message saying what
//! was put back.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{Session, TextEnding};
use crate::acp::rpc::RpcError;
use crate::acp::wire::{
    AvailableCommand, AvailableCommandInput, ContentBlock, PermissionOption, PermissionOptionKind,
    PermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionUpdate,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::engine::EngineError;
use crate::runtime::{Reverted, TaskId};
use crate::undo::{EditedFiles, UndoAction, UndoPlan};

/// The commands every session offers.
pub fn available_commands() -> Vec<AvailableCommand> {
    vec![AvailableCommand {
        name: "undo".into(),
        description: "Take back the last finished task of this session (or the task whose id starts with the given characters): shows the diff and asks first".into(),
        input: Some(AvailableCommandInput {
            hint: "task id (optional)".into(),
        }),
    }]
}

/// What follows `/undo` when the prompt is that command (an empty string for none), or
/// `None` for a prompt that is a task.
pub fn undo_argument(prompt: &[ContentBlock]) -> Option<String> {
    let text: String = prompt
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.as_str(),
            _ => " ",
        })
        .collect();
    let rest = text.trim_start().strip_prefix("/undo")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some(rest.trim().to_string())
}

/// What undoing does to a file, as the person reads it.
fn action_text(action: UndoAction) -> &'static str {
    match action {
        UndoAction::Restore => "put back as before the task",
        UndoAction::Remove => "removed (the task created it)",
        UndoAction::Recreate => "written again (the task removed it)",
        UndoAction::Unchanged => "already as before the task",
        UndoAction::NotKept => "left as it is (too large to have been kept)",
    }
}

fn short(task: TaskId) -> String {
    task.to_string()[..8].to_string()
}

fn quoted(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The plan as a message: each file's action, then the whole diff.
pub fn plan_message(task: TaskId, title: &str, plan: &UndoPlan) -> String {
    let mut text = format!("**Undo** task `{}` — {title}\n\n", short(task));
    for file in &plan.files {
        let edited = if file.edited_since && file.action != UndoAction::Unchanged {
            " — **changed since the task**"
        } else {
            ""
        };
        text.push_str(&format!(
            "- `{}`: {}{edited}\n",
            file.path,
            action_text(file.action)
        ));
    }
    let diff = plan.diff();
    if !diff.is_empty() {
        text.push_str(&format!("\n```diff\n{diff}```\n"));
    }
    text
}

/// What was done, as the closing message.
pub fn done_message(task: TaskId, reverted: &Reverted) -> String {
    let mut text = if reverted.restored.is_empty() {
        format!("**Nothing was put back** for task `{}`.\n", short(task))
    } else {
        format!(
            "**Undone.** Put back as before task `{}`: {}.\n",
            short(task),
            quoted(&reverted.restored)
        )
    };
    for kept in &reverted.kept {
        text.push_str(&format!(
            "- `{}` left as it is: {}.\n",
            kept.path, kept.reason
        ));
    }
    text
}

/// The choices offered: undo or cancel; with files edited since the task, overwrite or
/// keep those edits, or cancel.
pub fn undo_options(conflicts: &[String]) -> Vec<PermissionOption> {
    let option = |id: &str, name: String, kind| PermissionOption {
        option_id: id.into(),
        name,
        kind,
    };
    let mut options = if conflicts.is_empty() {
        vec![option(
            "undo",
            "Undo".into(),
            PermissionOptionKind::AllowOnce,
        )]
    } else {
        let named = conflicts.join(", ");
        vec![
            option(
                "overwrite",
                format!("Overwrite my edits ({named})"),
                PermissionOptionKind::AllowOnce,
            ),
            option(
                "keep",
                format!("Keep my edits ({named}), undo the rest"),
                PermissionOptionKind::AllowOnce,
            ),
        ]
    };
    options.push(option(
        "cancel",
        "Cancel".into(),
        PermissionOptionKind::RejectOnce,
    ));
    options
}

impl Session {
    /// Tells the client which commands the session takes.
    pub fn announce_commands(&self) {
        self.send(SessionUpdate::AvailableCommandsUpdate {
            available_commands: available_commands(),
        });
    }

    /// The task `/undo` means: the one `typed` names, or the session's last finished
    /// task whose changes are still in place.
    fn undo_target(&self, typed: &str) -> Result<TaskId, String> {
        let engine = &self.workspace.engine;
        if !typed.is_empty() {
            return engine.task_id(typed).map_err(|e| match e {
                EngineError::TaskNotFound(_) => format!("No task's id starts with `{typed}`."),
                other => format!("{other}."),
            });
        }
        let turns = self.file.lock().expect("session file").turns.clone();
        turns
            .iter()
            .rev()
            .find(|turn| {
                engine
                    .task(&turn.task_id.to_string())
                    .is_ok_and(|d| d.summary.status.is_finished() && d.reverted.is_none())
            })
            .map(|turn| turn.task_id)
            .ok_or_else(|| {
                "Nothing to undo: no task of this session finished with its changes in place (`/undo <task id>` names another).".to_string()
            })
    }

    /// `/undo [task id]`: the plan shown, the person asked, the files put back.
    pub async fn undo(self: &Arc<Self>, typed: &str) -> Result<Value, RpcError> {
        if let Some(task) = *self.running.lock().expect("running") {
            return Err(RpcError::new(
                crate::acp::rpc::INVALID_REQUEST,
                format!("task {task} of this session is still running; cancel it first"),
            )
            .with_data(json!({ "taskId": task })));
        }
        *self.text_ending.lock().expect("text ending") = TextEnding::Nothing;
        let end_turn = |session: &Session, text: String| {
            session.send(SessionUpdate::agent_text(text));
            Ok(json!({ "stopReason": "end_turn" }))
        };
        let engine = self.workspace.engine.clone();
        let task = match self.undo_target(typed) {
            Ok(task) => task,
            Err(why) => return end_turn(self, why),
        };
        let title = engine
            .task(&task.to_string())
            .map(|d| d.summary.title)
            .unwrap_or_default();
        let plan = match engine.undo_plan(&task.to_string()).await {
            Ok(plan) => plan,
            Err(e) => {
                return end_turn(
                    self,
                    format!("Task `{}` cannot be undone: {e}.", short(task)),
                );
            }
        };
        self.send(SessionUpdate::agent_text(plan_message(task, &title, &plan)));
        if plan.changing().next().is_none() {
            return end_turn(
                self,
                "Nothing to put back: its files are as they were before it.".into(),
            );
        }
        let conflicts = plan.conflicts();
        let call_id = format!("undo-{task}-{}", uuid::Uuid::new_v4());
        let call_title = format!("Undo task {}: {title}", short(task));
        let content = vec![ToolCallContent::text(format!(
            "```diff\n{}```",
            plan.diff()
        ))];
        self.send(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: call_id.clone(),
            title: call_title.clone(),
            kind: ToolKind::Edit,
            status: ToolCallStatus::Pending,
            content: content.clone(),
            locations: Vec::new(),
        }));
        let params = RequestPermissionRequest {
            session_id: self.id.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: call_id.clone(),
                title: Some(call_title),
                kind: Some(ToolKind::Edit),
                status: Some(ToolCallStatus::Pending),
                content: Some(content),
                locations: None,
            },
            options: undo_options(&conflicts),
        };
        let reply = self
            .peer
            .request("session/request_permission", params)
            .await;
        let chosen = reply
            .and_then(|v| {
                serde_json::from_value::<RequestPermissionResponse>(v)
                    .map_err(|e| RpcError::invalid_params(e.to_string()))
            })
            .ok()
            .and_then(|answer| match answer.outcome {
                PermissionOutcome::Selected { option_id } => Some(option_id),
                PermissionOutcome::Cancelled => None,
            });
        let finish_call = |status| {
            self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                tool_call_id: call_id.clone(),
                status: Some(status),
                ..ToolCallUpdate::default()
            }));
        };
        let edited = match chosen.as_deref() {
            Some("undo") => None,
            Some("overwrite") => Some(EditedFiles::Overwrite),
            Some("keep") => Some(EditedFiles::Keep),
            _ => {
                finish_call(ToolCallStatus::Failed);
                self.send(SessionUpdate::agent_text("Nothing was undone."));
                let stop = if self.cancel_requested.load(Ordering::SeqCst) {
                    "cancelled"
                } else {
                    "end_turn"
                };
                return Ok(json!({ "stopReason": stop }));
            }
        };
        let undone =
            crate::acp::fs::writing_for(self.id.clone(), engine.undo(&task.to_string(), edited))
                .await;
        match undone {
            Ok((_, reverted)) => {
                finish_call(ToolCallStatus::Completed);
                end_turn(self, done_message(task, &reverted))
            }
            Err(e) => {
                finish_call(ToolCallStatus::Failed);
                end_turn(self, format!("Not undone: {e}."))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_prompt_that_starts_with_the_command_is_it() {
        let text = |t: &str| vec![ContentBlock::text(t)];
        assert_eq!(undo_argument(&text("/undo")), Some(String::new()));
        assert_eq!(
            undo_argument(&text("  /undo 1a2b3c ")),
            Some("1a2b3c".into())
        );
        assert_eq!(undo_argument(&text("/undone things")), None);
        assert_eq!(undo_argument(&text("please /undo")), None);
    }

    #[test]
    fn edited_files_are_named_in_the_choices() {
        let plain: Vec<_> = undo_options(&[]).into_iter().map(|o| o.option_id).collect();
        assert_eq!(plain, ["undo", "cancel"]);
        let edited = undo_options(&["a.txt".into()]);
        let ids: Vec<_> = edited.iter().map(|o| o.option_id.as_str()).collect();
        assert_eq!(ids, ["overwrite", "keep", "cancel"]);
        assert_eq!(edited[0].name, "Overwrite my edits (a.txt)");
    }
}
