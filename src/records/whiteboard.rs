//! Whiteboards as they are recorded: a board's id and its state at one version. The
//! boards themselves, and who may read or write which, are `runtime::Whiteboards`.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::agent::{AgentId, Layer};

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
