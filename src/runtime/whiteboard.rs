//! Whiteboards: versioned markdown boards — `global`, one per layer, one per agent —
//! with a fixed permission matrix. Every change is an event and a stored version.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use dashmap::DashMap;
use serde::{Deserialize, Serialize};

use super::agent::{AgentId, Layer};
use super::events::{EventBus, RuntimeEvent};
use crate::store::{Record, Store};

/// `global`, `layer:top|mid|bottom` or `agent:<uuid>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WhiteboardId {
    Global,
    Layer(Layer),
    Agent(AgentId),
}

impl fmt::Display for WhiteboardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhiteboardId::Global => f.write_str("global"),
            WhiteboardId::Layer(layer) => write!(f, "layer:{layer}"),
            WhiteboardId::Agent(id) => write!(f, "agent:{id}"),
        }
    }
}

impl std::str::FromStr for WhiteboardId {
    type Err = WhiteboardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let not_found = || WhiteboardError::NotFound(s.to_string());
        if s == "global" {
            return Ok(WhiteboardId::Global);
        }
        if let Some(layer) = s.strip_prefix("layer:") {
            return layer
                .parse()
                .map(WhiteboardId::Layer)
                .map_err(|_| not_found());
        }
        if let Some(agent) = s.strip_prefix("agent:") {
            return agent
                .parse()
                .map(WhiteboardId::Agent)
                .map_err(|_| not_found());
        }
        Err(not_found())
    }
}

impl Serialize for WhiteboardId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for WhiteboardId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Who is asking. The runtime itself (the editor's read-only views, arbitration
/// results) acts as `System` and may do anything.
#[derive(Clone, Debug)]
pub enum Accessor {
    System,
    Agent {
        id: AgentId,
        layer: Layer,
        subordinates: Vec<AgentId>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    Read,
    Replace,
    Append,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Read => "read",
            Operation::Replace => "replace",
            Operation::Append => "append to",
        })
    }
}

impl Accessor {
    /// The permission matrix: an agent replaces its own board and its layer's, appends to
    /// those and to global, reads global, its layer's, its own and its subordinates';
    /// top agents read every board.
    pub fn may(&self, operation: Operation, board: WhiteboardId) -> bool {
        let Accessor::Agent {
            id,
            layer,
            subordinates,
        } = self
        else {
            return true;
        };
        let own = board == WhiteboardId::Agent(*id) || board == WhiteboardId::Layer(*layer);
        match operation {
            Operation::Replace => own,
            Operation::Append => own || board == WhiteboardId::Global,
            Operation::Read => {
                *layer == Layer::Top
                    || own
                    || board == WhiteboardId::Global
                    || matches!(board, WhiteboardId::Agent(other) if subordinates.contains(&other))
            }
        }
    }

    fn name(&self) -> String {
        match self {
            Accessor::System => "system".to_string(),
            Accessor::Agent { id, .. } => id.to_string(),
        }
    }

    fn id(&self) -> AgentId {
        match self {
            Accessor::System => AgentId::SYSTEM,
            Accessor::Agent { id, .. } => *id,
        }
    }
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum WhiteboardError {
    #[error("no whiteboard `{0}`")]
    NotFound(String),
    #[error("{agent} may not {operation} whiteboard `{board}`")]
    PermissionDenied {
        agent: String,
        operation: Operation,
        board: WhiteboardId,
    },
}

/// A board's state at one version.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub id: WhiteboardId,
    pub version: u64,
    pub content: Arc<str>,
    pub updated_at: DateTime<Utc>,
}

/// The runtime's boards, cheap to clone.
#[derive(Clone)]
pub struct Whiteboards {
    boards: Arc<DashMap<WhiteboardId, Snapshot>>,
    events: EventBus,
    store: Option<Store>,
}

