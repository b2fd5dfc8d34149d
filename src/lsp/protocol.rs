//! The wire protocol's own types (docs/protocol.md):
//! request params and results of the `conclave/*` methods, the server-to-client
//! requests and notifications, and the translation of engine shapes into wire shapes
//! (workspace-relative paths become `file://` URIs).
//!
//! Everything the server and its clients exchange beyond plain LSP is named here, in one
//! place, so that the method names and shapes can be checked against the contract.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tower_lsp_server::ls_types::notification::Notification;
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::{ProgressToken, Uri};

use crate::recovery::RecoveryEvent;
use crate::runtime::{ApprovalAnswer, ApprovalChoice, ApprovalRequest, Snapshot, TaskOptions};
use crate::wire::{TaskDetail, TaskSummary};

/// The protocol version this server speaks (`experimental.conclave.protocolVersion`).
pub const PROTOCOL_VERSION: u32 = 1;

/// What a client announces it can show, in `capabilities.experimental.conclave`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientFeatures {
    pub approvals: bool,
    pub whiteboards: bool,
    pub recovery_status: bool,
}

impl ClientFeatures {
    /// Reads `experimental.conclave`; anything missing or malformed means "not announced".
    pub fn from_experimental(experimental: Option<&Value>) -> ClientFeatures {
        experimental
            .and_then(|e| e.get("conclave"))
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .unwrap_or_default()
    }
}

// ---- client to server ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmitTaskParams {
    pub description: String,
    pub title: Option<String>,
    pub context: Option<SubmitContext>,
    pub options: Option<TaskOptions>,
    pub work_done_token: Option<ProgressToken>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubmitContext {
    pub files: Vec<String>,
    pub selection: Option<Selection>,
}

#[derive(Debug, Deserialize, Serialize)]
pub struct Selection {
    pub uri: String,
    pub range: tower_lsp_server::ls_types::Range,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    pub task_id: String,
}

