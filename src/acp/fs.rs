//! Generated files written through the editor: `fs/write_text_file`, when the client
//! offers it, so open buffers update in place and the user can undo — what
//! `workspace/applyEdit` is to the language server (`src/lsp/edits.rs`).
//!
//! The request names a session: the one whose prompt is running on this workspace
//! (the last one that prompted). As with applyEdit, the same content is then made sure
//! of on disk (a no-op when the editor saved it), because the agents' commands and tests
//! read the disk. An error answer or no answer within `editor.applyEditTimeoutMs` falls
//! back to the disk writer, and that is logged; no session to name does too.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::rpc::Peer;
use super::wire::WriteTextFileRequest;
use crate::tools::{DiskWriter, Sandbox, WorkspaceWriter, WriteError, WriteOutcome, WriteStatus};

/// The session files are written for, shared with the workspace.
pub type WritingSession = Arc<Mutex<Option<String>>>;

pub struct ClientFsWriter {
    peer: Arc<Peer>,
    sandbox: Sandbox,
    disk: DiskWriter,
    session: WritingSession,
    timeout: Duration,
}

impl ClientFsWriter {
    pub fn new(
        peer: Arc<Peer>,
        sandbox: Sandbox,
        session: WritingSession,
        timeout: Duration,
    ) -> Arc<ClientFsWriter> {
        Arc::new(ClientFsWriter {
            peer,
            disk: DiskWriter::new(sandbox.clone()),
            sandbox,
            session,
            timeout,
        })
    }
}

#[async_trait]
impl WorkspaceWriter for ClientFsWriter {
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError> {
        // The root check comes first, whoever asks.
        let absolute = self.sandbox.resolve(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        let session = self.session.lock().expect("writing session").clone();
        let (Some(session), false) = (session, before.as_deref() == Some(content)) else {
            // Nothing to change, or no session to name: the disk writer does it.
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
            Ok(Err(e)) => {
                tracing::warn!(
                    path = %relative.display(),
                    "fs/write_text_file failed ({e}); Conclave writes the file to disk instead"
                );
                self.disk.write_file(&relative, content).await
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
}
