//! The engine's events as ACP `session/update`s: pure state, no I/O, unit-tested.
//!
//! This is the one place that reads the engine's task and recovery shapes for ACP; when
//! those change (the recovery and usage work), only this file follows.
//!
//! - A task's subtasks are the `plan` (always the whole list, sent when it changed).
//! - Each subtask is one `tool_call` (its id is the subtask id), then `tool_call_update`s
//!   with only what changed: status, who works on it and which attempt, the recovery
//!   steps it went through ("retry 2/3 in 4 s", "handed to bottom-1-2", "escalated"),
//!   and the files it wrote as locations.
//! - Whiteboard lines the team appends are gathered and sent as one agent message per
//!   interval ([`BoardNotes`]).
//! - The end of the task is an agent message: the mid's summary, the files, and for a
//!   failed task why, with ERROR_REPORT.md.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;

use super::wire::{
    Cost, NoticeSeverity, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolKind, UsageUpdate,
};
use crate::records::TaskUsage;
use crate::recovery::{RecoveryAction, RecoveryEvent};
use crate::runtime::{AgentId, SubtaskStatus, TaskStatus};
use crate::wire::{SubtaskSummary, TaskDetail, TaskSummary};

/// What one subtask's tool call last showed.
#[derive(Clone, Debug, PartialEq)]
struct CallShown {
    /// Who works on it and which attempt.
    head: Option<String>,
    title: String,
    kind: ToolKind,
    status: ToolCallStatus,
    content: Vec<ToolCallContent>,
    locations: Vec<ToolCallLocation>,
}

/// One task as the client has been shown it so far.
pub struct TaskView {
    workspace: PathBuf,
    plan: Option<Vec<PlanEntry>>,
    calls: HashMap<String, CallShown>,
    /// Recovery lines per subtask, in order.
    steps: HashMap<String, Vec<String>>,
    /// Recovery steps already taken in (the same step arrives as an event and again as
    /// the task's latest step).
    seen: HashSet<String>,
}

impl TaskView {
    pub fn new(workspace: &Path) -> TaskView {
        TaskView {
            workspace: workspace.to_path_buf(),
            plan: None,
            calls: HashMap::new(),
            steps: HashMap::new(),
            seen: HashSet::new(),
        }
    }

