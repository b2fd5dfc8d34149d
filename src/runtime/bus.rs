//! The message bus: per-agent mailboxes keyed by agent id, direct sends, broadcasts to
//! everyone or to one layer, and request/reply with a timeout. Every delivered message
//! is recorded in the store and published on the event stream.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::events::EventBus;
use super::journal::Journal;
use super::mailbox::Mailbox;
use crate::ids::AgentId;
use crate::records::{Layer, Message, Recipient};
use crate::store::{Record, Store};

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BusError {
    #[error("no agent {0} is registered on the bus")]
    UnknownAgent(AgentId),
    #[error("agent {0} has terminated and takes no more messages")]
    AgentTerminated(AgentId),
    #[error("agent {0} is already registered on the bus")]
    AlreadyRegistered(AgentId),
    #[error("{to} did not reply to message {request} within {} ms", after.as_millis())]
    ReplyTimeout {
        request: Uuid,
        to: Recipient,
        after: Duration,
    },
    #[error("the reply to message {0} was abandoned")]
    ReplyDropped(Uuid),
}

struct Endpoint {
    mailbox: Arc<Mailbox>,
    layer: Layer,
}

struct BusInner {
    endpoints: DashMap<AgentId, Endpoint>,
    /// Agents that were registered once and are gone, so a late send says "terminated"
    /// instead of "unknown".
    terminated: DashMap<AgentId, ()>,
    /// Agents being or having been replaced, and their replacement: messages for the
    /// first go to the second ([`Bus::forward`]).
    forwards: DashMap<AgentId, AgentId>,
    /// Whether `forwards` was ever written: until the first replacement, a send does
    /// not look there (the bus's hot path).
    any_forward: std::sync::atomic::AtomicBool,
    /// Messages for a replacement that has no mailbox yet, delivered when it registers.
    parked: DashMap<AgentId, Vec<Arc<Message>>>,
    /// Requests waiting for a reply, by request id.
    pending_replies: DashMap<Uuid, oneshot::Sender<Arc<Message>>>,
    journal: Journal,
}

/// A handle to the bus, cheap to clone.
#[derive(Clone)]
pub struct Bus {
    inner: Arc<BusInner>,
}

