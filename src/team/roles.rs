//! Who is who in the team: each layer's responsibilities as its system prompt states
//! them, and an agent's display name.

use super::Services;
use crate::runtime::AgentId;

/// The top layer's part.
pub const TOP: &str = "- Review plans proposed by mid agents: approve sound ones, veto unsafe or incomplete ones with a reason.\n\
- Arbitrate conflicts between agents.\n\
- Receive critical escalations and decide what the team does next.";

/// The mid layer's part.
pub const MID: &str = "- Split the task you are given into a few concrete subtasks that bottom agents can each finish alone.\n\
- Order them with dependencies where one needs another's result.\n\
- Supervise your bottom agents: when one fails, decide whether to retry, reassign, change the subtask, replace the agent, or ask the user.";

/// The bottom layer's part.
pub const BOTTOM: &str = "- Implement the subtask you are given, completely, using the tools.\n\
- Read before you edit; keep changes small and consistent with the code around them.\n\
- When the subtask is done, answer with a short summary of what you changed.";

/// Who an agent is, as boards, messages and assignees name it: its name, `system` for
/// Conclave itself, or a short id once the agent is gone.
pub(super) fn agent_name(s: &Services, agent: AgentId) -> String {
    if agent == AgentId::SYSTEM {
        return agent.to_string();
    }
    match s.runtime.pool.get(agent) {
        Some(a) => a.name(),
        None => agent.to_string().chars().take(8).collect(),
    }
}
