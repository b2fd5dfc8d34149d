//! `grep {pattern, path?, glob?}` and `glob {pattern}`: finding things in the workspace.
//!
//! Both walk with ripgrep's `ignore` crate, so `.gitignore` (even outside a git
//! repository), `.ignore` and hidden files are skipped as ripgrep skips them. `grep`
//! searches with ripgrep's own matcher and searcher. Output is sorted and capped, and the
//! walk stops early when the call is cancelled or times out.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use grep::regex::RegexMatcherBuilder;
use grep::searcher::sinks::Lossy;
use grep::searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use ignore::overrides::OverrideBuilder;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sandbox::{EscapeReason, PathOutsideWorkspace, Sandbox};
use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use crate::model::ToolSpec;

/// Limits of the search tools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchSettings {
    pub max_grep_matches: usize,
    /// A matching line longer than this is cut.
    pub max_line_chars: usize,
    pub max_glob_results: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            max_grep_matches: 200,
            max_line_chars: 300,
            max_glob_results: 500,
        }
    }
}

/// A walker over `start` honouring ignore files even when there is no `.git`.
fn walker(start: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(start);
    builder
        .standard_filters(true)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b));
    builder
}

/// `grep`: regex search of file contents.
pub struct Grep {
    sandbox: Sandbox,
    settings: SearchSettings,
}

impl Grep {
    pub fn new(sandbox: Sandbox, settings: SearchSettings) -> Grep {
        Grep { sandbox, settings }
    }
}

#[async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: "Search file contents with a regex. Returns path:line: text.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": { "type": "string" },
                    "path": { "type": "string", "description": "file or directory, default root" },
                    "glob": { "type": "string", "description": "file filter, e.g. *.rs" }
                },
                "required": ["pattern"]
            }),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let pattern = args.str("pattern")?.to_string();
        let path = args.opt_str("path")?.unwrap_or(".");
        let glob = args.opt_str("glob")?.map(str::to_string);
        let start = self.sandbox.resolve(path)?;
        if !start.exists() {
            return Err(ToolError::NotFound {
                path: self.sandbox.relative(&start),
            });
        }
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build(&pattern)
            .map_err(|e| ToolError::invalid(format!("`pattern` is not a valid regex: {e}")))?;
        let mut walk = walker(&start);
        if let Some(glob) = &glob {
            let overrides = OverrideBuilder::new(&start)
                .add(glob)
                .and_then(|b| b.build())
                .map_err(|e| ToolError::invalid(format!("`glob` is not a valid glob: {e}")))?;
            walk.overrides(overrides);
        }
        let sandbox = self.sandbox.clone();
        let settings = self.settings.clone();
        let cancel = ctx.cancel.clone();
        let found = tokio::task::spawn_blocking(move || {
            grep_walk(&sandbox, &walk, &matcher, &settings, &cancel)
        })
        .await
        .map_err(|e| ToolError::Io {
            path: PathBuf::from(path),
            kind: std::io::ErrorKind::Other,
            message: e.to_string(),
        })?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }

        let mut content = if found.lines.is_empty() {
            format!("no matches for `{pattern}`")
        } else {
            found.lines.join("\n")
        };
        if found.more {
            content.push_str(&format!(
                "\n[stopped at {} matches; narrow the pattern, path or glob]",
                self.settings.max_grep_matches
            ));
        }
        Ok(ToolOutput {
            content,
            summary: format!("grep `{pattern}`: {} match(es)", found.lines.len()),
            ..ToolOutput::default()
        })
    }
}

struct GrepFound {
    lines: Vec<String>,
    /// More matches existed than were kept.
    more: bool,
}

