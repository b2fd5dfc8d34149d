//! One ACP session: a conversation of prompts, each one a task of the team.
//!
//! A session is saved in `<workspace>/.conclave/acp/sessions/<id>.json` (its turns: the
//! prompt as sent and the task it became, and the approval kinds allowed for good), so
//! after a kill and a restart `session/load` can replay it from the tasks the store
//! brought back; the engine resumes the unfinished task by itself, and the session
//! follows it again, asking every approval still pending.
//!
//! `session/prompt` submits a task and answers when the task ends: `cancelled` when it
//! was cancelled (`session/cancel`), `end_turn` otherwise, after a closing agent message
//! that says how it ended; a task that did not complete also says so in `_meta` (its id,
//! status and ERROR_REPORT.md). A follow-up prompt is a new task whose background (not
//! its description: the checks never take an earlier turn's files for this one's
//! deliverables) carries the earlier turns and what came of them. A prompt that starts
//! with `/undo` is that command (`undo.rs`), not a task.

mod undo;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::rpc::{Peer, RpcError};
use super::translate::{self, BoardNotes, TaskView};
use super::wire::{
    ContentBlock, PermissionOption, PermissionOptionKind, PermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionInfo, SessionNotification,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageUpdate,
};
use super::workspace::{OWNER_PREFIX, Workspace, engine_error, unknown_session};
use crate::engine::SubmitTask;
use crate::runtime::{
    AgentId, ApprovalAnswer, ApprovalChoice, ApprovalKind, ApprovalRequest, EventStream,
    RuntimeEvent, TaskContext, TaskId, TaskStatus, WhiteboardId,
};
use crate::wire::{TaskDetail, TaskSummary};

/// How the agent messages sent so far end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextEnding {
    Nothing,
    Text,
    Line,
    Paragraph,
}

/// `text` made to start a paragraph after messages that ended as `before`, and how the
/// messages end with it.
fn paragraph_after(before: TextEnding, text: String) -> (String, TextEnding) {
    if text.is_empty() {
        return (text, before);
    }
    let separator = match before {
        TextEnding::Nothing | TextEnding::Paragraph => "",
        TextEnding::Line => "\n",
        TextEnding::Text => "\n\n",
    };
    let text = format!("{separator}{}", text.trim_start_matches('\n'));
    let now = if text.ends_with("\n\n") {
        TextEnding::Paragraph
    } else if text.ends_with('\n') {
        TextEnding::Line
    } else {
        TextEnding::Text
    };
    (text, now)
}

/// Whiteboard lines are sent at most once per this interval.
pub const NOTES_INTERVAL: Duration = Duration::from_secs(1);

pub fn sessions_dir(root: &Path) -> PathBuf {
    root.join(".conclave").join("acp").join("sessions")
}

/// What is saved of a session.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFile {
    pub session_id: String,
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub turns: Vec<Turn>,
    /// Approval kinds answered "always" in this session.
    #[serde(default)]
    pub allow_always: Vec<ApprovalKind>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Turn {
    pub prompt: Vec<ContentBlock>,
    pub task_id: TaskId,
}

impl SessionFile {
    pub fn new(root: &Path) -> SessionFile {
        let now = Utc::now();
        SessionFile {
            session_id: Uuid::new_v4().to_string(),
            cwd: root.to_path_buf(),
            title: None,
            created_at: now,
            updated_at: now,
            turns: Vec::new(),
            allow_always: Vec::new(),
        }
    }

    fn path(root: &Path, id: &str) -> PathBuf {
        sessions_dir(root).join(format!("{id}.json"))
    }

    pub fn read(root: &Path, id: &str) -> Result<SessionFile, RpcError> {
        // Ids are UUIDs: nothing else may reach the file system.
        if Uuid::parse_str(id).is_err() {
            return Err(unknown_session(id));
        }
        let text =
            std::fs::read_to_string(Self::path(root, id)).map_err(|_| unknown_session(id))?;
        serde_json::from_str(&text)
            .map_err(|e| RpcError::internal(format!("the saved session {id} cannot be read: {e}")))
    }

    /// Every session saved in the workspace (unreadable files are skipped, and logged).
    pub fn all(root: &Path) -> Vec<SessionFile> {
        let Ok(entries) = std::fs::read_dir(sessions_dir(root)) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.path()).ok()?;
                serde_json::from_str(&text)
                    .map_err(|err| tracing::warn!("{}: {err}", e.path().display()))
                    .ok()
            })
            .collect()
    }

    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            session_id: self.session_id.clone(),
            cwd: self.cwd.display().to_string(),
            title: self.title.clone(),
            updated_at: Some(self.updated_at.to_rfc3339()),
        }
    }

    /// Written whole to a temp file, then renamed over the old one.
    fn write(&self, root: &Path) -> std::io::Result<()> {
        let dir = sessions_dir(root);
        std::fs::create_dir_all(&dir)?;
        let mut temp = tempfile::NamedTempFile::new_in(&dir)?;
        serde_json::to_writer_pretty(&mut temp, self)?;
        temp.as_file().sync_all()?;
        temp.persist(Self::path(root, &self.session_id))
            .map_err(|e| e.error)?;
        Ok(())
    }
}

