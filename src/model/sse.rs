//! A small, allocation-light Server-Sent Events parser: bytes in, events out.
//!
//! It follows the WHATWG "event stream interpretation" rules that matter for model APIs:
//! lines end in `\n`, `\r\n` or a lone `\r` (a `\r\n` split across two chunks counts once),
//! `data:` lines of one event are joined with `\n`, lines starting with `:` are comments,
//! a single space after the colon is dropped, a blank line dispatches the event, and an
//! event without data is not dispatched. A UTF-8 byte order mark at the very start is
//! skipped. The `retry:` field is ignored (we never reconnect a model stream).
//!
//! Chunk boundaries may fall anywhere, even inside a multi-byte character: an incomplete
//! line is kept until its terminator arrives, and only whole lines are decoded.

use std::collections::VecDeque;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or empty when the event had none (the spec's "message").
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen on the stream so far, if any.
    pub id: Option<String>,
}

/// Incremental parser state. Feed it chunks as they arrive; call [`SseParser::finish`] at
/// the end of the stream.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line whose terminator has not arrived yet.
    partial: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting the next chunk belongs to it.
    skip_lf: bool,
    /// No line has been processed yet (for the byte order mark).
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

impl SseParser {
    pub fn new() -> Self {
        SseParser {
            at_start: true,
            ..SseParser::default()
        }
    }

