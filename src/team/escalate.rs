//! The rungs of the ladder above retrying, as the team carries them out: a peer takes
//! the subtask over, the supervisor proposes a solution, a person decides. Which rung
//! comes next is decided by the pure ladder (`recovery::ladder`), never here.

use std::sync::Arc;

use serde::Deserialize;

use super::Services;
use crate::config::TeamLayer;
use crate::model::structured::{StructuredOutput, ask_json, noting_repairs};
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::Failure;
use crate::recovery::{FailureKind, Severity};
use crate::runtime::{
    AgentContext, AgentId, AgentMetrics, AgentStatus, ApprovalAnswer, ApprovalRequest, Body, Layer,
    Message, MessageKind, PeerHelpAnswer, PeerHelpRequest, SubtaskId, TaskId, TaskRecord,
};

/// PeerTakeoverCoordinator: asks idle peers of the failing agent, one at a time, to take
/// the subtask over. The first to accept gets it.
pub(super) async fn peer_takeover(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task: &TaskRecord,
    subtask_id: SubtaskId,
    failing: AgentId,
    exclude: &[AgentId],
    failure: &Failure,
) -> Option<AgentId> {
    let patience = s.answer_patience();
    let peers: Vec<AgentId> = s
        .runtime
        .pool
        .by_layer(Layer::Bottom)
        .into_iter()
        .filter(|a| {
            a.id() != failing && !exclude.contains(&a.id()) && a.status() == AgentStatus::Idle
        })
        .map(|a| a.id())
        .take(3)
        .collect();
    if peers.is_empty() {
        tracing::info!(task = %task.id, "no idle peer for a takeover");
    }
    for peer in peers {
        let help = PeerHelpRequest {
            task_id: task.id,
            subtask_id,
            reason: failure.message.clone(),
        };
        let request = Message::carrying(failing, peer, &help).with_task(task.id.to_string());
        // A peer passed over is said on the asking agent's board, with why.
        let passed_over = match ctx.bus.request(request, patience).await {
            Ok(reply) => match reply.body::<PeerHelpAnswer>() {
                Ok(answer) if answer.accepted => return Some(peer),
                Ok(answer) => format!("declined the takeover ({})", answer.reason),
                Err(e) => format!("gave no usable answer ({e})"),
            },
            Err(e) => {
                tracing::info!(peer = %peer, "peer did not answer the help request: {e}");
                format!(
                    "did not answer the help request within {} ms",
                    patience.as_millis()
                )
            }
        };
        let _ = ctx.append_own_board(&format!(
            "- {} {passed_over}",
            super::roles::agent_name(s, peer)
        ));
    }
    None
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ProposedAction {
    ReplaceAgent,
    Reassign,
    Modify,
    Pause,
}

impl ProposedAction {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            ProposedAction::ReplaceAgent => "replace_agent",
            ProposedAction::Reassign => "reassign",
            ProposedAction::Modify => "modify",
            ProposedAction::Pause => "pause",
        }
    }
}

/// A subtask's trouble told up the hierarchy (`issue_escalation`): to its supervisor
/// with the failure and the supervisor's proposal, to the top layer when it is fatal, or
/// to the top when it waits for a person. A blocker, which asks for a verdict, is a
/// `progress::SubtaskEnded` instead.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct EscalationNotice {
    pub(super) task_id: TaskId,
    pub(super) subtask_id: SubtaskId,
    pub(super) message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) kind: Option<FailureKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) severity: Option<Severity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) fatal: Option<bool>,
    /// The failing agent's metrics, for the supervisor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) metrics: Option<AgentMetrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) proposed_solution: Option<SolutionProposal>,
    /// `"person"` while the subtask waits for a person's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) waiting_for: Option<String>,
}

impl EscalationNotice {
    pub(super) fn of(task_id: TaskId, subtask_id: SubtaskId, failure: &Failure) -> Self {
        EscalationNotice {
            task_id,
            subtask_id,
            message: failure.message.clone(),
            kind: Some(failure.kind),
            severity: Some(failure.severity),
            fatal: None,
            metrics: None,
            proposed_solution: None,
            waiting_for: None,
        }
    }
}

impl Body for EscalationNotice {
    const NAME: &'static str = "an escalation";
    const KINDS: &'static [MessageKind] = &[MessageKind::IssueEscalation];
}