pub struct Session {
    pub id: String,
    workspace: Arc<Workspace>,
    peer: Arc<Peer>,
    file: Mutex<SessionFile>,
    /// The task of the running prompt (or the resumed one being followed).
    running: Mutex<Option<TaskId>>,
    cancel_requested: AtomicBool,
    saving: Mutex<()>,
    /// `session/prompt` requests read and not yet answered.
    prompts: AtomicUsize,
    /// Approvals asked on this connection, and the ones being asked now.
    asked: Mutex<HashSet<Uuid>>,
    asking: Mutex<HashMap<Uuid, JoinHandle<()>>>,
    /// Approvals shown as a `pending` tool call with no final status yet, with their
    /// titles: whoever settles the approval (this client, another, a cancel) ends it.
    open_calls: Mutex<HashMap<Uuid, String>>,
    /// Names of agents no longer in the pool (replaced, or from before a restart).
    known_names: Mutex<HashMap<AgentId, String>>,
    notices: bool,
    /// Whether this session was told that commands are not confined as configured.
    warned: AtomicBool,
    /// How the last agent message sent ended, so that the next one starts on a
    /// paragraph of its own (clients join a session's message chunks).
    text_ending: Mutex<TextEnding>,
    /// Cancelled when the session is closed or the connection ends.
    closed: CancellationToken,
}

impl Session {
    /// The session, open in this connection: its tasks' files go out under it.
    /// `notices`: whether the client shows `notice` updates.
    pub fn open(
        peer: Arc<Peer>,
        notices: bool,
        workspace: Arc<Workspace>,
        file: SessionFile,
    ) -> Arc<Session> {
        workspace
            .open
            .lock()
            .expect("open sessions")
            .insert(file.session_id.clone());
        Arc::new(Session {
            id: file.session_id.clone(),
            workspace,
            closed: peer.closed.child_token(),
            peer,
            file: Mutex::new(file),
            running: Mutex::new(None),
            cancel_requested: AtomicBool::new(false),
            saving: Mutex::new(()),
            prompts: AtomicUsize::new(0),
            asked: Mutex::new(HashSet::new()),
            asking: Mutex::new(HashMap::new()),
            open_calls: Mutex::new(HashMap::new()),
            known_names: Mutex::new(HashMap::new()),
            notices,
            warned: AtomicBool::new(false),
            text_ending: Mutex::new(TextEnding::Nothing),
        })
    }

    pub fn save(&self) -> Result<(), RpcError> {
        // One write at a time, each of the latest state, so saves never go back in time.
        let _one = self.saving.lock().expect("saving");
        let file = self.file.lock().expect("session file").clone();
        file.write(&self.workspace.root)
            .map_err(|e| RpcError::internal(format!("the session could not be saved: {e}")))
    }

    /// [`Session::save`] off the async threads, without waiting for it (an approval kind
    /// allowed "always").
    fn save_soon(self: &Arc<Self>) {
        let session = self.clone();
        tokio::task::spawn_blocking(move || {
            if let Err(e) = session.save() {
                tracing::warn!("{}", e.message);
            }
        });
    }

    fn send(&self, update: SessionUpdate) {
        let update = match update {
            SessionUpdate::AgentMessageChunk {
                content: ContentBlock::Text { text },
            } => SessionUpdate::agent_text(self.own_paragraph(text)),
            // A new turn: the agent's answer to it is a new message.
            other @ SessionUpdate::UserMessageChunk { .. } => {
                *self.text_ending.lock().expect("text ending") = TextEnding::Nothing;
                other
            }
            other => other,
        };
        self.peer.notify(
            "session/update",
            SessionNotification {
                session_id: self.id.clone(),
                update,
            },
        );
    }

    /// `text` as a paragraph of its own after the agent messages already sent.
    fn own_paragraph(&self, text: String) -> String {
        let mut ending = self.text_ending.lock().expect("text ending");
        let (text, now) = paragraph_after(*ending, text);
        *ending = now;
        text
    }

