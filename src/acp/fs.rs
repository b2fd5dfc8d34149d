//! Files through the editor. Writes go through `fs/write_text_file` when the client
//! offers it, so open buffers update in place and the user can undo — what
//! `workspace/applyEdit` is to the language server (`src/lsp/edits.rs`). Reads (the
//! `file_read` and `file_edit` tools) go through `fs/read_text_file` when the client
//! offers that, so the agents see unsaved buffers.
//!
//! The request names a session: the one the task doing the write belongs to, while it
//! is open in this connection; a write for a task whose session is not open goes to the
//! disk, never out under another session. As with applyEdit, the same content is then
//! made sure of on disk (a no-op when the editor saved it), because the agents' commands
//! and tests read the disk.
//!
//! An error answer is the client's word: a refusal. A refused write is not written, and
//! a refused read is not read from disk instead; the file is withheld from every reader
//! for the rest of the session. Only no answer within `editor.applyEditTimeoutMs`, a
//! closed connection or a client that does not know the method falls back to the disk,
//! and that is logged; no session to name does too.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::rpc::{METHOD_NOT_FOUND, Peer, RpcError};
use super::wire::{ReadTextFileRequest, WriteTextFileRequest};
use crate::tools::{DiskWriter, Sandbox, WorkspaceWriter, WriteError, WriteOutcome, WriteStatus};

/// The open session the current work belongs to (from the task the calling code runs
/// for), if any.
pub type SessionOfWork = Arc<dyn Fn() -> Option<String> + Send + Sync>;

tokio::task_local! {
    /// The session a person's own request writes for (`/undo`): no task runs it.
    static WRITING_FOR: String;
}

/// Runs `future` with its writes going out under `session` (`/undo` taking a task back
/// through the client that asked for it).
pub async fn writing_for<F: std::future::Future>(session: String, future: F) -> F::Output {
    WRITING_FOR.scope(session, future).await
}

fn session_writing_for() -> Option<String> {
    WRITING_FOR.try_with(Clone::clone).ok()
}

pub struct ClientFsWriter {
    peer: Arc<Peer>,
    sandbox: Sandbox,
    disk: DiskWriter,
    session_of: SessionOfWork,
    timeout: Duration,
    /// What the client offers: `fs.writeTextFile` (and `writes = "applyEdit"`),
    /// `fs.readTextFile`.
    writes: bool,
    reads: bool,
}

impl ClientFsWriter {
    pub fn new(
        peer: Arc<Peer>,
        sandbox: Sandbox,
        session_of: SessionOfWork,
        timeout: Duration,
        (writes, reads): (bool, bool),
    ) -> Arc<ClientFsWriter> {
        Arc::new(ClientFsWriter {
            peer,
            disk: DiskWriter::new(sandbox.clone()),
            sandbox,
            session_of,
            timeout,
            writes,
            reads,
        })
    }
}

#[async_trait]
impl WorkspaceWriter for ClientFsWriter {
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError> {
        // The root check comes first, whoever asks.
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        let session = session_writing_for()
            .or_else(|| (self.session_of)())
            .filter(|_| self.writes);
        let (Some(session), false) = (session, before.as_deref() == Some(content)) else {
            // Not offered, nothing to change, or no session to name: the disk writer.
            return self.disk.write_file(&relative, content).await;
        };
        let request = WriteTextFileRequest {
            session_id: session,
            path: absolute.display().to_string(),
            content: content.to_string(),
        };
        let asked = self.peer.request("fs/write_text_file", request);
        match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(_)) => {
                let mut outcome = self.disk.write_file(&relative, content).await?;
                outcome.status = if before.is_some() {
                    WriteStatus::Updated
                } else {
                    WriteStatus::Created
                };
                Ok(outcome)
            }
            Ok(Err(e)) if !refusal(&e) => {
                tracing::warn!(
                    path = %relative.display(),
                    "fs/write_text_file failed ({e}); Conclave writes the file to disk instead"
                );
                self.disk.write_file(&relative, content).await
            }
            Ok(Err(e)) => {
                tracing::info!(path = %relative.display(), "the client refused fs/write_text_file: {e}");
                Err(WriteError::Rejected {
                    path: relative,
                    reason: format!("the editor refused the write ({})", e.message),
                })
            }
            Err(_) => {
                tracing::warn!(
                    path = %relative.display(),
                    "the client did not answer fs/write_text_file within {} ms; Conclave writes the file to disk instead",
                    self.timeout.as_millis()
                );
                self.disk.write_file(&relative, content).await
            }
        }
    }

    /// ACP has no way to delete a file through the client: the disk.
    async fn remove_file(&self, path: &Path) -> Result<bool, WriteError> {
        self.disk.remove_file(path).await
    }

    async fn read_text(&self, absolute: &Path) -> Result<Option<String>, String> {
        if !self.reads {
            return Ok(None);
        }
        let Some(session) = (self.session_of)() else {
            return Ok(None);
        };
        let request = ReadTextFileRequest {
            session_id: session,
            path: absolute.display().to_string(),
        };
        let asked = self.peer.request("fs/read_text_file", request);
        match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(answer)) => match answer.get("content").and_then(|c| c.as_str()) {
                Some(content) => Ok(Some(content.to_string())),
                None => {
                    tracing::warn!("fs/read_text_file answered without content; reading the disk");
                    Ok(None)
                }
            },
            Ok(Err(e)) if !refusal(&e) => {
                tracing::warn!(path = %absolute.display(), "fs/read_text_file failed ({e}); reading the disk");
                Ok(None)
            }
            Ok(Err(e)) => {
                tracing::info!(path = %absolute.display(), "the client refused fs/read_text_file: {e}");
                self.sandbox.withhold(absolute);
                Err(format!("the editor refused ({})", e.message))
            }
            Err(_) => {
                tracing::warn!(path = %absolute.display(), "the client did not answer fs/read_text_file in time; reading the disk");
                Ok(None)
            }
        }
    }
}

/// Whether an error answer is the client's refusal, rather than a closed connection or
/// a client that does not know the method it offered.
fn refusal(error: &RpcError) -> bool {
    !error.is_transport_failure() && error.code != METHOD_NOT_FOUND
}
