//! ACP's side of the shared JSON-RPC connection (`crate::jsonrpc`): one message a line,
//! no batches.
//!
//! A line that is not JSON gets a -32700 answer with `id: null`, an array gets -32600,
//! and the connection goes on either way. Requests from the client are handed to the
//! caller one by one (the caller answers each in its own time through
//! [`Peer::respond`]); answers to our own requests complete the matching
//! [`Peer::request`]. Everything written goes through the connection's one writer, in
//! the order it was queued, so an update sent before a prompt's answer arrives before it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use dashmap::DashMap;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::AsyncWrite;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::jsonrpc::{self, Lines, Malformed};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP's "resource not found" (an unknown session).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// Ours, never sent: a request of ours that no answer will come to, because the
/// connection closed (a transport failure, not the client's word).
pub const CONNECTION_CLOSED: i64 = -32099;

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = (!data.is_null()).then_some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(INTERNAL_ERROR, message)
    }

    /// Whether no answer came because the connection closed, rather than the client
    /// answering with an error.
    pub fn is_transport_failure(&self) -> bool {
        self.code == CONNECTION_CLOSED
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

/// One message read from the client.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        result: Result<Value, RpcError>,
    },
}

/// Reads one line: a message, or the error to answer with `id: null` (or, for a
/// malformed request that has an id, with that id).
pub fn parse_line(line: &str) -> Result<Incoming, (Value, RpcError)> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        (
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("not JSON: {e}")),
        )
    })?;
    parse_message(value)
}

/// Tells a JSON value apart as a request, a notification or an answer; or the error to
/// answer it with.
pub fn parse_message(value: Value) -> Result<Incoming, (Value, RpcError)> {
    let Value::Object(mut object) = value else {
        let what = if value.is_array() {
            "batches are not part of ACP"
        } else {
            "a message is a JSON object"
        };
        return Err((Value::Null, RpcError::new(INVALID_REQUEST, what)));
    };
    let id = object.remove("id");
    let params = match object.remove("params") {
        None | Some(Value::Null) => json!({}),
        Some(params) => params,
    };
    match (object.remove("method"), id) {
        (Some(Value::String(method)), Some(id)) => Ok(Incoming::Request { id, method, params }),
        (Some(Value::String(method)), None) => Ok(Incoming::Notification { method, params }),
        (Some(_), id) => Err((
            id.unwrap_or(Value::Null),
            RpcError::new(INVALID_REQUEST, "the method must be a string"),
        )),
        (None, Some(id)) => {
            let result = match (object.remove("result"), object.remove("error")) {
                (_, Some(error)) => Err(RpcError {
                    code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    data: error.get("data").cloned(),
                }),
                (Some(result), None) => Ok(result),
                (None, None) => Ok(Value::Null),
            };
            Ok(Incoming::Response { id, result })
        }
        (None, None) => Err((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "neither a request nor a response"),
        )),
    }
}

/// Our side of the connection: sends notifications, requests and answers.
pub struct Peer {
    out: jsonrpc::Outbox,
    next_id: AtomicI64,
    pending: DashMap<i64, oneshot::Sender<Result<Value, RpcError>>>,
    /// Cancelled when the connection is over (end of input or output gone).
    pub closed: CancellationToken,
}

impl Peer {
    /// A peer writing to `output` from a task of its own; the task ends when the last
    /// sender is gone or the output fails.
    pub fn new<O>(output: O) -> (Arc<Peer>, tokio::task::JoinHandle<()>)
    where
        O: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, outgoing) = jsonrpc::Outbox::unbounded();
        let closed = CancellationToken::new();
        let peer = Arc::new(Peer {
            out,
            next_id: AtomicI64::new(0),
            pending: DashMap::new(),
            closed: closed.clone(),
        });
        let writer = tokio::spawn(async move {
            let written =
                jsonrpc::write_frames::<Lines, _>(output, outgoing, std::future::pending()).await;
            if written.is_err() {
                tracing::info!("the client's input is gone; nothing more can be sent");
                closed.cancel();
            }
        });
        (peer, writer)
    }

    /// Queues `message` for the client, every secret in it redacted (`crate::redact`).
    fn send(&self, message: Value) {
        self.out.send_now(&message);
    }

    pub fn notify(&self, method: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
        };
        self.send(message);
    }

    /// Sends a request and waits for its answer. Ends with an error when the connection
    /// closes first. Dropping the future forgets the request.
    pub async fn request(&self, method: &str, params: impl Serialize) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.insert(id, tx);
        let _forget = Forget {
            pending: &self.pending,
            id,
        };
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        tokio::select! {
            answer = rx => answer.unwrap_or_else(|_| Err(RpcError::new(CONNECTION_CLOSED, "no answer"))),
            () = self.closed.cancelled() => Err(RpcError::new(CONNECTION_CLOSED, "the connection closed")),
        }
    }

    /// An answer from the client to one of our requests.
    pub fn answered(&self, id: &Value, result: Result<Value, RpcError>) {
        let Some(id) = id.as_i64() else {
            tracing::debug!("an answer with an id we never sent: {id}");
            return;
        };
        match self.pending.remove(&id) {
            Some((_, waiting)) => {
                let _ = waiting.send(result);
            }
            None => tracing::debug!("an answer to request {id}, which nobody waits for"),
        }
    }
}