/// `conclave/undoTask` (an addition).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UndoTaskParams {
    pub task_id: String,
    /// `false` (the default): only say what the undo would do.
    #[serde(default)]
    pub apply: bool,
    /// What to do with files changed after the task: `overwrite` or `keep`; absent, an
    /// apply that would overwrite such a file is refused (1007, `data.conflicts`).
    #[serde(default)]
    pub edited_files: Option<EditedFilesChoice>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EditedFilesChoice {
    Overwrite,
    Keep,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OptionalTaskIdParams {
    pub task_id: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WhiteboardParams {
    pub id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolveApprovalParams {
    pub approval_id: String,
    pub decision: ApprovalChoice,
    pub note: Option<String>,
    pub modified_description: Option<String>,
}

/// Params of the methods that take `{}`; anything in it is ignored.
#[derive(Debug, Default, Deserialize)]
pub struct NoParams {}

// ---- server to client ----------------------------------------------------------------

/// `conclave/requestApproval`: params an `ApprovalRequest`, result the decision. A
/// `null` result (or an error) means the user dismissed it: it stays pending.
pub enum RequestApproval {}

impl Request for RequestApproval {
    type Params = Value;
    type Result = Option<ApprovalAnswer>;
    const METHOD: &'static str = "conclave/requestApproval";
}

/// Declares a server-to-client notification whose params are built as JSON.
macro_rules! notification {
    ($name:ident, $method:literal) => {
        pub enum $name {}
        impl Notification for $name {
            type Params = Value;
            const METHOD: &'static str = $method;
        }
    };
}

notification!(TaskUpdated, "conclave/taskUpdated");
notification!(AgentStatusChanged, "conclave/agentStatus");
notification!(WhiteboardChanged, "conclave/whiteboardChanged");
notification!(RecoveryStatus, "conclave/recoveryStatus");
// An addition (docs/protocol.md): an approval was answered or withdrawn.
notification!(ApprovalResolved, "conclave/approvalResolved");

/// The percentage shown for a task. A task that failed or was cancelled is not "99 %"
/// done: it shows the share of its subtasks that completed.
pub fn progress_of(summary: &TaskSummary) -> u8 {
    use crate::runtime::{SubtaskStatus, TaskStatus};
    if !matches!(summary.status, TaskStatus::Failed | TaskStatus::Cancelled) {
        return summary.progress;
    }
    if summary.subtasks.is_empty() {
        return 0;
    }
    let completed = summary
        .subtasks
        .iter()
        .filter(|s| s.status == SubtaskStatus::Completed)
        .count();
    ((completed * 100) / summary.subtasks.len()).min(99) as u8
}

// ---- engine shapes on the wire ------------------------------------------------------

/// Turns workspace-relative paths into `file://` URIs.
#[derive(Clone, Debug)]
pub struct Uris {
    root: PathBuf,
}

impl Uris {
    pub fn new(root: &Path) -> Uris {
        Uris {
            root: root.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The URI of a workspace-relative (or absolute) path.
    pub fn uri(&self, path: &str) -> Option<Uri> {
        Uri::from_file_path(self.root.join(path))
    }

    fn uri_string(&self, path: &str) -> String {
        if path.starts_with("file:") {
            return path.to_string();
        }
        self.uri(path)
            .map(|u| u.as_str().to_string())
            .unwrap_or_else(|| path.to_string())
    }

    fn uri_list(&self, value: &mut Value) {
        if let Some(list) = value.as_array_mut() {
            for item in list {
                if let Some(path) = item.as_str() {
                    *item = Value::String(self.uri_string(path));
                }
            }
        }
    }

    pub fn recovery(&self, event: &RecoveryEvent) -> Value {
        let mut value = serde_json::to_value(event).unwrap_or(Value::Null);
        if let Some(files) = value.get_mut("files") {
            self.uri_list(files);
        }
        value
    }

    pub fn summary(&self, summary: &TaskSummary) -> Value {
        let mut value = serde_json::to_value(summary).unwrap_or(Value::Null);
        self.summary_in_place(&mut value);
        value["progress"] = json!(progress_of(summary));
        value
    }

    fn summary_in_place(&self, value: &mut Value) {
        if let Some(subtasks) = value.get_mut("subtasks").and_then(Value::as_array_mut) {
            for subtask in subtasks {
                if let Some(files) = subtask.get_mut("files") {
                    self.uri_list(files);
                }
            }
        }
        if let Some(files) = value.get_mut("recovery").and_then(|r| r.get_mut("files")) {
            self.uri_list(files);
        }
    }

    pub fn detail(&self, detail: &TaskDetail) -> Value {
        let mut value = serde_json::to_value(detail).unwrap_or(Value::Null);
        self.summary_in_place(&mut value);
        value["progress"] = json!(progress_of(&detail.summary));
        if let Some(files) = value.get_mut("filesWritten") {
            self.uri_list(files);
        }
        value
    }

    /// The answer of `conclave/undoTask`: the plan, each file with its URI, and what
    /// was done when it was applied.
    pub fn undo(
        &self,
        plan: &crate::undo::UndoPlan,
        reverted: Option<&crate::runtime::Reverted>,
    ) -> Value {
        let files: Vec<Value> = plan
            .files
            .iter()
            .map(|f| {
                let mut value = serde_json::to_value(f).unwrap_or(Value::Null);
                value["uri"] = json!(self.uri_string(&f.path));
                value
            })
            .collect();
        json!({
            "taskId": plan.task_id,
            "files": files,
            "diff": plan.diff(),
            "conflicts": plan.conflicts(),
            "applied": reverted.is_some(),
            "reverted": reverted,
        })
    }

    /// An approval as `conclave/requestApproval` and `conclave/listApprovals` carry it:
    /// the diff's path as a URI.
    pub fn approval(&self, request: &ApprovalRequest) -> Value {
        let mut value = serde_json::to_value(request).unwrap_or(Value::Null);
        if let Some(uri) = value.get_mut("diff").and_then(|d| d.get_mut("uri"))
            && let Some(path) = uri.as_str()
        {
            *uri = Value::String(self.uri_string(path));
        }
        value
    }
}

/// A whiteboard as `conclave/readWhiteboard`, `subscribeWhiteboard` and
/// `whiteboardChanged` carry it.
pub fn whiteboard(board: &Snapshot) -> Value {
    json!({ "id": board.id.to_string(), "version": board.version, "content": &*board.content })
}

/// `conclave/taskUpdated` params.
pub fn task_updated(uris: &Uris, summary: &TaskSummary) -> Value {
    // Built by moving the summary in: `json!` would copy it.
    let mut params = serde_json::Map::with_capacity(1);
    params.insert("task".into(), uris.summary(summary));
    Value::Object(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_are_read_from_experimental() {
        let announced = json!({ "conclave": { "approvals": true, "whiteboards": true } });
        assert_eq!(
            ClientFeatures::from_experimental(Some(&announced)),
            ClientFeatures {
                approvals: true,
                whiteboards: true,
                recovery_status: false
            }
        );
        assert_eq!(
            ClientFeatures::from_experimental(Some(&json!({ "conclave": "yes" }))),
            ClientFeatures::default(),
            "a malformed announcement announces nothing"
        );
        assert_eq!(
            ClientFeatures::from_experimental(None),
            ClientFeatures::default()
        );
    }

    #[test]
    fn relative_paths_become_file_uris() {
        let uris = Uris::new(Path::new("/work/space"));
        let mut list = json!(["src/a b.rs", "file:///elsewhere/x.rs"]);
        uris.uri_list(&mut list);
        assert_eq!(
            list,
            json!(["file:///work/space/src/a%20b.rs", "file:///elsewhere/x.rs"])
        );
    }
}
