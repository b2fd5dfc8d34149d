//! Conclave: a team of AI agents behind a language-server edge.
//!
//! The modules follow the flow of data, each on a floor that imports only those below
//! it: ARCHITECTURE.md draws the house, and `tidy.rs` checks it.

pub mod acp;
pub mod checks;
pub mod config;
pub mod engine;
pub mod exec;
pub mod executor;
pub mod ids;
pub mod jsonrpc;
pub mod lsp;
pub mod model;
pub mod records;
pub mod recovery;
pub mod redact;
pub mod runtime;
pub mod store;
pub mod team;
#[cfg(test)]
mod tidy;
pub mod tools;
pub mod undo;
pub mod wire;
