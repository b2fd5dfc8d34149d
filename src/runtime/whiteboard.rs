//! Whiteboards: versioned markdown boards — `global`, one per layer, one per agent —
//! with a fixed permission matrix. Every change is an event and a stored version.

use std::sync::Arc;

use chrono::Utc;
use dashmap::DashMap;

use super::events::EventBus;
use super::journal::Journal;
use crate::ids::AgentId;
use crate::records::{Layer, Operation, Snapshot, WhiteboardError, WhiteboardId};
use crate::store::{Record, Store};

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

/// The runtime's boards, cheap to clone.
#[derive(Clone)]
pub struct Whiteboards {
    boards: Arc<DashMap<WhiteboardId, Snapshot>>,
    journal: Journal,
}

impl Whiteboards {
    /// The global and layer boards exist from the start, empty at version 0.
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        let boards = Whiteboards {
            boards: Arc::new(DashMap::new()),
            journal: Journal::new(events, store),
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
        self.journal.keep(Record::WhiteboardVersion {
            snapshot: snapshot.clone(),
            author: who.id(),
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
