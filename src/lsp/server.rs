//! The request handlers: `initialize` starts the engine on the workspace, `initialized`
//! starts the bridge, and every `conclave/*` method is a thin translation onto the
//! engine. Handlers never wait for the editor: whatever needs an answer from it is sent
//! from the bridge's tasks.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    ClientCapabilities, InitializeParams, InitializeResult, InitializedParams, MessageType,
    ResourceOperationKind, ServerCapabilities, ServerInfo, Uri,
};
use tower_lsp_server::{Client, LanguageServer};

use super::Lifecycle;
use super::bridge::{Bridge, ClientSupport};
use super::edits::ApplyEditWriter;
use super::log::LogLines;
use super::protocol::{
    self, ClientFeatures, EditedFilesChoice, NoParams, OptionalTaskIdParams, PROTOCOL_VERSION,
    ResolveApprovalParams, SubmitTaskParams, TaskIdParams, UndoTaskParams, WhiteboardParams,
    task_updated,
};
use super::transport::Outbox;
use crate::config::WriteMode;
use crate::engine::{
    ClientName, Engine, EngineError, EngineSetup, Holder, LockError, OpenError, OpenedWorkspace,
    SubmitTask, WorkspaceLock, open_workspace, process_alive,
};
use crate::runtime::{ApprovalAnswer, EventStream, TaskContext};
use crate::store::Store;
use crate::tools::Sandbox;

pub struct Backend {
    client: Client,
    /// Notifications that must keep their order with the bridge's go this way.
    outbox: Outbox,
    lifecycle: Arc<Lifecycle>,
    /// `--workspace`, which wins over what the client says.
    workspace: Option<PathBuf>,
    session: OnceLock<Session>,
    /// Subscribed in `initialize`, followed from `initialized` on.
    events: Mutex<Option<EventStream>>,
    logs: Mutex<Option<LogLines>>,
    /// `initialize` created `.conclave/` in the workspace: say so once, after
    /// `initialized`.
    announce_state_dir: AtomicBool,
}

struct Session {
    engine: Arc<Engine>,
    bridge: Arc<Bridge>,
    store: Store,
    sandbox: Sandbox,
    _lock: WorkspaceLock,
}

impl Session {
    /// A context file of `conclave/submitTask` as the agents see it: a path relative to
    /// the workspace root. Anything outside the root is refused (1005).
    fn context_path(&self, given: &str) -> Result<String> {
        let outside = || {
            engine_error(EngineError::PathOutsideWorkspace {
                path: given.to_string(),
            })
        };
        let path = if given.starts_with("file:") {
            given
                .parse::<Uri>()
                .ok()
                .and_then(|uri| uri.to_file_path().map(|p| p.into_owned()))
                .ok_or_else(outside)?
        } else {
            PathBuf::from(given)
        };
        let absolute = self.sandbox.resolve(&path).map_err(|_| outside())?;
        Ok(self.sandbox.relative(&absolute).display().to_string())
    }
}

impl Backend {
    pub fn new(
        client: Client,
        outbox: Outbox,
        lifecycle: Arc<Lifecycle>,
        workspace: Option<PathBuf>,
        logs: Option<LogLines>,
    ) -> Backend {
        Backend {
            client,
            outbox,
            lifecycle,
            workspace,
            session: OnceLock::new(),
            events: Mutex::new(None),
            logs: Mutex::new(logs),
            announce_state_dir: AtomicBool::new(false),
        }
    }

    fn session(&self) -> Result<&Session> {
        self.session.get().ok_or_else(|| Error {
            code: ErrorCode::ServerError(-32002),
            message: "the server did not initialize (see the initialize error)".into(),
            data: None,
        })
    }

    fn workspace_for(&self, params: &InitializeParams) -> std::io::Result<PathBuf> {
        #[allow(deprecated)] // rootUri and rootPath: older clients send only these.
        let from_client = params
            .workspace_folders
            .as_ref()
            .and_then(|folders| folders.first())
            .and_then(|folder| folder.uri.to_file_path().map(|p| p.into_owned()))
            .or_else(|| {
                params
                    .root_uri
                    .as_ref()
                    .and_then(|uri| uri.to_file_path().map(|p| p.into_owned()))
            })
            .or_else(|| params.root_path.as_ref().map(PathBuf::from));
        let chosen = match (&self.workspace, from_client) {
            (Some(dir), _) => dir.clone(),
            (None, Some(dir)) => dir,
            (None, None) => std::env::current_dir()?,
        };
        chosen.canonicalize().map_err(|e| {
            std::io::Error::new(e.kind(), format!("workspace {}: {e}", chosen.display()))
        })
    }

