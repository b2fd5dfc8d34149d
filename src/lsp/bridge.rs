//! The runtime side of the connection: one task follows the engine's event stream and
//! turns it into what the editor sees — `conclave/taskUpdated`, `conclave/agentStatus`,
//! `conclave/recoveryStatus`, coalesced `conclave/whiteboardChanged` for subscribed
//! boards, `$/progress` per task and diagnostics on the files of troubled subtasks — and
//! asks the editor every approval.
//!
//! Requests to the editor are sent from here, never from a request handler, and each
//! has a time limit (`editor.approvalTimeoutMs`): an approval left unanswered, dismissed
//! or answered with an error stays pending, listed by `conclave/listApprovals` and
//! answerable with `conclave/resolveApproval`. Nothing is decided by a timeout. Whenever
//! the server stops waiting for an answer (time limit, or the approval was answered
//! elsewhere) the editor is sent `$/cancelRequest` for its prompt (`outgoing.rs`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::{Progress, PublishDiagnostics};
use tower_lsp_server::ls_types::request::{ShowMessageRequest, WorkDoneProgressCreate};
use tower_lsp_server::ls_types::{
    Diagnostic, DiagnosticSeverity, MessageActionItem, MessageType, Position, ProgressParams,
    ProgressParamsValue, ProgressToken, PublishDiagnosticsParams, Range, ShowMessageRequestParams,
    WorkDoneProgress, WorkDoneProgressBegin, WorkDoneProgressCreateParams, WorkDoneProgressEnd,
    WorkDoneProgressReport,
};
use uuid::Uuid;

use super::outgoing::{self, Reply};
use super::protocol::{
    self, AgentStatusChanged, ApprovalResolved, ClientFeatures, RecoveryStatus, RequestApproval,
    TaskUpdated, Uris, WhiteboardChanged, progress_of, task_updated,
};
use super::transport::Outbox;
use super::views::{Coalescer, FileNotes, NoteSeverity};
use crate::engine::Engine;
use crate::recovery::Severity;
use crate::runtime::{
    ApprovalAnswer, ApprovalRequest, EventStream, RuntimeEvent, Snapshot, TaskId, TaskStatus,
};
use crate::wire::TaskSummary;

/// At most this many events go out behind one durability wait.
const NOTIFICATION_BATCH: usize = 16_384;

/// Events a connection holds while it waits for the store or the editor (its queue
/// allocates only what is waiting).
const EVENT_BACKLOG: usize = 65_536;

/// How long the thread that follows the runtime's events waits for more once it has
/// caught up, before it sleeps until the next one.
const EVENT_PAUSE: Duration = Duration::from_millis(1);

/// At most one `conclave/whiteboardChanged` per board in this interval (docs/protocol.md).
pub const WHITEBOARD_INTERVAL: Duration = Duration::from_millis(50);

/// What the client said it supports, beyond `experimental.conclave`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientSupport {
    pub features: ClientFeatures,
    /// `window.workDoneProgress`: the server may create progress tokens.
    pub work_done_progress: bool,
}

pub struct Bridge {
    /// Requests to the editor (their answers come back through it).
    client: Client,
    /// Notifications: framed once, in the order sent.
    outbox: Outbox,
    engine: Arc<Engine>,
    uris: Uris,
    support: ClientSupport,
    approval_timeout: Duration,
    /// Subscribed whiteboard ids.
    boards: Mutex<HashSet<String>>,
    /// Progress tokens per task, from `workDoneToken` or created by the server.
    progress: DashMap<TaskId, ProgressToken>,
    /// Tasks whose progress has begun.
    begun: Mutex<HashSet<TaskId>>,
    /// Approvals being asked right now, so an answer given elsewhere ends the asking.
    asking: DashMap<Uuid, JoinHandle<()>>,
    /// Approvals asked on this connection, with their titles. One raised between
    /// `initialize` (which subscribes to events) and `initialized` (which lists the
    /// pending ones) comes both ways, and the editor must see it once.
    asked: Mutex<HashMap<Uuid, String>>,
    /// The connection is over: stop following.
    closed: CancellationToken,
    /// The server is shutting down: approvals its stopping team withdraws come back
    /// with the next server, so the editor is not told they were withdrawn.
    stopping: CancellationToken,
}

