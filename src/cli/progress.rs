//! Progress of one task on stderr, for `conclave run` and `conclave demo`.
//!
//! [`TaskView`] follows the runtime's event stream and keeps what a person wants to see:
//! the task's status, one line per subtask (status, assignee, attempts), the latest
//! recovery step, and who did which attempt. Each change it notices comes out as a
//! [`Note`]. [`Display`] prints them: on a terminal it keeps a live block at the bottom
//! of the screen, redrawn with ANSI escapes, and scrolls recovery steps, plan decisions
//! and approvals above it; anywhere else it prints every note as one plain line.

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use conclave::engine::Engine;
use conclave::recovery::{RecoveryAction, RecoveryEvent};
use conclave::runtime::{
    AgentId, ApprovalKind, Decision, DecisionStatus, RuntimeEvent, SubtaskId, SubtaskStatus,
    TaskId, TaskStatus,
};
use conclave::wire::TaskSummary;

/// Agent names by id, remembered after an agent is gone (replaced agents leave the pool).
pub struct Names {
    engine: Arc<Engine>,
    known: HashMap<AgentId, String>,
}

impl Names {
    pub fn new(engine: Arc<Engine>) -> Names {
        let known = engine
            .agents()
            .into_iter()
            .map(|a| (a.agent_id, a.name))
            .collect();
        Names { engine, known }
    }

    pub fn of(&mut self, id: AgentId) -> String {
        if let Some(name) = self.known.get(&id) {
            return name.clone();
        }
        let name = if id == AgentId::SYSTEM {
            "system".to_string()
        } else {
            match self.engine.runtime().pool.get(id) {
                Some(agent) => agent.name(),
                None => id.to_string()[..8].to_string(),
            }
        };
        self.known.insert(id, name.clone());
        name
    }
}

/// One subtask as shown.
#[derive(Clone, Debug)]
pub struct SubtaskView {
    pub id: SubtaskId,
    pub description: String,
    pub status: SubtaskStatus,
    pub assignee: Option<AgentId>,
    pub attempts: u32,
}

/// A run of consecutive attempts of one subtask by one agent: the journal of who did what.
#[derive(Clone, Debug, PartialEq)]
pub struct Shift {
    /// Index of the subtask in the plan.
    pub subtask: usize,
    pub agent: AgentId,
    pub attempts: u32,
}

/// How the top layer settled a plan.
#[derive(Clone, Debug)]
pub struct PlanVerdict {
    pub status: DecisionStatus,
    pub signed_by: Vec<AgentId>,
    pub vetoes: Vec<(AgentId, String)>,
}

/// What kind of change a note reports; a terminal scrolls only the lasting ones and
/// shows the rest in its live block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoteKind {
    /// Task and subtask status: in the live block on a terminal, a line otherwise.
    Status,
    /// Recovery steps, plan decisions, approvals, warnings: always a line.
    Event,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub kind: NoteKind,
    pub text: String,
}

impl Note {
    fn status(text: String) -> Note {
        Note {
            kind: NoteKind::Status,
            text,
        }
    }

    pub fn event(text: impl Into<String>) -> Note {
        Note {
            kind: NoteKind::Event,
            text: text.into(),
        }
    }
}

/// Everything shown about the task being run.
pub struct TaskView {
    pub task_id: TaskId,
    pub title: String,
    pub status: TaskStatus,
    pub subtasks: Vec<SubtaskView>,
    pub latest_recovery: Option<Arc<RecoveryEvent>>,
    pub plan: Option<PlanVerdict>,
    pub shifts: Vec<Shift>,
    /// Recovery steps seen, in order (the store has them too; this is for live counts).
    pub recoveries: Vec<Arc<RecoveryEvent>>,
    decisions: HashMap<uuid::Uuid, DecisionStatus>,
}

