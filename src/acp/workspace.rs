//! One workspace's team as the ACP sessions on it share it: its engine, holding the
//! workspace lock, and the sessions open on it; and the errors of the methods in the
//! engine's and the sessions' terms.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::rpc::{self, RpcError};
use crate::engine::{Engine, EngineError, WorkspaceLock};

/// How a task's owner names an ACP session (`acp:<session id>`).
pub const OWNER_PREFIX: &str = "acp:";

/// One workspace's team, shared by its sessions.
pub struct Workspace {
    pub root: PathBuf,
    pub engine: Arc<Engine>,
    /// The sessions open in this connection: a task's files go out under its own
    /// session only while it is open here.
    pub open: Arc<Mutex<HashSet<String>>>,
    _lock: WorkspaceLock,
}

impl Workspace {
    /// The team of `root`, held by `lock` for as long as it lives.
    pub fn new(
        root: PathBuf,
        engine: Arc<Engine>,
        open: Arc<Mutex<HashSet<String>>>,
        lock: WorkspaceLock,
    ) -> Workspace {
        Workspace {
            root,
            engine,
            open,
            _lock: lock,
        }
    }
}

/// A session id no session has.
pub fn unknown_session(id: &str) -> RpcError {
    RpcError::new(rpc::RESOURCE_NOT_FOUND, format!("no session {id}"))
        .with_data(json!({ "sessionId": id }))
}

/// The engine's errors keep their codes (docs/protocol.md) and `data`.
pub fn engine_error(e: EngineError) -> RpcError {
    RpcError::new(e.code(), e.to_string()).with_data(e.data())
}
