//! The stdio transport: Content-Length framed JSON-RPC in, the service's answers and the
//! server's own requests and notifications out.
//!
//! tower-lsp-server ships a transport, but it ends the connection at the first frame it
//! cannot decode (tokio-util's `FramedRead` stops after a decoder error), and docs/protocol.md
//! wants a malformed message answered with -32700 and the connection kept. So this loop
//! is ours; the service, the router and the client handle are tower-lsp-server's.
//!
//! One task writes every outgoing frame: whatever has queued goes out in one write, so a
//! burst of notifications costs few system calls. Each request's handler runs in a task
//! of its own; the loop only waits for the service to be ready (which it is not while
//! `initialize` runs, as LSP requires).
//!
//! The server's own notifications take the [`Outbox`]: their bytes are written once,
//! straight from the value the bridge built. tower-lsp-server's client would first copy
//! every params value into a request of its own, and the connection sends tens of
//! thousands a second under load. Requests to the editor still go through the client,
//! which matches their answers.

use std::future::poll_fn;

use futures_util::{FutureExt, SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tower::Service;
use tower_lsp_server::ClientSocket;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Id, Request, Response};
use tower_lsp_server::ls_types::notification::Notification;

/// Frames larger than this are refused (and skipped) rather than buffered.
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// Outgoing messages waiting for the writer.
const OUTGOING: usize = 4096;
/// The writer gathers queued messages into one write up to about this many bytes.
const WRITE_CHUNK: usize = 256 * 1024;

/// The server's way to send a notification without tower-lsp-server's client; see the
/// module docs. Messages it queues go out in the order queued, behind the answers and
/// requests queued before them.
#[derive(Clone)]
pub struct Outbox {
    bodies: mpsc::Sender<Vec<u8>>,
}

/// What the writer takes: message bodies, each framed as it is written.
pub struct Outgoing(mpsc::Receiver<Vec<u8>>);

impl Outbox {
    pub fn new() -> (Outbox, Outgoing) {
        let (bodies, outgoing) = mpsc::channel(OUTGOING);
        (Outbox { bodies }, Outgoing(outgoing))
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
        let _ = self.bodies.send(body(&message)).await;
    }

    async fn send(&self, message: &impl serde::Serialize) -> bool {
        self.bodies.send(body(message)).await.is_ok()
    }
}