impl Bridge {
    pub fn new(
        client: Client,
        outbox: Outbox,
        engine: Arc<Engine>,
        support: ClientSupport,
        closed: CancellationToken,
        stopping: CancellationToken,
    ) -> Arc<Bridge> {
        let approval_timeout = Duration::from_millis(engine.config().editor.approval_timeout_ms);
        Arc::new(Bridge {
            client,
            outbox,
            uris: Uris::new(engine.workspace()),
            engine,
            support,
            approval_timeout,
            boards: Mutex::new(HashSet::new()),
            progress: DashMap::new(),
            begun: Mutex::new(HashSet::new()),
            asking: DashMap::new(),
            asked: Mutex::new(HashMap::new()),
            closed,
            stopping,
        })
    }

    pub fn uris(&self) -> &Uris {
        &self.uris
    }

    /// Starts following `events` (subscribed before the first task could change) and
    /// asks the editor every approval already pending (restored from the store, or made
    /// while the editor was away).
    pub fn start(self: &Arc<Self>, events: EventStream) -> JoinHandle<()> {
        for approval in self.engine.approvals() {
            self.ask(approval);
        }
        let bridge = self.clone();
        tokio::spawn(async move { bridge.follow(events).await })
    }

    pub fn subscribe(&self, board: &str) {
        self.boards
            .lock()
            .expect("boards")
            .insert(board.to_string());
    }

    pub fn unsubscribe(&self, board: &str) {
        self.boards.lock().expect("boards").remove(board);
    }

    fn subscribed(&self, board: &str) -> bool {
        self.boards.lock().expect("boards").contains(board)
    }

    /// Reports the task's progress under `token` (the submitter's `workDoneToken`), or
    /// under a token the server creates when the client supports that.
    pub fn track_progress(self: &Arc<Self>, task: TaskId, token: Option<ProgressToken>) {
        if let Some(token) = token {
            self.progress.insert(task, token);
            return;
        }
        if !self.support.work_done_progress {
            return;
        }
        let bridge = self.clone();
        tokio::spawn(async move {
            let token = ProgressToken::String(format!("conclave/task/{task}"));
            let params = WorkDoneProgressCreateParams {
                token: token.clone(),
            };
            let limit = Duration::from_secs(10);
            match outgoing::request::<WorkDoneProgressCreate>(&bridge.client, params, limit).await {
                Reply::Answered(Ok(())) => {
                    bridge.progress.insert(task, token);
                    // The task may have moved on (or finished) while the editor answered.
                    if let Some(summary) = bridge
                        .engine
                        .tasks()
                        .into_iter()
                        .find(|t| t.task_id == task)
                    {
                        bridge.report_progress(&summary).await;
                    }
                }
                Reply::Answered(Err(e)) => {
                    tracing::debug!("the editor refused a progress token: {e}")
                }
                Reply::TimedOut | Reply::Lost => {
                    tracing::debug!("the editor did not answer a progress token request")
                }
            }
        });
    }

    async fn follow(self: Arc<Self>, events: EventStream) {
        let mut queue = self.queue_events(events);
        let mut coalescer = Coalescer::new(WHITEBOARD_INTERVAL);
        let mut notes = FileNotes::default();
        // Kept from batch to batch: freeing a large batch each time costs the allocator
        // more than the events themselves.
        let mut batch = Vec::new();
        loop {
            let deadline = coalescer.next_deadline();
            let first = tokio::select! {
                () = self.closed.cancelled() => return,
                event = queue.recv() => event.unwrap_or(Err(RecvError::Closed)),
                () = sleep_until(deadline) => {
                    for params in coalescer.due(tokio::time::Instant::now()) {
                        self.outbox.notify::<WhiteboardChanged>(&params).await;
                    }
                    continue;
                }
            };
            // Nothing goes out before its record is durable: what has queued meanwhile
            // goes out behind the same wait, so the store commits it as one batch.
            batch.push(first);
            while batch.len() < NOTIFICATION_BATCH {
                match queue.try_recv() {
                    Ok(event) => batch.push(event),
                    Err(_) => break,
                }
            }
            self.engine.durable().await;
            for event in batch.drain(..) {
                if !self.forward(event, &mut coalescer, &mut notes).await {
                    return;
                }
            }
        }
    }

