//! `file_read`, `file_write` and `file_edit`: whole-file text operations inside the
//! sandbox. Writes go through the [`WorkspaceWriter`], never straight to disk.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::bash::{ApprovalHook, ApprovalOutcome, FileChangeRequest};
use super::sandbox::Sandbox;
use super::writer::{WorkspaceWriter, WriteStatus};
use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use crate::model::ToolSpec;

/// Bytes inspected for a NUL when deciding whether a file is binary (as git does).
const BINARY_SNIFF_BYTES: usize = 8000;

/// Limits of the file tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSettings {
    /// At most this much text is returned by one `file_read`.
    pub max_read_bytes: usize,
    /// Files larger than this are not loaded at all (by `file_read` or `file_edit`).
    pub max_file_bytes: u64,
}

impl Default for FileSettings {
    fn default() -> Self {
        FileSettings {
            max_read_bytes: 256 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Reads a text file inside the sandbox, refusing directories, binaries and huge files.
async fn load_text(
    sandbox: &Sandbox,
    given: &str,
    max_file_bytes: u64,
    editor: Option<&dyn WorkspaceWriter>,
) -> Result<(PathBuf, String), ToolError> {
    let absolute = sandbox.resolve(given)?;
    let relative = sandbox.relative(&absolute);
    let meta = tokio::fs::metadata(&absolute)
        .await
        .map_err(|e| ToolError::io(&relative, &e))?;
    if meta.is_dir() {
        return Err(ToolError::Io {
            path: relative,
            kind: io::ErrorKind::IsADirectory,
            message: "is a directory; use glob to list files".to_string(),
        });
    }
    if meta.len() > max_file_bytes {
        return Err(ToolError::TooLarge {
            path: relative,
            size: meta.len(),
            limit: max_file_bytes,
        });
    }
    // The editor's copy when it has one (unsaved changes included), else the disk.
    if let Some(editor) = editor
        && let Some(text) = editor.read_text(&absolute).await
    {
        return Ok((relative, text));
    }
    let bytes = tokio::fs::read(&absolute)
        .await
        .map_err(|e| ToolError::io(&relative, &e))?;
    if bytes[..bytes.len().min(BINARY_SNIFF_BYTES)].contains(&0) {
        return Err(ToolError::Binary { path: relative });
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok((relative, text))
}

/// `file_read {path, offset?, limit?}`.
pub struct FileRead {
    sandbox: Sandbox,
    settings: FileSettings,
    /// Asked first for the file's text (an editor's buffer), when set.
    editor: Option<Arc<dyn WorkspaceWriter>>,
}

impl FileRead {
    pub fn new(sandbox: Sandbox, settings: FileSettings) -> FileRead {
        FileRead {
            sandbox,
            settings,
            editor: None,
        }
    }

    /// Reads through `editor` first ([`WorkspaceWriter::read_text`]).
    pub fn with_editor(mut self, editor: Arc<dyn WorkspaceWriter>) -> FileRead {
        self.editor = Some(editor);
        self
    }
}

#[async_trait]
impl Tool for FileRead {
    fn name(&self) -> &str {
        "file_read"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "file_read".into(),
            description: "Read a text file. Large files: use offset/limit (lines).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "offset": { "type": "integer", "description": "first line, 1-based" },
                    "limit": { "type": "integer", "description": "max lines" }
                },
                "required": ["path"]
            }),
        }
    }

    async fn call(&self, args: &Args, _ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let path = args.str("path")?;
        let offset = args.opt_u64("offset")?.unwrap_or(1).max(1) as usize;
        let limit = args.opt_u64("limit")?.map(|l| l as usize);
        let (relative, text) = load_text(
            &self.sandbox,
            path,
            self.settings.max_file_bytes,
            self.editor.as_deref(),
        )
        .await?;

        let total_lines = text.lines().count();
        if text.is_empty() {
            return Ok(ToolOutput {
                content: format!("({} is empty)", relative.display()),
                summary: format!("read {} (empty)", relative.display()),
                ..ToolOutput::default()
            });
        }
        if offset > total_lines {
            return Err(ToolError::invalid(format!(
                "offset {offset} is past the end of {} ({total_lines} lines)",
                relative.display()
            )));
        }
        let mut shown = String::new();
        let mut last_line = offset - 1;
        let mut cut = false;
        for line in text
            .split_inclusive('\n')
            .skip(offset - 1)
            .take(limit.unwrap_or(usize::MAX))
        {
            if shown.len() + line.len() > self.settings.max_read_bytes {
                cut = true;
                break;
            }
            shown.push_str(line);
            last_line += 1;
        }
        if last_line < offset {
            // A single line longer than the cap: show its beginning rather than nothing.
            shown = super::truncate_text(
                text.lines().nth(offset - 1).unwrap_or_default(),
                self.settings.max_read_bytes,
            );
            last_line = offset;
        }
        if cut || last_line < total_lines {
            shown.push_str(&format!(
                "\n[showing lines {offset}-{last_line} of {total_lines}; read on with offset={}]",
                last_line + 1
            ));
        }
        Ok(ToolOutput {
            content: shown,
            summary: format!(
                "read {} (lines {offset}-{last_line} of {total_lines})",
                relative.display()
            ),
            ..ToolOutput::default()
        })
    }
}

/// Approval of file changes before they are written (`approvals.fileChanges = "ask"`).
#[derive(Clone)]
pub struct ChangeReview {
    sandbox: Sandbox,
    approver: Option<Arc<dyn ApprovalHook>>,
}

