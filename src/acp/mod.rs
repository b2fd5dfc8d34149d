//! `conclave acp`: the team behind the Agent Client Protocol (ACP v1), for Zed, the
//! JetBrains IDEs, CodeCompanion.nvim, agent-shell and every other ACP client. A thin
//! front-end over the engine, like `src/lsp/` (docs/acp.md has the whole mapping).
//!
//! - `rpc.rs` — newline-delimited JSON-RPC over stdio, tolerant of bad lines.
//! - `wire.rs` — the ACP types Conclave speaks.
//! - `agent.rs` — the methods: `initialize`, `session/new|load|list|close|prompt`,
//!   `session/cancel`; one engine per workspace (`cwd`), with its lock and store.
//! - `session.rs` — a session: its saved turns, a prompt as a task followed to its end,
//!   approvals as `session/request_permission`; `session/undo.rs` the `/undo` command.
//! - `translate.rs` — engine events to `session/update`s, pure and unit-tested.
//! - `fs.rs` — the `fs/write_text_file` writer, with its disk fallback.
//! - `workspace.rs` — one workspace's team shared by its sessions, and the methods'
//!   errors in its terms (so `session.rs` needs nothing of `agent.rs`).
//!
//! Stdout carries protocol lines only; logs go to stderr. The end of stdin stops every
//! team (unfinished tasks stay checkpointed, to resume on `session/load`) and ends with 0.

mod agent;
mod fs;
pub mod rpc;
mod session;
pub mod translate;
pub mod wire;
mod workspace;

use tokio::io::{AsyncRead, AsyncWrite};

/// Serves one client over stdin/stdout until stdin ends; returns the exit code.
pub async fn serve() -> i32 {
    serve_on(tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve`] over any pair of streams.
pub async fn serve_on<I, O>(input: I, output: O) -> i32
where
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (peer, writer) = rpc::Peer::new(output);
    let agent = agent::Agent::new(peer.clone());
    rpc::read_loop(input, &peer, |message| agent.dispatch(message)).await;
    tracing::info!("the client closed the connection; stopping");
    peer.closed.cancel();
    agent.shutdown().await;
    drop(agent);
    drop(peer);
    // Whatever was queued is written before the end (the writer ends once every sender
    // is gone; a task still holding one is given a moment).
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), writer).await;
    0
}