    /// The workspace whose team works for this session.
    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.workspace
    }

    pub fn close(&self) {
        self.closed.cancel();
        for (_, asking) in self.asking.lock().expect("asking").drain() {
            asking.abort();
        }
        self.workspace
            .open
            .lock()
            .expect("open sessions")
            .remove(&self.id);
    }

    /// `session/cancel`: the running task is cancelled and its prompt answers
    /// `cancelled`. A cancel that arrives before the task exists is kept for it.
    pub fn cancel(&self) {
        let running = *self.running.lock().expect("running");
        if running.is_none() && self.prompts.load(Ordering::SeqCst) == 0 {
            tracing::debug!(session = %self.id, "session/cancel with nothing running");
            return;
        }
        self.cancel_requested.store(true, Ordering::SeqCst);
        if let Some(task) = running {
            match self.workspace.engine.cancel(&task.to_string()) {
                Ok(_) => tracing::info!(task = %task, "cancelled by the client"),
                Err(e) => tracing::debug!(task = %task, "cancel: {e}"),
            }
        }
    }

    /// A `session/prompt` was read: until the returned guard is dropped (the prompt is
    /// answered), a `session/cancel` is for it.
    pub fn prompt_arrived(self: &Arc<Self>) -> PromptArrival {
        self.prompts.fetch_add(1, Ordering::SeqCst);
        PromptArrival {
            session: self.clone(),
        }
    }

    /// A cancel is spent once nothing it was for is left.
    fn settle_cancel(&self) {
        if self.prompts.load(Ordering::SeqCst) == 0
            && self.running.lock().expect("running").is_none()
        {
            self.cancel_requested.store(false, Ordering::SeqCst);
        }
    }

    /// `session/prompt`: the prompt becomes a task; the answer comes when it ends.
    pub async fn prompt(self: &Arc<Self>, prompt: Vec<ContentBlock>) -> Result<Value, RpcError> {
        let engine = self.workspace.engine.clone();
        {
            let running = self.running.lock().expect("running");
            if let Some(task) = *running {
                return Err(RpcError::new(
                    super::rpc::INVALID_REQUEST,
                    format!("task {task} of this session is still running; cancel it first"),
                )
                .with_data(json!({ "taskId": task })));
            }
        }
        if let Some(typed) = undo::undo_argument(&prompt) {
            return self.undo(&typed).await;
        }
        let (request, title) = self.task_for(&prompt)?;
        // The answer to this prompt is a new agent message.
        *self.text_ending.lock().expect("text ending") = TextEnding::Nothing;
        if let Some(warning) = engine.sandbox_warning()
            && !self.warned.swap(true, Ordering::SeqCst)
        {
            self.send(SessionUpdate::agent_text(format!("⚠ {warning}\n\n")));
        }
        // Subscribed before submitting, so nothing the task does is missed.
        let events = engine.subscribe();
        let task = engine.submit(request).map_err(engine_error)?;
        *self.running.lock().expect("running") = Some(task);
        {
            let mut file = self.file.lock().expect("session file");
            file.turns.push(Turn {
                prompt,
                task_id: task,
            });
            file.title.get_or_insert(title);
            file.updated_at = Utc::now();
        }
        // Durable before anything else: a kill from here on finds the turn on load. The
        // task's events queue meanwhile and are all shown, in order.
        let saving = self.clone();
        match tokio::task::spawn_blocking(move || saving.save()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("{}", e.message),
            Err(e) => tracing::warn!("the session could not be saved: {e}"),
        }
        if self.cancel_requested.load(Ordering::SeqCst) {
            self.cancel();
        }
        // Subscribed before the task existed: its events tell everything, in order.
        let end = self.follow(task, events, false).await;
        *self.running.lock().expect("running") = None;
        let cancelled = self.cancel_requested.load(Ordering::SeqCst);
        match end {
            _ if cancelled => Ok(json!({ "stopReason": "cancelled" })),
            Some((detail, _)) if detail.summary.status == TaskStatus::Completed => {
                Ok(json!({ "stopReason": "end_turn" }))
            }
            Some((detail, _)) if detail.summary.status == TaskStatus::Cancelled => {
                Ok(json!({ "stopReason": "cancelled" }))
            }
            // A turn that did not get the work done still ends as a turn: the closing
            // message (sent above) says why, and `_meta` says how the task ended.
            Some((detail, report)) => Ok(json!({
                "stopReason": "end_turn",
                "_meta": { "conclave": {
                    "taskId": task,
                    "status": detail.summary.status,
                    "errorReport": report,
                } }
            })),
            None => Err(RpcError::internal(
                "the session closed before the task ended",
            )),
        }
    }

    /// The task a prompt becomes. What it asks is the prompt's text, with each mention
    /// (a `resource_link`, an embedded `resource`) named by its workspace path; the
    /// linked files are the task's context files. What the agents may read besides (the
    /// text of embedded resources, the session's earlier turns) is the task's
    /// background, never part of what it asks: a file an earlier turn wrote or a
    /// mentioned file is not something this task must deliver.
    fn task_for(&self, prompt: &[ContentBlock]) -> Result<(SubmitTask, String), RpcError> {
        let root = &self.workspace.root;
        let mut text = String::new();
        let mut files = Vec::new();
        let mut attached = String::new();
        for block in prompt {
            match block {
                ContentBlock::Text { text: t } => text.push_str(t),
                ContentBlock::ResourceLink { uri, name, .. } => match workspace_path(root, uri) {
                    Some(relative) => {
                        text.push_str(&relative);
                        if !files.contains(&relative) {
                            files.push(relative);
                        }
                    }
                    None => text.push_str(&format!("[{name}]({uri})")),
                },
                ContentBlock::Resource { resource } => {
                    let name = workspace_path(root, &resource.uri).unwrap_or(resource.uri.clone());
                    text.push_str(&name);
                    if let Some(body) = &resource.text {
                        attached.push_str(&format!("{name}, as attached:\n```\n{body}\n```\n"));
                    }
                }
                ContentBlock::Image { .. } | ContentBlock::Audio { .. } => {
                    return Err(RpcError::invalid_params(
                        "Conclave reads text prompts only (promptCapabilities: no image, no audio)",
                    ));
                }
            }
        }
        let asked = text.trim().to_string();
        if asked.is_empty() {
            return Err(RpcError::invalid_params("the prompt has no text"));
        }
        let earlier = self.earlier_turns();
        let mut background = String::new();
        if !earlier.is_empty() {
            background.push_str(&format!("Earlier in this conversation:\n{earlier}"));
        }
        if !attached.is_empty() {
            if !background.is_empty() {
                background.push('\n');
            }
            background.push_str(&attached);
        }
        let title = short_title(&asked);
        Ok((
            SubmitTask {
                description: asked,
                title: Some(title.clone()),
                context: TaskContext {
                    files,
                    selection: None,
                    background: (!background.is_empty()).then_some(background),
                },
                options: Default::default(),
                owner: Some(format!("{}{}", OWNER_PREFIX, self.id)),
            },
            title,
        ))
    }

    /// The earlier turns as context for a follow-up: what was asked and what came of it.
    fn earlier_turns(&self) -> String {
        let turns = self.file.lock().expect("session file").turns.clone();
        let mut text = String::new();
        for (n, turn) in turns.iter().enumerate() {
            let Ok(detail) = self.workspace.engine.task(&turn.task_id.to_string()) else {
                continue;
            };
            let status = serde_json::to_value(detail.summary.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            text.push_str(&format!(
                "{}. Asked: {} ({status})\n",
                n + 1,
                detail.summary.title
            ));
            if let Some(result) = detail.result.as_deref().filter(|r| !r.trim().is_empty()) {
                for line in result.trim().lines().take(12) {
                    text.push_str(&format!("   {line}\n"));
                }
            }
            if !detail.files_written.is_empty() {
                text.push_str(&format!(
                    "   Files written: {}\n",
                    detail.files_written.join(", ")
                ));
            }
        }
        text
    }

    /// `session/load`: the conversation again as updates, then the unfinished task (if
    /// any) followed live, with its pending approvals asked again.
    pub async fn replay(self: &Arc<Self>) {
        let turns = self.file.lock().expect("session file").turns.clone();
        let engine = self.workspace.engine.clone();
        // Subscribed before reading the tasks, so nothing between the two is missed.
        let events = engine.subscribe();
        self.learn_agent_names().await;
        let mut unfinished = None;
        for turn in &turns {
            for block in &turn.prompt {
                self.send(SessionUpdate::UserMessageChunk {
                    content: block.clone(),
                });
            }
            let Ok(detail) = engine.task(&turn.task_id.to_string()) else {
                self.send(SessionUpdate::agent_text(format!(
                    "_Task {} is no longer in the store._",
                    turn.task_id
                )));
                continue;
            };
            if detail.summary.status.is_finished() {
                let mut view = TaskView::new(&self.workspace.root);
                for update in view.task(&detail.summary, &|id| self.name_of(id)) {
                    self.send(update);
                }
                self.send_usage(turn.task_id, &mut None);
                self.send(SessionUpdate::agent_text(translate::final_message(
                    &detail, None,
                )));
            } else {
                unfinished = Some(turn.task_id);
            }
        }
        let Some(task) = unfinished else { return };
        tracing::info!(task = %task, session = %self.id, "following the resumed task");
        *self.running.lock().expect("running") = Some(task);
        // Parked since the restart until this session came back: it runs again now.
        engine.claim(&format!("{}{}", OWNER_PREFIX, self.id));
        let session = self.clone();
        tokio::spawn(async move {
            session.follow(task, events, true).await;
            *session.running.lock().expect("running") = None;
            session.settle_cancel();
        });
    }

    fn name_of(&self, id: AgentId) -> String {
        self.workspace
            .engine
            .runtime()
            .pool
            .get(id)
            .map(|h| h.name())
            .or_else(|| self.known_names.lock().expect("names").get(&id).cloned())
            .unwrap_or_else(|| id.to_string()[..8].to_string())
    }

    /// Learns the names of every agent the store has known, so that agents replaced
    /// since, or from before a restart, are shown by name in replays and recovery lines.
    async fn learn_agent_names(&self) {
        let Some(store) = self.workspace.engine.runtime().store.clone() else {
            return;
        };
        match store.agents().await {
            Ok(agents) => self
                .known_names
                .lock()
                .expect("names")
                .extend(agents.into_iter().map(|a| (a.id, a.name))),
            Err(e) => tracing::debug!("agent names: {e}"),
        }
    }

    /// A `usage_update` for the task, unless it says what `last` already said.
    fn send_usage(&self, task: TaskId, last: &mut Option<UsageUpdate>) {
        let Ok(detail) = self.workspace.engine.task(&task.to_string()) else {
            return;
        };
        let window = u64::from(self.workspace.engine.config().llm.context_window());
        if let Some(usage) = translate::usage(&detail.usage, window)
            && last.as_ref() != Some(&usage)
        {
            *last = Some(usage.clone());
            self.send(SessionUpdate::UsageUpdate(usage));
        }
    }

    /// Streams the task's updates until it ends; then the closing agent message.
    /// Returns the task's detail and ERROR_REPORT.md's path (failed tasks), or `None`
    /// when the session closed first.
    /// With `catch_up`, the task's current state is shown first (a resumed task, whose
    /// earlier events were never seen); otherwise `events` was subscribed before the task
    /// existed and tells everything.
    async fn follow(
        self: &Arc<Self>,
        task: TaskId,
        mut events: EventStream,
        catch_up: bool,
    ) -> Option<(TaskDetail, Option<PathBuf>)> {
        let engine = self.workspace.engine.clone();
        let task_key = task.to_string();
        self.learn_agent_names().await;
        let name_of = |id: AgentId| self.name_of(id);
        let mut view = TaskView::new(&self.workspace.root);
        let mut notes = BoardNotes::new(NOTES_INTERVAL);
        let mut boards = self.followed_boards(task);
        for board in engine.whiteboards() {
            let key = board.id.to_string();
            if boards.contains_key(&key) {
                notes.baseline(&key, &board.content);
            }
        }
        let mut finished = false;
        let mut last_usage = None;
        let mut done_subtasks = 0;
        // The newest state shown: events older than it (queued before it was read) are
        // not shown again, so nothing goes back in time.
        let mut shown_at = None;
        if catch_up && let Ok(detail) = engine.task(&task_key) {
            for update in view.task(&detail.summary, &name_of) {
                self.send(update);
            }
            shown_at = Some(detail.summary.updated_at);
            finished = detail.summary.status.is_finished();
        }
        for approval in engine.approvals() {
            if approval.task_id == task {
                self.ask(approval);
            }
        }
        while !finished {
            let deadline = notes.next_deadline();
            let event = tokio::select! {
                () = self.closed.cancelled() => return None,
                event = events.recv() => event,
                () = sleep_until(deadline) => {
                    if let Some(text) = notes.due(tokio::time::Instant::now()) {
                        self.send(SessionUpdate::agent_text(text));
                    }
                    continue;
                }
            };
            match event {
                Ok(RuntimeEvent::TaskUpdated(record)) if record.id == task => {
                    let summary = TaskSummary::of(&record);
                    if shown_at.is_some_and(|at| summary.updated_at < at) {
                        continue;
                    }
                    shown_at = Some(summary.updated_at);
                    for update in view.task(&summary, &name_of) {
                        self.send(update);
                    }
                    finished = summary.status.is_finished();
                    // Usage as each subtask ends (and at the end of the task, below).
                    let done = summary
                        .subtasks
                        .iter()
                        .filter(|s| s.status.is_finished())
                        .count();
                    if done != done_subtasks && !finished {
                        done_subtasks = done;
                        self.send_usage(task, &mut last_usage);
                    }
                }
                Ok(RuntimeEvent::Recovery(step)) => {
                    if step.task_id == task_key {
                        for update in view.recovery(&step, &name_of) {
                            self.send(update);
                        }
                    }
                    if self.notices
                        && (step.task_id == task_key || step.task_id.is_empty())
                        && let Some(notice) = translate::provider_notice(&step, &name_of)
                    {
                        self.send(notice);
                    }
                }
                Ok(RuntimeEvent::WhiteboardChanged { id, content, .. }) => {
                    let key = id.to_string();
                    if matches!(id, WhiteboardId::Agent(_)) && !boards.contains_key(&key) {
                        // The coordinator may have been replaced since.
                        boards = self.followed_boards(task);
                    }
                    if let Some(label) = boards.get(&key) {
                        let now = tokio::time::Instant::now();
                        if let Some(text) = notes.offer(&key, label, &content, now) {
                            self.send(SessionUpdate::agent_text(text));
                        }
                    }
                }
                Ok(RuntimeEvent::ApprovalRequested(request)) if request.task_id == task => {
                    self.ask(request);
                }
                Ok(RuntimeEvent::ApprovalResolved {
                    approval_id,
                    decision,
                    reason,
                    ..
                }) => {
                    if let Some(asking) = self.asking.lock().expect("asking").remove(&approval_id) {
                        asking.abort();
                    }
                    self.end_approval_call(approval_id, decision, reason.as_deref());
                }
                Ok(_) => {}
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "the ACP session fell behind the team; catching up");
                    if let Ok(detail) = engine.task(&task_key) {
                        for update in view.task(&detail.summary, &name_of) {
                            self.send(update);
                        }
                        shown_at = Some(detail.summary.updated_at);
                        finished = detail.summary.status.is_finished();
                    }
                }
                Err(RecvError::Closed) => return None,
            }
        }
        if let Some(text) = notes.flush() {
            self.send(SessionUpdate::agent_text(text));
        }
        // The end is told only once it is durable: a kill after the closing message must
        // not bring the task back to run again.
        engine.durable().await;
        let detail = engine
            .finished_task(&task_key, std::time::Duration::from_secs(2))
            .await
            .ok()?;
        // The task's approvals end with it, whether or not their withdrawal was seen.
        let open: Vec<Uuid> = self
            .open_calls
            .lock()
            .expect("open calls")
            .keys()
            .copied()
            .collect();
        let why = match detail.summary.status {
            TaskStatus::Cancelled => "the task was cancelled",
            TaskStatus::Failed => "the task failed",
            _ => "the task ended",
        };
        for approval in open {
            if let Some(asking) = self.asking.lock().expect("asking").remove(&approval) {
                asking.abort();
            }
            self.end_approval_call(approval, None, Some(why));
        }
        self.send_usage(task, &mut last_usage);
        let report = if detail.summary.status == TaskStatus::Failed {
            match engine.error_report(Some(&task_key)).await {
                Ok(report) => Some(report.path),
                Err(e) => {
                    tracing::warn!("ERROR_REPORT.md: {e}");
                    None
                }
            }
        } else {
            None
        };
        self.send(SessionUpdate::agent_text(translate::final_message(
            &detail,
            report.as_deref(),
        )));
        Some((detail, report))
    }

    /// The boards whose new lines are shown: the global one and the own board of the
    /// mid agent coordinating the task.
    fn followed_boards(&self, task: TaskId) -> HashMap<String, String> {
        let mut boards = HashMap::new();
        boards.insert(WhiteboardId::Global.to_string(), "Team board".to_string());
        if let Some(mid) = self.workspace.engine.coordinator(task) {
            boards.insert(
                WhiteboardId::Agent(mid).to_string(),
                format!("{} (coordinating)", self.name_of(mid)),
            );
        }
        boards
    }

    /// Asks the client one approval as `session/request_permission`, once per
    /// connection, from a task of its own. A kind allowed "always" in this session is
    /// approved without asking. An approval the client cancels or fails to answer
    /// stays pending (it is asked again on the next load); nothing is decided for the
    /// person.
    fn ask(self: &Arc<Self>, request: Arc<ApprovalRequest>) {
        let id = request.approval_id;
        if !self.asked.lock().expect("asked").insert(id) {
            return;
        }
        let always = self
            .file
            .lock()
            .expect("session file")
            .allow_always
            .contains(&request.kind);
        let approvable = request
            .options
            .iter()
            .any(|o| o.id == ApprovalChoice::Approve);
        if always && approvable {
            let answer = ApprovalAnswer {
                note: Some("allowed for the rest of the ACP session".into()),
                ..ApprovalAnswer::new(ApprovalChoice::Approve)
            };
            match self
                .workspace
                .engine
                .resolve_approval(&id.to_string(), answer)
            {
                Ok(()) => {
                    tracing::info!(approval = %id, "approved: allowed always in this session")
                }
                Err(e) => tracing::debug!(approval = %id, "{e}"),
            }
            return;
        }
        let session = self.clone();
        let asking = tokio::spawn(async move {
            session.request_permission(&request).await;
            session
                .asking
                .lock()
                .expect("asking")
                .remove(&request.approval_id);
        });
        self.asking.lock().expect("asking").insert(id, asking);
    }

    async fn request_permission(self: &Arc<Self>, request: &ApprovalRequest) {
        let id = request.approval_id;
        let call_id = approval_call_id(id);
        let (kind, content) = approval_content(&self.workspace.root, request);
        self.send(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: call_id.clone(),
            title: request.title.clone(),
            kind,
            status: ToolCallStatus::Pending,
            content: content.clone(),
            locations: Vec::new(),
        }));
        self.open_calls
            .lock()
            .expect("open calls")
            .insert(id, request.title.clone());
        let params = RequestPermissionRequest {
            session_id: self.id.clone(),
            tool_call: ToolCallUpdate {
                tool_call_id: call_id.clone(),
                title: Some(request.title.clone()),
                kind: Some(kind),
                status: Some(ToolCallStatus::Pending),
                content: Some(content),
                locations: None,
            },
            options: permission_options(request),
        };
        let reply = self
            .peer
            .request("session/request_permission", params)
            .await;
        let outcome = match reply.and_then(|v| {
            serde_json::from_value::<RequestPermissionResponse>(v)
                .map_err(|e| RpcError::invalid_params(e.to_string()))
        }) {
            Ok(answer) => answer.outcome,
            Err(e) => {
                tracing::info!(approval = %id, "permission not answered ({e}); it stays pending");
                return;
            }
        };
        let PermissionOutcome::Selected { option_id } = outcome else {
            tracing::info!(approval = %id, "permission cancelled by the client; it stays pending");
            return;
        };
        let Some((choice, always)) = permission_answer(&option_id) else {
            tracing::warn!(approval = %id, "the client chose an option Conclave did not offer: {option_id}");
            return;
        };
        if always {
            let mut file = self.file.lock().expect("session file");
            if !file.allow_always.contains(&request.kind) {
                file.allow_always.push(request.kind);
            }
        }
        if always {
            self.save_soon();
        }
        match self
            .workspace
            .engine
            .resolve_approval(&id.to_string(), ApprovalAnswer::new(choice))
        {
            Ok(()) => {
                tracing::info!(approval = %id, decision = choice.as_str(), "the client answered an approval");
                self.end_approval_call(id, Some(choice), None);
            }
            Err(e) => tracing::debug!(approval = %id, "answer not used: {e}"),
        }
    }

    /// Gives an approval's tool call its final status, once: `completed` when approved,
    /// `failed` when rejected, aborted or withdrawn (a cancel, an answer elsewhere that
    /// ended it), with why in the title.
    fn end_approval_call(
        &self,
        approval: Uuid,
        decision: Option<ApprovalChoice>,
        withdrawn_because: Option<&str>,
    ) {
        let Some(title) = self
            .open_calls
            .lock()
            .expect("open calls")
            .remove(&approval)
        else {
            return;
        };
        let (status, title) = match decision {
            Some(ApprovalChoice::Reject | ApprovalChoice::Abort) => (ToolCallStatus::Failed, None),
            Some(_) => (ToolCallStatus::Completed, None),
            None => (
                ToolCallStatus::Failed,
                Some(match withdrawn_because {
                    Some(why) if !why.trim().is_empty() => format!("{title} — withdrawn: {why}"),
                    _ => format!("{title} — withdrawn"),
                }),
            ),
        };
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: approval_call_id(approval),
            status: Some(status),
            title,
            ..ToolCallUpdate::default()
        }));
    }
}