impl ChangeReview {
    pub fn new(sandbox: Sandbox, approver: Option<Arc<dyn ApprovalHook>>) -> ChangeReview {
        ChangeReview { sandbox, approver }
    }

    /// Asks for `path` to become `after`; a change to the same content needs no one.
    async fn approve(&self, path: &Path, after: &str, ctx: &CallContext) -> Result<(), ToolError> {
        let absolute = self.sandbox.resolve(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        if before.as_deref() == Some(after) {
            return Ok(());
        }
        let rejected = |reason: String| ToolError::WriteRejected {
            path: relative.clone(),
            reason,
        };
        let Some(approver) = &self.approver else {
            return Err(rejected(
                "file changes need approval and no approver is connected".into(),
            ));
        };
        let request = FileChangeRequest {
            path: relative.clone(),
            before,
            after: after.to_string(),
            subtask_id: ctx.subtask_id.clone(),
        };
        match approver.approve_file_change(&request).await {
            ApprovalOutcome::Approved => Ok(()),
            ApprovalOutcome::Denied { reason } => {
                Err(rejected(format!("the user declined the change: {reason}")))
            }
        }
    }
}

/// `file_write {path, content}`.
pub struct FileWrite {
    writer: Arc<dyn WorkspaceWriter>,
    review: Option<ChangeReview>,
}

impl FileWrite {
    pub fn new(writer: Arc<dyn WorkspaceWriter>, review: Option<ChangeReview>) -> FileWrite {
        FileWrite { writer, review }
    }
}

#[async_trait]
impl Tool for FileWrite {
    fn name(&self) -> &str {
        "file_write"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "file_write".into(),
            description: "Create or overwrite a whole file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "content": { "type": "string" }
                },
                "required": ["path", "content"]
            }),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let path = args.str("path")?;
        let content = args.str("content")?;
        if let Some(review) = &self.review {
            review.approve(Path::new(path), content, ctx).await?;
        }
        write_output(&*self.writer, Path::new(path), content, None).await
    }
}

/// Writes and describes the result; `detail` says what an edit changed.
async fn write_output(
    writer: &dyn WorkspaceWriter,
    path: &Path,
    content: &str,
    detail: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let outcome = writer.write_file(path, content).await?;
    let shown = outcome.path.display();
    let summary = match (outcome.status, detail) {
        (WriteStatus::Unchanged, _) => format!("{shown} unchanged (it already had this content)"),
        (status, Some(detail)) => format!("{} {shown}: {detail}", status.as_str()),
        (status, None) => format!("{} {shown} ({} bytes)", status.as_str(), outcome.bytes),
    };
    let changed = outcome.status != WriteStatus::Unchanged;
    Ok(ToolOutput {
        content: summary.clone(),
        summary,
        progress: changed,
        files_written: if changed {
            vec![outcome.path]
        } else {
            Vec::new()
        },
    })
}

/// `file_edit {path, old_text, new_text}`: replaces one exact, unique occurrence.
pub struct FileEdit {
    sandbox: Sandbox,
    writer: Arc<dyn WorkspaceWriter>,
    settings: FileSettings,
    review: Option<ChangeReview>,
}

impl FileEdit {
    pub fn new(
        sandbox: Sandbox,
        writer: Arc<dyn WorkspaceWriter>,
        settings: FileSettings,
        review: Option<ChangeReview>,
    ) -> FileEdit {
        FileEdit {
            sandbox,
            writer,
            settings,
            review,
        }
    }
}

#[async_trait]
impl Tool for FileEdit {
    fn name(&self) -> &str {
        "file_edit"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "file_edit".into(),
            description: "Replace old_text with new_text in a file. old_text must match exactly once (whitespace included).".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string" },
                    "old_text": { "type": "string" },
                    "new_text": { "type": "string" }
                },
                "required": ["path", "old_text", "new_text"]
            }),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let path = args.str("path")?;
        let old_text = args.str("old_text")?;
        let new_text = args.str("new_text")?;
        if old_text.is_empty() {
            return Err(ToolError::invalid(
                "`old_text` is empty; to create or overwrite a whole file use file_write",
            ));
        }
        if old_text == new_text {
            return Err(ToolError::invalid(
                "`old_text` and `new_text` are identical; nothing would change",
            ));
        }
        let (relative, text) = load_text(
            &self.sandbox,
            path,
            self.settings.max_file_bytes,
            Some(self.writer.as_ref()),
        )
        .await?;

        let (old, new) = match text.matches(old_text).count() {
            // Models write "\n"; files written on Windows hold "\r\n". Try that once.
            0 if text.contains("\r\n") && !old_text.contains("\r\n") => (
                old_text.replace('\n', "\r\n"),
                new_text.replace('\n', "\r\n"),
            ),
            _ => (old_text.to_string(), new_text.to_string()),
        };
        match text.matches(old.as_str()).count() {
            0 => return Err(ToolError::NoMatch { path: relative }),
            1 => {}
            count => {
                return Err(ToolError::AmbiguousMatch {
                    path: relative,
                    count,
                });
            }
        }
        let edited = text.replacen(old.as_str(), &new, 1);
        let detail = format!(
            "replaced {} line(s) with {}",
            old.lines().count().max(1),
            new.lines().count()
        );
        if let Some(review) = &self.review {
            review.approve(&relative, &edited, ctx).await?;
        }
        write_output(&*self.writer, &relative, &edited, Some(detail)).await
    }
}
