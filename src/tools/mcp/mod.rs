//! MCP tools: the tools of Model Context Protocol servers, offered to the agents beside
//! the built-in ones, through the official Rust SDK (`rmcp`).
//!
//! - Servers come from `[[mcp.servers]]` (every task's) and from an ACP client's
//!   `mcpServers` (its session's tasks only): [`McpHub`] holds both and is the
//!   registry's [`ToolSource`], so an execution is offered the tools of its own work.
//! - Each server's tool `t` becomes `mcp__<server>__<t>` ([`tool_name`]); a call is
//!   authorised under the commands policy (`approvals.commands`) as a command is, and a
//!   refusal is final ([`tool::McpTool`]).
//! - A stdio server runs like a command ([`crate::exec::service`]): the sandbox, the
//!   scrubbed environment plus only the variables named for it, the workspace as its
//!   folder, its process group killed when its workspace or session closes.
//! - Failures are typed ([`server::McpServer`]): a call past its time limit is a
//!   timeout, a server that stopped is restarted once at the next call, and a server
//!   that cannot start is reported once while the tasks that do not need it go on.

mod http;
pub mod server;
pub mod tool;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::Tool;
use super::bash::ApprovalHook;
use super::registry::ToolSource;
use crate::config::{CommandPolicy, DEFAULT_MCP_TIMEOUT_MS, McpServerConfig};
use crate::exec::Runner;
pub use server::McpServer;

/// How Conclave reaches a server.
#[derive(Clone, Debug, PartialEq)]
pub enum McpTransport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the scrubbed environment; `${NAME}` is the value of Conclave's own
        /// variable `NAME`.
        env: Vec<(String, String)>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request; `${NAME}` as for `env`.
        headers: Vec<(String, String)>,
    },
}

/// One server to connect.
#[derive(Clone, Debug, PartialEq)]
pub struct McpServerSpec {
    pub name: String,
    pub transport: McpTransport,
    /// How long one tool call may take.
    pub timeout: Duration,
    /// A stdio server may use the network even with `sandbox.network` off.
    pub network: bool,
    /// Where it was named, for messages: `conclave.toml` or `the ACP client`.
    pub origin: String,
}

impl McpServerSpec {
    /// The server `[[mcp.servers]]` describes; `None` when it is disabled.
    pub fn from_config(config: &McpServerConfig) -> Option<McpServerSpec> {
        if !config.enabled {
            return None;
        }
        let pairs = |map: &std::collections::BTreeMap<String, String>| {
            map.iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        };
        let transport = match (&config.command, &config.url) {
            (Some(command), _) => McpTransport::Stdio {
                command: command.clone(),
                args: config.args.clone(),
                env: pairs(&config.env),
            },
            (None, Some(url)) => McpTransport::Http {
                url: url.clone(),
                headers: pairs(&config.headers),
            },
            // The configuration check refuses an entry with neither.
            (None, None) => return None,
        };
        Some(McpServerSpec {
            name: config.name.clone(),
            transport,
            timeout: Duration::from_millis(config.timeout_ms.unwrap_or(DEFAULT_MCP_TIMEOUT_MS)),
            network: config.network,
            origin: "conclave.toml".into(),
        })
    }

    /// Takes the values of its credential-looking variables and headers for secrets, so
    /// no log line or stored record shows them (`${NAME}` values are taken when
    /// expanded).
    pub fn register_secrets(&self) {
        let pairs = match &self.transport {
            McpTransport::Stdio { env, .. } => env,
            McpTransport::Http { headers, .. } => headers,
        };
        for (name, value) in pairs {
            let lower = name.to_ascii_lowercase();
            let secret = crate::exec::env::is_secret_env_name(name)
                || [
                    "authorization",
                    "token",
                    "key",
                    "secret",
                    "cookie",
                    "password",
                ]
                .iter()
                .any(|word| lower.contains(word));
            if secret && !value.contains("${") {
                crate::redact::register(value);
                for word in value.split_whitespace() {
                    crate::redact::register(word);
                }
            }
        }
    }