    /// Parses `chunk`, appending every event it completes to `out`.
    pub fn feed_into(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) {
        let mut rest = chunk;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while !rest.is_empty() {
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.partial.extend_from_slice(rest);
                return;
            };
            let line_end = rest[end];
            if self.partial.is_empty() {
                self.process_line(&rest[..end], out);
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..end]);
                self.process_line(&line, out);
                // Keep the allocation for the next partial line.
                line.clear();
                self.partial = line;
            }
            rest = &rest[end + 1..];
            if line_end == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
    }

    /// Parses `chunk` and returns the events it completes.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.feed_into(chunk, &mut out);
        out
    }

    /// Ends the stream. A last line without terminator is processed, and a pending event
    /// is dispatched even without the closing blank line: servers that close the
    /// connection right after their last `data:` line are common enough to forgive.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.process_line(&line, &mut out);
        }
        self.skip_lf = false;
        self.dispatch(&mut out);
        out.pop()
    }

    fn process_line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) {
        if self.at_start {
            self.at_start = false;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment, e.g. a keep-alive
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.last_id = Some(String::from_utf8_lossy(value).into_owned());
            }
            _ => {} // `retry` and unknown fields
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if !self.has_data {
            self.event.clear();
            return;
        }
        out.push(SseEvent {
            event: std::mem::take(&mut self.event),
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
        self.has_data = false;
    }
}

/// Adapts a stream of byte chunks (e.g. `reqwest::Response::bytes_stream`) into events.
pub struct SseStream<S> {
    inner: S,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    scratch: Vec<SseEvent>,
    done: bool,
}

impl<S, E> SseStream<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    pub fn new(inner: S) -> Self {
        SseStream {
            inner,
            parser: SseParser::new(),
            pending: VecDeque::new(),
            scratch: Vec::new(),
            done: false,
        }
    }

    /// The next event; `Ok(None)` at the end of the stream, `Err` when reading failed.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, E> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            if self.done {
                return Ok(None);
            }
            match self.inner.next().await {
                Some(Ok(chunk)) => {
                    self.parser.feed_into(&chunk, &mut self.scratch);
                    self.pending.extend(self.scratch.drain(..));
                }
                Some(Err(e)) => return Err(e),
                None => {
                    self.done = true;
                    self.pending.extend(self.parser.finish());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.feed_into(chunk, &mut out);
        }
        out.extend(parser.finish());
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
        }
    }

    #[test]
    fn parses_events_with_all_line_endings() {
        let input = b"event: a\ndata: one\n\nevent: b\r\ndata: two\r\n\r\ndata: three\r\r";
        assert_eq!(
            parse_all(&[input]),
            vec![ev("a", "one"), ev("b", "two"), ev("", "three")]
        );
    }

    #[test]
    fn joins_multi_line_data_and_skips_comments() {
        let input = b": keep-alive\ndata: first\ndata:second\ndata\n\n";
        assert_eq!(parse_all(&[input]), vec![ev("", "first\nsecond\n")]);
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        let input = b"event: ping\n\ndata: x\n\n";
        assert_eq!(parse_all(&[input]), vec![ev("", "x")]);
    }

    #[test]
    fn keeps_the_last_id_and_strips_one_space_only() {
        let input = b"id: 7\ndata:  two spaces\n\ndata: next\n\n";
        let events = parse_all(&[input]);
        assert_eq!(events[0].data, " two spaces");
        assert_eq!(events[0].id.as_deref(), Some("7"));
        assert_eq!(events[1].id.as_deref(), Some("7"));
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let events = parse_all(&[b"data: a\r", b"\n\r", b"\ndata: b\n\n"]);
        assert_eq!(events, vec![ev("", "a"), ev("", "b")]);
    }

    #[test]
    fn skips_a_byte_order_mark_split_across_chunks() {
        let events = parse_all(&[b"\xEF\xBB", b"\xBFdata: x\n\n"]);
        assert_eq!(events, vec![ev("", "x")]);
    }

    #[test]
    fn finish_dispatches_an_unterminated_last_event() {
        assert_eq!(parse_all(&[b"data: [DONE]"]), vec![ev("", "[DONE]")]);
    }

    #[test]
    fn multi_byte_characters_split_across_chunks_survive() {
        let text = "data: héllo → wörld\n\n".as_bytes();
        let events = parse_all(&[&text[..8], &text[8..15], &text[15..]]);
        assert_eq!(events, vec![ev("", "héllo → wörld")]);
    }

    #[tokio::test]
    async fn stream_adapter_yields_events_then_none() {
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(b"data: 1\n")),
            Ok(Bytes::from_static(b"\ndata: 2\n\n")),
        ];
        let mut stream = SseStream::new(futures_util::stream::iter(chunks));
        assert_eq!(stream.next_event().await.unwrap(), Some(ev("", "1")));
        assert_eq!(stream.next_event().await.unwrap(), Some(ev("", "2")));
        assert_eq!(stream.next_event().await.unwrap(), None);
    }

    fn sse_document() -> impl Strategy<Value = Vec<u8>> {
        let line = prop_oneof![
            "[a-z{}\":, é→]{0,20}".prop_map(|s| format!("data: {s}")),
            "[a-z_]{1,12}".prop_map(|s| format!("event: {s}")),
            "[a-z ]{0,10}".prop_map(|s| format!(":{s}")),
            "[0-9]{1,3}".prop_map(|s| format!("id: {s}")),
            Just(String::new()),
        ];
        let ending = prop_oneof![Just("\n"), Just("\r\n"), Just("\r")];
        prop::collection::vec((line, ending), 0..40).prop_map(|lines| {
            lines
                .into_iter()
                .flat_map(|(l, e)| format!("{l}{e}").into_bytes())
                .collect()
        })
    }

    proptest! {
        #[test]
        fn any_chunking_gives_the_same_events(
            doc in sse_document(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let whole = parse_all(&[&doc]);
            let mut positions: Vec<usize> = cuts.iter().map(|i| i.index(doc.len() + 1)).collect();
            positions.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for p in positions {
                chunks.push(&doc[start..p]);
                start = p;
            }
            chunks.push(&doc[start..]);
            prop_assert_eq!(parse_all(&chunks), whole.clone());

            let bytewise: Vec<&[u8]> = doc.chunks(1).collect();
            prop_assert_eq!(parse_all(&bytewise), whole);
        }
    }
}
