//! Conclave: a team of AI agents behind a language-server edge.
//!
//! The modules follow the flow of data (see ARCHITECTURE.md):
//! configuration → runtime (agents, bus, whiteboards, governance, pool, heartbeats)
//! → work (models, tools, executor) → recovery → store.

pub mod acp;
pub mod checks;
pub mod config;
pub mod engine;
pub mod exec;
pub mod executor;
pub mod jsonrpc;
pub mod lsp;
pub mod model;
pub mod recovery;
pub mod redact;
pub mod runtime;
pub mod store;
pub mod team;
pub mod tools;
pub mod undo;
