//! Opening a folder for a team, the same way for every front end (`serve`, `acp`, `run`,
//! `demo`): the folder held for this process (the workspace lock), then its
//! configuration read, then its store opened. In that order, so a second Conclave on a
//! folder is refused before it reads or writes anything there.

use std::path::Path;

use crate::config::{Config, ConfigError};
use crate::store::{Store, StoreError};

use super::lock::{Holder, LockError, WorkspaceLock};

/// A folder ready for [`super::Engine::start`].
pub struct OpenedWorkspace {
    /// Held for as long as the team works in the folder: dropping it releases the folder.
    pub lock: WorkspaceLock,
    pub config: Config,
    pub store: Store,
}

/// Why a folder could not be opened; each front end says it in its own protocol
/// (error 1007 for a held folder over LSP and ACP, exit code 2 on the command line).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the store could not be opened: {0}")]
    Store(#[from] StoreError),
}

/// Holds `root` for `me`, then reads its configuration (with the front end's `options`
/// over `conclave.toml`) and opens its store.
pub async fn open_workspace(
    root: &Path,
    me: Holder,
    options: Option<&serde_json::Value>,
) -> Result<OpenedWorkspace, OpenError> {
    let locking = root.to_path_buf();
    // Taking over from an orphaned holder waits for it to stop: off the async workers.
    let lock = tokio::task::spawn_blocking(move || WorkspaceLock::acquire(&locking, &me))
        .await
        .map_err(|e| LockError::Io {
            path: root.join(".conclave/serve.lock"),
            source: std::io::Error::other(e),
        })??;
    let config = Config::load(root, options)?;
    let store = Store::open(&Store::default_path(root))?;
    Ok(OpenedWorkspace {
        lock,
        config,
        store,
    })
}
