//! A per-agent mailbox: four FIFO queues, one per priority, and a wake-up for the
//! agent's task. Receiving awaits a notification; nothing polls.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::records::{Message, Priority};

#[derive(Default)]
pub struct Mailbox {
    state: Mutex<Queues>,
    wake: Notify,
}

#[derive(Default)]
struct Queues {
    /// Indexed by `Priority as usize`; the highest non-empty queue is served first.
    by_priority: [VecDeque<Arc<Message>>; Priority::COUNT],
    closed: bool,
}

/// Returned by [`Mailbox::push`] when the owner is gone; the message is handed back.
#[derive(Debug)]
pub struct Closed(pub Arc<Message>);

impl Mailbox {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, message: Arc<Message>) -> Result<(), Closed> {
        {
            let mut state = self.state.lock().expect("mailbox lock");
            if state.closed {
                return Err(Closed(message));
            }
            state.by_priority[message.priority as usize].push_back(message);
        }
        // notify_one stores a permit when nobody waits, so a push between the receiver's
        // check and its await is never lost.
        self.wake.notify_one();
        Ok(())
    }

    /// Takes the next message without waiting.
    pub fn try_recv(&self) -> Option<Arc<Message>> {
        let mut state = self.state.lock().expect("mailbox lock");
        state
            .by_priority
            .iter_mut()
            .rev()
            .find_map(|queue| queue.pop_front())
    }

    /// Waits for the next message; `None` once the mailbox is closed and drained.
    pub async fn recv(&self) -> Option<Arc<Message>> {
        loop {
            {
                let mut state = self.state.lock().expect("mailbox lock");
                if let Some(message) = state
                    .by_priority
                    .iter_mut()
                    .rev()
                    .find_map(|queue| queue.pop_front())
                {
                    return Some(message);
                }
                if state.closed {
                    return None;
                }
            }
            self.wake.notified().await;
        }
    }

    /// Refuses further messages and returns the ones still queued, highest priority first.
    pub fn close(&self) -> Vec<Arc<Message>> {
        let mut state = self.state.lock().expect("mailbox lock");
        state.closed = true;
        let left = state
            .by_priority
            .iter_mut()
            .rev()
            .flat_map(|queue| queue.drain(..))
            .collect();
        drop(state);
        self.wake.notify_one();
        left
    }

    /// The queued messages, highest priority first, without removing them (for state transfer).
    pub fn snapshot(&self) -> Vec<Arc<Message>> {
        let state = self.state.lock().expect("mailbox lock");
        state
            .by_priority
            .iter()
            .rev()
            .flat_map(|queue| queue.iter().cloned())
            .collect()
    }

    pub fn len(&self) -> usize {
        let state = self.state.lock().expect("mailbox lock");
        state.by_priority.iter().map(VecDeque::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
