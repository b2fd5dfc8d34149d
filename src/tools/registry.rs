//! The tool registry: the specs offered to the model and the dispatch of its calls.
//!
//! Dispatch is where the cross-cutting rules live, so each tool stays about its one job:
//! the tool name is looked up (leniently: `File_Read ` finds `file_read`), arguments are
//! normalised ([`Args::from_value`]), the tool's authorisation runs (not bounded by the
//! step timeout, since a person may be answering), then the call runs under the step
//! timeout and the cancellation token. A transient failure (a timeout, a 5xx, a dropped
//! connection) of a call the tool calls [`Tool::repeatable`] is retried with recovery's
//! call-level policy, each attempt under the step timeout of its own, as model calls are.
//!
//! Besides the built-in tools, a registry may have [`ToolSource`]s whose tools depend on
//! the work being done (an ACP session's MCP servers): an execution calls
//! [`ToolRegistry::prepare`] once, then [`ToolRegistry::offered`] lists what it may call,
//! and dispatch finds those tools too.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::bash::{ApprovalHook, Bash, BashSettings};
use super::file::{ChangeReview, FileEdit, FileRead, FileSettings, FileWrite};
use super::http::{HttpRequest, HttpSettings};
use super::sandbox::Sandbox;
use super::search::{Glob, Grep, SearchSettings};
use super::writer::WorkspaceWriter;
use super::{Args, CallContext, Tool, ToolError, ToolOutput};
use crate::config::{CallRetryConfig, CommandPolicy, Config, FileChangePolicy, SandboxConfig};
use crate::exec::{Runner, RunnerSettings};
use crate::model::{ToolCall, ToolSpec};
use crate::recovery::backoff::{self, Jitter, RetryListener, RetryPolicy};

/// Every limit of the built-in tools.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSettings {
    pub files: FileSettings,
    pub bash: BashSettings,
    pub search: SearchSettings,
    pub http: HttpSettings,
    /// `approvals.commands`.
    pub command_policy: CommandPolicy,
    /// `approvals.fileChanges`: with `ask`, every change of a file is approved first.
    pub file_changes: FileChangePolicy,
    /// Tools that enforce their own deadline (bash, http_request) get this long past the
    /// step timeout to stop cleanly and report partial output before dispatch gives up.
    pub timeout_grace: Duration,
    /// `recovery.call`: how transient failures of repeatable calls are retried.
    pub call_retry: CallRetryConfig,
    /// `[sandbox]`: how commands are confined (when the registry makes its own runner).
    pub sandbox: SandboxConfig,
    /// Variables no command may see besides credential-looking ones (the configured
    /// key variables).
    pub scrub_env: Vec<String>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            files: FileSettings::default(),
            bash: BashSettings::default(),
            search: SearchSettings::default(),
            http: HttpSettings::default(),
            command_policy: CommandPolicy::Ask,
            file_changes: FileChangePolicy::Auto,
            timeout_grace: Duration::from_secs(2),
            call_retry: CallRetryConfig::default(),
            sandbox: SandboxConfig::default(),
            scrub_env: Vec::new(),
        }
    }
}

impl ToolSettings {
    /// Defaults with the command policy and the API key variable taken from `config`.
    pub fn from_config(config: &Config) -> ToolSettings {
        ToolSettings {
            command_policy: config.approvals.commands,
            file_changes: config.approvals.file_changes,
            call_retry: config.recovery.call.clone(),
            sandbox: config.sandbox.clone(),
            scrub_env: config.llm.key_variables(),
            files: FileSettings {
                disabled_repairs: config.verify.disabled.clone(),
                ..FileSettings::default()
            },
            ..ToolSettings::default()
        }
    }

    /// The runner's settings for a workspace.
    pub fn runner_settings(&self, workspace: &Path) -> RunnerSettings {
        let config = Config {
            sandbox: self.sandbox.clone(),
            ..Config::default()
        };
        RunnerSettings {
            scrub_env: self.scrub_env.clone(),
            ..RunnerSettings::from_config(&config, workspace)
        }
    }
}

/// Tools that come and go with the work: MCP servers' tools. Which work is asking is the
/// source's to know (from the task-local scope the execution runs in).
#[async_trait]
pub trait ToolSource: Send + Sync {
    /// Makes the calling work's tools ready (starts the servers it needs, once): called
    /// at the start of every execution, before its tools are listed.
    async fn prepare(&self);

    /// The calling work's tools as they are now.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
}

/// Told of every file a tool call wrote, with the call's subtask id, as soon as the
/// call returns (so editors see the files of a subtask while it still runs).
pub type WriteObserver = Arc<dyn Fn(&str, &Path) + Send + Sync>;

