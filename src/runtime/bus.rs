//! The message bus: per-agent mailboxes keyed by agent id, direct sends, broadcasts to
//! everyone or to one layer, and request/reply with a timeout. Every delivered message
//! is recorded in the store and published on the event stream.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::agent::{AgentId, Layer};
use super::events::{EventBus, RuntimeEvent};
use super::mailbox::Mailbox;
use super::message::{Message, Recipient};
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
    /// Requests waiting for a reply, by request id.
    pending_replies: DashMap<Uuid, oneshot::Sender<Arc<Message>>>,
    events: EventBus,
    store: Option<Store>,
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
                pending_replies: DashMap::new(),
                events,
                store,
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
                Ok(mailbox)
            }
        }
    }

    /// Closes `agent`'s mailbox and returns what was still queued in it.
    pub fn unregister(&self, agent: AgentId) -> Vec<Arc<Message>> {
        match self.inner.endpoints.remove(&agent) {
            Some((_, endpoint)) => {
                self.inner.terminated.insert(agent, ());
                endpoint.mailbox.close()
            }
            None => Vec::new(),
        }
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
        let delivered = match message.to {
            Recipient::Agent(to) => {
                let endpoint = self.inner.endpoints.get(&to).ok_or_else(|| {
                    if self.inner.terminated.contains_key(&to) {
                        BusError::AgentTerminated(to)
                    } else {
                        BusError::UnknownAgent(to)
                    }
                })?;
                endpoint
                    .mailbox
                    .push(message.clone())
                    .map_err(|_| BusError::AgentTerminated(to))?;
                1
            }
            Recipient::All => self.fan_out(&message, |_| true),
            Recipient::Layer(layer) => self.fan_out(&message, |l| l == layer),
        };
        self.observe(&message);
        Ok(delivered)
    }

    fn fan_out(&self, message: &Arc<Message>, wants: impl Fn(Layer) -> bool) -> usize {
        self.inner
            .endpoints
            .iter()
            .filter(|e| *e.key() != message.from && wants(e.layer))
            .filter(|e| e.mailbox.push(message.clone()).is_ok())
            .count()
    }

    fn observe(&self, message: &Arc<Message>) {
        if let Some(store) = &self.inner.store {
            store.record(Record::Message(message.clone()));
        }
        self.inner
            .events
            .publish(RuntimeEvent::Message(message.clone()));
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
