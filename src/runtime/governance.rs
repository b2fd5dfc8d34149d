//! Governance: decisions that need signatures, and arbitration of conflicts by a
//! weighted vote of the top layer.
//!
//! A decision names its required signers with their vote weights and a quorum. Under
//! `All` every signer must sign and any veto ends it; under `WeightedMajority` it is
//! approved once signed weight is more than half of the total, and vetoed once the
//! vetoed weight makes even a tie impossible, or every signer has voted without a
//! majority (a tie, which the proposer can take to arbitration). A decision with a deadline expires unsigned.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use dashmap::DashMap;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use uuid::Uuid;

use super::bus::Bus;
use super::events::EventBus;
use super::journal::Journal;
use super::whiteboard::{Accessor, Whiteboards};
use crate::ids::AgentId;
use crate::records::{
    ArbitrationResult, Decision, DecisionStatus, Message, MessageKind, Priority, Quorum, Signature,
    SignatureRequest, Signer, Veto, Vote, WhiteboardId,
};
use crate::store::{Record, Store};

impl Decision {
    fn total_weight(&self) -> f64 {
        self.required_signers.iter().map(|s| s.weight).sum()
    }

    fn weight_of<'a>(&self, agents: impl Iterator<Item = &'a AgentId>) -> f64 {
        agents
            .filter_map(|a| self.required_signers.iter().find(|s| s.agent == *a))
            .map(|s| s.weight)
            .sum()
    }

    /// The status the signatures and vetoes so far add up to.
    fn evaluate(&self) -> DecisionStatus {
        let total = self.total_weight();
        match self.quorum {
            Quorum::All => {
                if !self.vetoes.is_empty() {
                    DecisionStatus::Vetoed
                } else if self.signatures.len() == self.required_signers.len() {
                    DecisionStatus::Approved
                } else {
                    DecisionStatus::Pending
                }
            }
            Quorum::WeightedMajority => {
                let signed = self.weight_of(self.signatures.iter().map(|s| &s.agent));
                let vetoed = self.weight_of(self.vetoes.iter().map(|v| &v.agent));
                let everyone =
                    self.signatures.len() + self.vetoes.len() >= self.required_signers.len();
                if signed * 2.0 > total {
                    DecisionStatus::Approved
                } else if (total - vetoed) * 2.0 < total || everyone {
                    // While a tie is still possible the decision waits for the last
                    // votes, so a split top layer can be arbitrated (`team/plan.rs`).
                    DecisionStatus::Vetoed
                } else {
                    DecisionStatus::Pending
                }
            }
        }
    }
}

/// What a proposer asks for.
#[derive(Clone, Debug)]
pub struct Proposal {
    pub proposer: AgentId,
    pub title: String,
    pub content: serde_json::Value,
    pub signers: Vec<Signer>,
    pub quorum: Quorum,
    /// How long signers have; `None` waits for ever.
    pub ttl: Option<Duration>,
}

/// A disagreement between agents, settled by the top layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub id: Uuid,
    pub task_id: Option<String>,
    pub description: String,
    pub parties: Vec<AgentId>,
    pub options: Vec<String>,
}

/// A top agent's standing in an arbitration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Voter {
    pub agent: AgentId,
    pub weight: f64,
    /// 0 is the most senior.
    pub seniority: usize,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GovernanceError {
    #[error("no decision {0}")]
    NotFound(Uuid),
    #[error("{agent} is not a required signer of decision {decision}")]
    NotASigner { agent: AgentId, decision: Uuid },
    #[error("{agent} has already voted on decision {decision}")]
    AlreadyVoted { agent: AgentId, decision: Uuid },
    #[error("decision {decision} is already {status:?}")]
    NotPending {
        decision: Uuid,
        status: DecisionStatus,
    },
    #[error("a decision needs at least one signer with a positive weight")]
    NoSigners,
    #[error("arbitration of conflict {conflict} is invalid: {reason}")]
    InvalidArbitration { conflict: Uuid, reason: String },
}

struct Entry {
    decision: Arc<Decision>,
    status: watch::Sender<DecisionStatus>,
}

/// The governance engine, cheap to clone.
#[derive(Clone)]
pub struct Governance {
    decisions: Arc<DashMap<Uuid, Entry>>,
    journal: Journal,
    bus: Bus,
    whiteboards: Whiteboards,
}

impl Governance {
    pub fn new(bus: Bus, whiteboards: Whiteboards, events: EventBus, store: Option<Store>) -> Self {
        Governance {
            decisions: Arc::new(DashMap::new()),
            journal: Journal::new(events, store),
            bus,
            whiteboards,
        }
    }

