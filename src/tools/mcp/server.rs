//! One MCP server: its connection, started at first need, restarted once after it
//! stopped, given up on (and reported once) when it cannot start; and the tools it listed
//! (`ToolDef`), which `tool.rs` turns into the registry's tools.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{McpContext, McpServerSpec, McpTransport, cut, expand_env, tool_name};
use crate::exec::service::{Service, ServiceSpec};
use crate::exec::{Runner, RunnerSettings};
use crate::tools::ToolError;

/// The most of a tool's description the model is shown.
pub(super) const MAX_DESCRIPTION: usize = 1024;

/// A tool a server listed.
#[derive(Debug)]
pub struct ToolDef {
    /// The model-facing name (`mcp__<server>__<tool>`).
    pub name: String,
    /// The server's name for it.
    pub remote: String,
    pub description: String,
    pub parameters: Value,
    /// The server's hints: they are claims, so they only ever make Conclave more careful
    /// or allow a repeat of a call that cannot change anything twice.
    pub read_only_hint: bool,
    pub idempotent_hint: bool,
}

impl ToolDef {
    /// From one entry of `tools/list` (as JSON); `None` for an entry without a name or
    /// whose model-facing name another tool of the server took.
    pub fn from_listing(server: &str, tool: &Value, taken: &[Arc<ToolDef>]) -> Option<ToolDef> {
        let remote = tool.get("name")?.as_str()?.to_string();
        let mut name = tool_name(server, &remote);
        if taken.iter().any(|t| t.name == name) {
            // Two names that differ only in characters the providers refuse.
            name = tool_name(server, &format!("{remote}{}", "_".repeat(40)));
            if taken.iter().any(|t| t.name == name) {
                tracing::warn!(server, tool = %remote, "left out: its name clashes with another tool's");
                return None;
            }
        }
        let said = tool
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or("");
        let description = format!(
            "{} (a tool of the MCP server `{server}`)",
            cut(said.trim(), MAX_DESCRIPTION)
        );
        let mut parameters = tool
            .get("inputSchema")
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        // Providers want an object schema with properties.
        if parameters.get("type").is_none() {
            parameters["type"] = json!("object");
        }
        if parameters.get("properties").is_none() {
            parameters["properties"] = json!({});
        }
        let hint = |key: &str| {
            tool.get("annotations")
                .and_then(|a| a.get(key))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Some(ToolDef {
            name,
            remote,
            description,
            parameters,
            read_only_hint: hint("readOnlyHint"),
            idempotent_hint: hint("idempotentHint"),
        })
    }
}

/// How long a server may take to start and list its tools (`npx` may fetch a package
/// first).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// What becomes of a server.
enum Phase {
    /// Not started yet.
    Idle,
    Up(Box<Connection>),
    /// It stopped (crashed, or its connection dropped): started again at the next call,
    /// once.
    Down(String),
    /// It could not start, or stopped again after its restart: not tried again.
    Failed(String),
}

struct Connection {
    client: RunningService<RoleClient, ClientConfig>,
    /// The process of a stdio server (killed with its group when dropped).
    process: Option<Service>,
    /// The sandbox of a server allowed the network, kept while it runs (its temp
    /// folder goes with it).
    _runner: Option<Runner>,
}

impl Connection {
    /// Why it is no longer usable, when it is not.
    fn gone(&mut self) -> Option<String> {
        if let Some(process) = &mut self.process
            && let Some(status) = process.exited()
        {
            return Some(stopped_message(status, &process.stderr_tail()));
        }
        if self.client.is_closed() || self.client.peer().is_transport_closed() {
            return Some(match &self.process {
                Some(process) => with_stderr("its connection closed", &process.stderr_tail()),
                None => "its connection closed".to_string(),
            });
        }
        None
    }