pub fn task_status(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Queued => "queued",
        TaskStatus::Planning => "planning",
        TaskStatus::AwaitingApproval => "awaiting approval",
        TaskStatus::Running => "running",
        TaskStatus::Recovering => "recovering",
        TaskStatus::Escalated => "escalated",
        TaskStatus::Completed => "completed",
        TaskStatus::Failed => "failed",
        TaskStatus::Cancelled => "cancelled",
    }
}

pub fn subtask_status(status: SubtaskStatus) -> &'static str {
    match status {
        SubtaskStatus::Pending => "pending",
        SubtaskStatus::Running => "running",
        SubtaskStatus::Recovering => "recovering",
        SubtaskStatus::Escalated => "escalated",
        SubtaskStatus::Completed => "completed",
        SubtaskStatus::Failed => "failed",
        SubtaskStatus::Cancelled => "cancelled",
    }
}

/// A recovery action as a person reads it.
pub fn action_label(action: RecoveryAction) -> &'static str {
    match action {
        RecoveryAction::Retry => "retry",
        RecoveryAction::PeerTakeover => "peer takeover",
        RecoveryAction::EscalateToSupervisor => "escalation to the supervisor",
        RecoveryAction::EscalateToTop => "escalation to the top layer",
        RecoveryAction::ReplaceAgent => "agent replacement",
        RecoveryAction::CircuitOpen => "circuit breaker opened",
        RecoveryAction::CircuitClosed => "circuit breaker closed",
        RecoveryAction::Recovered => "recovered",
        RecoveryAction::GaveUp => "gave up",
        RecoveryAction::WaitForProvider => "provider wait",
        RecoveryAction::AgentHung => "agent hung",
        RecoveryAction::CallRetry => "call retry",
    }
}

fn approval_kind(kind: ApprovalKind) -> &'static str {
    match kind {
        ApprovalKind::Escalation => "escalation",
        ApprovalKind::Decision => "decision",
        ApprovalKind::FileChange => "file change",
        ApprovalKind::Command => "command",
    }
}

/// The first line of `text`, at most `max` characters (with an ellipsis when cut).
/// The first line of `text` in at most about `max` characters, cut between words.
pub fn clip(text: &str, max: usize) -> String {
    conclave::records::failure::summarize(text, max.saturating_sub(1))
}

impl TaskView {
    pub fn new(task_id: TaskId, title: String) -> TaskView {
        TaskView {
            task_id,
            title,
            status: TaskStatus::Queued,
            subtasks: Vec::new(),
            latest_recovery: None,
            plan: None,
            shifts: Vec::new(),
            recoveries: Vec::new(),
            decisions: HashMap::new(),
        }
    }