/// The id of the tool call an approval is shown as.
fn approval_call_id(approval: Uuid) -> String {
    format!("approval-{approval}")
}

/// Held while a `session/prompt` is unanswered.
pub struct PromptArrival {
    session: Arc<Session>,
}

impl Drop for PromptArrival {
    fn drop(&mut self) {
        self.session.prompts.fetch_sub(1, Ordering::SeqCst);
        self.session.settle_cancel();
    }
}

/// How an approval shows: the diff for a file change, the command, or the detail.
fn approval_content(root: &Path, request: &ApprovalRequest) -> (ToolKind, Vec<ToolCallContent>) {
    match (&request.diff, &request.command, request.kind) {
        (Some(diff), _, _) => {
            let path = Path::new(&diff.uri);
            let path = if path.is_absolute() {
                path.to_path_buf()
            } else {
                root.join(path)
            };
            (
                ToolKind::Edit,
                vec![ToolCallContent::Diff {
                    path: path.display().to_string(),
                    old_text: (!diff.before.is_empty()).then(|| diff.before.clone()),
                    new_text: diff.after.clone(),
                }],
            )
        }
        (None, Some(_), _) | (None, None, ApprovalKind::Command) => (
            ToolKind::Execute,
            vec![ToolCallContent::text(request.detail.trim())],
        ),
        _ => {
            let mut text = request.detail.trim().to_string();
            if let Some(solution) = &request.proposed_solution {
                text.push_str(&format!("\n\nProposed: {solution}"));
            }
            (ToolKind::Think, vec![ToolCallContent::text(text)])
        }
    }
}