    /// The updates that bring the client from what it was shown to `task`.
    pub fn task(
        &mut self,
        task: &TaskSummary,
        name_of: &dyn Fn(AgentId) -> String,
    ) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        if let Some(step) = &task.recovery {
            updates.extend(self.recovery(step, name_of));
        }
        let entries: Vec<PlanEntry> = task.subtasks.iter().map(plan_entry).collect();
        if !entries.is_empty() && self.plan.as_ref() != Some(&entries) {
            updates.push(SessionUpdate::Plan {
                entries: entries.clone(),
            });
            self.plan = Some(entries);
        }
        for subtask in &task.subtasks {
            if let Some(update) = self.call(subtask, name_of) {
                updates.push(update);
            }
        }
        updates
    }

    /// One recovery step of the task: a line on its subtask's tool call, or an agent
    /// message when it is about the task as a whole.
    pub fn recovery(
        &mut self,
        step: &RecoveryEvent,
        name_of: &dyn Fn(AgentId) -> String,
    ) -> Vec<SessionUpdate> {
        let key = format!(
            "{}|{:?}|{}|{}|{}",
            step.at,
            step.action,
            step.attempt,
            step.subtask_id.as_deref().unwrap_or(""),
            step.message
        );
        if !self.seen.insert(key) {
            return Vec::new();
        }
        let line = recovery_line(step, name_of);
        match step.subtask_id.as_deref() {
            Some(subtask) if self.calls.contains_key(subtask) => {
                self.steps
                    .entry(subtask.to_string())
                    .or_default()
                    .push(line);
                let shown = self.calls.get_mut(subtask).expect("known call");
                let content = content_for(shown.head.as_deref(), self.steps.get(subtask));
                shown.content = content.clone();
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    tool_call_id: subtask.to_string(),
                    content: Some(content),
                    ..ToolCallUpdate::default()
                })]
            }
            Some(subtask) => {
                // Not shown yet: the line goes on the call when it first appears.
                self.steps
                    .entry(subtask.to_string())
                    .or_default()
                    .push(line);
                Vec::new()
            }
            None => vec![SessionUpdate::agent_text(format!("\n_{line}_\n"))],
        }
    }

    fn call(
        &mut self,
        subtask: &SubtaskSummary,
        name_of: &dyn Fn(AgentId) -> String,
    ) -> Option<SessionUpdate> {
        let id = subtask.subtask_id.to_string();
        // The name the task kept, else the one the agent goes by.
        let name = |agent| {
            subtask
                .assignee_name
                .clone()
                .unwrap_or_else(|| name_of(agent))
        };
        let head = match (subtask.assignee, subtask.attempts) {
            (Some(agent), 0) => Some(name(agent)),
            (Some(agent), n) => Some(format!("{} · attempt {n}", name(agent))),
            (None, _) => None,
        };
        let content = content_for(head.as_deref(), self.steps.get(&id));
        let locations: Vec<ToolCallLocation> = subtask
            .files
            .iter()
            .map(|f| ToolCallLocation {
                path: self.workspace.join(f).display().to_string(),
            })
            .collect();
        let now = CallShown {
            head,
            title: subtask.description.clone(),
            kind: if subtask.files.is_empty() {
                ToolKind::Other
            } else {
                ToolKind::Edit
            },
            status: call_status(subtask.status),
            content,
            locations,
        };
        let Some(before) = self.calls.get(&id) else {
            self.calls.insert(id.clone(), now.clone());
            return Some(SessionUpdate::ToolCall(ToolCall {
                tool_call_id: id,
                title: now.title,
                kind: now.kind,
                status: now.status,
                content: now.content,
                locations: now.locations,
            }));
        };
        if *before == now {
            return None;
        }
        let update = ToolCallUpdate {
            tool_call_id: id.clone(),
            title: (before.title != now.title).then(|| now.title.clone()),
            kind: (before.kind != now.kind).then_some(now.kind),
            status: (before.status != now.status).then_some(now.status),
            content: (before.content != now.content).then(|| now.content.clone()),
            locations: (before.locations != now.locations).then(|| now.locations.clone()),
        };
        self.calls.insert(id, now);
        Some(SessionUpdate::ToolCallUpdate(update))
    }
}

/// The head line (who, which attempt) followed by the recovery steps, as one text.
fn content_for(head: Option<&str>, steps: Option<&Vec<String>>) -> Vec<ToolCallContent> {
    let mut lines: Vec<String> = head.into_iter().map(str::to_string).collect();
    lines.extend(steps.into_iter().flatten().cloned());
    if lines.is_empty() {
        Vec::new()
    } else {
        vec![ToolCallContent::text(lines.join("\n"))]
    }
}

fn plan_entry(subtask: &SubtaskSummary) -> PlanEntry {
    let (status, content) = match subtask.status {
        SubtaskStatus::Pending => (PlanEntryStatus::Pending, subtask.description.clone()),
        SubtaskStatus::Running | SubtaskStatus::Recovering => {
            (PlanEntryStatus::InProgress, subtask.description.clone())
        }
        SubtaskStatus::Escalated => (
            PlanEntryStatus::InProgress,
            format!("{} (escalated)", subtask.description),
        ),
        SubtaskStatus::Completed => (PlanEntryStatus::Completed, subtask.description.clone()),
        // ACP plan entries have no failed state: the entry is over, and says how.
        SubtaskStatus::Failed => (
            PlanEntryStatus::Completed,
            format!("{} (failed)", subtask.description),
        ),
        SubtaskStatus::Cancelled => (
            PlanEntryStatus::Completed,
            format!("{} (cancelled)", subtask.description),
        ),
    };
    PlanEntry {
        content,
        priority: PlanEntryPriority::Medium,
        status,
    }
}

fn call_status(status: SubtaskStatus) -> ToolCallStatus {
    match status {
        SubtaskStatus::Pending => ToolCallStatus::Pending,
        SubtaskStatus::Running | SubtaskStatus::Recovering | SubtaskStatus::Escalated => {
            ToolCallStatus::InProgress
        }
        SubtaskStatus::Completed => ToolCallStatus::Completed,
        SubtaskStatus::Failed | SubtaskStatus::Cancelled => ToolCallStatus::Failed,
    }
}