    /// `n/total` for the subtask with this id, when it is one of this task's.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.subtasks.iter().position(|s| s.id.to_string() == id)
    }

    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }

    /// Applies one runtime event; returns what changed, as notes.
    pub fn apply(&mut self, event: &RuntimeEvent, names: &mut Names) -> Vec<Note> {
        match event {
            RuntimeEvent::TaskUpdated(record) if record.id == self.task_id => {
                self.apply_summary(&TaskSummary::of(record), names)
            }
            RuntimeEvent::Recovery(step) => self.apply_recovery(step),
            RuntimeEvent::Decision(decision) => self.apply_decision(decision, names),
            RuntimeEvent::ApprovalRequested(request) if request.task_id == self.task_id => {
                vec![Note::event(format!(
                    "approval requested ({}, {}): {}",
                    approval_kind(request.kind),
                    request.severity,
                    clip(&request.title, 100)
                ))]
            }
            RuntimeEvent::ApprovalResolved {
                task_id,
                decision: None,
                ..
            } if *task_id == self.task_id => {
                vec![Note::event("approval withdrawn (the task moved on)")]
            }
            RuntimeEvent::AgentHung {
                agent_id, missed, ..
            } => vec![Note::event(format!(
                "agent {} missed {missed} heartbeats in a row; it will be replaced",
                names.of(*agent_id)
            ))],
            _ => Vec::new(),
        }
    }

    /// Takes in a task summary (from an event, or read again after events were missed).
    pub fn apply_summary(&mut self, summary: &TaskSummary, names: &mut Names) -> Vec<Note> {
        let mut notes = Vec::new();
        self.title.clone_from(&summary.title);
        if summary.status != self.status {
            self.status = summary.status;
            notes.push(Note::status(format!(
                "task: {} — {}",
                task_status(summary.status),
                clip(&self.title, 80)
            )));
        }
        let total = summary.subtasks.len();
        let replanned = self.subtasks.len() != total
            || self
                .subtasks
                .iter()
                .zip(&summary.subtasks)
                .any(|(old, new)| old.id != new.subtask_id);
        if replanned {
            self.subtasks = summary
                .subtasks
                .iter()
                .map(|s| SubtaskView {
                    id: s.subtask_id,
                    description: s.description.clone(),
                    status: SubtaskStatus::Pending,
                    assignee: None,
                    attempts: 0,
                })
                .collect();
            if total > 0 {
                notes.push(Note::status(format!("plan: {total} subtasks")));
                for (i, s) in summary.subtasks.iter().enumerate() {
                    notes.push(Note::status(format!(
                        "  {}. {}",
                        i + 1,
                        clip(&s.description, 100)
                    )));
                }
            }
        }
        for (index, new) in summary.subtasks.iter().enumerate() {
            let Some(old) = self.subtasks.get_mut(index) else {
                continue;
            };
            if new.attempts > old.attempts
                && let Some(agent) = new.assignee
            {
                let added = new.attempts - old.attempts;
                match self.shifts.iter_mut().rev().find(|s| s.subtask == index) {
                    Some(shift) if shift.agent == agent => shift.attempts += added,
                    _ => self.shifts.push(Shift {
                        subtask: index,
                        agent,
                        attempts: added,
                    }),
                }
            }
            let new_attempt = new.attempts > old.attempts;
            let changed = new_attempt || old.status != new.status || old.assignee != new.assignee;
            old.status = new.status;
            old.assignee = new.assignee;
            old.attempts = new.attempts;
            if !changed || new.status == SubtaskStatus::Pending {
                continue;
            }
            let who = new
                .assignee
                .map(|a| names.of(a))
                .unwrap_or_else(|| "unassigned".into());
            let text = match new.status {
                SubtaskStatus::Completed => format!(
                    "completed by {who} ({} attempt{})",
                    new.attempts,
                    plural(new.attempts)
                ),
                SubtaskStatus::Failed if new.attempts == 0 => "failed before it started".into(),
                SubtaskStatus::Failed => format!(
                    "failed ({who}, {} attempt{})",
                    new.attempts,
                    plural(new.attempts)
                ),
                SubtaskStatus::Running if new.attempts <= 1 => {
                    format!("running on {who}: {}", clip(&new.description, 70))
                }
                status if new_attempt => {
                    format!(
                        "{} — attempt {} on {who}",
                        subtask_status(status),
                        new.attempts
                    )
                }
                status if new.assignee.is_none() => subtask_status(status).to_string(),
                status => format!("{} ({who})", subtask_status(status)),
            };
            notes.push(Note::status(format!("[{}/{total}] {text}", index + 1)));
        }
        notes
    }

    fn apply_recovery(&mut self, step: &Arc<RecoveryEvent>) -> Vec<Note> {
        let ours = step.task_id == self.task_id.to_string();
        // Provider-wide steps (circuit breakers) belong to no task but concern this one.
        if !ours && !step.task_id.is_empty() {
            return Vec::new();
        }
        self.latest_recovery = Some(step.clone());
        self.recoveries.push(step.clone());
        let place = step
            .subtask_id
            .as_deref()
            .and_then(|id| self.position(id))
            .map(|i| format!(" [{}/{}]", i + 1, self.subtasks.len()))
            .unwrap_or_default();
        vec![Note::event(format!(
            "recovery{place} {}: {}",
            action_label(step.action),
            step.message
        ))]
    }

    fn apply_decision(&mut self, decision: &Arc<Decision>, names: &mut Names) -> Vec<Note> {
        if decision.content["taskId"].as_str() != Some(self.task_id.to_string().as_str()) {
            return Vec::new();
        }
        let before = self.decisions.insert(decision.id, decision.status);
        if before == Some(decision.status) {
            return Vec::new();
        }
        let verdict = PlanVerdict {
            status: decision.status,
            signed_by: decision.signatures.iter().map(|s| s.agent).collect(),
            vetoes: decision
                .vetoes
                .iter()
                .map(|v| (v.agent, v.reason.clone()))
                .collect(),
        };
        let signers: Vec<String> = verdict.signed_by.iter().map(|a| names.of(*a)).collect();
        let note = match decision.status {
            DecisionStatus::Pending => {
                format!(
                    "plan proposed by {}: waiting for the top layer's signatures",
                    names.of(decision.proposer)
                )
            }
            DecisionStatus::Approved => format!(
                "plan approved by the top layer (signed by {})",
                signers.join(", ")
            ),
            DecisionStatus::Vetoed => format!(
                "plan vetoed: {}",
                verdict
                    .vetoes
                    .iter()
                    .map(|(a, reason)| format!("{} — {reason}", names.of(*a)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            DecisionStatus::Expired => "plan expired before the top layer signed it".to_string(),
        };
        self.plan = Some(verdict);
        vec![Note::event(note)]
    }

    /// Subtasks completed so far.
    pub fn completed(&self) -> usize {
        self.subtasks
            .iter()
            .filter(|s| s.status == SubtaskStatus::Completed)
            .count()
    }
}

pub fn plural(n: impl Into<u64>) -> &'static str {
    if n.into() == 1 { "" } else { "s" }
}

/// ANSI styling, off unless stderr is a terminal and `NO_COLOR` is unset.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    enabled: bool,
}

