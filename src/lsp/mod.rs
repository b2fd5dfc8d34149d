//! `conclave serve --stdio`: the language-server edge (docs/protocol.md), on
//! tower-lsp-server.
//!
//! - `server.rs` — the handlers: `initialize` starts the engine, `conclave/*` methods
//!   translate onto it, and none of them waits for the editor.
//! - `bridge.rs` — the runtime side: engine events become notifications, progress and
//!   diagnostics; approvals are asked from there, each with a time limit.
//! - `views.rs` — whiteboard coalescing and file diagnostics, pure and unit-tested.
//! - `edits.rs` — the `workspace/applyEdit` writer, with its disk fallback.
//! - `transport.rs` — Content-Length framing over stdio, tolerant of bad frames.
//! - `protocol.rs` — the wire types; `lock.rs` — one server per workspace;
//!   `log.rs` — logs to `window/logMessage`.
//!
//! Lifecycle: `exit` after `shutdown` ends with 0, `exit` without it with 1; closed stdin,
//! the editor's process (`processId`) gone, or SIGTERM end cleanly with 0; a second
//! server on a workspace served by a live one answers `initialize` with error 1007 and
//! ends with 1 (an orphaned holder is taken over). Every ending shuts the team down and
//! commits the store.

mod bridge;
mod edits;
mod log;
mod outgoing;
pub mod protocol;
mod server;
mod transport;
mod views;
#[cfg(test)]
mod wire_check;

pub use bridge::WHITEBOARD_INTERVAL;
pub use edits::whole_file_edit;
pub use log::{ClientLogLayer, LogLine, LogLines, client_log_layer};

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower_lsp_server::LspService;
use tower_lsp_server::jsonrpc::Request;

use crate::engine::Engine;
use server::Backend;

/// How `serve` ended, as the process exit code.
pub const EXIT_CLEAN: i32 = 0;
pub const EXIT_WITHOUT_SHUTDOWN: i32 = 1;
pub const EXIT_WORKSPACE_BUSY: i32 = 1;

pub struct ServeOptions {
    /// Serve this directory whatever the client says its root is.
    pub workspace: Option<PathBuf>,
    /// Log lines for `window/logMessage` (see [`client_log_layer`]).
    pub logs: Option<LogLines>,
}

/// What the handlers tell the loop about how the connection is ending.
#[derive(Default)]
pub struct Lifecycle {
    shutdown: AtomicBool,
    exit: AtomicBool,
    refused: AtomicBool,
    /// Cancelled to end the input as if stdin had closed.
    stop_input: CancellationToken,
    /// Cancelled when `shutdown` arrives: the team stops, and what that withdraws is
    /// not news for the editor (it comes back with the next server).
    stopping: CancellationToken,
    /// Cancelled once the connection is over: nothing more is sent to the editor.
    closed: CancellationToken,
    engine: OnceLock<Arc<Engine>>,
}

/// Serves one client over stdin/stdout until `exit`, the end of stdin, the end of the
/// editor's process (`processId`) or SIGTERM; returns the process exit code.
pub async fn serve(options: ServeOptions) -> i32 {
    let lifecycle = Arc::new(Lifecycle::default());
    // SIGTERM (a new server taking over from this orphaned one, or a user's `kill`)
    // ends the connection like a closed stdin: the team stops and the store is committed.
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut terminate) => {
            let stop = lifecycle.stop_input.clone();
            tokio::spawn(async move {
                if terminate.recv().await.is_some() {
                    tracing::warn!("SIGTERM: the server stops");
                    stop.cancel();
                }
            });
        }
        Err(e) => tracing::warn!("SIGTERM cannot be handled ({e}); it will end the server at once"),
    }
    serve_with(tokio::io::stdin(), tokio::io::stdout(), options, lifecycle).await
}

/// [`serve`] over any pair of streams.
pub async fn serve_on<I, O>(input: I, output: O, options: ServeOptions) -> i32
where
    I: AsyncRead + Unpin,
    O: tokio::io::AsyncWrite,
{
    serve_with(input, output, options, Arc::new(Lifecycle::default())).await
}