    fn stderr_tail(&self) -> String {
        self.process
            .as_ref()
            .map(Service::stderr_tail)
            .unwrap_or_default()
    }
}

fn stopped_message(status: std::process::ExitStatus, stderr: &str) -> String {
    let how = match status.code() {
        Some(code) => format!("it exited with code {code}"),
        None => "it was killed by a signal".to_string(),
    };
    with_stderr(&how, stderr)
}

fn with_stderr(message: &str, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        message.to_string()
    } else {
        let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("{message}; its stderr ends:\n{}", tail.join("\n"))
    }
}

/// One server and its tools.
pub struct McpServer {
    spec: McpServerSpec,
    context: Arc<McpContext>,
    phase: tokio::sync::Mutex<(Phase, bool)>,
    /// The tools it listed when it last started; empty once it failed for good.
    defs: RwLock<Vec<Arc<ToolDef>>>,
    reported: AtomicBool,
    /// Cancelled when the server is stopped for good (its workspace or session closed).
    closed: CancellationToken,
}

impl McpServer {
    pub fn new(spec: McpServerSpec, context: Arc<McpContext>) -> Arc<McpServer> {
        spec.register_secrets();
        Arc::new(McpServer {
            spec,
            context,
            phase: tokio::sync::Mutex::new((Phase::Idle, false)),
            defs: RwLock::new(Vec::new()),
            reported: AtomicBool::new(false),
            closed: CancellationToken::new(),
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn spec(&self) -> &McpServerSpec {
        &self.spec
    }

    pub fn context(&self) -> &McpContext {
        &self.context
    }

    /// The tools it listed (none until it started once).
    pub fn defs(&self) -> Vec<Arc<ToolDef>> {
        self.defs.read().expect("tool definitions").clone()
    }

    /// Starts it if it has not started yet (or restarts it once after it stopped);
    /// `Ok` when it is up.
    pub async fn ready(&self) -> Result<Peer<RoleClient>, ToolError> {
        let mut guard = self.phase.lock().await;
        let (phase, restarted) = &mut *guard;
        if let Phase::Up(connection) = phase {
            match connection.gone() {
                None => return Ok(connection.client.peer().clone()),
                Some(why) => {
                    tracing::warn!(server = %self.spec.name, "the MCP server stopped: {why}");
                    *phase = Phase::Down(why);
                }
            }
        }
        match phase {
            Phase::Up(_) => unreachable!("handled above"),
            Phase::Failed(why) => Err(self.unavailable(why.clone(), false)),
            Phase::Down(why) if *restarted => {
                let why =
                    format!("it stopped again after a restart ({why}); it is not started again");
                self.give_up(&why);
                *phase = Phase::Failed(why.clone());
                Err(self.unavailable(why, false))
            }
            Phase::Idle | Phase::Down(_) => {
                if matches!(phase, Phase::Down(_)) {
                    *restarted = true;
                    tracing::info!(server = %self.spec.name, "starting the MCP server again");
                }
                if self.closed.is_cancelled() {
                    return Err(self.unavailable("it was stopped".into(), false));
                }
                match self.start().await {
                    Ok((connection, defs)) => {
                        tracing::info!(
                            server = %self.spec.name,
                            tools = defs.len(),
                            "MCP server connected"
                        );
                        *self.defs.write().expect("tool definitions") = defs;
                        let peer = connection.client.peer().clone();
                        *phase = Phase::Up(Box::new(connection));
                        Ok(peer)
                    }
                    Err(why) => {
                        self.give_up(&why);
                        *phase = Phase::Failed(why.clone());
                        Err(self.unavailable(why, false))
                    }
                }
            }
        }
    }

    /// Calls `tool` with `arguments` under the server's time limit. A server that stops
    /// during the call is a transient failure while it may still be restarted.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<Value, ToolError> {
        let peer = self.ready().await?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(arguments);
        // Dropping the request's future tells the server the call is cancelled
        // (`notifications/cancelled`).
        let call = peer.call_tool(params);
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
            () = self.closed.cancelled() => return Err(self.unavailable("it was stopped".into(), false)),
            timed = tokio::time::timeout(self.spec.timeout, call) => match timed {
                Ok(result) => result,
                Err(_) => {
                    tracing::info!(server = %self.spec.name, tool, timeout_ms = self.spec.timeout.as_millis() as u64, "MCP tool call timed out");
                    return Err(ToolError::Timeout { timeout: self.spec.timeout, output: String::new() });
                }
            },
        };
        match result {
            Ok(result) => serde_json::to_value(&result).map_err(|e| ToolError::McpFailed {
                tool: tool.to_string(),
                message: format!("its answer cannot be read: {e}"),
            }),
            Err(ServiceError::McpError(error)) => Err(ToolError::McpFailed {
                tool: tool.to_string(),
                message: error.message.to_string(),
            }),
            Err(ServiceError::UnexpectedResponse) => Err(ToolError::McpFailed {
                tool: tool.to_string(),
                message: "the server answered with something other than a tool result".into(),
            }),
            Err(error) => Err(self.lost(&error.to_string()).await),
        }
    }

    /// The server stopped answering during a call: why, and whether the next call
    /// starts it again.
    async fn lost(&self, error: &str) -> ToolError {
        // Give a dying process a moment to be reaped, so the message says how it ended.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut guard = self.phase.lock().await;
        let (phase, restarted) = &mut *guard;
        let why = match phase {
            Phase::Up(connection) => connection.gone().unwrap_or_else(|| {
                with_stderr(
                    &format!("the call failed: {error}"),
                    &connection.stderr_tail(),
                )
            }),
            Phase::Down(why) | Phase::Failed(why) => why.clone(),
            Phase::Idle => error.to_string(),
        };
        tracing::warn!(server = %self.spec.name, "the MCP server stopped during a call: {why}");
        if matches!(phase, Phase::Up(_)) {
            *phase = Phase::Down(why.clone());
        }
        let again = !*restarted && matches!(phase, Phase::Down(_));
        if again {
            self.unavailable(
                format!("{why} (it is started again at the next call)"),
                true,
            )
        } else {
            self.unavailable(why, false)
        }
    }

    /// Stops it for good.
    pub async fn stop(&self) {
        self.closed.cancel();
        let mut guard = self.phase.lock().await;
        if let Phase::Up(mut connection) = std::mem::replace(&mut guard.0, Phase::Idle) {
            // Closing the transport ends a well-behaved server; the group kill (when
            // the process is dropped) ends any other.
            let _ = connection
                .client
                .close_with_timeout(Duration::from_secs(1))
                .await;
            drop(connection.process.take());
        }
        guard.0 = Phase::Failed("it was stopped".into());
        tracing::debug!(server = %self.spec.name, "MCP server stopped");
    }

    fn unavailable(&self, message: String, transient: bool) -> ToolError {
        ToolError::McpUnavailable {
            server: self.spec.name.clone(),
            message,
            transient,
        }
    }

    /// Said once: in the log and to the team (the engine puts it on the board).
    fn give_up(&self, why: &str) {
        self.defs.write().expect("tool definitions").clear();
        if self.reported.swap(true, Ordering::SeqCst) {
            return;
        }
        let message = format!(
            "{} ({}) is not available: {why}. Tasks go on without its tools.",
            self.spec.describe(),
            self.spec.origin
        );
        tracing::warn!("{message}");
        (self.context.report)(&message);
    }

    /// Connects and lists the tools, within [`STARTUP_TIMEOUT`].
    async fn start(&self) -> Result<(Connection, Vec<Arc<ToolDef>>), String> {
        let client_info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("conclave", env!("CARGO_PKG_VERSION")),
        );
        let mut own_runner = None;
        let (client, process) = match &self.spec.transport {
            McpTransport::Stdio { command, args, env } => {
                let (mut process, runner) = self.spawn(command, args, env)?;
                own_runner = runner;
                let Some(stdio) = process.take_stdio() else {
                    return Err("its stdin and stdout could not be opened".into());
                };
                let connected = tokio::select! {
                    () = self.closed.cancelled() => return Err("it was stopped".into()),
                    connected = tokio::time::timeout(STARTUP_TIMEOUT, client_info.serve(stdio)) => connected,
                };
                match connected {
                    Ok(Ok(client)) => (client, Some(process)),
                    Ok(Err(e)) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        let why = match process.exited() {
                            Some(status) => stopped_message(status, &process.stderr_tail()),
                            None => with_stderr(
                                &format!("it did not start MCP: {e}"),
                                &process.stderr_tail(),
                            ),
                        };
                        return Err(why);
                    }
                    Err(_) => {
                        return Err(with_stderr(
                            &format!(
                                "it did not answer `initialize` within {} s",
                                STARTUP_TIMEOUT.as_secs()
                            ),
                            &process.stderr_tail(),
                        ));
                    }
                }
            }
            McpTransport::Http { url, headers } => {
                let headers: Vec<(String, String)> = headers
                    .iter()
                    .map(|(name, value)| (name.clone(), expand_env(value)))
                    .collect();
                let transport = super::http::transport(url, &headers)?;
                let connected = tokio::select! {
                    () = self.closed.cancelled() => return Err("it was stopped".into()),
                    connected = tokio::time::timeout(STARTUP_TIMEOUT, client_info.serve(transport)) => connected,
                };
                match connected {
                    Ok(Ok(client)) => (client, None),
                    Ok(Err(e)) => return Err(format!("it could not be reached at {url}: {e}")),
                    Err(_) => {
                        return Err(format!(
                            "{url} did not answer `initialize` within {} s",
                            STARTUP_TIMEOUT.as_secs()
                        ));
                    }
                }
            }
        };
        let listed = tokio::time::timeout(STARTUP_TIMEOUT, client.peer().list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(format!("its tools could not be listed: {e}")),
            Err(_) => {
                return Err(format!(
                    "it did not list its tools within {} s",
                    STARTUP_TIMEOUT.as_secs()
                ));
            }
        };
        let mut defs: Vec<Arc<ToolDef>> = Vec::new();
        for tool in tools {
            match serde_json::to_value(&tool) {
                Ok(value) => {
                    let def = ToolDef::from_listing(&self.spec.name, &value, &defs);
                    if let Some(def) = def {
                        defs.push(Arc::new(def));
                    }
                }
                Err(e) => tracing::warn!(server = %self.spec.name, "a tool is left out: {e}"),
            }
        }
        Ok((
            Connection {
                client,
                process,
                _runner: own_runner,
            },
            defs,
        ))
    }

    /// Starts a stdio server's process in the commands' sandbox (with the network when
    /// its entry asks for it).
    fn spawn(
        &self,
        command: &str,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<(Service, Option<Runner>), String> {
        let own = if self.spec.network && !self.context.runner.settings().network {
            Some(
                Runner::new(RunnerSettings {
                    network: true,
                    ..self.context.runner.settings().clone()
                })
                .map_err(|e| format!("no sandbox could be made for it: {e}"))?,
            )
        } else {
            None
        };
        let runner = own.as_ref().unwrap_or(&self.context.runner);
        // A relative path names a program of the workspace (`./tools/server.py`), as
        // the person would read it there.
        let program = if command.contains('/') && !command.starts_with('/') {
            runner.workspace().join(command)
        } else {
            PathBuf::from(command)
        };
        let spec = ServiceSpec {
            program,
            args: args.iter().map(Into::into).collect(),
            env: env
                .iter()
                .map(|(name, value)| (name.clone(), expand_env(value)))
                .collect(),
            label: format!("MCP server {}", self.spec.name),
        };
        let service = runner.spawn_service(&spec).map_err(|e| e.to_string())?;
        Ok((service, own))
    }
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}