impl Style {
    pub fn new(enabled: bool) -> Style {
        Style { enabled }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }
    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }
    pub fn red(self, text: &str) -> String {
        self.paint("31", text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.paint("36", text)
    }
}

const SPINNER: [&str; 4] = ["◐", "◓", "◑", "◒"];

/// Where notes and the live block go.
pub struct Display {
    live: bool,
    style: Style,
    /// Lines of the live block currently on screen.
    drawn: usize,
    dirty: bool,
    /// While a question is asked on the terminal: no block, notes held back.
    paused: bool,
    held: Vec<String>,
    frame: usize,
    names: HashMap<AgentId, String>,
}

impl Display {
    /// A live display when `live` (stderr is a terminal), plain lines otherwise.
    pub fn new(live: bool) -> Display {
        let color = live && std::env::var_os("NO_COLOR").is_none();
        Display {
            live,
            style: Style::new(color),
            drawn: 0,
            dirty: true,
            paused: false,
            held: Vec::new(),
            frame: 0,
            names: HashMap::new(),
        }
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// Prints the notes (scrolling above the live block on a terminal).
    pub fn notes(&mut self, notes: Vec<Note>) {
        for note in notes {
            match (self.live, note.kind) {
                (true, NoteKind::Status) => self.dirty = true,
                (true, NoteKind::Event) => {
                    let line = self.decorate(&note.text);
                    self.line(line);
                }
                (false, _) => self.line(note.text),
            }
        }
    }

    /// Prints one line above the live block (or plainly).
    pub fn line(&mut self, text: String) {
        if self.paused {
            self.held.push(text);
            return;
        }
        let mut err = std::io::stderr().lock();
        if self.live {
            let _ = write!(err, "{}", clear_sequence(self.drawn));
            self.drawn = 0;
            self.dirty = true;
        }
        let _ = writeln!(err, "{}", conclave::redact::text(&text));
        let _ = err.flush();
    }

    fn decorate(&self, text: &str) -> String {
        let s = self.style;
        if let Some(rest) = text.strip_prefix("recovery") {
            format!("{}{rest}", s.yellow("↻ recovery"))
        } else if text.starts_with("plan approved") {
            s.green(&format!("✓ {text}"))
        } else if text.starts_with("plan vetoed") || text.starts_with("plan expired") {
            s.red(&format!("✗ {text}"))
        } else if text.starts_with("approval") {
            s.cyan(&format!("? {text}"))
        } else {
            format!("• {text}")
        }
    }

    /// Redraws the live block when something changed or an animation frame is due.
    pub fn tick(&mut self, view: &TaskView, names: &mut Names) {
        if !self.live || self.paused {
            return;
        }
        self.frame = self.frame.wrapping_add(1);
        let animating = view.subtasks.iter().any(|s| {
            matches!(
                s.status,
                SubtaskStatus::Running | SubtaskStatus::Recovering | SubtaskStatus::Escalated
            )
        }) || matches!(
            view.status,
            TaskStatus::Queued | TaskStatus::Planning | TaskStatus::AwaitingApproval
        );
        if !self.dirty && !animating {
            return;
        }
        self.draw(view, names);
    }

    fn draw(&mut self, view: &TaskView, names: &mut Names) {
        for s in &view.subtasks {
            if let Some(agent) = s.assignee {
                self.names.entry(agent).or_insert_with(|| names.of(agent));
            }
        }
        let block = self.block(view);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{}", clear_sequence(self.drawn));
        for line in &block {
            let _ = writeln!(err, "{}", conclave::redact::text(line));
        }
        let _ = err.flush();
        self.drawn = block.len();
        self.dirty = false;
    }

    /// The live block: the task, one line per subtask, the latest recovery step.
    fn block(&self, view: &TaskView) -> Vec<String> {
        let s = self.style;
        let width = terminal_width().saturating_sub(1).max(40);
        let spin = SPINNER[self.frame % SPINNER.len()];
        let done = view.completed();
        let head_status = match view.status {
            TaskStatus::Completed => s.green("completed"),
            TaskStatus::Failed | TaskStatus::Cancelled => s.red(task_status(view.status)),
            TaskStatus::Recovering | TaskStatus::Escalated => s.yellow(task_status(view.status)),
            other => task_status(other).to_string(),
        };
        let counts = if view.subtasks.is_empty() {
            String::new()
        } else {
            format!(" · {done}/{} subtasks done", view.subtasks.len())
        };
        let title_room = width.saturating_sub(30 + counts.chars().count());
        let glyph = if view.is_finished() { "■" } else { spin };
        let mut lines = vec![format!(
            "{} {}  {head_status}{counts}",
            glyph,
            s.bold(&clip(&view.title, title_room.max(10)))
        )];
        // "  ✓ 12. " + description + "  " + assignee (12) + " " + status (10) + " " + attempts (11)
        let desc_room = width.saturating_sub(8 + 2 + 12 + 1 + 10 + 1 + 11).max(12);
        for (i, sub) in view.subtasks.iter().enumerate() {
            let (mark, status) = match sub.status {
                SubtaskStatus::Pending => (s.dim("·"), s.dim("pending")),
                SubtaskStatus::Running => (spin.to_string(), "running".to_string()),
                SubtaskStatus::Recovering => (s.yellow("↻"), s.yellow("recovering")),
                SubtaskStatus::Escalated => (s.yellow("⇡"), s.yellow("escalated")),
                SubtaskStatus::Completed => (s.green("✓"), s.green("completed")),
                SubtaskStatus::Failed => (s.red("✗"), s.red("failed")),
                SubtaskStatus::Cancelled => (s.red("-"), s.red("cancelled")),
            };
            let who = sub
                .assignee
                .and_then(|a| self.names.get(&a).cloned())
                .unwrap_or_default();
            let tries = match sub.attempts {
                0 => String::new(),
                1 => "1 attempt".to_string(),
                n => format!("{n} attempts"),
            };
            let desc = clip(&sub.description, desc_room);
            let pad = desc_room.saturating_sub(desc.chars().count());
            lines.push(format!(
                "  {mark} {:>2}. {desc}{}  {:<12} {} {}",
                i + 1,
                " ".repeat(pad),
                who,
                status,
                s.dim(&tries)
            ));
        }
        if let Some(step) = &view.latest_recovery {
            let text = format!("{}: {}", action_label(step.action), step.message);
            lines.push(format!(
                "  {} {}",
                s.yellow("latest recovery"),
                clip(&text, width.saturating_sub(20).max(20))
            ));
        }
        // A line that wrapped would throw the redraw off by a row: never let one.
        lines.into_iter().map(|l| fit(&l, width)).collect()
    }

    /// Clears the live block and holds notes back (a question is being asked).
    pub fn pause(&mut self) {
        if self.live && self.drawn > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{}", clear_sequence(self.drawn));
            let _ = err.flush();
            self.drawn = 0;
        }
        self.paused = true;
    }