    /// Where it runs, for approvals and messages (never a header or a variable's value).
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => {
                let mut line = command.clone();
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                format!(
                    "the MCP server `{}` (`{}`)",
                    self.name,
                    first_chars(&line, 120)
                )
            }
            McpTransport::Http { url, .. } => {
                format!("the MCP server `{}` ({})", self.name, first_chars(url, 120))
            }
        }
    }
}

fn first_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    format!("{cut}…")
}

/// `value` with every `${NAME}` replaced by the variable `NAME` of Conclave's environment
/// (empty when unset); the result is registered as a secret, since it is what a person
/// keeps out of the file.
pub fn expand_env(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    let mut expanded = false;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..start + 2 + len];
        out.push_str(&std::env::var(name).unwrap_or_default());
        rest = &rest[start + 3 + len..];
        expanded = true;
    }
    out.push_str(rest);
    if expanded {
        crate::redact::register(&out);
        // A header such as `Bearer ${TOKEN}`: the token alone is the secret too.
        for word in out.split_whitespace() {
            crate::redact::register(word);
        }
    }
    out
}

/// The longest name the model providers take for a tool.
pub const MAX_TOOL_NAME: usize = 64;

/// The model-facing name of `tool` of `server`: `mcp__<server>__<tool>`, with anything
/// but letters, digits, `_` and `-` turned into `_`, and cut to [`MAX_TOOL_NAME`] with a
/// hash of the whole name to keep it apart from others.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("mcp__{}__{}", clean(server), clean(tool));
    if name.len() <= MAX_TOOL_NAME {
        return name;
    }
    let mut hasher = crate::tools::writer::Fnv1a::new();
    hasher.write(format!("{server}\0{tool}").as_bytes());
    let hash = hasher.finish();
    let suffix = format!("_{:08x}", hash as u32);
    format!("{}{suffix}", &name[..MAX_TOOL_NAME - suffix.len()])
}

/// What every server of a hub shares: how stdio servers run, who approves calls, where
/// problems are told.
#[derive(Clone)]
pub struct McpContext {
    /// The commands' runner: a stdio server runs in its sandbox.
    pub runner: Runner,
    /// `approvals.commands`: MCP tool calls act on the world as commands do.
    pub policy: CommandPolicy,
    pub approver: Option<Arc<dyn ApprovalHook>>,
    /// Told once per server that cannot start or stops for good (the engine writes it
    /// on the team's board).
    pub report: Arc<dyn Fn(&str) + Send + Sync>,
    /// Kept of a tool's result (the head and tail beyond it are cut).
    pub max_output_bytes: usize,
}

/// Which work is asking: the owner of the task the calling code works for (an ACP
/// session's `acp:<id>`), from the engine.
pub type OwnerOfWork = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Every MCP server of one workspace: the configured ones, for all its tasks, and those
/// an owner (an ACP session) brought, for its tasks only.
pub struct McpHub {
    context: Arc<McpContext>,
    shared: Vec<Arc<McpServer>>,
    owned: Mutex<HashMap<String, Vec<Arc<McpServer>>>>,
    owner_of_work: OwnerOfWork,
}

impl McpHub {
    /// A hub over `servers`, which start in the background at once, so a server that
    /// cannot start is reported before a task needs it.
    pub fn new(
        servers: Vec<McpServerSpec>,
        context: McpContext,
        owner_of_work: OwnerOfWork,
    ) -> Arc<McpHub> {
        let context = Arc::new(context);
        let shared: Vec<Arc<McpServer>> = servers
            .into_iter()
            .map(|spec| McpServer::new(spec, context.clone()))
            .collect();
        start_in_background(&shared);
        Arc::new(McpHub {
            context,
            shared,
            owned: Mutex::new(HashMap::new()),
            owner_of_work,
        })
    }

    /// Whether there is any server at all (nothing to prepare otherwise).
    pub fn is_empty(&self) -> bool {
        self.shared.is_empty() && self.owned.lock().expect("owned servers").is_empty()
    }

    /// Connects `servers` for the tasks of `owner`, replacing any it had (a session
    /// loaded again brings its servers again); the old ones stop.
    pub fn attach(&self, owner: &str, servers: Vec<McpServerSpec>) {
        let servers: Vec<Arc<McpServer>> = servers
            .into_iter()
            .map(|spec| McpServer::new(spec, self.context.clone()))
            .collect();
        start_in_background(&servers);
        let old = {
            let mut owned = self.owned.lock().expect("owned servers");
            if servers.is_empty() {
                owned.remove(owner)
            } else {
                owned.insert(owner.to_string(), servers)
            }
        };
        stop_in_background(old.unwrap_or_default());
    }

