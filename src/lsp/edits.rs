//! Generated files written through the editor: `workspace/applyEdit` with a `CreateFile`
//! and one full-range `TextEdit`, so open buffers update in place and the user can undo.
//!
//! The editor owns its buffers but the agents' commands and tests read the disk, so once
//! the editor has applied an edit the same content is made sure of on disk too (a no-op
//! when the editor already saved it). The wait for the editor has a limit: an edit left
//! unanswered (the editor is then sent `$/cancelRequest`), a connection that is gone, or
//! an editor that does not know the method, is written to disk by the server instead,
//! and that is logged. An edit the editor refused (`applied: false`, or any other error
//! answer) is a refused write: nothing is written behind its back.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::request::ApplyWorkspaceEdit;
use tower_lsp_server::ls_types::{
    ApplyWorkspaceEditParams, CreateFile, CreateFileOptions, DeleteFile, DeleteFileOptions,
    DocumentChangeOperation, DocumentChanges, OneOf, OptionalVersionedTextDocumentIdentifier,
    Position, Range, ResourceOp, TextDocumentEdit, TextEdit, Uri, WorkspaceEdit,
};

use super::outgoing::{self, Reply};
use crate::tools::{DiskWriter, Sandbox, WorkspaceWriter, WriteError, WriteOutcome, WriteStatus};

pub struct ApplyEditWriter {
    client: Client,
    sandbox: Sandbox,
    disk: DiskWriter,
    timeout: Duration,
}

impl ApplyEditWriter {
    pub fn new(client: Client, sandbox: Sandbox, timeout: Duration) -> Arc<ApplyEditWriter> {
        Arc::new(ApplyEditWriter {
            client,
            disk: DiskWriter::new(sandbox.clone()),
            sandbox,
            timeout,
        })
    }
}

#[async_trait]
impl WorkspaceWriter for ApplyEditWriter {
    async fn write_file(&self, path: &Path, content: &str) -> Result<WriteOutcome, WriteError> {
        // The root check comes first, whoever asks.
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        if before.as_deref() == Some(content) {
            // Nothing to change: the disk writer reports it as unchanged.
            return self.disk.write_file(&relative, content).await;
        }
        let Some(uri) = Uri::from_file_path(&absolute) else {
            return self.disk.write_file(&relative, content).await;
        };
        let edit = whole_file_edit(uri, before.as_deref().unwrap_or(""), content);
        let params = ApplyWorkspaceEditParams { label: None, edit };
        match outgoing::request::<ApplyWorkspaceEdit>(&self.client, params, self.timeout).await {
            Reply::Answered(Ok(response)) if response.applied => {
                let mut outcome = self.disk.write_file(&relative, content).await?;
                outcome.status = if before.is_some() {
                    WriteStatus::Updated
                } else {
                    WriteStatus::Created
                };
                Ok(outcome)
            }
            Reply::Answered(Ok(response)) => Err(WriteError::Rejected {
                path: relative,
                reason: response
                    .failure_reason
                    .unwrap_or_else(|| "the editor did not apply the edit".into()),
            }),
            Reply::Answered(Err(e))
                if e.code == tower_lsp_server::jsonrpc::ErrorCode::MethodNotFound =>
            {
                tracing::warn!(
                    path = %relative.display(),
                    "the editor does not know workspace/applyEdit ({e}); the server writes the file to disk instead"
                );
                self.disk.write_file(&relative, content).await
            }
            Reply::Answered(Err(e)) => Err(WriteError::Rejected {
                path: relative,
                reason: format!("the editor refused the edit ({e})"),
            }),
            Reply::Lost => {
                tracing::warn!(
                    path = %relative.display(),
                    "the editor is gone; the server writes the file to disk instead"
                );
                self.disk.write_file(&relative, content).await
            }
            Reply::TimedOut => {
                tracing::warn!(
                    path = %relative.display(),
                    "the editor did not answer workspace/applyEdit within {} ms; the server writes the file to disk instead",
                    self.timeout.as_millis()
                );
                self.disk.write_file(&relative, content).await
            }
        }
    }