/// The approval's options as ACP permission options. Approve also comes as
/// `allow_always` (for the rest of the session, for this kind of approval); escalations
/// offer retry and reassign (allow) and abort (reject). "Modify" needs a new
/// description, which a permission prompt cannot take: it is left to the other
/// front-ends.
pub fn permission_options(request: &ApprovalRequest) -> Vec<PermissionOption> {
    let kind_name = match request.kind {
        ApprovalKind::FileChange => "file changes",
        ApprovalKind::Command => "commands",
        ApprovalKind::Decision => "decisions",
        ApprovalKind::Escalation => "escalations",
    };
    let mut options = Vec::new();
    for option in &request.options {
        let kind = match option.id {
            ApprovalChoice::Approve | ApprovalChoice::Retry | ApprovalChoice::Reassign => {
                PermissionOptionKind::AllowOnce
            }
            ApprovalChoice::Reject | ApprovalChoice::Abort => PermissionOptionKind::RejectOnce,
            ApprovalChoice::Modify => continue,
        };
        options.push(PermissionOption {
            option_id: option.id.as_str().to_string(),
            name: option.title.clone(),
            kind,
        });
        if option.id == ApprovalChoice::Approve && request.kind != ApprovalKind::Escalation {
            options.push(PermissionOption {
                option_id: "approve_always".into(),
                name: format!("Always approve {kind_name} in this session"),
                kind: PermissionOptionKind::AllowAlways,
            });
        }
    }
    options
}