struct Forget<'a> {
    pending: &'a DashMap<i64, oneshot::Sender<Result<Value, RpcError>>>,
    id: i64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.remove(&self.id);
    }
}

/// Reads `input` line by line until it ends, answering unreadable lines itself and
/// handing everything else to `handle`. Answers to our requests are routed here.
pub async fn read_loop<I, F>(input: I, peer: &Arc<Peer>, mut handle: F)
where
    I: tokio::io::AsyncRead + Unpin,
    F: FnMut(Incoming),
{
    let mut messages = std::pin::pin!(jsonrpc::read_messages::<Lines, _>(input));
    loop {
        let message = tokio::select! {
            message = messages.next() => message,
            () = peer.closed.cancelled() => return,
        };
        let Some(message) = message else {
            return;
        };
        let parsed = match message {
            Ok(value) => parse_message(value),
            Err(Malformed::Json(e)) => Err((
                Value::Null,
                RpcError::new(PARSE_ERROR, format!("not JSON: {e}")),
            )),
            // The line is lost, the connection is not.
            Err(Malformed::Frame(why)) => Err((
                Value::Null,
                RpcError::new(PARSE_ERROR, format!("unreadable input: {why}")),
            )),
        };
        match parsed {
            Ok(Incoming::Response { id, result }) => peer.answered(&id, result),
            Ok(message) => handle(message),
            Err((id, error)) => {
                tracing::warn!("bad input: {}", error.message);
                peer.respond(id, Err(error));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    #[test]
    fn requests_notifications_and_answers_are_told_apart() {
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Ok(Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            })
        );
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Ok(Incoming::Notification {
                method: "session/cancel".into(),
                params: json!({})
            })
        );
        assert_eq!(
            parse_line(r#"{"jsonrpc":"2.0","id":"x","result":{"outcome":1}}"#),
            Ok(Incoming::Response {
                id: json!("x"),
                result: Ok(json!({"outcome": 1}))
            })
        );
        let Ok(Incoming::Response { result, .. }) =
            parse_line(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}"#)
        else {
            panic!("a response")
        };
        assert_eq!(result.unwrap_err().code, METHOD_NOT_FOUND);
    }

    #[test]
    fn bad_lines_get_the_standard_codes() {
        let (id, e) = parse_line("not json").unwrap_err();
        assert_eq!((id, e.code), (Value::Null, PARSE_ERROR));
        assert_eq!(parse_line("[1,2]").unwrap_err().1.code, INVALID_REQUEST);
        assert_eq!(parse_line("42").unwrap_err().1.code, INVALID_REQUEST);
        let (id, e) = parse_line(r#"{"id":7,"method":3}"#).unwrap_err();
        assert_eq!((id, e.code), (json!(7), INVALID_REQUEST));
    }

    #[tokio::test]
    async fn a_request_is_answered_through_the_read_loop_and_lines_keep_their_order() {
        let (ours, theirs) = tokio::io::duplex(4096);
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let (our_read, our_write) = tokio::io::split(ours);
        let (peer, _writer) = Peer::new(our_write);
        let reader_peer = peer.clone();
        tokio::spawn(async move { read_loop(our_read, &reader_peer, |_| {}).await });

        peer.notify("session/update", json!({"n": 1}));
        let asking = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("fs/read_text_file", json!({})).await })
        };
        let mut lines = BufReader::new(their_read).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(first["method"], "session/update");
        let second: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(second["method"], "fs/read_text_file");
        let answer = json!({"jsonrpc": "2.0", "id": second["id"], "result": {"content": "x"}});
        their_write
            .write_all(format!("not json\n{answer}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(asking.await.unwrap(), Ok(json!({"content": "x"})));
        let error: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(error["error"]["code"], PARSE_ERROR);
        assert_eq!(error["id"], Value::Null);
    }
}