    /// Stops the servers `owner` brought (its session closed).
    pub fn detach(&self, owner: &str) {
        let old = self.owned.lock().expect("owned servers").remove(owner);
        stop_in_background(old.unwrap_or_default());
    }

    /// Stops every server (the workspace closes).
    pub async fn shutdown(&self) {
        let mut all = self.shared.clone();
        all.extend(
            self.owned
                .lock()
                .expect("owned servers")
                .drain()
                .flat_map(|(_, servers)| servers),
        );
        for server in all {
            server.stop().await;
        }
    }

    /// The servers of the calling work: the configured ones, then its owner's.
    fn servers_of_work(&self) -> Vec<Arc<McpServer>> {
        let mut servers = self.shared.clone();
        if let Some(owner) = (self.owner_of_work)()
            && let Some(owned) = self.owned.lock().expect("owned servers").get(&owner)
        {
            // A name the configuration has already is the configuration's.
            for server in owned {
                if !servers.iter().any(|s| s.name() == server.name()) {
                    servers.push(server.clone());
                }
            }
        }
        servers
    }
}

fn start_in_background(servers: &[Arc<McpServer>]) {
    for server in servers {
        let server = server.clone();
        tokio::spawn(async move {
            let _ = server.ready().await;
        });
    }
}

fn stop_in_background(servers: Vec<Arc<McpServer>>) {
    if servers.is_empty() {
        return;
    }
    tokio::spawn(async move {
        for server in servers {
            server.stop().await;
        }
    });
}

#[async_trait]
impl ToolSource for McpHub {
    async fn prepare(&self) {
        let servers = self.servers_of_work();
        // Each one's start is bounded (server.rs); a failure is reported there, and the
        // work goes on without its tools.
        futures_util::future::join_all(servers.iter().map(|s| s.ready())).await;
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers_of_work()
            .iter()
            .flat_map(|server| {
                server
                    .defs()
                    .into_iter()
                    .map(|def| Arc::new(tool::McpTool::new(server.clone(), def)) as Arc<dyn Tool>)
            })
            .collect()
    }
}

/// `text` cut to at most `max` bytes on a character boundary, marked when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_follow_the_providers_rules() {
        assert_eq!(tool_name("db", "query"), "mcp__db__query");
        assert_eq!(tool_name("my-db", "run.sql/now"), "mcp__my-db__run_sql_now");
        let long = tool_name("server", &"x".repeat(100));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert_ne!(long, tool_name("server", &"x".repeat(101)));
        assert!(
            long.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn variables_are_expanded_and_kept_secret() {
        // SAFETY: a variable of this test's own, read back by this test only.
        unsafe { std::env::set_var("CONCLAVE_MCP_TEST_TOKEN", "tok-9f8e7d6c5b4a3921") };
        let value = expand_env("Bearer ${CONCLAVE_MCP_TEST_TOKEN}");
        assert_eq!(value, "Bearer tok-9f8e7d6c5b4a3921");
        assert_eq!(
            crate::redact::text("sent tok-9f8e7d6c5b4a3921"),
            "sent [REDACTED]"
        );
        assert_eq!(expand_env("plain ${"), "plain ${");
        assert_eq!(expand_env("${CONCLAVE_MCP_UNSET_VAR}x"), "x");
    }

    #[test]
    fn disabled_servers_are_left_out_and_the_rest_described() {
        let mut config: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "db", "command": "db-mcp", "args": ["--ro"], "env": { "A": "1" }
        }))
        .unwrap();
        let spec = McpServerSpec::from_config(&config).unwrap();
        assert_eq!(spec.timeout, Duration::from_millis(DEFAULT_MCP_TIMEOUT_MS));
        assert_eq!(spec.describe(), "the MCP server `db` (`db-mcp --ro`)");
        config.enabled = false;
        assert!(McpServerSpec::from_config(&config).is_none());
    }
}
