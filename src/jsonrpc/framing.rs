//! How messages are cut from a byte stream and put back into one: `Content-Length`
//! headers for LSP, one message a line for ACP. Both are tokio-util codecs whose decoder
//! never fails on bad input: a frame it cannot use comes out as [`Frame::Unusable`] and
//! the next frame is read from its start. (`FramedRead` ends the stream at a decoder's
//! first error, and a malformed message must cost one error answer, not the connection.)

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

/// Frames larger than this are refused (and skipped) rather than buffered.
pub const MAX_FRAME: usize = 64 * 1024 * 1024;
/// Headers longer than this are not headers.
const MAX_HEADERS: usize = 64 * 1024;

/// One incoming frame.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A message body, not yet parsed.
    Body(BytesMut),
    /// A frame that had to be skipped, and why: answered with a parse error.
    Unusable(&'static str),
}

/// A way of framing messages on a byte stream.
pub trait Framing:
    Decoder<Item = Frame, Error = std::io::Error> + Default + Send + 'static
{
    /// Appends `body`, framed, to `out`.
    fn frame_into(out: &mut Vec<u8>, body: &[u8]);
}

/// LSP's base protocol: headers, a blank line, then `Content-Length` bytes of body.
/// Lenient as editors are: any line ending, header names in any case, stray blank lines
/// between frames.
#[derive(Default)]
pub struct ContentLength {
    phase: Phase,
    /// Of the frame being read: whether a header line was seen, and the length given.
    saw_header: bool,
    length: Option<usize>,
}

#[derive(Default)]
enum Phase {
    #[default]
    Headers,
    Body(usize),
    /// Discarding this many bytes of a body too large to keep.
    Skipping(usize),
}

impl ContentLength {
    /// The headers have ended: what comes next.
    fn headers_done(&mut self) -> Option<Frame> {
        let length = self.length.take();
        self.saw_header = false;
        match length {
            None => Some(Frame::Unusable(
                "a frame without a valid Content-Length header",
            )),
            Some(length) if length > MAX_FRAME => {
                self.phase = Phase::Skipping(length);
                Some(Frame::Unusable("a frame larger than 64 MiB"))
            }
            Some(length) => {
                self.phase = Phase::Body(length);
                None
            }
        }
    }
}

impl Decoder for ContentLength {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        loop {
            match self.phase {
                Phase::Headers => {
                    let Some(end) = buf.iter().position(|b| *b == b'\n') else {
                        if buf.len() > MAX_HEADERS {
                            buf.clear();
                            self.saw_header = false;
                            self.length = None;
                            return Ok(Some(Frame::Unusable("headers longer than 64 KiB")));
                        }
                        return Ok(None);
                    };
                    let line = buf.split_to(end + 1);
                    let header = String::from_utf8_lossy(&line);
                    let header = header.trim_end_matches(['\r', '\n']);
                    if header.is_empty() {
                        if !self.saw_header {
                            continue; // stray blank lines between frames
                        }
                        if let Some(unusable) = self.headers_done() {
                            return Ok(Some(unusable));
                        }
                        continue;
                    }
                    self.saw_header = true;
                    if let Some((name, value)) = header.split_once(':')
                        && name.trim().eq_ignore_ascii_case("content-length")
                    {
                        self.length = value.trim().parse().ok();
                    }
                }
                Phase::Body(length) => {
                    if buf.len() < length {
                        buf.reserve(length - buf.len());
                        return Ok(None);
                    }
                    self.phase = Phase::Headers;
                    return Ok(Some(Frame::Body(buf.split_to(length))));
                }
                Phase::Skipping(left) => {
                    let skipped = left.min(buf.len());
                    buf.advance(skipped);
                    if skipped < left {
                        self.phase = Phase::Skipping(left - skipped);
                        return Ok(None);
                    }
                    self.phase = Phase::Headers;
                }
            }
        }
    }

    /// A frame cut short by the end of the input is dropped: there is nobody to answer.
    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        let frame = self.decode(buf)?;
        if frame.is_none() {
            buf.clear();
        }
        Ok(frame)
    }
}

impl Framing for ContentLength {
    fn frame_into(out: &mut Vec<u8>, body: &[u8]) {
        use std::io::Write;
        let _ = write!(out, "Content-Length: {}\r\n\r\n", body.len());
        out.extend_from_slice(body);
    }
}

/// ACP's framing: one message a line; blank lines are skipped.
#[derive(Default)]
pub struct Lines {
    /// Inside a line too long to keep, discarding up to its end.
    skipping: bool,
    /// How far the buffer has been searched for a newline.
    searched: usize,
}