/// The tools a model may call, by name.
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    timeout_grace: Duration,
    on_write: Option<WriteObserver>,
    retry: RetryPolicy,
    retry_listener: Option<RetryListener>,
    jitter: Jitter,
    /// The `file_read` tool, for [`ToolRegistry::current_text`].
    reader: Option<Arc<FileRead>>,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl ToolRegistry {
    /// The built-in tools (`http_request` only with `sandbox.network = true`), confined
    /// to `sandbox`, writing through `writer`, running commands through a runner of
    /// their own. With the `ask` policies and no
    /// `approver`, commands and file changes are refused.
    pub fn new(
        sandbox: Sandbox,
        writer: Arc<dyn WorkspaceWriter>,
        settings: ToolSettings,
        approver: Option<Arc<dyn ApprovalHook>>,
    ) -> ToolRegistry {
        let runner = Runner::new(settings.runner_settings(sandbox.root()))
            .expect("a temp directory for commands");
        ToolRegistry::with_runner(sandbox, writer, settings, approver, runner)
    }

    /// As [`ToolRegistry::new`], running commands through `runner` (shared with the
    /// team's checks).
    pub fn with_runner(
        sandbox: Sandbox,
        writer: Arc<dyn WorkspaceWriter>,
        settings: ToolSettings,
        approver: Option<Arc<dyn ApprovalHook>>,
        runner: Runner,
    ) -> ToolRegistry {
        let mut registry = ToolRegistry::empty();
        registry.timeout_grace = settings.timeout_grace;
        registry.retry = RetryPolicy::from_config(&settings.call_retry);
        let reader = Arc::new(
            FileRead::new(sandbox.clone(), settings.files.clone()).with_editor(writer.clone()),
        );
        registry.register(reader.clone());
        registry.reader = Some(reader);
        // With `fileChanges = "ask"` and no approver, changes are refused like commands.
        let review = Some(ChangeReview::new(
            sandbox.clone(),
            approver.clone(),
            settings.file_changes == FileChangePolicy::Ask,
        ));
        registry.register(Arc::new(
            FileWrite::new(sandbox.clone(), writer.clone(), review.clone())
                .with_settings(settings.files.clone()),
        ));
        registry.register(Arc::new(FileEdit::new(
            sandbox.clone(),
            writer.clone(),
            settings.files.clone(),
            review,
        )));
        registry.register(Arc::new(
            Bash::new(
                sandbox.clone(),
                settings.bash.clone(),
                settings.command_policy,
                approver,
                runner,
            )
            .with_writer(writer),
        ));
        registry.register(Arc::new(Grep::new(
            sandbox.clone(),
            settings.search.clone(),
        )));
        registry.register(Arc::new(Glob::new(sandbox, settings.search.clone())));
        // The network is the sandbox's to give: with it off, the model is not offered a
        // way round it.
        if settings.sandbox.network {
            registry.register(Arc::new(HttpRequest::new(settings.http.clone())));
        }
        registry
    }

    /// A registry without tools, to build up with [`ToolRegistry::register`].
    pub fn empty() -> ToolRegistry {
        ToolRegistry {
            tools: Vec::new(),
            specs: Vec::new(),
            timeout_grace: ToolSettings::default().timeout_grace,
            on_write: None,
            retry: RetryPolicy::from_config(&CallRetryConfig::default()),
            retry_listener: None,
            jitter: backoff::random_jitter(),
            reader: None,
            sources: Vec::new(),
        }
    }

    /// Reports every written file to `observer` from now on.
    pub fn with_write_observer(mut self, observer: WriteObserver) -> ToolRegistry {
        self.on_write = Some(observer);
        self
    }

    /// Tells `listener` of every call-level retry of a tool call.
    pub fn with_retry_listener(mut self, listener: RetryListener) -> ToolRegistry {
        self.retry_listener = Some(listener);
        self
    }

    /// Replaces the retry policy and the jitter's random source (tests pin them).
    pub fn with_retry_policy(mut self, policy: RetryPolicy, jitter: Jitter) -> ToolRegistry {
        self.retry = policy;
        self.jitter = jitter;
        self
    }

    /// Offers the tools of `source` besides the registry's own.
    pub fn with_source(mut self, source: Arc<dyn ToolSource>) -> ToolRegistry {
        self.sources.push(source);
        self
    }

    /// Gets the sources' tools ready for the calling work.
    pub async fn prepare(&self) {
        for source in &self.sources {
            source.prepare().await;
        }
    }

    /// The specs to offer the calling work's model: the registry's own tools, then the
    /// sources' (a source's tool never shadows a built-in one).
    pub fn offered(&self) -> Vec<ToolSpec> {
        let mut specs = self.specs.clone();
        for tool in self.sourced() {
            if !specs.iter().any(|s| s.name == tool.name()) {
                specs.push(tool.spec());
            }
        }
        specs
    }

    fn sourced(&self) -> impl Iterator<Item = Arc<dyn Tool>> + '_ {
        self.sources.iter().flat_map(|source| source.tools())
    }

    /// Adds a tool, replacing any tool of the same name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let spec = tool.spec();
        match self.tools.iter().position(|t| t.name() == tool.name()) {
            Some(index) => {
                self.tools[index] = tool;
                self.specs[index] = spec;
            }
            None => {
                self.tools.push(tool);
                self.specs.push(spec);
            }
        }
    }

    /// The specs to offer the model, in registration order.
    /// The text of the workspace file at `path` as the tools see it (the editor's copy
    /// first), when there is a `file_read` tool and the file can be read.
    pub async fn current_text(&self, path: &str) -> Option<String> {
        self.reader.as_ref()?.text(path).await
    }

    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.name().to_string()).collect();
        for tool in self.sourced() {
            if !names.iter().any(|n| n == tool.name()) {
                names.push(tool.name().to_string());
            }
        }
        names
    }

    /// The tool called `name` (the registry's own, then the calling work's sources'); a
    /// case or whitespace slip by the model is forgiven.
    pub fn find(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let wanted = name.trim().to_ascii_lowercase();
        let own = self
            .tools
            .iter()
            .find(|t| t.name() == name)
            .or_else(|| self.tools.iter().find(|t| t.name() == wanted))
            .cloned();
        own.or_else(|| {
            let sourced: Vec<Arc<dyn Tool>> = self.sourced().collect();
            let exact = sourced.iter().position(|t| t.name() == name.trim());
            let index = exact.or_else(|| {
                sourced
                    .iter()
                    .position(|t| t.name().eq_ignore_ascii_case(name.trim()))
            })?;
            Some(sourced[index].clone())
        })
    }

    /// Runs one tool call: lookup, argument normalisation, authorisation, then the call
    /// under the step timeout and the cancellation token.
    pub async fn dispatch(
        &self,
        call: &ToolCall,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        let tool = self
            .find(&call.name)
            .ok_or_else(|| ToolError::UnknownTool {
                name: call.name.clone(),
                available: self.names(),
            })?;
        let args = Args::from_value(&call.arguments)?;

        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            authorised = tool.authorize(&args, ctx) => authorised?,
        }

        let mut policy = self.retry.clone();
        if !tool.repeatable(&args) {
            policy.max_attempts = 1;
        }
        backoff::retry(
            &policy,
            tool.name(),
            &*self.jitter,
            self.retry_listener.as_ref(),
            &ctx.cancel,
            |_| self.attempt(&tool, &args, ctx),
        )
        .await
    }

    /// One attempt of an authorised call, under the step timeout and the cancellation
    /// token.
    async fn attempt(
        &self,
        tool: &Arc<dyn Tool>,
        args: &Args,
        ctx: &CallContext,
    ) -> Result<ToolOutput, ToolError> {
        // A token of the call's own, cancelled when the attempt returns for any reason, so
        // blocking work (walks, searches) stops when its future is abandoned.
        let token = ctx.cancel.child_token();
        let _stop_on_return = token.clone().drop_guard();
        let call_ctx = CallContext {
            cancel: token,
            ..ctx.clone()
        };
        let run = tool.call(args, &call_ctx);
        tokio::pin!(run);
        let limit = ctx.step_timeout.map(|step| step + self.timeout_grace);
        let timed = async {
            match limit {
                Some(limit) => tokio::time::timeout(limit, &mut run).await.ok(),
                None => Some((&mut run).await),
            }
        };
        tokio::select! {
            biased;
            () = ctx.cancel.cancelled() => {}
            finished = timed => {
                if let (Some(Ok(output)), Some(observer), Some(subtask)) =
                    (&finished, &self.on_write, &ctx.subtask_id)
                {
                    for path in &output.files_written {
                        observer(subtask, path);
                    }
                }
                return finished.unwrap_or_else(|| {
                    let step = ctx.step_timeout.unwrap_or_default();
                    tracing::info!(tool = tool.name(), timeout_ms = step.as_millis() as u64, "tool call timed out");
                    Err(ToolError::Timeout { timeout: step, output: String::new() })
                });
            }
        }
        // Cancelled: the call's own token is cancelled with its parent. Give the tool a
        // moment to clean up (bash kills its process group and waits for it); whatever
        // it returns, the call counts as cancelled.
        let _ = tokio::time::timeout(self.timeout_grace, &mut run).await;
        Err(ToolError::Cancelled)
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .finish()
    }
}
