//! Conclave's integration tests, one binary: each file a module (`cargo test --test it
//! lsp_tasks::` runs one), the shared helpers in `support/` compiled once.
//!
//! The tests run in parallel in this one process: no test may change the process's
//! environment or current directory (give a spawned child its own instead).

mod support;

mod cli_demo;
mod cli_intent;
mod cli_run;
mod cli_undo;
mod durability_kill;
mod durability_log;
mod durability_resume;
mod executor_builtin;
mod faults_reports;
mod faults_run;
mod faults_team;
mod lsp_approvals;
mod lsp_edits;
mod lsp_lifecycle;
mod lsp_protocol;
mod lsp_tasks;
mod lsp_undo;
mod mcp_tools;
mod models_anthropic;
mod models_openai;
mod models_resilience;
mod models_scripted;
mod models_structured;
mod pi_executor;
mod runtime_agents;
mod runtime_bus;
mod runtime_governance;
mod runtime_heartbeats;
mod runtime_whiteboards;
mod security;
mod store_reopen;
mod team_flow;
mod team_outcomes;
mod team_oversight;
mod team_peers;
mod team_recovery;
mod team_review;
mod tools_bash;
mod tools_file;
mod tools_http;
mod tools_sandbox;
mod tools_search;
mod usage_cost;