async fn serve_with<I, O>(
    input: I,
    output: O,
    options: ServeOptions,
    lifecycle: Arc<Lifecycle>,
) -> i32
where
    I: AsyncRead + Unpin,
    O: tokio::io::AsyncWrite,
{
    let (outbox, outgoing) = transport::Outbox::new();
    let (service, socket) = LspService::build(|client| {
        Backend::new(
            client,
            outbox.clone(),
            lifecycle.clone(),
            options.workspace,
            options.logs,
        )
    })
    .custom_method("conclave/submitTask", Backend::submit_task)
    .custom_method("conclave/cancelTask", Backend::cancel_task)
    .custom_method("conclave/retryTask", Backend::retry_task)
    .custom_method("conclave/listTasks", Backend::list_tasks)
    .custom_method("conclave/getTask", Backend::get_task)
    .custom_method("conclave/listAgents", Backend::list_agents)
    .custom_method("conclave/listWhiteboards", Backend::list_whiteboards)
    .custom_method("conclave/readWhiteboard", Backend::read_whiteboard)
    .custom_method(
        "conclave/subscribeWhiteboard",
        Backend::subscribe_whiteboard,
    )
    .custom_method(
        "conclave/unsubscribeWhiteboard",
        Backend::unsubscribe_whiteboard,
    )
    .custom_method("conclave/listApprovals", Backend::list_approvals)
    .custom_method("conclave/resolveApproval", Backend::resolve_approval)
    .custom_method("conclave/errorReport", Backend::error_report)
    .custom_method("conclave/taskLog", Backend::task_log)
    .custom_method("conclave/undoTask", Backend::undo_task)
    .finish();
    let input = StoppableInput::new(input, lifecycle.stop_input.clone());
    let edge = Edge {
        inner: service,
        lifecycle: lifecycle.clone(),
    };
    transport::run(input, output, edge, socket, (outbox, outgoing)).await;
    lifecycle.closed.cancel();

    if let Some(engine) = lifecycle.engine.get()
        && !lifecycle.shutdown.load(Ordering::SeqCst)
    {
        tracing::info!("the editor went away without shutdown; stopping the team");
        engine.shutdown().await;
    }
    if lifecycle.refused.load(Ordering::SeqCst) {
        EXIT_WORKSPACE_BUSY
    } else if lifecycle.exit.load(Ordering::SeqCst) && !lifecycle.shutdown.load(Ordering::SeqCst) {
        EXIT_WITHOUT_SHUTDOWN
    } else {
        EXIT_CLEAN
    }
}

/// In front of the service: notes `exit`, and gives `conclave/*` requests sent without
/// params (or with `null` or `[]`, as some clients encode "nothing") the `{}` that
/// their handlers take.
struct Edge<S> {
    inner: S,
    lifecycle: Arc<Lifecycle>,
}

impl<S> tower::Service<Request> for Edge<S>
where
    S: tower::Service<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if request.method() == "exit" {
            self.lifecycle.exit.store(true, Ordering::SeqCst);
        }
        let request = if request.method().starts_with("conclave/") {
            let (method, id, params) = request.into_parts();
            let params = match params {
                None | Some(serde_json::Value::Null) => serde_json::json!({}),
                Some(serde_json::Value::Array(list)) if list.is_empty() => serde_json::json!({}),
                Some(params) => params,
            };
            let builder = Request::build(method).params(params);
            match id {
                Some(id) => builder.id(id).finish(),
                None => builder.finish(),
            }
        } else {
            request
        };
        self.inner.call(request)
    }
}

/// The input stream, ended early (as at end of file) when `stop` is cancelled: the
/// server then answers what it has read and returns.
struct StoppableInput<R> {
    inner: R,
    stop: Pin<Box<WaitForCancellationFutureOwned>>,
    stopped: bool,
}

impl<R> StoppableInput<R> {
    fn new(inner: R, stop: CancellationToken) -> Self {
        StoppableInput {
            inner,
            stop: Box::pin(stop.cancelled_owned()),
            stopped: false,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for StoppableInput<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.stopped || self.stop.as_mut().poll(cx).is_ready() {
            self.stopped = true;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}