/// One incoming frame, or why there is none.
enum Frame {
    Body(Vec<u8>),
    /// Headers without a usable Content-Length, or a body too large: answered -32700 or
    /// -32600 and skipped.
    Unusable(&'static str),
    End,
}

/// Serves `service` over `input`/`output` until the input ends or `exit` is handled. The
/// last argument is what [`Outbox::new`] made: the service holds clones of the outbox,
/// and what they queue is written here with the answers.
pub async fn run<S, I, O>(
    input: I,
    output: O,
    mut service: S,
    socket: ClientSocket,
    (outgoing, bodies): (Outbox, Outgoing),
) where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let writer = |over| write_frames(output, bodies, over);
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
        let mut input = BufReader::new(input);
        loop {
            let body = match read_frame(&mut input).await {
                Frame::Body(body) => body,
                Frame::Unusable(why) => {
                    tracing::warn!("unusable frame skipped: {why}");
                    let error = Error {
                        code: ErrorCode::ParseError,
                        message: why.into(),
                        data: None,
                    };
                    outgoing.send(&Response::from_error(Id::Null, error)).await;
                    continue;
                }
                Frame::End => break,
            };
            let message: Value = match serde_json::from_slice(&body) {
                Ok(message) => message,
                Err(e) => {
                    tracing::warn!("malformed JSON received: {e}");
                    let error = Error {
                        code: ErrorCode::ParseError,
                        message: format!("Parse error: {e}").into(),
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
    tokio::join!(reading_and_forwarding, writer(connection_over));
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

/// A message body for the editor: every secret in it redacted (`crate::redact`).
fn body<T: serde::Serialize>(message: &T) -> Vec<u8> {
    let body = serde_json::to_string(message).unwrap_or_else(|_| "null".to_string());
    crate::redact::string(body).into_bytes()
}

/// Frames and writes every body queued, as many as have queued in one write, until
/// the connection is `over` and what was queued by then has been written.
async fn write_frames<O: AsyncWrite>(
    output: O,
    Outgoing(mut bodies): Outgoing,
    mut over: tokio::sync::oneshot::Receiver<()>,
) {
    let mut output = std::pin::pin!(output);
    let mut chunk = Vec::new();
    let mut closing = false;
    loop {
        let body = if closing {
            bodies.try_recv().ok()
        } else {
            tokio::select! {
                body = bodies.recv() => body,
                _ = &mut over => {
                    closing = true;
                    bodies.try_recv().ok()
                }
            }
        };
        let Some(body) = body else {
            break;
        };
        chunk.clear();
        frame_into(&mut chunk, &body);
        while chunk.len() < WRITE_CHUNK {
            match bodies.try_recv() {
                Ok(body) => frame_into(&mut chunk, &body),
                Err(_) => break,
            }
        }
        if output.write_all(&chunk).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
}

fn frame_into(chunk: &mut Vec<u8>, body: &[u8]) {
    use std::io::Write;
    let _ = write!(chunk, "Content-Length: {}\r\n\r\n", body.len());
    chunk.extend_from_slice(body);
}

/// Reads the headers and the body of one frame.
async fn read_frame<I: AsyncRead + Unpin>(input: &mut BufReader<I>) -> Frame {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line).await {
            Ok(0) | Err(_) => return Frame::End,
            Ok(_) => {}
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if saw_header {
                break;
            }
            continue; // stray blank lines between frames
        }
        saw_header = true;
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let Some(length) = length else {
        return Frame::Unusable("a frame without a valid Content-Length header");
    };
    if length > MAX_FRAME {
        // Skip the body so the next frame is read from its start.
        let mut rest = (&mut *input).take(length as u64);
        let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
        return Frame::Unusable("a frame larger than 64 MiB");
    }
    let mut body = vec![0; length];
    match input.read_exact(&mut body).await {
        Ok(_) => Frame::Body(body),
        Err(_) => Frame::End,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &'static [u8]) -> Vec<String> {
        let mut reader = BufReader::new(input);
        let mut out = Vec::new();
        loop {
            match read_frame(&mut reader).await {
                Frame::Body(body) => out.push(String::from_utf8(body).unwrap()),
                Frame::Unusable(why) => out.push(format!("unusable: {why}")),
                Frame::End => return out,
            }
        }
    }

    #[tokio::test]
    async fn frames_are_read_back_to_back_and_bad_headers_are_skipped() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:4\r\nContent-Type: x\r\n\r\nnullX-Other: 1\r\n\r\nContent-Length: 1\r\n\r\n1";
        assert_eq!(
            frames(input).await,
            [
                "{}",
                "null",
                "unusable: a frame without a valid Content-Length header",
                "1"
            ]
        );
    }

    struct TaskUpdated;
    impl Notification for TaskUpdated {
        type Params = Value;
        const METHOD: &'static str = "conclave/taskUpdated";
    }

    #[tokio::test]
    async fn the_outbox_frames_each_notification_once_in_order_with_secrets_redacted() {
        let (outbox, outgoing) = Outbox::new();
        let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
        outbox
            .notify::<TaskUpdated>(&serde_json::json!({ "n": 1, "title": secret }))
            .await;
        outbox
            .notify::<TaskUpdated>(&serde_json::json!({ "n": 2 }))
            .await;
        let (over, connection_over) = tokio::sync::oneshot::channel();
        over.send(()).unwrap();
        let mut written = Vec::new();
        // The outbox is still held: the writer ends because the connection is over,
        // after writing what was queued.
        write_frames(&mut written, outgoing, connection_over).await;
        let mut reader = BufReader::new(&written[..]);
        let mut bodies = Vec::new();
        while let Frame::Body(body) = read_frame(&mut reader).await {
            bodies.push(serde_json::from_slice::<Value>(&body).unwrap());
        }
        assert_eq!(
            bodies,
            [
                serde_json::json!({ "jsonrpc": "2.0", "method": "conclave/taskUpdated",
                                    "params": { "n": 1, "title": "[REDACTED]" } }),
                serde_json::json!({ "jsonrpc": "2.0", "method": "conclave/taskUpdated",
                                    "params": { "n": 2 } }),
            ]
        );
        drop(outbox);
    }

    #[tokio::test]
    async fn a_truncated_body_ends_the_input() {
        assert!(frames(b"Content-Length: 10\r\n\r\nabc").await.is_empty());
    }
}
