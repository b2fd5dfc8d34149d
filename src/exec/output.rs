//! Output kept from a run: both ends of each stream, within a bound.

/// Keeps the first and last `limit / 2` bytes of a stream and counts what fell between,
/// so long output costs bounded memory and the model still sees how it began and ended.
#[derive(Debug)]
pub struct HeadTail {
    limit: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    pub fn new(limit: usize) -> HeadTail {
        HeadTail {
            limit,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_room = (self.limit / 2 + self.limit % 2).saturating_sub(self.head.len());
        let into_head = head_room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        let tail_limit = self.limit / 2;
        if bytes.len() >= tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - tail_limit..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(tail_limit);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The kept text, with a marker saying how much was cut from the middle.
    pub fn render(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.total > kept {
            text.push_str(&format!(
                "\n[… {} bytes cut from the middle of {} …]\n",
                self.total - kept,
                self.total
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_and_counts_the_cut() {
        let mut buffer = HeadTail::new(10);
        for chunk in [b"abc".as_slice(), b"defghij", b"klmnopqrstuvwxyz"] {
            buffer.push(chunk);
        }
        assert_eq!(buffer.total(), 26);
        let text = buffer.render();
        assert!(text.starts_with("abcde\n"), "{text}");
        assert!(text.ends_with("\nvwxyz"), "{text}");
        assert!(text.contains("16 bytes cut"), "{text}");

        let mut small = HeadTail::new(10);
        small.push(b"short");
        assert_eq!(small.render(), "short");
        small.push(b"12345");
        assert_eq!(small.render(), "short12345");
    }

    #[test]
    fn head_tail_handles_many_small_pushes() {
        let mut buffer = HeadTail::new(4);
        for byte in b"0123456789" {
            buffer.push(std::slice::from_ref(byte));
        }
        let text = buffer.render();
        assert!(text.starts_with("01\n"), "{text}");
        assert!(text.ends_with("\n89"), "{text}");
    }
}
