//! The agent side of ACP: the methods a client calls, each a thin translation onto the
//! engine.
//!
//! A session's `cwd` is its workspace. The first session on a workspace starts its
//! engine there, as `serve` does: the workspace lock (one Conclave per workspace), the
//! configuration (built-in defaults, `conclave.toml`, then the client's options from
//! `_meta.conclave` of `session/new` or `initialize`), and the store in
//! `.conclave/conclave.db`. Later sessions on the same workspace share that team.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::Mutex as AsyncMutex;

use super::fs::{ClientFsWriter, SessionOfWork};
use super::rpc::{self, Incoming, Peer, RpcError};
use super::session::{Session, SessionFile};
use super::wire::{
    ClientCapabilities, InitializeRequest, ListSessionsRequest, LoadSessionRequest,
    NewSessionRequest, PROTOCOL_VERSION, PromptRequest, SessionIdParams, SessionInfo,
};
use super::workspace::{OWNER_PREFIX, Workspace, engine_error, unknown_session};
use crate::config::WriteMode;
use crate::engine::{
    ClientName, Engine, EngineSetup, Holder, LockError, OpenError, OpenedWorkspace, open_workspace,
};

pub struct Agent {
    peer: Arc<Peer>,
    client: Mutex<ClientCapabilities>,
    /// The client as it named itself in `initialize`: the workspace lock names it, so an
    /// editor refused the folder is told which client holds it.
    client_name: Mutex<Option<ClientName>>,
    /// `_meta.conclave` of `initialize`: options for every workspace.
    options: Mutex<Option<Value>>,
    workspaces: AsyncMutex<HashMap<PathBuf, Arc<Workspace>>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

impl Agent {
    pub fn new(peer: Arc<Peer>) -> Arc<Agent> {
        Arc::new(Agent {
            peer,
            client: Mutex::new(ClientCapabilities::default()),
            client_name: Mutex::new(None),
            options: Mutex::new(None),
            workspaces: AsyncMutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// Whether the client shows `notice` updates.
    pub fn notices(&self) -> bool {
        self.client
            .lock()
            .expect("client")
            .session
            .as_ref()
            .is_some_and(|s| s.notices.is_some())
    }

    /// One message from the client. Requests are answered from tasks of their own, so a
    /// running prompt never holds up a cancel or another session.
    pub fn dispatch(self: &Arc<Self>, message: Incoming) {
        match message {
            Incoming::Request { id, method, params } => {
                let agent = self.clone();
                // Counted now, in arrival order, so a `session/cancel` read right after
                // it cancels this prompt even before its task is submitted.
                let arrival = (method == "session/prompt")
                    .then(|| params.get("sessionId").and_then(Value::as_str))
                    .flatten()
                    .and_then(|id| self.session(id).ok())
                    .map(|session| session.prompt_arrived());
                let loading = (method == "session/load")
                    .then(|| params.get("sessionId").and_then(Value::as_str))
                    .flatten()
                    .map(str::to_string);
                tokio::spawn(async move {
                    let result = agent.handle(&method, params).await;
                    drop(arrival);
                    if let Err(e) = &result {
                        tracing::info!(method, "answered with an error: {}", e.message);
                    }
                    // A session the client now knows is told its commands (`/undo`).
                    let opened = match (&result, method.as_str()) {
                        (Ok(answer), "session/new") => {
                            answer["sessionId"].as_str().map(str::to_string)
                        }
                        (Ok(_), "session/load") => loading,
                        _ => None,
                    };
                    agent.peer.respond(id, result);
                    if let Some(session) = opened.and_then(|id| agent.session(&id).ok()) {
                        session.announce_commands();
                    }
                });
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "session/cancel" => match parse::<SessionIdParams>(params) {
                    Ok(p) => match self.session(&p.session_id) {
                        Ok(session) => session.cancel(),
                        Err(e) => tracing::warn!("session/cancel: {}", e.message),
                    },
                    Err(e) => tracing::warn!("session/cancel: {}", e.message),
                },
                other => tracing::debug!("notification {other} ignored"),
            },
            Incoming::Response { .. } => {}
        }
    }

    async fn handle(self: &Arc<Self>, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => self.initialize(parse(params)?),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(parse(params)?).await,
            "session/load" => self.load_session(parse(params)?).await,
            "session/list" => self.list_sessions(parse(params)?).await,
            "session/close" => self.close_session(parse(params)?),
            "session/prompt" => {
                let request: PromptRequest = parse(params)?;
                let session = self.session(&request.session_id)?;
                session.prompt(request.prompt).await
            }
            other => Err(RpcError::new(
                rpc::METHOD_NOT_FOUND,
                format!("conclave acp does not implement {other}"),
            )
            .with_data(json!({ "method": other }))),
        }
    }

    fn initialize(&self, request: InitializeRequest) -> Result<Value, RpcError> {
        if let Some(version) = &request.protocol_version
            && version.as_u64() != Some(u64::from(PROTOCOL_VERSION))
        {
            tracing::info!("the client asked for protocol version {version}; Conclave speaks 1");
        }
        *self.client.lock().expect("client") = request.client_capabilities;
        *self.client_name.lock().expect("client name") = request
            .client_info
            .filter(|info| !info.name.trim().is_empty())
            .map(|info| ClientName {
                name: format!("{} (ACP)", info.title.unwrap_or(info.name)),
                version: info.version,
            });
        *self.options.lock().expect("options") = conclave_meta(request.meta.as_ref());
        Ok(json!({
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": { "image": false, "audio": false, "embeddedContext": true },
                // Stdio servers always; streamable HTTP too; the older SSE transport not.
                "mcpCapabilities": { "http": true, "sse": false },
                "sessionCapabilities": { "list": {}, "close": {} },
            },
            "authMethods": [],
            "agentInfo": {
                "name": "conclave",
                "title": "Conclave",
                "version": env!("CARGO_PKG_VERSION"),
            },
        }))
    }

    /// The workspace's team, started on first use.
    async fn workspace(&self, cwd: &str, meta: Option<&Value>) -> Result<Arc<Workspace>, RpcError> {
        let given = Path::new(cwd);
        if !given.is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd must be an absolute path, not {cwd:?}"
            )));
        }
        let root = given.canonicalize().map_err(|e| {
            RpcError::invalid_params(format!("the workspace {cwd} cannot be opened: {e}"))
        })?;
        let mut workspaces = self.workspaces.lock().await;
        if let Some(workspace) = workspaces.get(&root) {
            return Ok(workspace.clone());
        }
        let options = conclave_meta(meta).or_else(|| self.options.lock().expect("options").clone());
        let me = Holder::this_process(self.client_name.lock().expect("client name").clone(), None);
        let OpenedWorkspace {
            lock,
            config,
            store,
        } = open_workspace(&root, me, options.as_ref())
            .await
            .map_err(|e| match e {
                OpenError::Lock(e) => {
                    let holder = match &e {
                        LockError::Held { holder, .. } => holder.clone(),
                        LockError::Io { .. } => None,
                    };
                    RpcError::new(1007, e.to_string())
                        .with_data(json!({ "workspace": root, "holder": holder }))
                }
                OpenError::Config(e) => RpcError::invalid_params(e.to_string()),
                other => RpcError::internal(other.to_string()),
            })?;
        let mut setup = EngineSetup::new(&root, config);
        setup.store = Some(store);
        setup.mode = "acp".into();
        let engine = Engine::start(setup).await.map_err(engine_error)?;
        let open: Arc<Mutex<HashSet<String>>> = Arc::default();
        let session_of: SessionOfWork = {
            let engine = Arc::downgrade(&engine);
            let open = open.clone();
            Arc::new(move || {
                let owner = engine.upgrade()?.owner_of_current_work()?;
                let session = owner.strip_prefix(OWNER_PREFIX)?;
                open.lock()
                    .expect("open sessions")
                    .contains(session)
                    .then(|| session.to_string())
            })
        };
        let fs = self.client.lock().expect("client").fs;
        let writes = fs.write_text_file && engine.config().writes == WriteMode::ApplyEdit;
        if writes || fs.read_text_file {
            // The engine's own sandbox: a file the client withholds is withheld from the
            // team's reading too.
            let sandbox = engine.sandbox().clone();
            let timeout =
                std::time::Duration::from_millis(engine.config().editor.apply_edit_timeout_ms);
            engine.set_writer(ClientFsWriter::new(
                self.peer.clone(),
                sandbox,
                session_of,
                timeout,
                (writes, fs.read_text_file),
            ));
        }
        tracing::info!(
            "{}: files are written {} and read {}",
            root.display(),
            if writes {
                "through fs/write_text_file"
            } else {
                "to disk"
            },
            if fs.read_text_file {
                "through fs/read_text_file"
            } else {
                "from disk"
            },
        );
        let workspace = Arc::new(Workspace::new(root.clone(), engine, open, lock));
        workspaces.insert(root, workspace.clone());
        Ok(workspace)
    }

    async fn new_session(self: &Arc<Self>, request: NewSessionRequest) -> Result<Value, RpcError> {
        let workspace = self.workspace(&request.cwd, request.meta.as_ref()).await?;
        let file = SessionFile::new(&workspace.root);
        let session = Session::open(self.peer.clone(), self.notices(), workspace.clone(), file);
        session.save()?;
        let id = session.id.clone();
        attach_mcp_servers(&workspace, &id, request.mcp_servers.as_deref());
        self.sessions
            .lock()
            .expect("sessions")
            .insert(id.clone(), session);
        Ok(json!({ "sessionId": id }))
    }

    async fn load_session(
        self: &Arc<Self>,
        request: LoadSessionRequest,
    ) -> Result<Value, RpcError> {
        // An unknown session is refused before any team is started for it.
        let root = Path::new(&request.cwd)
            .canonicalize()
            .map_err(|_| unknown_session(&request.session_id))?;
        let file = SessionFile::read(&root, &request.session_id)?;
        let workspace = self.workspace(&request.cwd, request.meta.as_ref()).await?;
        if let Some(open) = self
            .sessions
            .lock()
            .expect("sessions")
            .remove(&request.session_id)
        {
            // Loaded again on this connection: the new one takes over.
            open.close();
        }
        let session = Session::open(self.peer.clone(), self.notices(), workspace.clone(), file);
        attach_mcp_servers(&workspace, &session.id, request.mcp_servers.as_deref());
        self.sessions
            .lock()
            .expect("sessions")
            .insert(session.id.clone(), session.clone());
        session.replay().await;
        Ok(json!({}))
    }

    async fn list_sessions(&self, request: ListSessionsRequest) -> Result<Value, RpcError> {
        let _ = request.cursor;
        let roots: Vec<PathBuf> = match &request.cwd {
            Some(cwd) => vec![Path::new(cwd).canonicalize().map_err(|e| {
                RpcError::invalid_params(format!("the workspace {cwd} cannot be opened: {e}"))
            })?],
            None => self.workspaces.lock().await.keys().cloned().collect(),
        };
        let mut sessions: Vec<(bool, DateTime<Utc>, SessionInfo)> = Vec::new();
        for root in roots {
            for file in SessionFile::all(&root) {
                sessions.push((file.turns.is_empty(), file.updated_at, file.info()));
            }
        }
        // Sessions with a conversation first, most recent first; empty ones (opened,
        // never prompted) after them.
        sessions.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let sessions: Vec<SessionInfo> = sessions.into_iter().map(|(_, _, info)| info).collect();
        Ok(json!({ "sessions": sessions }))
    }

    fn close_session(&self, request: SessionIdParams) -> Result<Value, RpcError> {
        let session = self
            .sessions
            .lock()
            .expect("sessions")
            .remove(&request.session_id)
            .ok_or_else(|| unknown_session(&request.session_id))?;
        session.cancel();
        session.close();
        session
            .workspace()
            .engine
            .detach_mcp_servers(&format!("{OWNER_PREFIX}{}", session.id));
        Ok(json!({}))
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        self.sessions
            .lock()
            .expect("sessions")
            .get(id)
            .cloned()
            .ok_or_else(|| unknown_session(id))
    }

    /// Stops every team; their unfinished tasks stay as their last checkpoint.
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .expect("sessions")
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in sessions {
            session.close();
        }
        let workspaces: Vec<Arc<Workspace>> = self
            .workspaces
            .lock()
            .await
            .drain()
            .map(|(_, w)| w)
            .collect();
        for workspace in workspaces {
            workspace.engine.shutdown().await;
        }
    }
}

/// Connects the MCP servers a client offered for the session's tasks (replacing those
/// it had: `session/load` offers them again). One that cannot be used is said in the
/// log and left out; the rest are used.
fn attach_mcp_servers(workspace: &Workspace, session: &str, offered: Option<&[Value]>) {
    let mut servers = Vec::new();
    for offer in offered.unwrap_or_default() {
        match super::wire::mcp_server(offer) {
            Ok(server) => servers.push(server),
            Err(why) => tracing::warn!(session, "an offered MCP server is not used: {why}"),
        }
    }
    let count = servers.len();
    let owner = format!("{OWNER_PREFIX}{session}");
    if !workspace.engine.attach_mcp_servers(&owner, servers) && count > 0 {
        tracing::info!(
            session,
            "the client offered MCP servers, and the pi executor uses its own tools: they are not connected"
        );
    } else if count > 0 {
        tracing::info!(
            session,
            servers = count,
            "the client's MCP servers are connected for this session's tasks"
        );
    }
}

/// `_meta.conclave`: the client's configuration layer (what `initializationOptions` is to
/// the language server).
fn conclave_meta(meta: Option<&Value>) -> Option<Value> {
    meta.and_then(|m| m.get("conclave")).cloned()
}

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}