    async fn start(&self, params: &InitializeParams) -> Result<Session> {
        let workspace = self
            .workspace_for(params)
            .map_err(|e| invalid_params(e.to_string()))?;
        let fresh = !workspace.join(".conclave").exists();
        // A processId that is not visible here (an editor in another PID namespace, a
        // sandboxed or remote one) cannot be watched: it would look dead at once.
        let editor_pid = params.process_id.filter(|&pid| {
            let visible = process_alive(pid);
            if !visible {
                tracing::info!("the editor's processId {pid} is not visible here; not watching it");
            }
            visible
        });
        let me = Holder::this_process(
            params.client_info.as_ref().map(|c| ClientName {
                name: c.name.clone(),
                version: c.version.clone(),
            }),
            editor_pid,
        );
        let opened = open_workspace(&workspace, me, params.initialization_options.as_ref()).await;
        if let Err(OpenError::Lock(e)) = &opened {
            tracing::error!("{e}");
            // A second server on this workspace says so and ends (exit code 1).
            self.lifecycle.refused.store(true, Ordering::SeqCst);
            self.lifecycle.stop_input.cancel();
            let holder = match e {
                LockError::Held { holder, .. } => holder.clone(),
                LockError::Io { .. } => None,
            };
            return Err(Error {
                code: ErrorCode::ServerError(1007),
                message: e.to_string().into(),
                data: Some(json!({ "workspace": workspace, "holder": holder })),
            });
        }
        // The folder is ours from here on, even if what is in it cannot be read.
        if let Some(editor) = editor_pid {
            watch_editor(editor, self.lifecycle.clone());
        }
        let OpenedWorkspace {
            lock,
            config,
            store,
        } = opened.map_err(|e| match e {
            OpenError::Config(e) => invalid_params(e.to_string()),
            other => internal(other.to_string()),
        })?;
        if let Some(old) = &lock.took_over {
            tracing::warn!(
                "took {} over from an orphaned conclave serve ({})",
                workspace.display(),
                old.describe()
            );
        }
        if fresh {
            self.announce_state_dir.store(true, Ordering::SeqCst);
        }
        let mut setup = EngineSetup::new(&workspace, config);
        setup.store = Some(store.clone());
        setup.mode = "serve".into();
        // Subscribed before the team starts, so the editor sees the agents come up and
        // misses nothing that happens before `initialized`.
        *self.events.lock().expect("events") = Some(setup.events.subscribe());
        let engine = Engine::start(setup).await.map_err(engine_error)?;
        let support = ClientSupport {
            features: ClientFeatures::from_experimental(params.capabilities.experimental.as_ref()),
            work_done_progress: params
                .capabilities
                .window
                .as_ref()
                .and_then(|w| w.work_done_progress)
                .unwrap_or(false),
        };
        let sandbox =
            Sandbox::new(engine.workspace()).map_err(|e| internal(format!("workspace: {e}")))?;
        if engine.config().writes == WriteMode::ApplyEdit && can_apply_edits(&params.capabilities) {
            let timeout =
                std::time::Duration::from_millis(engine.config().editor.apply_edit_timeout_ms);
            engine.set_writer(ApplyEditWriter::new(
                self.client.clone(),
                sandbox.clone(),
                timeout,
            ));
            tracing::info!("generated files reach the workspace through workspace/applyEdit");
        } else {
            tracing::info!("generated files are written to disk by the server");
        }
        let bridge = Bridge::new(
            self.client.clone(),
            self.outbox.clone(),
            engine.clone(),
            support,
            self.lifecycle.closed.clone(),
            self.lifecycle.stopping.clone(),
        );
        let _ = self.lifecycle.engine.set(engine.clone());
        Ok(Session {
            engine,
            bridge,
            store,
            sandbox,
            _lock: lock,
        })
    }

    // ---- conclave/* ------------------------------------------------------------------

    pub async fn submit_task(&self, params: SubmitTaskParams) -> Result<Value> {
        let s = self.session()?;
        let context = params.context.unwrap_or_default();
        let files = context
            .files
            .iter()
            .map(|f| s.context_path(f))
            .collect::<Result<Vec<_>>>()?;
        if let Some(selection) = &context.selection {
            s.context_path(&selection.uri)?;
        }
        let id = s
            .engine
            .submit(SubmitTask {
                description: params.description,
                title: params.title,
                context: TaskContext {
                    files,
                    selection: context
                        .selection
                        .and_then(|sel| serde_json::to_value(sel).ok()),
                    background: None,
                },
                options: params.options.unwrap_or_default(),
                owner: None,
            })
            .map_err(engine_error)?;
        s.bridge.track_progress(id, params.work_done_token);
        // The answer names the task: a kill after it must not lose it.
        s.engine.durable().await;
        Ok(json!({ "taskId": id }))
    }