    /// Prints what was held back and draws again.
    pub fn resume(&mut self) {
        self.paused = false;
        self.dirty = true;
        for line in std::mem::take(&mut self.held) {
            self.line(line);
        }
    }

    /// The final state, left on screen.
    pub fn finish(&mut self, view: &TaskView, names: &mut Names) {
        self.paused = false;
        for line in std::mem::take(&mut self.held) {
            self.line(line);
        }
        if self.live {
            self.draw(view, names);
            // Leave the block as it is: the next output starts below it.
            self.drawn = 0;
        }
    }
}

/// `line` cut to `width` visible characters (ANSI escapes pass through uncounted).
fn fit(line: &str, width: usize) -> String {
    let mut out = String::with_capacity(line.len());
    let mut visible = 0;
    let mut styled = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            styled = true;
            out.push(c);
            for e in chars.by_ref() {
                out.push(e);
                if e.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if visible == width {
            if styled {
                out.push_str("\x1b[0m");
            }
            return out;
        }
        out.push(c);
        visible += 1;
    }
    out
}

/// Moves the cursor to the first line of a block `lines` high and clears to the end.
fn clear_sequence(lines: usize) -> String {
    if lines == 0 {
        "\r\x1b[J".to_string()
    } else {
        format!("\x1b[{lines}A\r\x1b[J")
    }
}

