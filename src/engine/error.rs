//! The errors a front-end can get from the engine, each with its protocol code
//! (docs/protocol.md, "Application errors") and a `data` object naming the offending value.

use serde_json::{Value, json};

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("no task {0}")]
    TaskNotFound(String),
    #[error("no pending approval {0}")]
    ApprovalNotFound(String),
    #[error("no whiteboard `{0}`")]
    WhiteboardNotFound(String),
    #[error("no model is configured: {0}")]
    LlmNotConfigured(String),
    #[error("{path} is outside the workspace")]
    PathOutsideWorkspace { path: String },
    #[error("the team cannot grow past {max} agents (team.maxAgents)")]
    AgentPoolFull { max: usize },
    #[error("{message}")]
    InvalidState { message: String, value: Value },
    #[error("{0}")]
    Internal(String),
}

impl EngineError {
    pub fn code(&self) -> i64 {
        match self {
            EngineError::TaskNotFound(_) => 1001,
            EngineError::ApprovalNotFound(_) => 1002,
            EngineError::WhiteboardNotFound(_) => 1003,
            EngineError::LlmNotConfigured(_) => 1004,
            EngineError::PathOutsideWorkspace { .. } => 1005,
            EngineError::AgentPoolFull { .. } => 1006,
            EngineError::InvalidState { .. } => 1007,
            EngineError::Internal(_) => -32603,
        }
    }

    pub fn data(&self) -> Value {
        match self {
            EngineError::TaskNotFound(id) => json!({ "taskId": id }),
            EngineError::ApprovalNotFound(id) => json!({ "approvalId": id }),
            EngineError::WhiteboardNotFound(id) => json!({ "id": id }),
            EngineError::LlmNotConfigured(_) => json!({ "setting": "llm.provider" }),
            EngineError::PathOutsideWorkspace { path } => json!({ "path": path }),
            EngineError::AgentPoolFull { max } => json!({ "maxAgents": max }),
            EngineError::InvalidState { value, .. } => value.clone(),
            EngineError::Internal(_) => Value::Null,
        }
    }
}