impl Decoder for Lines {
    type Item = Frame;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        loop {
            let Some(offset) = buf[self.searched..].iter().position(|b| *b == b'\n') else {
                self.searched = buf.len();
                if buf.len() > MAX_FRAME {
                    buf.clear();
                    self.searched = 0;
                    if !self.skipping {
                        self.skipping = true;
                        return Ok(Some(Frame::Unusable("a line longer than 64 MiB")));
                    }
                }
                return Ok(None);
            };
            let mut line = buf.split_to(self.searched + offset + 1);
            self.searched = 0;
            if std::mem::take(&mut self.skipping) {
                continue; // the end of a line already refused
            }
            line.truncate(line.len() - 1);
            if line.last() == Some(&b'\r') {
                line.truncate(line.len() - 1);
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if std::str::from_utf8(&line).is_err() {
                return Ok(Some(Frame::Unusable("a line that is not UTF-8")));
            }
            return Ok(Some(Frame::Body(line)));
        }
    }

    /// The last line may end without a newline.
    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, std::io::Error> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if buf.is_empty() || std::mem::take(&mut self.skipping) {
            buf.clear();
            return Ok(None);
        }
        buf.extend_from_slice(b"\n");
        self.decode(buf)
    }
}

impl Framing for Lines {
    fn frame_into(out: &mut Vec<u8>, body: &[u8]) {
        out.extend_from_slice(body);
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use tokio_util::codec::FramedRead;

    async fn frames<F: Framing>(input: &'static [u8]) -> Vec<String> {
        FramedRead::new(input, F::default())
            .map(|frame| match frame.expect("decoders do not fail") {
                Frame::Body(body) => String::from_utf8(body.to_vec()).unwrap(),
                Frame::Unusable(why) => format!("unusable: {why}"),
            })
            .collect()
            .await
    }

    #[tokio::test]
    async fn content_length_frames_are_read_back_to_back_and_bad_headers_are_skipped() {
        let input = b"Content-Length: 2\r\n\r\n{}content-length:4\r\nContent-Type: x\r\n\r\nnull\r\n\r\nX-Other: 1\r\n\r\nContent-Length: 1\n\n1";
        assert_eq!(
            frames::<ContentLength>(input).await,
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
        assert!(
            frames::<ContentLength>(b"Content-Length: 10\r\n\r\nabc")
                .await
                .is_empty()
        );
    }

    #[test]
    fn a_body_too_large_is_skipped_and_the_next_frame_read() {
        let mut decoder = ContentLength::default();
        let mut buf = BytesMut::from(format!("Content-Length: {}\r\n\r\n", MAX_FRAME + 3).as_str());
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Some(Frame::Unusable("a frame larger than 64 MiB"))
        );
        // The body arrives in pieces; none of it is kept.
        for _ in 0..4 {
            buf.extend_from_slice(&vec![b'x'; MAX_FRAME / 4]);
            assert_eq!(decoder.decode(&mut buf).unwrap(), None);
            assert!(buf.is_empty());
        }
        buf.extend_from_slice(b"xxxContent-Length: 2\r\n\r\n{}");
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Some(Frame::Body(BytesMut::from("{}")))
        );
    }

    #[tokio::test]
    async fn lines_skip_blanks_refuse_bad_utf8_and_keep_a_last_line_without_newline() {
        let input = b"{\"a\":1}\r\n\n  \n\xff\xfe\n{\"b\":2}\n{\"c\":3}";
        assert_eq!(
            frames::<Lines>(input).await,
            [
                "{\"a\":1}",
                "unusable: a line that is not UTF-8",
                "{\"b\":2}",
                "{\"c\":3}"
            ]
        );
    }

    #[test]
    fn a_line_too_long_is_refused_once_and_the_next_line_read() {
        let mut decoder = Lines::default();
        let mut buf = BytesMut::from(&vec![b'x'; MAX_FRAME + 1][..]);
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Some(Frame::Unusable("a line longer than 64 MiB"))
        );
        buf.extend_from_slice(&vec![b'x'; MAX_FRAME + 1]);
        assert_eq!(decoder.decode(&mut buf).unwrap(), None);
        buf.extend_from_slice(b"xx\n{}\n");
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Some(Frame::Body(BytesMut::from("{}")))
        );
    }

    #[test]
    fn frames_are_written_as_they_are_read() {
        let mut out = Vec::new();
        ContentLength::frame_into(&mut out, b"{}");
        Lines::frame_into(&mut out, b"null");
        assert_eq!(out, b"Content-Length: 2\r\n\r\n{}null\n");
    }
}