    /// Moves the runtime's events into a queue of this connection's own, so that the
    /// runtime's bounded stream keeps moving while this connection waits for the store
    /// or the editor. Only when `EVENT_BACKLOG` events wait here does the stream fall
    /// behind, and the connection then sends the current state instead. It runs on a
    /// thread, not a task: a busy team can hold the async workers for longer than the
    /// stream holds its events.
    ///
    /// Once it has caught up, the thread looks again after `EVENT_PAUSE` before it sleeps
    /// until the next event: a team publishing thousands of events a second then wakes
    /// it a thousand times a second, not once an event.
    fn queue_events(
        &self,
        mut events: EventStream,
    ) -> mpsc::Receiver<Result<RuntimeEvent, RecvError>> {
        let (sender, queue) = mpsc::channel(EVENT_BACKLOG);
        let closed = self.closed.clone();
        let spawned = std::thread::Builder::new()
            .name("conclave-events".into())
            .spawn(move || {
                let mut paused = false;
                loop {
                    let event = match events.try_recv() {
                        Ok(event) => Ok(event),
                        Err(TryRecvError::Lagged(missed)) => Err(RecvError::Lagged(missed)),
                        Err(TryRecvError::Closed) => Err(RecvError::Closed),
                        Err(TryRecvError::Empty) if !paused => {
                            paused = true;
                            std::thread::sleep(EVENT_PAUSE);
                            continue;
                        }
                        Err(TryRecvError::Empty) => events.blocking_recv(),
                    };
                    paused = false;
                    let ended = matches!(event, Err(RecvError::Closed));
                    if closed.is_cancelled() || sender.blocking_send(event).is_err() || ended {
                        return;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("cannot start the thread that follows the runtime's events: {e}");
        }
        queue
    }

    /// Sends what the editor sees of `event` (its record is durable); `false` when the
    /// event stream has ended.
    async fn forward(
        self: &Arc<Self>,
        event: Result<RuntimeEvent, RecvError>,
        coalescer: &mut Coalescer,
        notes: &mut FileNotes,
    ) -> bool {
        match event {
            Ok(RuntimeEvent::TaskUpdated(record)) => {
                self.task_changed(&TaskSummary::of(&record), notes).await;
            }
            Ok(RuntimeEvent::AgentStatus(transition)) => {
                self.outbox.notify::<AgentStatusChanged>(&transition).await;
            }
            Ok(RuntimeEvent::WhiteboardChanged {
                id,
                version,
                content,
                at,
            }) => {
                let board = Snapshot {
                    id,
                    version,
                    content,
                    updated_at: at,
                };
                let id = board.id.to_string();
                if !self.subscribed(&id) {
                    coalescer.forget(&id);
                    return true;
                }
                let params = protocol::whiteboard(&board);
                let now = tokio::time::Instant::now();
                if let Some(params) = coalescer.offer(&id, version, params, now) {
                    self.outbox.notify::<WhiteboardChanged>(&params).await;
                }
            }
            Ok(RuntimeEvent::Recovery(step)) => {
                self.outbox
                    .notify::<RecoveryStatus>(&self.uris.recovery(&step))
                    .await;
            }
            Ok(RuntimeEvent::ApprovalRequested(request)) => self.ask(request),
            Ok(RuntimeEvent::ApprovalResolved {
                approval_id,
                task_id,
                decision,
                reason,
            }) => {
                self.settled(approval_id, task_id, decision, reason).await;
            }
            Ok(_) => {}
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(
                    missed,
                    "the editor connection fell behind the runtime; sending the current state again"
                );
                // The current state may be ahead of the events received.
                self.engine.durable().await;
                for summary in self.engine.tasks() {
                    self.task_changed(&summary, notes).await;
                }
                let now = tokio::time::Instant::now();
                for board in self.engine.whiteboards() {
                    let id = board.id.to_string();
                    if self.subscribed(&id) {
                        let params = protocol::whiteboard(&board);
                        if let Some(params) = coalescer.offer(&id, board.version, params, now) {
                            self.outbox.notify::<WhiteboardChanged>(&params).await;
                        }
                    }
                }
            }
            Err(RecvError::Closed) => return false,
        }
        true
    }

    async fn task_changed(&self, summary: &TaskSummary, notes: &mut FileNotes) {
        self.outbox
            .notify::<TaskUpdated>(&task_updated(&self.uris, summary))
            .await;
        self.report_progress(summary).await;
        for file in notes.update(summary) {
            let Some(uri) = self.uris.uri(&file) else {
                continue;
            };
            let diagnostics = notes
                .notes(&file)
                .into_iter()
                .map(|note| Diagnostic {
                    range: Range::new(Position::new(0, 0), Position::new(0, 0)),
                    severity: Some(match note.severity {
                        NoteSeverity::Information => DiagnosticSeverity::INFORMATION,
                        NoteSeverity::Warning => DiagnosticSeverity::WARNING,
                        NoteSeverity::Error => DiagnosticSeverity::ERROR,
                    }),
                    source: Some("conclave".into()),
                    message: note.message,
                    ..Diagnostic::default()
                })
                .collect();
            self.outbox
                .notify::<PublishDiagnostics>(&PublishDiagnosticsParams {
                    uri,
                    diagnostics,
                    version: None,
                })
                .await;
        }
    }

    async fn report_progress(&self, summary: &TaskSummary) {
        let id = summary.task_id;
        let Some(token) = self.progress.get(&id).map(|t| t.clone()) else {
            return;
        };
        let message = Some(status_line(summary));
        let percentage = Some(u32::from(progress_of(summary)));
        let first = self.begun.lock().expect("begun").insert(id);
        if first {
            self.send_progress(
                token.clone(),
                WorkDoneProgress::Begin(WorkDoneProgressBegin {
                    title: format!("Conclave: {}", summary.title),
                    cancellable: Some(false),
                    message: message.clone(),
                    percentage,
                }),
            )
            .await;
        } else if !summary.status.is_finished() {
            self.send_progress(
                token.clone(),
                WorkDoneProgress::Report(WorkDoneProgressReport {
                    cancellable: Some(false),
                    message: message.clone(),
                    percentage,
                }),
            )
            .await;
        }
        if summary.status.is_finished() && self.progress.remove(&id).is_some() {
            self.send_progress(
                token,
                WorkDoneProgress::End(WorkDoneProgressEnd { message }),
            )
            .await;
            self.begun.lock().expect("begun").remove(&id);
        }
    }

    async fn send_progress(&self, token: ProgressToken, value: WorkDoneProgress) {
        self.outbox
            .notify::<Progress>(&ProgressParams {
                token,
                value: ProgressParamsValue::WorkDone(value),
            })
            .await;
    }

    /// An approval was answered or withdrawn: the asking stops (the editor gets
    /// `$/cancelRequest`), every editor is told with `conclave/approvalResolved`, and a
    /// withdrawn approval this editor was shown is explained in a message.
    async fn settled(
        &self,
        id: Uuid,
        task: TaskId,
        decision: Option<crate::runtime::ApprovalChoice>,
        reason: Option<String>,
    ) {
        if let Some((_, asking)) = self.asking.remove(&id) {
            asking.abort();
        }
        if decision.is_none() && self.stopping.is_cancelled() {
            return;
        }
        let mut params = serde_json::json!({
            "approvalId": id,
            "taskId": task,
            "decision": decision.map(|d| d.as_str()),
        });
        if let Some(reason) = &reason {
            params["reason"] = Value::String(reason.clone());
        }
        self.outbox.notify::<ApprovalResolved>(&params).await;
        let title = self.asked.lock().expect("asked").get(&id).cloned();
        if decision.is_none()
            && let Some(title) = title
        {
            let reason = reason.unwrap_or_else(|| "it no longer matters".into());
            self.client
                .show_message(
                    MessageType::INFO,
                    format!("Conclave withdrew the approval \u{201c}{title}\u{201d}: {reason}. Nothing needs your answer there any more."),
                )
                .await;
        }
    }

    /// Asks the editor one approval, from a task of its own, once per connection.
    fn ask(self: &Arc<Self>, request: Arc<ApprovalRequest>) {
        let id = request.approval_id;
        {
            let mut asked = self.asked.lock().expect("asked");
            if asked.contains_key(&id) {
                return;
            }
            asked.insert(id, request.title.clone());
        }
        let bridge = self.clone();
        let asking = tokio::spawn(async move {
            let answer = if bridge.support.features.approvals {
                bridge.request_approval(&request).await
            } else {
                bridge.show_message_request(&request).await
            };
            bridge.asking.remove(&id);
            if let Some(answer) = answer {
                match bridge.engine.resolve_approval(&id.to_string(), answer) {
                    Ok(()) => tracing::info!(approval = %id, "the editor answered an approval"),
                    // Answered elsewhere in the meantime (conclave/resolveApproval).
                    Err(e) => tracing::debug!(approval = %id, "editor answer not used: {e}"),
                }
            }
        });
        self.asking.insert(id, asking);
    }

    async fn request_approval(&self, request: &ApprovalRequest) -> Option<ApprovalAnswer> {
        let reply = outgoing::request::<RequestApproval>(
            &self.client,
            self.uris.approval(request),
            self.approval_timeout,
        )
        .await;
        match reply {
            Reply::Answered(Ok(Some(answer))) => Some(answer),
            Reply::Answered(Ok(None)) => {
                tracing::info!(approval = %request.approval_id, "approval dismissed; it stays pending");
                None
            }
            Reply::Answered(Err(e)) => {
                tracing::info!(approval = %request.approval_id, "approval not answered ({e}); it stays pending");
                None
            }
            Reply::Lost => {
                tracing::info!(approval = %request.approval_id, "the editor is gone; the approval stays pending");
                None
            }
            Reply::TimedOut => {
                tracing::warn!(
                    approval = %request.approval_id,
                    "the editor did not answer an approval within {} s; it stays pending (conclave/listApprovals)",
                    self.approval_timeout.as_secs()
                );
                None
            }
        }
    }

    /// For clients that did not announce `approvals`: one action per option.
    async fn show_message_request(&self, request: &ApprovalRequest) -> Option<ApprovalAnswer> {
        let typ = match request.severity {
            Severity::Critical | Severity::High => MessageType::ERROR,
            Severity::Medium => MessageType::WARNING,
            Severity::Low => MessageType::INFO,
        };
        let message = format!("Conclave: {}\n\n{}", request.title, request.detail.trim());
        let actions = request
            .options
            .iter()
            .map(|o| MessageActionItem {
                title: o.title.clone(),
                properties: HashMap::new(),
            })
            .collect();
        let params = ShowMessageRequestParams {
            typ,
            message,
            actions: Some(actions),
        };
        let reply =
            outgoing::request::<ShowMessageRequest>(&self.client, params, self.approval_timeout)
                .await;
        match reply {
            Reply::Answered(Ok(Some(chosen))) => request
                .options
                .iter()
                .find(|o| o.title == chosen.title)
                .map(|o| ApprovalAnswer::new(o.id)),
            Reply::Answered(Ok(None)) | Reply::Answered(Err(_)) | Reply::TimedOut | Reply::Lost => {
                tracing::info!(approval = %request.approval_id, "approval not answered; it stays pending");
                None
            }
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// One line for the progress message: the status and the latest recovery step.
fn status_line(summary: &TaskSummary) -> String {
    let status = serde_json::to_value(summary.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
        .replace('_', " ");
    let done = summary
        .subtasks
        .iter()
        .filter(|s| s.status == crate::runtime::SubtaskStatus::Completed)
        .count();
    let mut line = if summary.subtasks.is_empty() {
        status
    } else {
        format!("{status} · {done}/{} subtasks", summary.subtasks.len())
    };
    if matches!(
        summary.status,
        TaskStatus::Recovering | TaskStatus::Escalated
    ) && let Some(step) = &summary.recovery
    {
        line.push_str(&format!(" · {}", step.message));
    }
    line
}
