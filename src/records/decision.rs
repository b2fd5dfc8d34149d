//! Decisions and arbitrations as they are recorded: a decision with its signers,
//! signatures and vetoes, and the outcome of a weighted vote on a conflict. How a
//! decision is signed and a conflict arbitrated is `runtime::Governance`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::ids::AgentId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Quorum {
    All,
    WeightedMajority,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionStatus {
    Pending,
    Approved,
    Vetoed,
    Expired,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signer {
    pub agent: AgentId,
    pub weight: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Signature {
    pub agent: AgentId,
    pub at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Veto {
    pub agent: AgentId,
    pub reason: String,
    pub at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    pub id: Uuid,
    pub proposer: AgentId,
    pub title: String,
    pub content: serde_json::Value,
    pub required_signers: Vec<Signer>,
    pub quorum: Quorum,
    pub status: DecisionStatus,
    pub signatures: Vec<Signature>,
    pub vetoes: Vec<Veto>,
    pub created_at: DateTime<Utc>,
    pub deadline: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Vote {
    pub voter: AgentId,
    /// Index into the conflict's options.
    pub option: usize,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArbitrationResult {
    pub conflict_id: Uuid,
    pub chosen: usize,
    pub chosen_option: String,
    /// Weight received by each option, in option order.
    pub tally: Vec<f64>,
    /// Set when options tied on weight and seniority decided: the deciding voter.
    pub tie_broken_by: Option<AgentId>,
    pub votes: Vec<Vote>,
    pub at: DateTime<Utc>,
}
