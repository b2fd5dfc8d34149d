//! The ids every layer names things by: tasks, subtasks and agents. On the ground floor,
//! so that failures, stored records and the wire can name them without the runtime.

use std::fmt;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Declares a UUID-backed id that travels as an opaque string.
macro_rules! string_id {
    ($name:ident) => {
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            pub fn new() -> Self {
                $name(Uuid::new_v4())
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map($name)
            }
        }
    };
}

string_id!(TaskId);
string_id!(SubtaskId);

/// An agent's id: a UUID, cheap to copy and hash. The nil UUID is the runtime itself
/// ("system"), the sender of heartbeats and arbitration results.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentId(pub Uuid);

impl AgentId {
    pub const SYSTEM: AgentId = AgentId(Uuid::nil());

    pub fn new() -> Self {
        AgentId(Uuid::new_v4())
    }

    pub fn is_system(self) -> bool {
        self.0.is_nil()
    }
}

impl Default for AgentId {
    fn default() -> Self {
        AgentId::new()
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_system() {
            f.write_str("system")
        } else {
            self.0.fmt(f)
        }
    }
}

impl fmt::Debug for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::str::FromStr for AgentId {
    type Err = uuid::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "system" {
            return Ok(AgentId::SYSTEM);
        }
        Uuid::parse_str(s).map(AgentId)
    }
}