/// What a supervisor proposes for an escalated subtask.
#[derive(Clone, Debug, PartialEq, serde::Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SolutionProposal {
    pub(super) action: ProposedAction,
    pub(super) reason: String,
    #[serde(default)]
    pub(super) modified_description: Option<String>,
}

impl StructuredOutput for SolutionProposal {
    const INSTRUCTIONS: &'static str = "Answer with one JSON object and nothing else: \
        {\"action\": \"replace_agent\" | \"reassign\" | \"modify\" | \"pause\", \"reason\": string, \
        \"modifiedDescription\": string (required for modify: the subtask rewritten so it can succeed)}";

    fn validate(&self) -> Result<(), String> {
        if self.action == ProposedAction::Modify
            && self
                .modified_description
                .as_deref()
                .is_none_or(|d| d.trim().is_empty())
        {
            return Err("modify needs a modifiedDescription".into());
        }
        Ok(())
    }
}

/// SupervisorEscalationHandler's proposal: asks the model; without one (or when it
/// fails), a rule: replace an agent whose score has dropped, else reassign.
pub(super) async fn propose_solution(
    ctx: &AgentContext,
    s: &Arc<Services>,
    task_id: TaskId,
    description: &str,
    failing: AgentId,
    failure: &Failure,
) -> SolutionProposal {
    let metrics = s.runtime.pool.get(failing).map(|a| a.metrics());
    if let Some(model) = &s.model(TeamLayer::Mid) {
        let request = ModelRequest {
            system: ctx.system_prompt(super::roles::MID),
            messages: vec![ChatMessage::user(format!(
                "A bottom agent ({}) keeps failing a subtask after retries and a peer takeover.\n\nSubtask: {description}\n\nError ({}, {}): {}\n\nAgent metrics: {}\n\nPropose what to do.",
                agent_name(s, failing),
                failure.kind,
                failure.severity,
                failure.message,
                serde_json::to_string(&metrics).unwrap_or_default()
            ))],
            tools: Vec::new(),
            max_tokens: 512,
            temperature: s.temperature(TeamLayer::Mid),
        };
        let (proposal, repairs) =
            noting_repairs(ask_json::<SolutionProposal>(model.as_ref(), &request)).await;
        super::check::record_repairs(s, task_id, &repairs);
        match proposal {
            Ok(proposal) => return proposal,
            Err(e) => tracing::info!("no model-proposed solution ({e}); proposing by rule"),
        }
    }
    let score = metrics.map(|m| m.performance_score).unwrap_or(100.0);
    if score < 50.0 {
        SolutionProposal {
            action: ProposedAction::ReplaceAgent,
            reason: format!("performance score {score:.0} is below 50"),
            modified_description: None,
        }
    } else {
        SolutionProposal {
            action: ProposedAction::Pause,
            reason: "the failure persists across agents; a person should decide".into(),
            modified_description: None,
        }
    }
}

/// Asks the person at the editor or terminal what to do (approval kind escalation).
pub(super) async fn ask_person(
    s: &Arc<Services>,
    task: &TaskRecord,
    subtask_id: SubtaskId,
    assignee: AgentId,
    description: &str,
    failure: &Failure,
) -> Option<ApprovalAnswer> {
    let position = task
        .subtasks
        .iter()
        .position(|st| st.id == subtask_id)
        .map(|index| (index + 1, task.subtasks.len()));
    // The person sees what went wrong first, not only its latest consequence.
    let (root_kind, root_message) = failure.root();
    let error = if root_kind != failure.kind || root_message != failure.message {
        format!(
            "{}\n\nfirst error ({root_kind}): {root_message}",
            failure.message
        )
    } else {
        failure.message.clone()
    };
    let request = ApprovalRequest::escalation(crate::runtime::Escalation {
        task_id: task.id,
        task_title: &task.title,
        subtask_id,
        position,
        description,
        agent_id: assignee.to_string(),
        severity: failure.severity,
        error_kind: failure.kind.as_str(),
        error: &error,
    });
    s.tasks.update(task.id, TaskRecord::refresh_status);
    s.approvals.ask(request).await
}

fn agent_name(s: &Services, agent: AgentId) -> String {
    super::roles::agent_name(s, agent)
}
