//! `file_read`, `file_write` and `file_edit`: whole-file text operations inside the
//! sandbox. Writes go through the [`WorkspaceWriter`], never straight to disk.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::json;

use super::bash::{ApprovalHook, ApprovalOutcome, FileChangeRequest};
use super::sandbox::Sandbox;
use super::writer::{Fnv1a, WorkspaceWriter, WriteStatus};
use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use super::{edit_match, python_imports};
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
    /// `verify.disabled`: the repairs of what the model writes that are switched off.
    pub disabled_repairs: Vec<String>,
}

impl FileSettings {
    /// Whether the repair `id` is on.
    pub fn repair_on(&self, id: &str) -> bool {
        !self.disabled_repairs.iter().any(|d| d == id)
    }
}

impl Default for FileSettings {
    fn default() -> Self {
        FileSettings {
            max_read_bytes: 256 * 1024,
            max_file_bytes: 16 * 1024 * 1024,
            disabled_repairs: Vec::new(),
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
    let refused = |reason: String| ToolError::ReadRefused {
        path: relative.clone(),
        reason,
    };
    if sandbox.is_withheld(&absolute) {
        return Err(refused("refused earlier in this session".into()));
    }
    // The editor's copy when it has one (unsaved changes included), else the disk.
    if let Some(editor) = editor {
        match editor.read_text(&absolute).await {
            Ok(Some(text)) => return Ok((relative, text)),
            Ok(None) => {}
            Err(reason) => return Err(refused(reason)),
        }
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

    /// The whole text of the file at `path`, as `file_read` would read it.
    pub async fn text(&self, path: &str) -> Option<String> {
        load_text(
            &self.sandbox,
            path,
            self.settings.max_file_bytes,
            self.editor.as_deref(),
        )
        .await
        .ok()
        .map(|(_, text)| text)
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

/// Consent to file changes before they are written.
///
/// A change refused earlier in the task (by the person, or by the editor refusing the
/// write) is refused again at once, whatever the policy: a refusal is final for that
/// change. With `approvals.fileChanges = "ask"` the person is asked from the tools'
/// `authorize` step, which the registry runs before the call and outside the step
/// timeout (as for commands): waiting for a person is never bound by a model or tool
/// time limit. The call then writes only the content that was approved: each grant is
/// for one (subtask, path, content) and is used once.
#[derive(Clone)]
pub struct ChangeReview {
    sandbox: Sandbox,
    approver: Option<Arc<dyn ApprovalHook>>,
    /// Whether every change is asked (`fileChanges = "ask"`).
    ask: bool,
    granted: Arc<Mutex<HashSet<Grant>>>,
}

/// One approved change: (subtask, workspace-relative path, hash of the new content).
type Grant = (Option<String>, PathBuf, u64);

fn content_hash(text: &str) -> u64 {
    let mut hasher = Fnv1a::new();
    hasher.write(text.as_bytes());
    hasher.finish()
}

impl ChangeReview {
    /// `ask`: every change is asked (`fileChanges = "ask"`); otherwise only refusals
    /// are remembered.
    pub fn new(
        sandbox: Sandbox,
        approver: Option<Arc<dyn ApprovalHook>>,
        ask: bool,
    ) -> ChangeReview {
        ChangeReview {
            sandbox,
            approver,
            ask,
            granted: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    fn request(&self, relative: &Path, after: &str, ctx: &CallContext) -> FileChangeRequest {
        FileChangeRequest {
            path: relative.to_path_buf(),
            before: None,
            after: after.to_string(),
            subtask_id: ctx.subtask_id.clone(),
        }
    }

    /// Remembers that writing `after` to `path` was refused (the editor refused the
    /// write), so the same change is not tried again in this task.
    fn refused(&self, path: &Path, after: &str, ctx: &CallContext, reason: &str) {
        if let Some(approver) = &self.approver {
            approver.note_refusal(&self.request(path, after, ctx), reason);
        }
    }

    /// Asks for `path` to become `after`; a change to the same content needs no one.
    /// An approval is remembered for the call that follows ([`ChangeReview::confirm`]).
    async fn approve(&self, path: &Path, after: &str, ctx: &CallContext) -> Result<(), ToolError> {
        let absolute = self.sandbox.resolve_for_write(path)?;
        let relative = self.sandbox.relative(&absolute);
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        if before.as_deref() == Some(after) {
            return Ok(());
        }
        let rejected = |reason: String| ToolError::WriteRejected {
            path: relative.clone(),
            reason,
        };
        if let Some(reason) = self
            .approver
            .as_ref()
            .and_then(|a| a.refused_before(&self.request(&relative, after, ctx)))
        {
            return Err(ToolError::RefusedBefore {
                path: relative.clone(),
                reason,
            });
        }
        if !self.ask {
            return Ok(());
        }
        let Some(approver) = &self.approver else {
            return Err(rejected(
                "file changes need approval and no approver is connected".into(),
            ));
        };
        let request = FileChangeRequest {
            before,
            ..self.request(&relative, after, ctx)
        };
        match approver.approve_file_change(&request).await {
            ApprovalOutcome::Approved => {
                self.granted.lock().expect("grants").insert((
                    ctx.subtask_id.clone(),
                    relative,
                    content_hash(after),
                ));
                Ok(())
            }
            ApprovalOutcome::Denied { reason } => {
                let reason = format!("the person declined the change ({reason})");
                approver.note_refusal(&request, &reason);
                Err(rejected(reason))
            }
        }
    }

    /// Checks, in the call, that writing `after` to `path` was approved (or changes
    /// nothing), using the grant up.
    async fn confirm(&self, path: &Path, after: &str, ctx: &CallContext) -> Result<(), ToolError> {
        if !self.ask {
            return Ok(());
        }
        let absolute = self.sandbox.resolve(path)?;
        let relative = self.sandbox.relative(&absolute);
        let grant = (
            ctx.subtask_id.clone(),
            relative.clone(),
            content_hash(after),
        );
        if self.granted.lock().expect("grants").remove(&grant) {
            return Ok(());
        }
        let before = tokio::fs::read_to_string(&absolute).await.ok();
        if before.as_deref() == Some(after) {
            return Ok(());
        }
        Err(ToolError::invalid(format!(
            "{} changed while this change waited for approval; read it again and redo the change",
            relative.display()
        )))
    }
}

/// `file_write {path, content}`.
pub struct FileWrite {
    sandbox: Sandbox,
    writer: Arc<dyn WorkspaceWriter>,
    review: Option<ChangeReview>,
    settings: FileSettings,
}

impl FileWrite {
    pub fn new(
        sandbox: Sandbox,
        writer: Arc<dyn WorkspaceWriter>,
        review: Option<ChangeReview>,
    ) -> FileWrite {
        FileWrite {
            sandbox,
            writer,
            review,
            settings: FileSettings::default(),
        }
    }

    /// With the repairs `settings` switches off.
    pub fn with_settings(mut self, settings: FileSettings) -> FileWrite {
        self.settings = settings;
        self
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

    /// With `fileChanges = "ask"`, the person approves the change here, outside the
    /// step timeout.
    async fn authorize(&self, args: &Args, ctx: &CallContext) -> Result<(), ToolError> {
        let path = args.str("path")?;
        not_conclave_state(path)?;
        let meant = as_meant(path, args.str("content")?, &|id| {
            self.settings.repair_on(id)
        });
        let content = meant.content;
        self.not_partial(path, &content).await?;
        match &self.review {
            Some(review) => review.approve(Path::new(path), &content, ctx).await,
            None => Ok(()),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let path = args.str("path")?;
        not_conclave_state(path)?;
        let meant = as_meant(path, args.str("content")?, &|id| {
            self.settings.repair_on(id)
        });
        let content = meant.content;
        if let Some(review) = &self.review {
            review.confirm(Path::new(path), &content, ctx).await?;
        }
        let detail = meant
            .said
            .map(|added| format!("{} bytes; {added}", content.len()));
        let written = write_output(&*self.writer, Path::new(path), &content, detail)
            .await
            .map(|output| output.with_repairs(meant.repairs));
        remember_refusal(self.review.as_ref(), &written, &content, ctx);
        written
    }
}

impl FileWrite {
    /// Refuses a write that would replace an existing file with a part of it (a new
    /// function, or a changed line, given as the whole file): small models use
    /// `file_write` for snippets, and the file's other code would be lost. `file_edit`
    /// does what such a write means (add, change or take out a part), so the refusal
    /// stands however often the write is sent: a model sends the refused write again
    /// reflexively, and letting a repeat through would lose the code all the same.
    /// Asked before anyone approves the change, so no person is asked about it.
    async fn not_partial(&self, path: &str, content: &str) -> Result<(), ToolError> {
        if !self.settings.repair_on(REPAIR_PARTIAL_WRITE) {
            return Ok(());
        }
        let Ok((relative, now)) = load_text(
            &self.sandbox,
            path,
            self.settings.max_file_bytes,
            Some(self.writer.as_ref()),
        )
        .await
        else {
            return Ok(());
        };
        let Some(dropped) =
            edit_match::dropped_by_partial_write(&now, content, &relative.to_string_lossy())
        else {
            return Ok(());
        };
        tracing::info!(path = %relative.display(), ?dropped, "a partial file_write refused");
        Err(ToolError::PartialWrite {
            path: relative,
            dropped,
        })
    }
}

/// A file's content as the model meant it. For Python: its line breaks as meant where
/// the model escaped `\n` once too often or too few (see
/// [`edit_match::python_file_as_meant`]), with the standard-library imports it uses and
/// lacks (see [`python_imports`]), and what was done, in words for the model.
pub(crate) fn as_meant(path: &str, content: &str, on: &dyn Fn(&str) -> bool) -> Meant {
    let mut meant = Meant {
        content: content.to_string(),
        said: None,
        repairs: Vec::new(),
    };
    if !path.ends_with(".py") {
        return meant;
    }
    let mut done = Vec::new();
    if on(REPAIR_PYTHON_ESCAPES)
        && let Some(mended) = edit_match::python_file_as_meant(path, &meant.content)
    {
        meant.content = mended;
        meant.repairs.push(REPAIR_PYTHON_ESCAPES);
        done.push("its `\\n` line breaks were written as meant".to_string());
    }
    if on(REPAIR_STDLIB_IMPORTS)
        && let Some((completed, lines)) = python_imports::complete(&meant.content)
    {
        meant.content = completed;
        meant.repairs.push(REPAIR_STDLIB_IMPORTS);
        let added = lines
            .iter()
            .map(|l| format!("`{l}`"))
            .collect::<Vec<_>>()
            .join(", ");
        done.push(format!(
            "added {added}: the code uses it and did not import it"
        ));
    }
    meant.said = (!done.is_empty()).then(|| done.join("; "));
    meant
}

/// A file's content as the model meant it ([`as_meant`]).
pub(crate) struct Meant {
    pub content: String,
    /// What was mended, in words for the model.
    pub said: Option<String>,
    /// The repairs made, by id.
    pub repairs: Vec<&'static str>,
}

/// The repairs of a Python file the model writes (`checks::REPAIRS`).
pub const REPAIR_PYTHON_ESCAPES: &str = "repair.python-escapes";
pub const REPAIR_STDLIB_IMPORTS: &str = "repair.stdlib-imports";
/// A `file_write` of part of an existing file, refused once ([`FileWrite`]).
pub const REPAIR_PARTIAL_WRITE: &str = "repair.partial-file-write";

/// A write the editor refused is remembered, so the same change is not tried again.
fn remember_refusal(
    review: Option<&ChangeReview>,
    written: &Result<ToolOutput, ToolError>,
    content: &str,
    ctx: &CallContext,
) {
    if let (Some(review), Err(ToolError::WriteRejected { path, reason })) = (review, written) {
        review.refused(path, content, ctx, reason);
    }
}

/// Conclave's own state (`.conclave/`: its checks, history and reports) is not the
/// team's to write: a fix round that rewrites the acceptance test instead of the code
/// would make the check pass without fixing anything.
fn not_conclave_state(path: &str) -> Result<(), ToolError> {
    let first = Path::new(path.trim())
        .components()
        .find(|c| !matches!(c, std::path::Component::CurDir));
    if first.is_some_and(|c| c.as_os_str() == ".conclave") {
        return Err(ToolError::invalid(format!(
            "{path} is Conclave's own state (its checks, history and reports): change the project's files instead"
        )));
    }
    Ok(())
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
        (WriteStatus::Unchanged, Some(detail)) => {
            format!("{shown} unchanged (it already had this content): {detail}")
        }
        (WriteStatus::Unchanged, None) => {
            format!("{shown} unchanged (it already had this content)")
        }
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
        repairs: Vec::new(),
    })
}

/// `file_edit {path, old_text, new_text}`: replaces the one place `old_text` names, found
/// exactly or the ways small models copy text (see [`edit_match`]); an empty `old_text`
/// appends.
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
            description: "Replace old_text with new_text in a file. old_text must match exactly one place (copy it from the file, whitespace included). An empty old_text appends new_text to the file.".into(),
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

    /// With `fileChanges = "ask"`, the person approves the edited file here, outside
    /// the step timeout. An edit that cannot apply asks no one; the call reports why.
    async fn authorize(&self, args: &Args, ctx: &CallContext) -> Result<(), ToolError> {
        let Some(review) = &self.review else {
            return Ok(());
        };
        match self.edited(args).await {
            Ok((relative, edited, _, _)) => review.approve(&relative, &edited, ctx).await,
            Err(_) => Ok(()),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let (relative, edited, detail, repairs) = self.edited(args).await?;
        if let Some(review) = &self.review {
            review.confirm(&relative, &edited, ctx).await?;
        }
        let written = write_output(&*self.writer, &relative, &edited, Some(detail))
            .await
            .map(|output| output.with_repairs(repairs));
        remember_refusal(self.review.as_ref(), &written, &edited, ctx);
        written
    }
}

impl FileEdit {
    /// The file as the edit would leave it: (relative path, new content, what changed,
    /// the repairs it took).
    async fn edited(
        &self,
        args: &Args,
    ) -> Result<(PathBuf, String, String, Vec<&'static str>), ToolError> {
        let path = args.str("path")?;
        not_conclave_state(path)?;
        let old_text = args.str("old_text")?;
        let new_text = args.str("new_text")?;
        let decoded = edit_match::twice_escaped_python(path, new_text)
            .filter(|_| self.settings.repair_on(REPAIR_PYTHON_ESCAPES));
        let mut repairs: Vec<&'static str> = Vec::new();
        if decoded.is_some() {
            repairs.push(REPAIR_PYTHON_ESCAPES);
        }
        let new_text = decoded.as_deref().unwrap_or(new_text);
        let (relative, text) = load_text(
            &self.sandbox,
            path,
            self.settings.max_file_bytes,
            Some(self.writer.as_ref()),
        )
        .await?;

        let on = |id: &str| self.settings.repair_on(id);
        match edit_match::apply_with(
            &text,
            old_text,
            new_text,
            &relative.display().to_string(),
            &on,
        ) {
            Ok((edit_match::Applied { edited, detail }, repair)) => {
                repairs.extend(repair);
                let meant = as_meant(&relative.to_string_lossy(), &edited, &on);
                for id in meant.repairs {
                    if !repairs.contains(&id) {
                        repairs.push(id);
                    }
                }
                let detail = match meant.said {
                    Some(added) => format!("{detail}; {added}"),
                    None => detail,
                };
                Ok((relative, meant.content, detail, repairs))
            }
            Err(edit_match::Miss::NotFound { nearest }) => Err(ToolError::NoMatch {
                path: relative,
                nearest,
            }),
            Err(edit_match::Miss::Ambiguous { count }) => Err(ToolError::AmbiguousMatch {
                path: relative,
                count,
            }),
            Err(edit_match::Miss::SameTexts) => Err(ToolError::invalid(format!(
                "`old_text` and `new_text` are identical, and {} does not have that text: \
`old_text` is the text to replace, copied from the file as it is now; `new_text` is what replaces it",
                relative.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::FileChangePolicy;
    use crate::model::ToolCall;
    use crate::tools::bash::CommandApprovalRequest;
    use crate::tools::{DiskWriter, ToolRegistry, ToolSettings};

    /// A person who answers an hour later; `edit_meanwhile` changes the file first.
    struct SlowPerson {
        edit_meanwhile: Option<(PathBuf, &'static str)>,
    }

    #[async_trait]
    impl ApprovalHook for SlowPerson {
        async fn approve_command(&self, _: &CommandApprovalRequest) -> ApprovalOutcome {
            ApprovalOutcome::Approved
        }

        async fn approve_file_change(&self, _: &FileChangeRequest) -> ApprovalOutcome {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            if let Some((path, text)) = &self.edit_meanwhile {
                std::fs::write(path, text).unwrap();
            }
            ApprovalOutcome::Approved
        }
    }

    fn registry(dir: &Path, person: SlowPerson) -> ToolRegistry {
        let sandbox = Sandbox::new(dir).unwrap();
        let settings = ToolSettings {
            file_changes: FileChangePolicy::Ask,
            ..ToolSettings::default()
        };
        let writer = Arc::new(DiskWriter::new(sandbox.clone()));
        ToolRegistry::new(sandbox, writer, settings, Some(Arc::new(person)))
    }

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments,
        }
    }

    fn ctx() -> CallContext {
        CallContext {
            step_timeout: Some(Duration::from_secs(1)),
            subtask_id: Some("s1".into()),
            ..CallContext::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn changes_approved_long_after_the_step_timeout_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let tools = registry(
            dir.path(),
            SlowPerson {
                edit_meanwhile: None,
            },
        );
        let written = tools
            .dispatch(
                &call(
                    "file_write",
                    json!({ "path": "a.py", "content": "a = 1\n" }),
                ),
                &ctx(),
            )
            .await
            .expect("approved an hour later, and written");
        assert_eq!(written.files_written, vec![PathBuf::from("a.py")]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "a = 1\n"
        );

        tools
            .dispatch(
                &call(
                    "file_edit",
                    json!({ "path": "a.py", "old_text": "1", "new_text": "2" }),
                ),
                &ctx(),
            )
            .await
            .expect("the edit too");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "a = 2\n"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_edit_whose_file_changed_while_it_waited_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.py");
        std::fs::write(&path, "a = 1\nb = 1\n").unwrap();
        let tools = registry(
            dir.path(),
            SlowPerson {
                edit_meanwhile: Some((path.clone(), "a = 1\nb = 9\n")),
            },
        );
        let error = tools
            .dispatch(
                &call(
                    "file_edit",
                    json!({ "path": "a.py", "old_text": "a = 1", "new_text": "a = 2" }),
                ),
                &ctx(),
            )
            .await
            .expect_err("the approved content is not what the edit would now write");
        assert!(error.to_string().contains("changed while"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a = 1\nb = 9\n");
    }
}