    /// Opens a decision, sends a signature_request to every signer on the bus, and
    /// schedules its expiry.
    pub fn propose(&self, proposal: Proposal) -> Result<Arc<Decision>, GovernanceError> {
        if proposal.signers.is_empty() || proposal.signers.iter().all(|s| s.weight <= 0.0) {
            return Err(GovernanceError::NoSigners);
        }
        let now = Utc::now();
        let decision = Arc::new(Decision {
            id: Uuid::new_v4(),
            proposer: proposal.proposer,
            title: proposal.title,
            content: proposal.content,
            required_signers: proposal.signers,
            quorum: proposal.quorum,
            status: DecisionStatus::Pending,
            signatures: Vec::new(),
            vetoes: Vec::new(),
            created_at: now,
            deadline: proposal
                .ttl
                .and_then(|ttl| chrono::Duration::from_std(ttl).ok())
                .map(|ttl| now + ttl),
        });
        let (status, _) = watch::channel(DecisionStatus::Pending);
        self.decisions.insert(
            decision.id,
            Entry {
                decision: decision.clone(),
                status,
            },
        );
        self.publish(&decision);
        for signer in &decision.required_signers {
            if !self.bus.is_registered(signer.agent) {
                continue;
            }
            let body = SignatureRequest {
                decision_id: decision.id,
                title: decision.title.clone(),
            };
            let request = Message::carrying(decision.proposer, signer.agent, &body)
                .with_priority(Priority::High);
            if let Err(e) = self.bus.send(request) {
                tracing::warn!(decision = %decision.id, signer = %signer.agent, "signature request not delivered: {e}");
            }
        }
        if let Some(ttl) = proposal.ttl {
            let governance = self.clone();
            let id = decision.id;
            tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                // Already decided is the normal case here, not an error worth reporting.
                let _ = governance.expire(id);
            });
        }
        Ok(decision)
    }

    pub fn sign(&self, id: Uuid, agent: AgentId) -> Result<Arc<Decision>, GovernanceError> {
        self.update(id, agent, |decision| {
            decision.signatures.push(Signature {
                agent,
                at: Utc::now(),
            })
        })
    }

    pub fn veto(
        &self,
        id: Uuid,
        agent: AgentId,
        reason: impl Into<String>,
    ) -> Result<Arc<Decision>, GovernanceError> {
        let reason = reason.into();
        self.update(id, agent, |decision| {
            decision.vetoes.push(Veto {
                agent,
                reason,
                at: Utc::now(),
            })
        })
    }

    /// Ends a still-pending decision as expired.
    pub fn expire(&self, id: Uuid) -> Result<Arc<Decision>, GovernanceError> {
        self.transform(id, |decision| {
            let mut next = decision.clone();
            next.status = DecisionStatus::Expired;
            Ok(next)
        })
    }

    pub fn get(&self, id: Uuid) -> Option<Arc<Decision>> {
        self.decisions.get(&id).map(|e| e.decision.clone())
    }

    pub fn pending(&self) -> Vec<Arc<Decision>> {
        self.decisions
            .iter()
            .filter(|e| e.decision.status == DecisionStatus::Pending)
            .map(|e| e.decision.clone())
            .collect()
    }

    /// Waits until the decision is no longer pending and returns how it ended.
    pub async fn outcome(&self, id: Uuid) -> Result<DecisionStatus, GovernanceError> {
        let mut status = self
            .decisions
            .get(&id)
            .map(|e| e.status.subscribe())
            .ok_or(GovernanceError::NotFound(id))?;
        let settled = status
            .wait_for(|s| *s != DecisionStatus::Pending)
            .await
            .map(|s| *s)
            // The sender lives as long as the entry, which is never removed.
            .unwrap_or(DecisionStatus::Expired);
        Ok(settled)
    }

    fn update(
        &self,
        id: Uuid,
        agent: AgentId,
        vote: impl FnOnce(&mut Decision),
    ) -> Result<Arc<Decision>, GovernanceError> {
        self.transform(id, |decision| {
            if !decision.required_signers.iter().any(|s| s.agent == agent) {
                return Err(GovernanceError::NotASigner {
                    agent,
                    decision: id,
                });
            }
            let voted = decision.signatures.iter().any(|s| s.agent == agent)
                || decision.vetoes.iter().any(|v| v.agent == agent);
            if voted {
                return Err(GovernanceError::AlreadyVoted {
                    agent,
                    decision: id,
                });
            }
            let mut next = decision.clone();
            vote(&mut next);
            next.status = next.evaluate();
            Ok(next)
        })
    }

    /// Applies `change` to a pending decision atomically, then records and publishes it.
    fn transform(
        &self,
        id: Uuid,
        change: impl FnOnce(&Decision) -> Result<Decision, GovernanceError>,
    ) -> Result<Arc<Decision>, GovernanceError> {
        let decision = {
            let mut entry = self
                .decisions
                .get_mut(&id)
                .ok_or(GovernanceError::NotFound(id))?;
            if entry.decision.status != DecisionStatus::Pending {
                return Err(GovernanceError::NotPending {
                    decision: id,
                    status: entry.decision.status,
                });
            }
            let next = Arc::new(change(&entry.decision)?);
            entry.decision = next.clone();
            entry.status.send_replace(next.status);
            next
        };
        self.publish(&decision);
        Ok(decision)
    }

    fn publish(&self, decision: &Arc<Decision>) {
        self.journal.keep(Record::Decision(decision.clone()));
    }

    /// Settles `conflict` by the weighted `votes` of `voters` (the top layer), appends the
    /// result to the global board and sends it to every party as arbitration_result.
    pub fn arbitrate(
        &self,
        conflict: &Conflict,
        voters: &[Voter],
        votes: Vec<Vote>,
    ) -> Result<Arc<ArbitrationResult>, GovernanceError> {
        let result = Arc::new(tally(conflict, voters, votes)?);
        let line = format!(
            "- Arbitration of conflict {}: \"{}\" chosen for \"{}\" (weights {:?}{})",
            conflict.id,
            result.chosen_option,
            conflict.description,
            result.tally,
            result
                .tie_broken_by
                .map(|a| format!(", tie broken by seniority of {a}"))
                .unwrap_or_default()
        );
        if let Err(e) = self
            .whiteboards
            .append(&Accessor::System, WhiteboardId::Global, &line)
        {
            tracing::warn!("arbitration not written to the global board: {e}");
        }
        let payload = serde_json::to_value(&*result).unwrap_or_default();
        for party in &conflict.parties {
            let mut message = Message::to_agent(
                AgentId::SYSTEM,
                *party,
                MessageKind::ArbitrationResult,
                payload.clone(),
            )
            .with_priority(Priority::High);
            message.task_id = conflict.task_id.clone();
            if let Err(e) = self.bus.send(message) {
                tracing::warn!(party = %party, "arbitration result not delivered: {e}");
            }
        }
        self.journal.keep(Record::Arbitration(result.clone()));
        Ok(result)
    }
}