fn grep_walk(
    sandbox: &Sandbox,
    walk: &WalkBuilder,
    matcher: &grep::regex::RegexMatcher,
    settings: &SearchSettings,
    cancel: &CancellationToken,
) -> GrepFound {
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut found = GrepFound {
        lines: Vec::new(),
        more: false,
    };
    for entry in walk.build() {
        if cancel.is_cancelled() || found.more {
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let shown = sandbox.relative(entry.path());
        let result = searcher.search_path(
            matcher,
            entry.path(),
            Lossy(|line_number, line| {
                if found.lines.len() >= settings.max_grep_matches {
                    found.more = true;
                    return Ok(false);
                }
                let text = line.trim_end_matches(['\n', '\r']);
                let text = if text.chars().count() > settings.max_line_chars {
                    let cut: String = text.chars().take(settings.max_line_chars).collect();
                    format!("{cut}…")
                } else {
                    text.to_string()
                };
                found
                    .lines
                    .push(format!("{}:{line_number}: {text}", shown.display()));
                Ok(true)
            }),
        );
        if let Err(e) = result {
            // An unreadable file is not a reason to fail the whole search.
            tracing::debug!(path = %entry.path().display(), error = %e, "grep skipped a file");
        }
    }
    found
}

/// `glob`: file names matching a pattern.
pub struct Glob {
    sandbox: Sandbox,
    settings: SearchSettings,
}

impl Glob {
    pub fn new(sandbox: Sandbox, settings: SearchSettings) -> Glob {
        Glob { sandbox, settings }
    }

    /// The pattern relative to the root: absolute patterns inside the root are made
    /// relative, and patterns that would reach outside are refused.
    fn relative_pattern<'a>(&self, pattern: &'a str) -> Result<&'a str, ToolError> {
        let refuse = |reason| {
            ToolError::OutsideWorkspace(PathOutsideWorkspace {
                path: pattern.to_string(),
                reason,
            })
        };
        let relative = if pattern.starts_with('/') {
            let root = self.sandbox.root().to_string_lossy();
            pattern
                .strip_prefix(root.as_ref())
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(|| refuse(EscapeReason::AbsoluteOutside))?
        } else {
            pattern.strip_prefix("./").unwrap_or(pattern)
        };
        if relative.split('/').any(|part| part == "..") {
            return Err(refuse(EscapeReason::ParentTraversal));
        }
        Ok(relative)
    }
}

#[async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".into(),
            description:
                "List files matching a glob, e.g. src/**/*.rs (no / matches names at any depth)."
                    .into(),
            parameters: json!({
                "type": "object",
                "properties": { "pattern": { "type": "string" } },
                "required": ["pattern"]
            }),
        }
    }

    async fn call(&self, args: &Args, ctx: &CallContext) -> Result<ToolOutput, ToolError> {
        let pattern = args.str("pattern")?;
        let relative = self.relative_pattern(pattern)?;
        if relative.is_empty() {
            return Err(ToolError::invalid("`pattern` is empty"));
        }
        let matcher = GlobBuilder::new(relative)
            .literal_separator(true)
            .build()
            .map_err(|e| ToolError::invalid(format!("`pattern` is not a valid glob: {e}")))?
            .compile_matcher();
        // Like .gitignore: a pattern without a slash matches the file name at any depth.
        let by_name = !relative.contains('/');
        let sandbox = self.sandbox.clone();
        let limit = self.settings.max_glob_results;
        let cancel = ctx.cancel.clone();
        let (mut paths, total) = tokio::task::spawn_blocking(move || {
            glob_walk(&sandbox, &matcher, by_name, limit, &cancel)
        })
        .await
        .map_err(|e| ToolError::Io {
            path: PathBuf::from(pattern),
            kind: std::io::ErrorKind::Other,
            message: e.to_string(),
        })?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        paths.sort();
        let mut content = if paths.is_empty() {
            format!("no files match `{pattern}`")
        } else {
            paths.join("\n")
        };
        if total > paths.len() {
            content.push_str(&format!(
                "\n[{} more not shown; narrow the pattern]",
                total - paths.len()
            ));
        }
        Ok(ToolOutput {
            content,
            summary: format!("glob `{pattern}`: {total} file(s)"),
            ..ToolOutput::default()
        })
    }
}

/// Matching files (workspace-relative, at most `limit`) and how many matched in all.
fn glob_walk(
    sandbox: &Sandbox,
    matcher: &GlobMatcher,
    by_name: bool,
    limit: usize,
    cancel: &CancellationToken,
) -> (Vec<String>, usize) {
    let mut paths = Vec::new();
    let mut total = 0;
    for entry in walker(sandbox.root()).build() {
        if cancel.is_cancelled() {
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let relative = sandbox.relative(entry.path());
        let hit = if by_name {
            matcher.is_match(entry.file_name())
        } else {
            matcher.is_match(&relative)
        };
        if hit {
            total += 1;
            if paths.len() < limit {
                paths.push(relative.display().to_string());
            }
        }
    }
    (paths, total)
}
