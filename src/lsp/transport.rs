//! The stdio transport: Content-Length framed JSON-RPC in, the service's answers and the
//! server's own requests and notifications out.
//!
//! tower-lsp-server ships a transport, but it ends the connection at the first frame it
//! cannot decode (tokio-util's `FramedRead` stops after a decoder error), and docs/protocol.md
//! wants a malformed message answered with -32700 and the connection kept. So this loop
//! is ours; the service, the router and the client handle are tower-lsp-server's.
//!
//! One task writes every outgoing frame, flushing when nothing else is queued, so a
//! burst of notifications goes out in few writes. Each request's handler runs in a task
//! of its own; the loop only waits for the service to be ready (which it is not while
//! `initialize` runs, as LSP requires).

use std::future::poll_fn;

use futures_util::{FutureExt, SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tower::Service;
use tower_lsp_server::ClientSocket;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Id, Request, Response};

/// Frames larger than this are refused (and skipped) rather than buffered.
const MAX_FRAME: usize = 64 * 1024 * 1024;
/// Outgoing frames waiting for the writer.
const OUTGOING: usize = 4096;

/// One incoming frame, or why there is none.
enum Frame {
    Body(Vec<u8>),
    /// Headers without a usable Content-Length, or a body too large: answered -32700 or
    /// -32600 and skipped.
    Unusable(&'static str),
    End,
}

/// Serves `service` over `input`/`output` until the input ends or `exit` is handled.
pub async fn run<S, I, O>(input: I, output: O, mut service: S, socket: ClientSocket)
where
    S: Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    I: AsyncRead + Unpin,
    O: AsyncWrite,
{
    let (outgoing, frames) = mpsc::channel::<Vec<u8>>(OUTGOING);
    let writer = write_frames(output, frames);
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
                            if outgoing.send(encode(&request)).await.is_err() {
                                return;
                            }
                        }
                        None => return,
                    },
                    _ = &mut reading_over => {
                        while let Some(Some(request)) = to_client.next().now_or_never() {
                            let _ = outgoing.send(encode(&request)).await;
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
                    let _ = outgoing
                        .send(encode(&Response::from_error(Id::Null, error)))
                        .await;
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
                    let _ = outgoing
                        .send(encode(&Response::from_error(Id::Null, error)))
                        .await;
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
                        let _ = outgoing.send(encode(&invalid_request(None, e))).await;
                    }
                }
                continue;
            }
            let id = message.get("id").cloned();
            let request = match serde_json::from_value::<Request>(message) {
                Ok(request) => request,
                Err(e) => {
                    let _ = outgoing.send(encode(&invalid_request(id, e))).await;
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
                let frame = match call.await {
                    Ok(Some(response)) => encode(&response),
                    _ => return,
                };
                let _ = outgoing.send(frame).await;
            });
            if exit {
                break;
            }
        }
        // Everything read gets its answer before the connection closes.
        while handlers.join_next().await.is_some() {}
        let _ = reading_done.send(());
        drop(outgoing);
    };
    tokio::join!(serve, forward, writer);
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

/// A frame for the editor: every secret in it redacted (`crate::redact`).
fn encode<T: serde::Serialize>(message: &T) -> Vec<u8> {
    let body = serde_json::to_string(message).unwrap_or_else(|_| "null".to_string());
    let body = crate::redact::string(body).into_bytes();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    frame
}

async fn write_frames<O: AsyncWrite>(output: O, mut frames: mpsc::Receiver<Vec<u8>>) {
    let mut output = std::pin::pin!(output);
    while let Some(frame) = frames.recv().await {
        if output.write_all(&frame).await.is_err() {
            return;
        }
        // Flush only when nothing else is queued: bursts go out in few writes.
        while let Ok(frame) = frames.try_recv() {
            if output.write_all(&frame).await.is_err() {
                return;
            }
        }
        if output.flush().await.is_err() {
            return;
        }
    }
    let _ = output.flush().await;
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

    #[tokio::test]
    async fn a_truncated_body_ends_the_input() {
        assert!(frames(b"Content-Length: 10\r\n\r\nabc").await.is_empty());
    }
}