/// The chosen option: the decision, and whether it holds for the rest of the session.
pub fn permission_answer(option_id: &str) -> Option<(ApprovalChoice, bool)> {
    let choice = match option_id {
        "approve_always" => return Some((ApprovalChoice::Approve, true)),
        "approve" => ApprovalChoice::Approve,
        "reject" => ApprovalChoice::Reject,
        "retry" => ApprovalChoice::Retry,
        "reassign" => ApprovalChoice::Reassign,
        "abort" => ApprovalChoice::Abort,
        _ => return None,
    };
    Some((choice, false))
}

/// A `file://` URI (or a path) inside the workspace, as a workspace-relative path.
/// The longest title a prompt gives its task (clients show it in one line).
const TITLE_MAX_CHARS: usize = 80;

/// A prompt's first line, cut at a word to [`TITLE_MAX_CHARS`].
fn short_title(asked: &str) -> String {
    let line = asked.lines().next().unwrap_or("").trim();
    if line.chars().count() <= TITLE_MAX_CHARS {
        return line.to_string();
    }
    let cut: String = line.chars().take(TITLE_MAX_CHARS).collect();
    let at_word = cut
        .rfind(' ')
        .filter(|&i| i > TITLE_MAX_CHARS / 2)
        .unwrap_or(cut.len());
    format!("{}…", cut[..at_word].trim_end())
}