impl Whiteboards {
    /// The global and layer boards exist from the start, empty at version 0.
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        let boards = Whiteboards {
            boards: Arc::new(DashMap::new()),
            events,
            store,
        };
        boards.create(WhiteboardId::Global);
        for layer in Layer::ALL {
            boards.create(WhiteboardId::Layer(layer));
        }
        boards
    }

    /// Creates an empty board if there is none (agent boards are created at registration).
    pub fn create(&self, id: WhiteboardId) {
        self.boards.entry(id).or_insert_with(|| Snapshot {
            id,
            version: 0,
            content: Arc::from(""),
            updated_at: Utc::now(),
        });
    }

    /// Puts a board back as it was (state transfer, resume), keeping its version.
    pub fn restore(&self, snapshot: Snapshot) {
        self.boards.insert(snapshot.id, snapshot);
    }

    pub fn read(&self, who: &Accessor, id: WhiteboardId) -> Result<Snapshot, WhiteboardError> {
        self.check(who, Operation::Read, id)?;
        self.boards
            .get(&id)
            .map(|b| b.clone())
            .ok_or_else(|| WhiteboardError::NotFound(id.to_string()))
    }

    pub fn replace(
        &self,
        who: &Accessor,
        id: WhiteboardId,
        content: &str,
    ) -> Result<Snapshot, WhiteboardError> {
        self.check(who, Operation::Replace, id)?;
        self.change(who, id, |_| content.to_string())
    }

    /// Appends `text` on a line of its own.
    pub fn append(
        &self,
        who: &Accessor,
        id: WhiteboardId,
        text: &str,
    ) -> Result<Snapshot, WhiteboardError> {
        self.check(who, Operation::Append, id)?;
        self.change(who, id, |old| {
            let mut content = String::with_capacity(old.len() + text.len() + 1);
            content.push_str(old);
            if !old.is_empty() && !old.ends_with('\n') {
                content.push('\n');
            }
            content.push_str(text);
            content
        })
    }

    /// Every board with its version and time of last change, sorted by id.
    pub fn list(&self) -> Vec<Snapshot> {
        let mut all: Vec<Snapshot> = self.boards.iter().map(|b| b.clone()).collect();
        all.sort_by_key(|b| b.id);
        all
    }

    fn check(
        &self,
        who: &Accessor,
        operation: Operation,
        id: WhiteboardId,
    ) -> Result<(), WhiteboardError> {
        if who.may(operation, id) {
            Ok(())
        } else {
            Err(WhiteboardError::PermissionDenied {
                agent: who.name(),
                operation,
                board: id,
            })
        }
    }

    fn change(
        &self,
        who: &Accessor,
        id: WhiteboardId,
        edit: impl FnOnce(&str) -> String,
    ) -> Result<Snapshot, WhiteboardError> {
        let snapshot = {
            let mut board = self
                .boards
                .get_mut(&id)
                .ok_or_else(|| WhiteboardError::NotFound(id.to_string()))?;
            board.content = Arc::from(edit(&board.content));
            board.version += 1;
            board.updated_at = Utc::now();
            board.clone()
        };
        if let Some(store) = &self.store {
            store.record(Record::WhiteboardVersion {
                snapshot: snapshot.clone(),
                author: who.id(),
            });
        }
        self.events.publish(RuntimeEvent::WhiteboardChanged {
            id,
            version: snapshot.version,
            content: snapshot.content.clone(),
            at: snapshot.updated_at,
        });
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_text() {
        let agent = AgentId::new();
        for id in [
            WhiteboardId::Global,
            WhiteboardId::Layer(Layer::Mid),
            WhiteboardId::Agent(agent),
        ] {
            assert_eq!(id.to_string().parse::<WhiteboardId>().unwrap(), id);
        }
        assert_eq!(
            "layer:middle".parse::<WhiteboardId>(),
            Err(WhiteboardError::NotFound("layer:middle".into()))
        );
        assert!("agent:nope".parse::<WhiteboardId>().is_err());
        assert!("board".parse::<WhiteboardId>().is_err());
    }
}