    pub async fn cancel_task(&self, params: TaskIdParams) -> Result<Value> {
        let cancelled = self
            .session()?
            .engine
            .cancel(&params.task_id)
            .map_err(engine_error)?;
        Ok(json!({ "cancelled": cancelled }))
    }

    pub async fn retry_task(&self, params: TaskIdParams) -> Result<Value> {
        let s = self.session()?;
        let id = s.engine.retry(&params.task_id).map_err(engine_error)?;
        s.bridge.track_progress(id, None);
        s.engine.durable().await;
        Ok(json!({ "taskId": id }))
    }

    pub async fn list_tasks(&self, _: NoParams) -> Result<Value> {
        let s = self.session()?;
        let uris = s.bridge.uris();
        let tasks: Vec<Value> = s.engine.tasks().iter().map(|t| uris.summary(t)).collect();
        Ok(json!({ "tasks": tasks }))
    }

    pub async fn get_task(&self, params: TaskIdParams) -> Result<Value> {
        let s = self.session()?;
        let detail = s.engine.task(&params.task_id).map_err(engine_error)?;
        Ok(s.bridge.uris().detail(&detail))
    }

    pub async fn list_agents(&self, _: NoParams) -> Result<Value> {
        Ok(json!({ "agents": self.session()?.engine.agents() }))
    }

    pub async fn list_whiteboards(&self, _: NoParams) -> Result<Value> {
        let boards: Vec<Value> = self
            .session()?
            .engine
            .whiteboards()
            .iter()
            .map(|b| json!({ "id": b.id.to_string(), "version": b.version, "updatedAt": b.updated_at }))
            .collect();
        Ok(json!({ "whiteboards": boards }))
    }

    pub async fn read_whiteboard(&self, params: WhiteboardParams) -> Result<Value> {
        let board = self
            .session()?
            .engine
            .whiteboard(&params.id)
            .map_err(engine_error)?;
        Ok(protocol::whiteboard(&board))
    }

    pub async fn subscribe_whiteboard(&self, params: WhiteboardParams) -> Result<Value> {
        let s = self.session()?;
        // Subscribed before reading, so a change in between is sent, not lost.
        let board: crate::runtime::WhiteboardId = params
            .id
            .parse()
            .map_err(|_| engine_error(EngineError::WhiteboardNotFound(params.id.clone())))?;
        s.bridge.subscribe(&board.to_string());
        match s.engine.whiteboard(&params.id) {
            Ok(board) => Ok(protocol::whiteboard(&board)),
            Err(e) => {
                s.bridge.unsubscribe(&board.to_string());
                Err(engine_error(e))
            }
        }
    }

    pub async fn unsubscribe_whiteboard(&self, params: WhiteboardParams) -> Result<Value> {
        let s = self.session()?;
        let board = s.engine.whiteboard(&params.id).map_err(engine_error)?;
        s.bridge.unsubscribe(&board.id.to_string());
        Ok(Value::Null)
    }

    pub async fn list_approvals(&self, _: NoParams) -> Result<Value> {
        let s = self.session()?;
        let approvals: Vec<Value> = s
            .engine
            .approvals()
            .iter()
            .map(|a| s.bridge.uris().approval(a))
            .collect();
        Ok(json!({ "approvals": approvals }))
    }

    pub async fn resolve_approval(&self, params: ResolveApprovalParams) -> Result<Value> {
        self.session()?
            .engine
            .resolve_approval(
                &params.approval_id,
                ApprovalAnswer {
                    decision: params.decision,
                    note: params.note,
                    modified_description: params.modified_description,
                },
            )
            .map_err(engine_error)?;
        Ok(json!({ "accepted": true }))
    }

    pub async fn error_report(&self, params: OptionalTaskIdParams) -> Result<Value> {
        let report = self
            .session()?
            .engine
            .error_report(params.task_id.as_deref())
            .await
            .map_err(engine_error)?;
        Ok(json!({ "markdown": report.markdown, "path": report.path }))
    }

    /// `conclave/taskLog` (an addition, docs/protocol.md): a task's history from the
    /// audit log, as lines and as entries.
    pub async fn task_log(&self, params: TaskIdParams) -> Result<Value> {
        let s = self.session()?;
        // Unknown ids are refused like everywhere else (1001).
        s.engine.task(&params.task_id).map_err(engine_error)?;
        let entries = s
            .store
            .history(Some(params.task_id.clone()))
            .await
            .map_err(|e| internal(format!("the audit log could not be read: {e}")))?;
        let text: Vec<String> = entries.iter().map(|e| e.line()).collect();
        Ok(json!({ "taskId": params.task_id, "text": text.join("\n"), "entries": entries }))
    }
}