    /// A `DeleteFile` through the editor (so an open buffer goes with it), with the same
    /// fallbacks and refusals as a write.
    async fn remove_file(&self, path: &Path) -> Result<bool, WriteError> {
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        if !absolute.exists() {
            return Ok(false);
        }
        let Some(uri) = Uri::from_file_path(&absolute) else {
            return self.disk.remove_file(&relative).await;
        };
        let params = ApplyWorkspaceEditParams {
            label: Some("Conclave: undo".into()),
            edit: delete_file_edit(uri),
        };
        match outgoing::request::<ApplyWorkspaceEdit>(&self.client, params, self.timeout).await {
            Reply::Answered(Ok(response)) if response.applied => {
                self.disk.remove_file(&relative).await?;
                Ok(true)
            }
            Reply::Answered(Ok(response)) => Err(WriteError::Rejected {
                path: relative,
                reason: response
                    .failure_reason
                    .unwrap_or_else(|| "the editor did not delete the file".into()),
            }),
            Reply::Answered(Err(e))
                if e.code != tower_lsp_server::jsonrpc::ErrorCode::MethodNotFound =>
            {
                Err(WriteError::Rejected {
                    path: relative,
                    reason: format!("the editor refused the deletion ({e})"),
                })
            }
            _ => {
                tracing::warn!(
                    path = %relative.display(),
                    "the editor did not delete the file; the server removes it from disk instead"
                );
                self.disk.remove_file(&relative).await
            }
        }
    }
}

/// `DeleteFile` of a file that may already be gone.
pub fn delete_file_edit(uri: Uri) -> WorkspaceEdit {
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(vec![
            DocumentChangeOperation::Op(ResourceOp::Delete(DeleteFile {
                uri,
                options: Some(DeleteFileOptions {
                    recursive: Some(false),
                    ignore_if_not_exists: Some(true),
                }),
                annotation_id: None,
            })),
        ])),
        ..WorkspaceEdit::default()
    }
}

/// `CreateFile` (kept if it exists) then one `TextEdit` over the whole of `before`.
pub fn whole_file_edit(uri: Uri, before: &str, after: &str) -> WorkspaceEdit {
    WorkspaceEdit {
        document_changes: Some(DocumentChanges::Operations(vec![
            DocumentChangeOperation::Op(ResourceOp::Create(CreateFile {
                uri: uri.clone(),
                options: Some(CreateFileOptions {
                    overwrite: Some(false),
                    ignore_if_exists: Some(true),
                }),
                annotation_id: None,
            })),
            DocumentChangeOperation::Edit(TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier { uri, version: None },
                edits: vec![OneOf::Left(TextEdit {
                    range: Range::new(Position::new(0, 0), end_of(before)),
                    new_text: after.to_string(),
                })],
            }),
        ])),
        ..WorkspaceEdit::default()
    }
}

/// The position just past the last character, in UTF-16 code units (LSP's default
/// position encoding).
fn end_of(text: &str) -> Position {
    let line = text.matches('\n').count();
    let last = text.rsplit('\n').next().unwrap_or("");
    let character: usize = last.chars().map(char::len_utf16).sum();
    Position::new(line as u32, character as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_range_ends_after_the_last_character_in_utf16() {
        assert_eq!(end_of(""), Position::new(0, 0));
        assert_eq!(end_of("abc"), Position::new(0, 3));
        assert_eq!(end_of("a\nbc\n"), Position::new(2, 0));
        assert_eq!(
            end_of("a\r\nb😀"),
            Position::new(1, 3),
            "an emoji is two units"
        );
    }

    #[test]
    fn the_edit_creates_then_replaces_everything() {
        let uri = Uri::from_file_path("/w/a.txt").unwrap();
        let edit = serde_json::to_value(whole_file_edit(uri, "old\ntext", "new\n")).unwrap();
        assert_eq!(
            edit,
            serde_json::json!({ "documentChanges": [
                { "kind": "create", "uri": "file:///w/a.txt",
                  "options": { "overwrite": false, "ignoreIfExists": true } },
                { "textDocument": { "uri": "file:///w/a.txt", "version": null },
                  "edits": [ { "range": { "start": { "line": 0, "character": 0 },
                                          "end": { "line": 1, "character": 4 } },
                               "newText": "new\n" } ] }
            ] })
        );
    }
}
