//! Helpers shared by the test modules (some also by the benches, through `#[path]`).

pub mod common;
pub mod faults;
pub mod lsp;
pub mod models;
pub mod run;
pub mod team;
