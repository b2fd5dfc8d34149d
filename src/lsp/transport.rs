//! The language server's connection: tower-lsp-server's service on the shared JSON-RPC
//! connection (`crate::jsonrpc`), framed with `Content-Length`.
//!
//! tower-lsp-server ships a transport, but it ends the connection at the first frame it
//! cannot decode, and docs/protocol.md wants a malformed message answered with -32700 and
//! the connection kept. So the loop is ours; the service, the router and the client
//! handle are tower-lsp-server's. Each request's handler runs in a task of its own; the
//! loop only waits for the service to be ready (which it is not while `initialize` runs,
//! as LSP requires).
//!
//! The server's own notifications take the [`Outbox`]: their bytes are written once,
//! straight from the value the bridge built. tower-lsp-server's client would first copy
//! every params value into a request of its own, and the connection sends tens of
//! thousands a second under load. Requests to the editor still go through the client,
//! which matches their answers.

use std::future::poll_fn;

use futures_util::{FutureExt, SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::task::JoinSet;
use tower::Service;
use tower_lsp_server::ClientSocket;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Id, Request, Response};
use tower_lsp_server::ls_types::notification::Notification;

use crate::jsonrpc::{self, ContentLength, Malformed};

/// Outgoing messages waiting for the writer; senders wait beyond this.
const OUTGOING: usize = 4096;

/// The server's way to send a notification without tower-lsp-server's client; see the
/// module docs. Messages it queues go out in the order queued, behind the answers and
/// requests queued before them.
#[derive(Clone)]
pub struct Outbox(jsonrpc::Outbox);

/// What the writer takes: message bodies, each framed as it is written.
pub struct Outgoing(jsonrpc::Outgoing);

impl Outbox {
    pub fn new() -> (Outbox, Outgoing) {
        let (outbox, outgoing) = jsonrpc::Outbox::bounded(OUTGOING);
        (Outbox(outbox), Outgoing(outgoing))
    }

    /// Sends `N` with `params`, serialized once. Nothing is sent once the connection
    /// has closed.
    pub async fn notify<N: Notification>(&self, params: &impl serde::Serialize) {
        #[derive(serde::Serialize)]
        struct Message<'a, P> {
            jsonrpc: &'static str,
            method: &'static str,
            params: &'a P,
        }
        let message = Message {
            jsonrpc: "2.0",
            method: N::METHOD,
            params,
        };
        self.0.send(&message).await;
    }

    async fn send(&self, message: &impl serde::Serialize) -> bool {
        self.0.send(message).await
    }
}

