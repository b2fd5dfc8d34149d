//! The JSON-RPC connection both front-ends stand on: the language server (`lsp/`, with
//! tower-lsp-server's service on top) and the ACP agent (`acp/`, with its peer on top).
//!
//! - [`framing`]: how messages are cut from the input and framed on the output
//!   (`Content-Length` for LSP, lines for ACP), resynchronising after a bad frame.
//! - [`read_messages`]: the input as a stream of JSON values, each unusable frame or
//!   malformed body a [`Malformed`] the caller answers with -32700, the connection kept.
//! - [`Outbox`] and [`write_frames`]: every outgoing message is serialized once, redacted,
//!   queued, and written by one task; whatever has queued goes out in one write, so a
//!   burst of notifications costs few system calls, and messages keep the order queued.

pub mod framing;

use std::future::Future;

use futures_util::{Stream, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

pub use framing::{ContentLength, Frame, Framing, Lines};

/// The writer gathers queued messages into one write up to about this many bytes.
const WRITE_CHUNK: usize = 256 * 1024;

/// Input that is not a message, and why: answered with a parse error (-32700).
#[derive(Debug)]
pub enum Malformed {
    /// A frame the framing could not use.
    Frame(&'static str),
    /// A body that is not JSON.
    Json(serde_json::Error),
}

/// The messages of `input`, framed by `F`, until it ends or fails.
pub fn read_messages<F: Framing, I: AsyncRead>(
    input: I,
) -> impl Stream<Item = Result<Value, Malformed>> {
    FramedRead::new(input, F::default())
        // An I/O error ends the input as its end does: nothing more can be read.
        .take_while(|frame| std::future::ready(frame.is_ok()))
        .filter_map(|frame| {
            std::future::ready(match frame {
                Ok(Frame::Body(body)) => {
                    Some(serde_json::from_slice(&body).map_err(Malformed::Json))
                }
                Ok(Frame::Unusable(why)) => Some(Err(Malformed::Frame(why))),
                Err(_) => None,
            })
        })
}

/// A message body for the client: every secret in it redacted (`crate::redact`).
pub fn body<T: serde::Serialize>(message: &T) -> Vec<u8> {
    let body = serde_json::to_string(message).unwrap_or_else(|_| "null".to_string());
    crate::redact::string(body).into_bytes()
}

/// Where outgoing message bodies queue for the writer: bounded (a sender waits while the
/// client falls behind) or unbounded (for senders that cannot wait).
#[derive(Clone)]
pub enum Outbox {
    Bounded(mpsc::Sender<Vec<u8>>),
    Unbounded(mpsc::UnboundedSender<Vec<u8>>),
}

/// The writer's end of an [`Outbox`].
pub enum Outgoing {
    Bounded(mpsc::Receiver<Vec<u8>>),
    Unbounded(mpsc::UnboundedReceiver<Vec<u8>>),
}

impl Outbox {
    /// An outbox holding up to `capacity` messages; senders wait beyond that.
    pub fn bounded(capacity: usize) -> (Outbox, Outgoing) {
        let (sender, receiver) = mpsc::channel(capacity);
        (Outbox::Bounded(sender), Outgoing::Bounded(receiver))
    }

    pub fn unbounded() -> (Outbox, Outgoing) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Outbox::Unbounded(sender), Outgoing::Unbounded(receiver))
    }

    /// Queues `message`, serialized and redacted. False once the writer is gone.
    pub async fn send(&self, message: &impl serde::Serialize) -> bool {
        self.send_body(body(message)).await
    }

    pub async fn send_body(&self, body: Vec<u8>) -> bool {
        match self {
            Outbox::Bounded(sender) => sender.send(body).await.is_ok(),
            Outbox::Unbounded(sender) => sender.send(body).is_ok(),
        }
    }

    /// Queues without waiting: always for an unbounded outbox; a bounded one that is
    /// full drops the message (false).
    pub fn send_now(&self, message: &impl serde::Serialize) -> bool {
        match self {
            Outbox::Bounded(sender) => sender.try_send(body(message)).is_ok(),
            Outbox::Unbounded(sender) => sender.send(body(message)).is_ok(),
        }
    }
}

impl Outgoing {
    async fn recv(&mut self) -> Option<Vec<u8>> {
        match self {
            Outgoing::Bounded(receiver) => receiver.recv().await,
            Outgoing::Unbounded(receiver) => receiver.recv().await,
        }
    }

    fn try_recv(&mut self) -> Option<Vec<u8>> {
        match self {
            Outgoing::Bounded(receiver) => receiver.try_recv().ok(),
            Outgoing::Unbounded(receiver) => receiver.try_recv().ok(),
        }
    }
}

/// Frames with `F` and writes every body queued, as many as have queued in one write,
/// until every sender is gone or the connection is `over` (then what was queued by then
/// is written). Err when the output fails: the client is gone.
pub async fn write_frames<F: Framing, O: AsyncWrite>(
    output: O,
    mut bodies: Outgoing,
    over: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut output = std::pin::pin!(output);
    let mut over = std::pin::pin!(over);
    let mut chunk = Vec::new();
    let mut closing = false;
    loop {
        let body = if closing {
            bodies.try_recv()
        } else {
            tokio::select! {
                body = bodies.recv() => body,
                () = &mut over => {
                    closing = true;
                    bodies.try_recv()
                }
            }
        };
        let Some(body) = body else {
            break;
        };
        chunk.clear();
        F::frame_into(&mut chunk, &body);
        while chunk.len() < WRITE_CHUNK {
            match bodies.try_recv() {
                Some(body) => F::frame_into(&mut chunk, &body),
                None => break,
            }
        }
        output.write_all(&chunk).await?;
        output.flush().await?;
    }
    output.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn messages_are_written_once_each_in_order_with_secrets_redacted() {
        let (outbox, outgoing) = Outbox::bounded(8);
        let secret = "sk-proj-abcdefghijklmnopqrstuvwxyz0123";
        assert!(outbox.send(&json!({ "n": 1, "title": secret })).await);
        assert!(outbox.send_now(&json!({ "n": 2 })));
        let mut written = Vec::new();
        // The outbox is still held: the writer ends because the connection is over,
        // after writing what was queued.
        write_frames::<Lines, _>(&mut written, outgoing, std::future::ready(()))
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8(written).unwrap(),
            "{\"n\":1,\"title\":\"[REDACTED]\"}\n{\"n\":2}\n"
        );
        drop(outbox);
    }

    #[tokio::test]
    async fn the_writer_ends_when_every_sender_is_gone() {
        let (outbox, outgoing) = Outbox::unbounded();
        outbox.send_now(&json!(1));
        drop(outbox);
        let mut written = Vec::new();
        write_frames::<ContentLength, _>(&mut written, outgoing, std::future::pending())
            .await
            .unwrap();
        assert_eq!(written, b"Content-Length: 1\r\n\r\n1");
    }

    #[tokio::test]
    async fn malformed_input_is_reported_and_reading_goes_on() {
        let input: &[u8] = b"{\"a\":1}\nnot json\n\xff\n[2]\n";
        let read: Vec<String> = read_messages::<Lines, _>(input)
            .map(|m| match m {
                Ok(value) => value.to_string(),
                Err(Malformed::Json(_)) => "not JSON".into(),
                Err(Malformed::Frame(why)) => why.into(),
            })
            .collect()
            .await;
        assert_eq!(
            read,
            ["{\"a\":1}", "not JSON", "a line that is not UTF-8", "[2]"]
        );
    }
}