/// "↻ retry 2/3 in 4 s — …", "↻ handed to bottom-1-2 — …", "⚠ escalated — …".
pub fn recovery_line(step: &RecoveryEvent, name_of: &dyn Fn(AgentId) -> String) -> String {
    let agent = || {
        step.agent_id
            .parse::<AgentId>()
            .map(name_of)
            .unwrap_or_else(|_| step.agent_id.clone())
    };
    let head = match step.action {
        RecoveryAction::Retry => match step.delay_ms {
            Some(ms) => format!(
                "↻ retry {}/{} in {}",
                step.attempt,
                step.max_attempts,
                human(Duration::from_millis(ms))
            ),
            None => format!("↻ retry {}/{}", step.attempt, step.max_attempts),
        },
        RecoveryAction::PeerTakeover => format!("↻ handed to {}", agent()),
        RecoveryAction::ReplaceAgent => format!("↻ {} replaced", agent()),
        RecoveryAction::EscalateToSupervisor => "⚠ escalated to the supervisor".to_string(),
        RecoveryAction::EscalateToTop => "⚠ escalated to you".to_string(),
        RecoveryAction::Recovered => "✓ recovered".to_string(),
        RecoveryAction::GaveUp => "✗ gave up".to_string(),
        RecoveryAction::CircuitOpen => "⚠ the model provider is failing; calls pause".to_string(),
        RecoveryAction::CircuitClosed => "✓ the model provider answers again".to_string(),
        RecoveryAction::WaitForProvider => "⏸ waiting for the model provider".to_string(),
        RecoveryAction::CallRetry => "↻ call retried".to_string(),
        RecoveryAction::AgentHung => format!("⚠ {} stopped answering", agent()),
    };
    if step.message.trim().is_empty() {
        head
    } else {
        format!("{head} — {}", step.message.trim())
    }
}

/// A wait on the model provider that the person may want to know about, as a `notice`:
/// provider-wide steps (circuit breakers) and retries of a second or more.
pub fn provider_notice(
    step: &RecoveryEvent,
    name_of: &dyn Fn(AgentId) -> String,
) -> Option<SessionUpdate> {
    let provider_wide = step.task_id.is_empty();
    let long_wait =
        step.action == RecoveryAction::Retry && step.delay_ms.is_some_and(|ms| ms >= 1000);
    if !provider_wide && !long_wait {
        return None;
    }
    let severity = match step.action {
        RecoveryAction::CircuitClosed | RecoveryAction::Recovered => NoticeSeverity::Info,
        _ => NoticeSeverity::Warning,
    };
    Some(SessionUpdate::Notice {
        severity,
        title: recovery_line(step, name_of),
    })
}

/// "250 ms", "4 s", "1 min 30 s".
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        let s = ms as f64 / 1000.0;
        if (s - s.round()).abs() < 0.05 {
            format!("{} s", s.round() as u64)
        } else {
            format!("{s:.1} s")
        }
    } else {
        let s = ms / 1000;
        match s % 60 {
            0 => format!("{} min", s / 60),
            r => format!("{} min {r} s", s / 60),
        }
    }
}

/// The agent message that ends a task: the mid's summary and the files written; for a
/// failed task what went wrong and where ERROR_REPORT.md is; then the top agent's final
/// report, when it wrote one.
pub fn final_message(detail: &TaskDetail, error_report: Option<&Path>) -> String {
    let mut text = String::new();
    match detail.summary.status {
        TaskStatus::Completed => text.push_str("**Done.** "),
        TaskStatus::Failed => text.push_str("**The task failed.** "),
        TaskStatus::Cancelled => text.push_str("**Cancelled.** "),
        _ => {}
    }
    if let Some(result) = detail.result.as_deref().filter(|r| !r.trim().is_empty()) {
        text.push_str(result.trim());
        text.push('\n');
    }
    // A cancelled task never reached the end where its files are gathered: what its
    // subtasks wrote stays on disk, and the person must know it.
    let mut written = detail.files_written.clone();
    if detail.summary.status == TaskStatus::Cancelled {
        for file in detail.summary.subtasks.iter().flat_map(|s| &s.files) {
            if !written.contains(file) {
                written.push(file.clone());
            }
        }
    }
    if !written.is_empty() {
        text.push_str(if detail.summary.status == TaskStatus::Cancelled {
            "\nFiles written before the cancel (left as they are): "
        } else {
            "\nFiles written: "
        });
        let files: Vec<String> = written.iter().map(|f| format!("`{f}`")).collect();
        text.push_str(&files.join(", "));
        text.push('\n');
    }
    if detail.summary.status == TaskStatus::Failed {
        for error in &detail.errors {
            text.push_str(&format!(
                "\n- {} ({}): {}",
                error.failure.kind, error.failure.severity, error.failure.message
            ));
        }
        if !detail.partial_results.is_empty() {
            text.push_str("\n\nPartial results:\n");
            for partial in &detail.partial_results {
                text.push_str(&format!("- {}\n", partial.lines().next().unwrap_or("")));
            }
        }
        if let Some(path) = error_report {
            text.push_str(&format!("\n\nThe full report is in `{}`.", path.display()));
        }
    }
    if let Some(report) = &detail.final_report {
        text.truncate(text.trim_end().len());
        text.push_str(&format!(
            "\n\n**Final report by {}**\n\n{}\n",
            report.by,
            report.text.trim_end()
        ));
    }
    text
}