/// Serves `service` over `input`/`output` until the input ends or `exit` is handled. The
/// last argument is what [`Outbox::new`] made: the service holds clones of the outbox,
/// and what they queue is written here with the answers.
pub async fn run<S, I, O>(
    input: I,
    output: O,
    mut service: S,
    socket: ClientSocket,
    (outgoing, Outgoing(bodies)): (Outbox, Outgoing),
) where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let (mut to_client, mut from_client) = socket.split();

    let (reading_done, mut reading_over) = tokio::sync::oneshot::channel::<()>();
    // The server's own requests and notifications, as the service makes them; once the
    // reading is over, whatever is queued until then still goes out.
    let forward = {
        let outgoing = outgoing.clone();
        async move {
            loop {
                tokio::select! {
                    biased;
                    request = to_client.next() => match request {
                        Some(request) => {
                            if !outgoing.send(&request).await {
                                return;
                            }
                        }
                        None => return,
                    },
                    _ = &mut reading_over => {
                        while let Some(Some(request)) = to_client.next().now_or_never() {
                            outgoing.send(&request).await;
                        }
                        return;
                    }
                }
            }
        }
    };
    let serve = async {
        let mut handlers = JoinSet::new();
        let mut messages = std::pin::pin!(jsonrpc::read_messages::<ContentLength, _>(input));
        while let Some(message) = messages.next().await {
            let message = match message {
                Ok(message) => message,
                Err(malformed) => {
                    let message = match malformed {
                        Malformed::Frame(why) => why.to_string(),
                        Malformed::Json(e) => format!("Parse error: {e}"),
                    };
                    tracing::warn!("malformed input skipped: {message}");
                    let error = Error {
                        code: ErrorCode::ParseError,
                        message: message.into(),
                        data: None,
                    };
                    outgoing.send(&Response::from_error(Id::Null, error)).await;
                    continue;
                }
            };
            if message.get("method").is_none() {
                // An answer to one of the server's requests.
                match serde_json::from_value::<Response>(message) {
                    Ok(response) => {
                        if from_client.send(response).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        outgoing.send(&invalid_request(None, e)).await;
                    }
                }
                continue;
            }
            let id = message.get("id").cloned();
            let request = match serde_json::from_value::<Request>(message) {
                Ok(request) => request,
                Err(e) => {
                    outgoing.send(&invalid_request(id, e)).await;
                    continue;
                }
            };
            let exit = request.method() == "exit";
            if poll_fn(|cx| service.poll_ready(cx)).await.is_err() {
                break; // the service has exited
            }
            let call = service.call(request);
            let outgoing = outgoing.clone();
            handlers.spawn(async move {
                let response = match call.await {
                    Ok(Some(response)) => response,
                    _ => return,
                };
                outgoing.send(&response).await;
            });
            if exit {
                break;
            }
        }
        // Everything read gets its answer before the connection closes.
        while handlers.join_next().await.is_some() {}
        let _ = reading_done.send(());
    };
    // The service keeps outboxes of its own, so the writer is told when the
    // connection is over rather than waiting for every sender to go.
    let (over, connection_over) = tokio::sync::oneshot::channel::<()>();
    let reading_and_forwarding = async {
        tokio::join!(serve, forward);
        let _ = over.send(());
    };
    let writer = jsonrpc::write_frames::<ContentLength, _>(output, bodies, async {
        let _ = connection_over.await;
    });
    let (_, written) = tokio::join!(reading_and_forwarding, writer);
    if let Err(e) = written {
        tracing::info!("the editor's end of the connection is gone: {e}");
    }
    drop(service);
}

fn invalid_request(id: Option<Value>, e: serde_json::Error) -> Response {
    let id = id
        .and_then(|id| serde_json::from_value::<Id>(id).ok())
        .unwrap_or(Id::Null);
    Response::from_error(
        id,
        Error {
            code: ErrorCode::InvalidRequest,
            message: format!("Invalid request: {e}").into(),
            data: None,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct TaskUpdated;
    impl Notification for TaskUpdated {
        type Params = Value;
        const METHOD: &'static str = "conclave/taskUpdated";
    }

    #[tokio::test]
    async fn the_outbox_sends_each_notification_as_a_json_rpc_notification_in_order() {
        let (outbox, Outgoing(outgoing)) = Outbox::new();
        outbox
            .notify::<TaskUpdated>(&serde_json::json!({ "n": 1 }))
            .await;
        outbox
            .notify::<TaskUpdated>(&serde_json::json!({ "n": 2 }))
            .await;
        let mut written = Vec::new();
        jsonrpc::write_frames::<ContentLength, _>(&mut written, outgoing, std::future::ready(()))
            .await
            .unwrap();
        let bodies: Vec<Value> = jsonrpc::read_messages::<ContentLength, _>(&written[..])
            .map(|m| m.unwrap())
            .collect()
            .await;
        assert_eq!(
            bodies,
            [
                serde_json::json!({ "jsonrpc": "2.0", "method": "conclave/taskUpdated",
                                    "params": { "n": 1 } }),
                serde_json::json!({ "jsonrpc": "2.0", "method": "conclave/taskUpdated",
                                    "params": { "n": 2 } }),
            ]
        );
        drop(outbox);
    }
}