impl Backend {
    /// `conclave/undoTask` (an addition, docs/protocol.md): what undoing a finished task
    /// would do (`apply: false`), or doing it, through `workspace/applyEdit` like every
    /// other write when the editor takes edits.
    pub async fn undo_task(&self, params: UndoTaskParams) -> Result<Value> {
        let s = self.session()?;
        if !params.apply {
            let plan = s
                .engine
                .undo_plan(&params.task_id)
                .await
                .map_err(engine_error)?;
            return Ok(s.bridge.uris().undo(&plan, None));
        }
        let edited = params.edited_files.map(|choice| match choice {
            EditedFilesChoice::Overwrite => crate::undo::EditedFiles::Overwrite,
            EditedFilesChoice::Keep => crate::undo::EditedFiles::Keep,
        });
        let (plan, reverted) = s
            .engine
            .undo(&params.task_id, edited)
            .await
            .map_err(engine_error)?;
        Ok(s.bridge.uris().undo(&plan, Some(&reverted)))
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let session = self.start(&params).await?;
        if self.session.set(session).is_err() {
            return Err(Error::invalid_request());
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                experimental: Some(json!({ "conclave": { "protocolVersion": PROTOCOL_VERSION } })),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "conclave".into(),
                version: Some(env!("CARGO_PKG_VERSION").into()),
            }),
            ..InitializeResult::default()
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        let Ok(s) = self.session() else { return };
        if let Some(mut lines) = self.logs.lock().expect("logs").take() {
            let client = self.client.clone();
            let closed = self.lifecycle.closed.clone();
            tokio::spawn(async move {
                while let Some(Some(line)) = closed.run_until_cancelled(lines.recv()).await {
                    let typ = match line.level {
                        tracing::Level::ERROR => MessageType::ERROR,
                        tracing::Level::WARN => MessageType::WARNING,
                        _ => MessageType::INFO,
                    };
                    client.log_message(typ, line.text).await;
                }
            });
        }
        if let Some(warning) = s.engine.sandbox_warning() {
            self.client
                .show_message(MessageType::WARNING, format!("Conclave: {warning}"))
                .await;
        }
        if self.announce_state_dir.swap(false, Ordering::SeqCst) {
            self.client
                .show_message(MessageType::INFO, STATE_DIR_NOTICE)
                .await;
        }
        // What a (re)connecting editor needs first: every task as it stands.
        for task in s.engine.tasks() {
            self.outbox
                .notify::<super::protocol::TaskUpdated>(&task_updated(s.bridge.uris(), &task))
                .await;
        }
        if let Some(events) = self.events.lock().expect("events").take() {
            s.bridge.start(events);
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.lifecycle.shutdown.store(true, Ordering::SeqCst);
        self.lifecycle.stopping.cancel();
        if let Ok(s) = self.session() {
            // Stops the team (a write in flight is atomic: it lands whole or not at all)
            // and commits everything recorded so far.
            s.engine.shutdown().await;
        }
        Ok(())
    }
}

/// Said once, when `initialize` created `.conclave/` in the workspace.
pub const STATE_DIR_NOTICE: &str = "Conclave created .conclave/ in this folder: its task history, \
audit log and reports live there. To keep it out of version control, add this line to your \
.gitignore: .conclave/";

/// How often the editor's `processId` is checked.
const EDITOR_POLL: std::time::Duration = std::time::Duration::from_secs(2);

/// Ends the connection (as if stdin had closed) once the editor process that started the
/// server is gone, as the LSP asks: a server outliving its editor would hold the
/// workspace for nobody.
fn watch_editor(editor: u32, lifecycle: Arc<Lifecycle>) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = lifecycle.closed.cancelled() => return,
                () = tokio::time::sleep(EDITOR_POLL) => {}
            }
            if !process_alive(editor) {
                tracing::warn!("the editor (pid {editor}) is gone; the server stops");
                lifecycle.stop_input.cancel();
                return;
            }
        }
    });
}

fn can_apply_edits(capabilities: &ClientCapabilities) -> bool {
    let Some(workspace) = &capabilities.workspace else {
        return false;
    };
    let edit = workspace.workspace_edit.as_ref();
    workspace.apply_edit == Some(true)
        && edit.and_then(|e| e.document_changes) == Some(true)
        && edit
            .and_then(|e| e.resource_operations.as_ref())
            .is_some_and(|ops| ops.contains(&ResourceOperationKind::Create))
}

fn invalid_params(message: String) -> Error {
    Error {
        code: ErrorCode::InvalidParams,
        message: message.into(),
        data: None,
    }
}

fn internal(message: String) -> Error {
    Error {
        code: ErrorCode::InternalError,
        message: message.into(),
        data: None,
    }
}

/// The engine's errors carry the protocol's codes and `data`.
fn engine_error(e: EngineError) -> Error {
    let data = e.data();
    Error {
        code: ErrorCode::from(e.code()),
        message: e.to_string().into(),
        data: (!data.is_null()).then_some(data),
    }
}