/// The task's tokens and cost as a `usage_update`, once the task made a model call.
///
/// ACP's `used` is "tokens in context" for an agent with one conversation; a Conclave task
/// is many calls by many agents, so `used` is the task's tokens so far (input and output
/// of every call), `size` the model's context window (`llm.contextWindow`), and `cost`
/// the task's cost in US dollars when `[pricing]` has the model.
pub fn usage(usage: &TaskUsage, context_window: u64) -> Option<UsageUpdate> {
    let total = &usage.total;
    if total.calls == 0 {
        return None;
    }
    Some(UsageUpdate {
        used: total.total_tokens(),
        size: context_window,
        cost: total.cost_usd.map(|amount| Cost {
            amount,
            currency: "USD".into(),
        }),
    })
}

/// Lines the team appends to whiteboards, gathered into one agent message per
/// `interval` so a busy board is not a flood.
pub struct BoardNotes {
    interval: Duration,
    seen: HashMap<String, String>,
    held: Vec<(String, String)>,
    last: Option<Instant>,
}

impl BoardNotes {
    pub fn new(interval: Duration) -> BoardNotes {
        BoardNotes {
            interval,
            seen: HashMap::new(),
            held: Vec::new(),
            last: None,
        }
    }

    /// What the board holds before the task starts: only later lines are news.
    pub fn baseline(&mut self, board: &str, content: &str) {
        self.seen.insert(board.to_string(), content.to_string());
    }

    /// A new version of `board` (shown as `label`). Returns a message to send now, or
    /// holds the new lines for [`BoardNotes::due`].
    pub fn offer(
        &mut self,
        board: &str,
        label: &str,
        content: &str,
        now: Instant,
    ) -> Option<String> {
        let before = self.seen.insert(board.to_string(), content.to_string());
        let added = match before.as_deref() {
            Some(before) => match content.strip_prefix(before) {
                Some(added) => added.to_string(),
                // Rewritten rather than appended to: its new text is the news.
                None => content.to_string(),
            },
            None => content.to_string(),
        };
        let added = added.trim();
        if added.is_empty() {
            return None;
        }
        match self.held.iter_mut().find(|(l, _)| l == label) {
            Some((_, lines)) => {
                lines.push('\n');
                lines.push_str(added);
            }
            None => self.held.push((label.to_string(), added.to_string())),
        }
        self.due(now)
    }

    /// The held lines, when the interval since the last message is over.
    pub fn due(&mut self, now: Instant) -> Option<String> {
        if self.held.is_empty() || self.last.is_some_and(|last| now < last + self.interval) {
            return None;
        }
        self.last = Some(now);
        Some(self.take())
    }