fn workspace_path(root: &Path, uri: &str) -> Option<String> {
    let path = match uri.strip_prefix("file://") {
        Some(rest) => PathBuf::from(percent_decode(rest)),
        None if uri.contains("://") => return None,
        None => PathBuf::from(uri),
    };
    let absolute = if path.is_absolute() {
        path
    } else {
        root.join(path)
    };
    let absolute = absolute.canonicalize().unwrap_or(absolute);
    absolute
        .strip_prefix(root)
        .ok()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((high * 16 + low) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::Severity;
    use crate::runtime::{ApprovalOption, FileDiff};

    #[test]
    fn consecutive_agent_messages_read_as_separate_paragraphs() {
        let mut ending = TextEnding::Nothing;
        let mut shown = String::new();
        for message in [
            "**Team board**\n- planned (see verify.command)",
            "\n_↻ retry 2/3 in 4 s_\n",
            "**Done.** 1 of 1 subtasks completed.\n",
            "",
            "\n\n**Done.** again\n\n",
            "tail",
        ] {
            let (text, now) = paragraph_after(ending, message.to_string());
            shown.push_str(&text);
            ending = now;
        }
        assert_eq!(
            shown,
            "**Team board**\n- planned (see verify.command)\n\n_↻ retry 2/3 in 4 s_\n\n\
             **Done.** 1 of 1 subtasks completed.\n\n**Done.** again\n\ntail"
        );
    }

    #[test]
    fn a_long_prompt_gives_a_short_title_cut_at_a_word() {
        assert_eq!(short_title("Fix the bug\nmore"), "Fix the bug");
        let long = "Rename the function parse_config to load_config in every module and update all callers and tests accordingly";
        let title = short_title(long);
        assert!(title.chars().count() <= TITLE_MAX_CHARS + 1, "{title}");
        assert!(title.ends_with('…'), "{title}");
        assert!(long.starts_with(title.trim_end_matches('…')), "{title}");
        assert!(!title.trim_end_matches('…').ends_with(' '), "{title}");
    }

    fn request(kind: ApprovalKind, options: Vec<ApprovalOption>) -> ApprovalRequest {
        ApprovalRequest {
            approval_id: Uuid::new_v4(),
            kind,
            task_id: TaskId::new(),
            subtask_id: None,
            agent_id: String::new(),
            severity: Severity::Medium,
            title: "Create `a.txt`?".into(),
            detail: "An agent wants to create `a.txt`".into(),
            proposed_solution: None,
            diff: Some(FileDiff {
                uri: "a.txt".into(),
                before: String::new(),
                after: "a\n".into(),
            }),
            command: None,
            subtask_description: None,
            options,
            created_at: Utc::now(),
        }
    }

    #[test]
    fn file_changes_offer_once_always_and_reject_with_the_diff() {
        let change = request(ApprovalKind::FileChange, ApprovalOption::yes_no());
        let options = permission_options(&change);
        let kinds: Vec<_> = options
            .iter()
            .map(|o| (o.option_id.as_str(), o.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                ("approve", PermissionOptionKind::AllowOnce),
                ("approve_always", PermissionOptionKind::AllowAlways),
                ("reject", PermissionOptionKind::RejectOnce),
            ]
        );
        assert_eq!(
            options[1].name,
            "Always approve file changes in this session"
        );
        let (kind, content) = approval_content(Path::new("/w"), &change);
        assert_eq!(kind, ToolKind::Edit);
        assert_eq!(
            content,
            vec![ToolCallContent::Diff {
                path: "/w/a.txt".into(),
                old_text: None,
                new_text: "a\n".into()
            }]
        );
        assert_eq!(
            permission_answer("approve_always"),
            Some((ApprovalChoice::Approve, true))
        );
        assert_eq!(
            permission_answer("reject"),
            Some((ApprovalChoice::Reject, false))
        );
        assert_eq!(permission_answer("made-up"), None);
    }

    #[test]
    fn escalations_offer_retry_reassign_and_abort_but_never_always() {
        let mut escalation = request(ApprovalKind::Escalation, ApprovalOption::escalation());
        escalation.diff = None;
        let ids: Vec<_> = permission_options(&escalation)
            .into_iter()
            .map(|o| o.option_id)
            .collect();
        assert_eq!(ids, ["retry", "reassign", "abort"]);
        assert_eq!(
            approval_content(Path::new("/w"), &escalation).0,
            ToolKind::Think
        );
    }

    #[test]
    fn linked_files_inside_the_workspace_become_relative_paths() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        std::fs::write(root.join("a b.rs"), "").unwrap();
        let uri = format!("file://{}/a%20b.rs", root.display());
        assert_eq!(workspace_path(&root, &uri).as_deref(), Some("a b.rs"));
        assert_eq!(workspace_path(&root, "file:///etc/passwd"), None);
        assert_eq!(workspace_path(&root, "https://example.com/x"), None);
    }
}
