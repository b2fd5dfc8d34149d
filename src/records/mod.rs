//! The records: the plain data the store persists and the wire carries — agents and their
//! status changes, messages, whiteboard versions, decisions and arbitrations, tasks with
//! their subtasks, checks, failures and usage, recovery steps and approvals.
//!
//! On the floor just above the configuration, below the store: the store writes and
//! reads these and imports nothing from the runtime or recovery above it. What acts on
//! them (the registries, the bus, governance, the ladder, the meter) stays up there and
//! re-exports them, so `runtime::TaskRecord` and `recovery::Failure` still name them.
//! Their serde forms are the stored encodings: changing one changes what old
//! checkpoints read as.

pub mod agent;
pub mod approval;
pub mod decision;
pub mod event;
pub mod failure;
pub mod message;
pub mod task;
pub mod usage;
pub mod whiteboard;

pub use agent::{
    AgentConfig, AgentError, AgentMetrics, AgentStatus, Capability, Layer, ModelSettings,
    PowerType, TopPower, Transition,
};
pub use approval::{
    ApprovalAnswer, ApprovalChoice, ApprovalKind, ApprovalOption, ApprovalRequest, FileDiff,
};
pub use decision::{
    ArbitrationResult, Decision, DecisionStatus, Quorum, Signature, Signer, Veto, Vote,
};
pub use event::{EventScope, RecoveryAction, RecoveryEvent};
pub use failure::{Failure, FailureKind, RootCause, Scope};
pub use message::{
    Body, BodyError, Heartbeat, Message, MessageKind, PeerHelpAnswer, PeerHelpRequest, Priority,
    Recipient, SignatureRequest, Warning,
};
pub use task::{
    CheckCounts, CheckResult, CheckStatus, Evidence, FinalReport, KeptFile, OversightTally,
    Reverted, RevertedBy, Subtask, SubtaskStatus, TaskContext, TaskError, TaskOptions, TaskRecord,
    TaskStatus,
};
pub use usage::{TaskUsage, TokenUsage};
pub use whiteboard::{Operation, Snapshot, WhiteboardError, WhiteboardId};