    /// When held lines fall due.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.held.is_empty() {
            return None;
        }
        Some(
            self.last
                .map_or_else(Instant::now, |last| last + self.interval),
        )
    }

    /// Everything held, now (the task ended).
    pub fn flush(&mut self) -> Option<String> {
        (!self.held.is_empty()).then(|| self.take())
    }

    fn take(&mut self) -> String {
        let mut text = String::new();
        for (label, lines) in self.held.drain(..) {
            text.push_str(&format!("\n**{label}**\n{lines}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::TokenUsage;
    use crate::recovery::Severity;
    use crate::runtime::{SubtaskId, TaskId};
    use chrono::Utc;

    fn names(_: AgentId) -> String {
        "bottom-1-2".into()
    }

    fn subtask(description: &str, status: SubtaskStatus) -> SubtaskSummary {
        SubtaskSummary {
            assignee_name: None,
            subtask_id: SubtaskId::new(),
            description: description.into(),
            assignee: None,
            status,
            attempts: 0,
            files: Vec::new(),
        }
    }

    fn task(subtasks: Vec<SubtaskSummary>) -> TaskSummary {
        TaskSummary {
            task_id: TaskId::new(),
            title: "t".into(),
            status: TaskStatus::Running,
            progress: 0,
            created_at: Utc::now(),
            updated_at: Utc::now(),
            subtasks,
            recovery: None,
            unchecked: None,
            checked_by: None,
            parked: None,
            usage_total: None,
            check_counts: None,
            reverted_by: None,
        }
    }

    fn step(
        task: &TaskSummary,
        subtask: usize,
        action: RecoveryAction,
        delay_ms: Option<u64>,
    ) -> RecoveryEvent {
        RecoveryEvent {
            task_id: task.task_id.to_string(),
            subtask_id: Some(task.subtasks[subtask].subtask_id.to_string()),
            agent_id: AgentId::new().to_string(),
            action,
            severity: Severity::Medium,
            attempt: 2,
            max_attempts: 3,
            delay_ms,
            message: "503 from the provider".into(),
            scope: Default::default(),
            provider: None,
            files: None,
            task_ids: Vec::new(),
            at: Utc::now(),
        }
    }

    #[test]
    fn a_subtask_shows_the_name_its_task_kept_for_an_agent_gone_since() {
        let mut view = TaskView::new(Path::new("/w"));
        let mut running = subtask("Write a.txt", SubtaskStatus::Running);
        running.assignee = Some(AgentId::new());
        running.assignee_name = Some("bottom-2-1.r1".into());
        running.attempts = 2;
        let gone = |id: AgentId| id.to_string()[..8].to_string();
        let updates = view.task(&task(vec![running]), &gone);
        let call = updates
            .iter()
            .find_map(|u| match u {
                SessionUpdate::ToolCall(c) => Some(c),
                _ => None,
            })
            .expect("a tool call");
        assert_eq!(
            call.content,
            vec![ToolCallContent::text("bottom-2-1.r1 · attempt 2")]
        );
    }

    #[test]
    fn a_plan_then_one_tool_call_per_subtask_then_only_what_changed() {
        let mut view = TaskView::new(Path::new("/w"));
        let mut t = task(vec![
            subtask("Write a.txt", SubtaskStatus::Pending),
            subtask("Write b.txt", SubtaskStatus::Pending),
        ]);
        let first = view.task(&t, &names);
        assert!(matches!(&first[0], SessionUpdate::Plan { entries } if entries.len() == 2));
        assert!(
            matches!(&first[1], SessionUpdate::ToolCall(c) if c.title == "Write a.txt" && c.status == ToolCallStatus::Pending)
        );
        assert!(matches!(&first[2], SessionUpdate::ToolCall(c) if c.title == "Write b.txt"));
        assert!(
            view.task(&t, &names).is_empty(),
            "nothing changed, nothing sent"
        );

        t.subtasks[0].status = SubtaskStatus::Running;
        t.subtasks[0].assignee = Some(AgentId::new());
        t.subtasks[0].attempts = 1;
        let second = view.task(&t, &names);
        assert_eq!(second.len(), 2, "the plan and the one call: {second:?}");
        let SessionUpdate::Plan { entries } = &second[0] else {
            panic!("plan first")
        };
        assert_eq!(entries[0].status, PlanEntryStatus::InProgress);
        assert_eq!(entries[1].status, PlanEntryStatus::Pending);
        let SessionUpdate::ToolCallUpdate(update) = &second[1] else {
            panic!("then the call")
        };
        assert_eq!(update.status, Some(ToolCallStatus::InProgress));
        assert_eq!(update.title, None, "unchanged fields are left out");
        assert_eq!(
            update.content,
            Some(vec![ToolCallContent::text("bottom-1-2 · attempt 1")])
        );

        t.subtasks[0].status = SubtaskStatus::Completed;
        t.subtasks[0].files = vec!["a.txt".into()];
        t.subtasks[1].status = SubtaskStatus::Failed;
        let third = view.task(&t, &names);
        let SessionUpdate::Plan { entries } = &third[0] else {
            panic!("plan first")
        };
        assert_eq!(entries[1].content, "Write b.txt (failed)");
        assert_eq!(entries[1].status, PlanEntryStatus::Completed);
        let SessionUpdate::ToolCallUpdate(a) = &third[1] else {
            panic!()
        };
        assert_eq!(a.kind, Some(ToolKind::Edit));
        assert_eq!(
            a.locations,
            Some(vec![ToolCallLocation {
                path: "/w/a.txt".into()
            }])
        );
        let SessionUpdate::ToolCallUpdate(b) = &third[2] else {
            panic!()
        };
        assert_eq!(b.status, Some(ToolCallStatus::Failed));
    }

    #[test]
    fn recovery_steps_are_lines_on_their_subtask_and_each_is_shown_once() {
        let mut view = TaskView::new(Path::new("/w"));
        let mut t = task(vec![subtask("Write a.txt", SubtaskStatus::Running)]);
        view.task(&t, &names);
        let retry = step(&t, 0, RecoveryAction::Retry, Some(4000));
        let updates = view.recovery(&retry, &names);
        let SessionUpdate::ToolCallUpdate(update) = &updates[0] else {
            panic!()
        };
        assert_eq!(
            update.content,
            Some(vec![ToolCallContent::text(
                "↻ retry 2/3 in 4 s — 503 from the provider"
            )])
        );
        // The same step again as the task's latest: not repeated.
        t.recovery = Some(retry);
        assert!(view.task(&t, &names).is_empty());
        let takeover = step(&t, 0, RecoveryAction::PeerTakeover, None);
        let updates = view.recovery(&takeover, &names);
        let SessionUpdate::ToolCallUpdate(update) = &updates[0] else {
            panic!()
        };
        let Some(content) = &update.content else {
            panic!()
        };
        assert_eq!(
            content,
            &vec![ToolCallContent::text(
                "↻ retry 2/3 in 4 s — 503 from the provider\n↻ handed to bottom-1-2 — 503 from the provider"
            )]
        );
        let escalated = recovery_line(
            &step(&t, 0, RecoveryAction::EscalateToSupervisor, None),
            &names,
        );
        assert!(escalated.starts_with("⚠ escalated"), "{escalated}");
    }

    #[test]
    fn provider_waits_are_notices_and_quick_retries_are_not() {
        let t = task(vec![subtask("a", SubtaskStatus::Running)]);
        assert!(provider_notice(&step(&t, 0, RecoveryAction::Retry, Some(200)), &names).is_none());
        let Some(SessionUpdate::Notice { severity, title }) =
            provider_notice(&step(&t, 0, RecoveryAction::Retry, Some(4000)), &names)
        else {
            panic!("a long wait is a notice")
        };
        assert_eq!(severity, NoticeSeverity::Warning);
        assert!(title.contains("in 4 s"), "{title}");
        let mut open = step(&t, 0, RecoveryAction::CircuitOpen, None);
        open.task_id = String::new();
        assert!(provider_notice(&open, &names).is_some());
    }

    #[test]
    fn durations_read_like_a_person_wrote_them() {
        assert_eq!(human(Duration::from_millis(250)), "250 ms");
        assert_eq!(human(Duration::from_millis(4000)), "4 s");
        assert_eq!(human(Duration::from_millis(1500)), "1.5 s");
        assert_eq!(human(Duration::from_secs(90)), "1 min 30 s");
    }

    #[test]
    fn usage_is_the_tasks_tokens_and_cost_once_it_called_the_model() {
        assert_eq!(
            usage(&TaskUsage::default(), 8192),
            None,
            "no call, no usage"
        );
        let mut task = TaskUsage {
            total: TokenUsage {
                input_tokens: 100,
                output_tokens: 20,
                calls: 2,
                estimated_calls: 0,
                cost_usd: Some(0.5),
            },
            ..TaskUsage::default()
        };
        assert_eq!(
            usage(&task, 8192),
            Some(UsageUpdate {
                used: 120,
                size: 8192,
                cost: Some(Cost {
                    amount: 0.5,
                    currency: "USD".into()
                })
            })
        );
        task.total.cost_usd = None;
        assert_eq!(
            usage(&task, 8192).and_then(|u| u.cost),
            None,
            "unpriced: no cost"
        );
    }

    #[test]
    fn board_lines_are_gathered_per_interval_and_only_new_lines_are_news() {
        let start = Instant::now();
        let ms = Duration::from_millis(1);
        let mut notes = BoardNotes::new(1000 * ms);
        notes.baseline("global", "- old line\n");
        let first = notes.offer("global", "team", "- old line\n- plan signed\n", start);
        assert_eq!(first.as_deref(), Some("\n**team**\n- plan signed\n"));
        assert_eq!(
            notes.offer(
                "global",
                "team",
                "- old line\n- plan signed\n- a done\n",
                start + 10 * ms
            ),
            None
        );
        assert_eq!(
            notes.offer("agent:m", "mid", "- b done\n", start + 20 * ms),
            None
        );
        assert_eq!(notes.next_deadline(), Some(start + 1000 * ms));
        assert_eq!(notes.due(start + 999 * ms), None);
        assert_eq!(
            notes.due(start + 1000 * ms).as_deref(),
            Some("\n**team**\n- a done\n\n**mid**\n- b done\n")
        );
        assert_eq!(notes.flush(), None);
    }

    /// A finished task's detail with `files` written and `result`, nothing else.
    fn detail_of(summary: TaskSummary, files: &[&str], result: Option<&str>) -> TaskDetail {
        TaskDetail {
            summary,
            description: "d".into(),
            files_written: files.iter().map(|f| f.to_string()).collect(),
            result: result.map(str::to_string),
            partial_results: vec![],
            errors: vec![],
            checks: vec![],
            rule_findings: Default::default(),
            usage: Default::default(),
            reverted: None,
            final_report: None,
        }
    }

    #[test]
    fn the_top_agents_final_report_closes_the_message() {
        let mut t = task(vec![subtask("a", SubtaskStatus::Completed)]);
        t.status = TaskStatus::Completed;
        let detail = TaskDetail {
            final_report: Some(crate::runtime::FinalReport {
                by: "top-1".into(),
                at: chrono::Utc::now(),
                text:
                    "The task completed: 1 of 1 subtasks completed.\n- progress reports read: 1\n"
                        .into(),
            }),
            ..detail_of(t, &["a.txt"], Some("1 of 1 subtasks completed."))
        };
        let text = final_message(&detail, None);
        assert!(
            text.ends_with(
                "`a.txt`\n\n**Final report by top-1**\n\nThe task completed: 1 of 1 subtasks completed.\n- progress reports read: 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_failed_task_ends_with_why_and_where_the_report_is() {
        let mut t = task(vec![subtask("a", SubtaskStatus::Failed)]);
        t.status = TaskStatus::Failed;
        let detail = detail_of(t, &["a.txt"], Some("Failed: the provider refused the key"));
        let text = final_message(&detail, Some(Path::new("/w/ERROR_REPORT.md")));
        assert!(
            text.starts_with("**The task failed.** Failed: the provider refused the key"),
            "{text}"
        );
        assert!(text.contains("`a.txt`"), "{text}");
        assert!(text.contains("/w/ERROR_REPORT.md"), "{text}");
    }

    #[test]
    fn a_cancelled_task_names_the_files_its_subtasks_wrote() {
        let mut done = subtask("a", SubtaskStatus::Completed);
        done.files = vec!["a.txt".into()];
        let mut stopped = subtask("b", SubtaskStatus::Cancelled);
        stopped.files = vec!["b.txt".into(), "a.txt".into()];
        let mut t = task(vec![done, stopped, subtask("c", SubtaskStatus::Cancelled)]);
        t.status = TaskStatus::Cancelled;
        let detail = detail_of(t, &[], None);
        let text = final_message(&detail, None);
        assert!(text.starts_with("**Cancelled.**"), "{text}");
        assert!(
            text.contains("Files written before the cancel (left as they are): `a.txt`, `b.txt`"),
            "{text}"
        );
    }
}