impl Bus {
    /// A bus publishing on `events` and recording into `store` when there is one.
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        Bus {
            inner: Arc::new(BusInner {
                endpoints: DashMap::new(),
                terminated: DashMap::new(),
                forwards: DashMap::new(),
                any_forward: std::sync::atomic::AtomicBool::new(false),
                parked: DashMap::new(),
                pending_replies: DashMap::new(),
                journal: Journal::new(events, store),
            }),
        }
    }

    /// Gives `agent` a mailbox. Registering an id twice is an error.
    pub fn register(&self, agent: AgentId, layer: Layer) -> Result<Arc<Mailbox>, BusError> {
        use dashmap::mapref::entry::Entry;
        match self.inner.endpoints.entry(agent) {
            Entry::Occupied(_) => Err(BusError::AlreadyRegistered(agent)),
            Entry::Vacant(slot) => {
                let mailbox = Arc::new(Mailbox::new());
                slot.insert(Endpoint {
                    mailbox: mailbox.clone(),
                    layer,
                });
                self.inner.terminated.remove(&agent);
                // Messages forwarded to this agent before it had a mailbox. A sender
                // parking one right now holds the entry and sees the mailbox once it
                // lets go, so nothing is left behind.
                if let Some((_, parked)) = self.inner.parked.remove(&agent) {
                    for message in parked {
                        let _ = mailbox.push(message);
                    }
                }
                Ok(mailbox)
            }
        }
    }

    /// From now on every message for `from` goes to `to`, and what waits in `from`'s
    /// mailbox moves there too (heartbeats excepted: they are about `from`). `to` may
    /// register later; messages wait for it. This is how a replacement takes over
    /// everything its predecessor held, messages that arrive during the swap included.
    pub fn forward(&self, from: AgentId, to: AgentId) {
        self.inner.forwards.insert(from, to);
        self.inner
            .any_forward
            .store(true, std::sync::atomic::Ordering::Release);
        // `to` itself is resolved by `send`, so a chain of replacements is followed.
        // The map's guard is let go before anything is sent (sending takes it again).
        let mailbox = self.inner.endpoints.get(&from).map(|e| e.mailbox.clone());
        let waiting: Vec<Arc<Message>> = match mailbox {
            Some(mailbox) => std::iter::from_fn(|| mailbox.try_recv()).collect(),
            None => Vec::new(),
        };
        self.move_to_replacement(from, waiting);
    }

    /// Sends messages delivered to a replaced agent on to its replacement.
    fn move_to_replacement(&self, from: AgentId, messages: Vec<Arc<Message>>) {
        for message in messages {
            if message.kind == crate::records::MessageKind::Heartbeat {
                continue;
            }
            // Already recorded once as delivered to `from`: a new id keeps the log's
            // entries distinct. Sent to `from`, it follows the forward.
            let mut moved = (*message).clone();
            moved.id = Uuid::new_v4();
            moved.to = Recipient::Agent(from);
            if let Err(e) = self.send(moved) {
                tracing::warn!("a message of replaced agent {from} could not be moved: {e}");
            }
        }
    }

    /// Where a message for `agent` goes: the end of its chain of replacements.
    fn resolve(&self, agent: AgentId) -> AgentId {
        if !self
            .inner
            .any_forward
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return agent;
        }
        let mut to = agent;
        // Bounded: a chain is as long as an agent was replaced, and a cycle (which
        // forward never makes) cannot loop forever.
        for _ in 0..64 {
            match self.inner.forwards.get(&to) {
                Some(next) => to = *next,
                None => break,
            }
        }
        to
    }

    /// Closes `agent`'s mailbox and returns what was still queued in it. For an agent
    /// being replaced ([`Bus::forward`]) what was queued goes to the replacement
    /// instead, and nothing is returned.
    pub fn unregister(&self, agent: AgentId) -> Vec<Arc<Message>> {
        let left = match self.inner.endpoints.remove(&agent) {
            Some((_, endpoint)) => {
                self.inner.terminated.insert(agent, ());
                endpoint.mailbox.close()
            }
            None => Vec::new(),
        };
        if self.inner.forwards.contains_key(&agent) {
            // Pushed by a sender that found the agent just before it was forwarded.
            self.move_to_replacement(agent, left);
            return Vec::new();
        }
        left
    }

    pub fn is_registered(&self, agent: AgentId) -> bool {
        self.inner.endpoints.contains_key(&agent)
    }

    /// The messages waiting in `agent`'s mailbox, highest priority first.
    pub fn queued(&self, agent: AgentId) -> Vec<Arc<Message>> {
        self.inner
            .endpoints
            .get(&agent)
            .map(|e| e.mailbox.snapshot())
            .unwrap_or_default()
    }

    /// Delivers one message. A reply to a pending [`Bus::request`] goes to the requester's
    /// waiting call instead of its mailbox. Returns how many mailboxes received it.
    pub fn send(&self, message: Message) -> Result<usize, BusError> {
        self.send_shared(Arc::new(message))
    }

    pub fn send_shared(&self, message: Arc<Message>) -> Result<usize, BusError> {
        if let Some(request) = message.in_reply_to
            && let Some((_, waiter)) = self.inner.pending_replies.remove(&request)
        {
            self.observe(&message);
            // If the requester gave up in the meantime the reply is still recorded.
            let _ = waiter.send(message);
            return Ok(1);
        }
        let mut message = message;
        let delivered = match message.to {
            Recipient::Agent(addressed) => {
                // Twice at most: a send that raced a `forward` (it found the old agent,
                // whose mailbox closed before the push) goes on to the replacement.
                let mut tried = None;
                loop {
                    let to = self.resolve(addressed);
                    if to != addressed {
                        if message.kind == crate::records::MessageKind::Heartbeat {
                            return Ok(0); // a liveness probe of the replaced agent
                        }
                        message = Arc::new(Message {
                            to: Recipient::Agent(to),
                            ..(*message).clone()
                        });
                    }
                    match self.deliver(to, to != addressed, &message) {
                        Ok(n) => break n,
                        Err(e) if tried.is_some() || self.resolve(addressed) == to => {
                            return Err(e);
                        }
                        Err(_) => tried = Some(to),
                    }
                }
            }
            Recipient::All => self.fan_out(&message, |_| true),
            Recipient::Layer(layer) => self.fan_out(&message, |l| l == layer),
        };
        self.observe(&message);
        Ok(delivered)
    }

    /// Puts `message` in `to`'s mailbox. A forwarded message for a replacement that is
    /// not registered yet waits for it.
    fn deliver(
        &self,
        to: AgentId,
        forwarded: bool,
        message: &Arc<Message>,
    ) -> Result<usize, BusError> {
        let gone = |to| {
            if self.inner.terminated.contains_key(&to) {
                BusError::AgentTerminated(to)
            } else {
                BusError::UnknownAgent(to)
            }
        };
        if !forwarded {
            let endpoint = self.inner.endpoints.get(&to).ok_or_else(|| gone(to))?;
            endpoint
                .mailbox
                .push(message.clone())
                .map_err(|_| BusError::AgentTerminated(to))?;
            return Ok(1);
        }
        // Holding the parked entry: `register` cannot drain it meanwhile, and a mailbox
        // that appears before we look is used directly.
        let mut parked = self.inner.parked.entry(to).or_default();
        if let Some(endpoint) = self.inner.endpoints.get(&to) {
            endpoint
                .mailbox
                .push(message.clone())
                .map_err(|_| BusError::AgentTerminated(to))?;
        } else if self.inner.terminated.contains_key(&to) {
            return Err(gone(to));
        } else {
            parked.push(message.clone());
        }
        Ok(1)
    }

    fn fan_out(&self, message: &Arc<Message>, wants: impl Fn(Layer) -> bool) -> usize {
        // An agent being replaced gets no new broadcasts; its replacement does (now, or
        // when it registers).
        // Collected first: the map's guards are let go before it is read again.
        let targets: Vec<(AgentId, Arc<Mailbox>)> = self
            .inner
            .endpoints
            .iter()
            .filter(|e| *e.key() != message.from && wants(e.layer))
            .map(|e| (*e.key(), e.mailbox.clone()))
            .collect();
        let mut delivered = 0;
        for (agent, mailbox) in &targets {
            let to = self.resolve(*agent);
            if to == *agent {
                delivered += usize::from(mailbox.push(message.clone()).is_ok());
            } else if !targets.iter().any(|(a, _)| *a == to) {
                // The replacement was not among the recipients: it gets it now (or,
                // without a mailbox yet, when it registers).
                let copy = Arc::new(Message {
                    to: Recipient::Agent(to),
                    ..(**message).clone()
                });
                delivered += self.deliver(to, true, &copy).unwrap_or(0);
            }
        }
        delivered
    }

    fn observe(&self, message: &Arc<Message>) {
        self.inner.journal.keep(Record::Message(message.clone()));
    }

    /// Sends `message` and waits up to `timeout` for a message whose `in_reply_to` is its id.
    pub async fn request(
        &self,
        message: Message,
        timeout: Duration,
    ) -> Result<Arc<Message>, BusError> {
        let request = message.id;
        let to = message.to;
        let (waiter, reply) = oneshot::channel();
        self.inner.pending_replies.insert(request, waiter);
        if let Err(e) = self.send(message) {
            self.inner.pending_replies.remove(&request);
            return Err(e);
        }
        match tokio::time::timeout(timeout, reply).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => Err(BusError::ReplyDropped(request)),
            Err(_) => {
                self.inner.pending_replies.remove(&request);
                Err(BusError::ReplyTimeout {
                    request,
                    to,
                    after: timeout,
                })
            }
        }
    }

    /// The ids of registered agents, optionally of one layer.
    pub fn agents(&self, layer: Option<Layer>) -> Vec<AgentId> {
        self.inner
            .endpoints
            .iter()
            .filter(|e| layer.is_none_or(|l| e.layer == l))
            .map(|e| *e.key())
            .collect()
    }
}