/// The weighted count behind [`Governance::arbitrate`]: the option with the most weight
/// wins; among tied options, the one chosen by the most senior voter who chose any of them.
pub fn tally(
    conflict: &Conflict,
    voters: &[Voter],
    votes: Vec<Vote>,
) -> Result<ArbitrationResult, GovernanceError> {
    let invalid = |reason: String| GovernanceError::InvalidArbitration {
        conflict: conflict.id,
        reason,
    };
    if conflict.options.is_empty() {
        return Err(invalid("the conflict has no options".into()));
    }
    let mut weights = vec![0.0; conflict.options.len()];
    for (i, vote) in votes.iter().enumerate() {
        let voter = voters
            .iter()
            .find(|v| v.agent == vote.voter)
            .ok_or_else(|| invalid(format!("{} is not a voter", vote.voter)))?;
        if votes[..i].iter().any(|v| v.voter == vote.voter) {
            return Err(invalid(format!("{} voted twice", vote.voter)));
        }
        let slot = weights.get_mut(vote.option).ok_or_else(|| {
            invalid(format!(
                "{} voted for option {} of {}",
                vote.voter,
                vote.option,
                conflict.options.len()
            ))
        })?;
        *slot += voter.weight;
    }
    let best = weights.iter().cloned().fold(f64::MIN, f64::max);
    if votes.is_empty() || best <= 0.0 {
        return Err(invalid("no votes with weight were cast".into()));
    }
    let tied: Vec<usize> = (0..weights.len())
        .filter(|&i| (weights[i] - best).abs() < 1e-9)
        .collect();
    let (chosen, tie_broken_by) = if tied.len() == 1 {
        (tied[0], None)
    } else {
        let senior = votes
            .iter()
            .filter(|v| tied.contains(&v.option))
            .filter_map(|v| {
                voters
                    .iter()
                    .find(|voter| voter.agent == v.voter)
                    .map(|voter| (voter.seniority, v))
            })
            .min_by_key(|(seniority, _)| *seniority)
            .map(|(_, v)| v)
            .expect("a tied option with positive weight has a voter");
        (senior.option, Some(senior.voter))
    };
    Ok(ArbitrationResult {
        conflict_id: conflict.id,
        chosen,
        chosen_option: conflict.options[chosen].clone(),
        tally: weights,
        tie_broken_by,
        votes,
        at: Utc::now(),
    })
}