/// Columns of the terminal on stderr (80 when unknown).
fn terminal_width() -> usize {
    #[cfg(unix)]
    {
        let mut size = libc::winsize {
            ws_row: 0,
            ws_col: 0,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: TIOCGWINSZ only writes a `winsize` into the struct we pass, which
        // lives for the whole call; a failing call leaves it zeroed.
        let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
        if ok && size.ws_col > 0 {
            return usize::from(size.ws_col);
        }
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_short_lines_and_cuts_long_ones() {
        assert_eq!(clip("short\nsecond", 10), "short");
        assert_eq!(clip("abcdefghijkl", 5), "abcd…");
        assert_eq!(clip("\n  padded  ", 10), "padded");
    }

    #[test]
    fn fit_counts_only_visible_characters() {
        assert_eq!(fit("abcdef", 4), "abcd");
        assert_eq!(fit("ab", 4), "ab");
        assert_eq!(
            fit("\x1b[32mabc\x1b[0mdef", 4),
            "\x1b[32mabc\x1b[0md\x1b[0m"
        );
        assert_eq!(fit("\x1b[1mab\x1b[0m", 2), "\x1b[1mab\x1b[0m");
    }

    #[test]
    fn clear_sequence_moves_up_over_the_block() {
        assert_eq!(clear_sequence(0), "\r\x1b[J");
        assert_eq!(clear_sequence(3), "\x1b[3A\r\x1b[J");
    }
}
