//! Answering approvals from the command line: `--approve ask|auto|deny`.
//!
//! - `auto` approves file changes, commands and decisions; an escalation gets `retry`
//!   once per subtask and `abort` after that, so an automatic run can never loop.
//! - `deny` rejects file changes, commands and decisions and aborts escalations.
//! - `ask` shows the approval on the terminal (title, detail, diff summary, command,
//!   options) and reads the answer from stdin. When stdin is closed there is nobody to
//!   ask: the approval is answered the safe way (`reject` / `abort`), and the run says so.

use std::collections::HashSet;

use clap::ValueEnum;
use conclave::runtime::{ApprovalAnswer, ApprovalChoice, ApprovalKind, ApprovalRequest, FileDiff};
use tokio::sync::mpsc;

use super::progress::Style;

/// How approvals are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ApprovePolicy {
    /// Ask on the terminal (stdin); no answer (closed stdin) means reject/abort.
    Ask,
    /// Approve changes and commands; retry an escalation once, then abort it.
    Auto,
    /// Reject changes and commands; abort escalations.
    Deny,
}

/// The answers `auto` and `deny` give, with the bookkeeping that bounds `auto`.
pub struct Automatic {
    policy: ApprovePolicy,
    /// Subtasks (or tasks) whose escalation was already answered `retry`.
    retried: HashSet<String>,
}

impl Automatic {
    pub fn new(policy: ApprovePolicy) -> Automatic {
        Automatic {
            policy,
            retried: HashSet::new(),
        }
    }

    /// The answer for `request`, and why, for the progress output.
    pub fn decide(&mut self, request: &ApprovalRequest) -> (ApprovalAnswer, String) {
        match self.policy {
            ApprovePolicy::Auto => self.approving(request),
            ApprovePolicy::Deny | ApprovePolicy::Ask => {
                let choice = safe_choice(request);
                (
                    ApprovalAnswer::new(choice),
                    format!("{} (--approve deny)", choice.as_str()),
                )
            }
        }
    }

    fn approving(&mut self, request: &ApprovalRequest) -> (ApprovalAnswer, String) {
        if request.kind == ApprovalKind::Escalation {
            let key = request
                .subtask_id
                .map(|s| s.to_string())
                .unwrap_or_else(|| request.task_id.to_string());
            if offers(request, ApprovalChoice::Retry) && self.retried.insert(key) {
                return (
                    ApprovalAnswer::new(ApprovalChoice::Retry),
                    "retry (--approve auto retries an escalated subtask once)".into(),
                );
            }
            let choice = safe_choice(request);
            return (
                ApprovalAnswer::new(choice),
                format!(
                    "{} (--approve auto already retried this subtask once)",
                    choice.as_str()
                ),
            );
        }
        let choice = [ApprovalChoice::Approve, ApprovalChoice::Retry]
            .into_iter()
            .find(|c| offers(request, *c))
            .unwrap_or_else(|| safe_choice(request));
        (
            ApprovalAnswer::new(choice),
            format!("{} (--approve auto)", choice.as_str()),
        )
    }
}

fn offers(request: &ApprovalRequest, choice: ApprovalChoice) -> bool {
    request.options.iter().any(|o| o.id == choice)
}

/// The answer that changes nothing and stops the work in question: reject, else abort.
pub fn safe_choice(request: &ApprovalRequest) -> ApprovalChoice {
    let preferred = match request.kind {
        ApprovalKind::Escalation => [ApprovalChoice::Abort, ApprovalChoice::Reject],
        _ => [ApprovalChoice::Reject, ApprovalChoice::Abort],
    };
    preferred
        .into_iter()
        .find(|c| offers(request, *c))
        // Every request offers reject or abort; if one ever does not, its last option
        // is the closest thing (options are listed from "go on" to "stop").
        .or_else(|| request.options.last().map(|o| o.id))
        .unwrap_or(preferred[0])
}

/// Lines typed on stdin, read by a thread of their own so that a pending read never
/// holds the process open at exit.
pub struct Terminal {
    lines: mpsc::UnboundedReceiver<String>,
    closed: bool,
}

impl Terminal {
    pub fn start() -> Terminal {
        let (tx, lines) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new()
            .name("conclave-stdin".into())
            .spawn(move || {
                use std::io::BufRead;
                let stdin = std::io::stdin();
                for line in stdin.lock().lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("cannot read the terminal: {e}");
        }
        Terminal {
            lines,
            closed: false,
        }
    }

    /// True once stdin ended: nobody can answer any more.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    async fn read_line(&mut self, prompt: &str) -> Option<String> {
        if self.closed {
            return None;
        }
        eprint!("{prompt}");
        match self.lines.recv().await {
            Some(line) => Some(line),
            None => {
                eprintln!();
                self.closed = true;
                None
            }
        }
    }

    /// Shows `request` and asks for an answer. `None` when stdin is closed.
    pub async fn ask(&mut self, request: &ApprovalRequest, style: Style) -> Option<ApprovalAnswer> {
        eprintln!("{}", describe(request, style));
        let count = request.options.len();
        loop {
            let line = self
                .read_line(&format!("Answer [1-{count} or a name]: "))
                .await?;
            let Some(choice) = parse_choice(request, &line) else {
                eprintln!("`{}` is not one of the options.", line.trim());
                continue;
            };
            if choice != ApprovalChoice::Modify {
                return Some(ApprovalAnswer::new(choice));
            }
            loop {
                let text = self.read_line("New description of the subtask: ").await?;
                if text.trim().is_empty() {
                    eprintln!("A modified subtask needs a description.");
                    continue;
                }
                let mut answer = ApprovalAnswer::new(ApprovalChoice::Modify);
                answer.modified_description = Some(text.trim().to_string());
                return Some(answer);
            }
        }
    }
}

/// An option by number (1-based), id or title prefix, ignoring case.
pub fn parse_choice(request: &ApprovalRequest, input: &str) -> Option<ApprovalChoice> {
    let input = input.trim().to_ascii_lowercase();
    if input.is_empty() {
        return None;
    }
    if let Ok(n) = input.parse::<usize>() {
        return n
            .checked_sub(1)
            .and_then(|i| request.options.get(i))
            .map(|o| o.id);
    }
    request
        .options
        .iter()
        .find(|o| o.id.as_str() == input)
        .or_else(|| {
            request
                .options
                .iter()
                .find(|o| o.title.to_ascii_lowercase().starts_with(&input))
        })
        .map(|o| o.id)
}

/// The approval as shown on the terminal.
pub fn describe(request: &ApprovalRequest, style: Style) -> String {
    let mut out = String::new();
    let kind = match request.kind {
        ApprovalKind::Escalation => "escalation",
        ApprovalKind::Decision => "decision",
        ApprovalKind::FileChange => "file change",
        ApprovalKind::Command => "command",
    };
    out.push_str(&style.cyan(&format!(
        "── Approval needed: {kind}, {} severity ──",
        request.severity
    )));
    out.push('\n');
    out.push_str(&style.bold(&request.title));
    out.push('\n');
    for line in request.detail.trim().lines() {
        out.push_str("  ");
        out.push_str(line);
        out.push('\n');
    }
    if let Some(proposed) = &request.proposed_solution {
        out.push_str(&format!("Proposed: {proposed}\n"));
    }
    if let Some(command) = &request.command {
        out.push_str(&format!("Command: {command}\n"));
    }
    if let Some(diff) = &request.diff {
        out.push_str(&diff_summary(diff));
    }
    out.push_str("Options:\n");
    for (i, option) in request.options.iter().enumerate() {
        out.push_str(&format!(
            "  {}) {:<9} {}\n",
            i + 1,
            option.id.as_str(),
            option.title
        ));
    }
    out
}

/// Lines shown of a diff's changed region at most.
const DIFF_LINES: usize = 12;

/// `path: -k +m lines` and the changed hunks (a line of context around each, from
/// `similar`'s line diff), shortened to a few lines.
pub fn diff_summary(diff: &FileDiff) -> String {
    let lines = similar::TextDiff::from_lines(&diff.before, &diff.after);
    let (mut removed, mut added) = (0, 0);
    for change in lines.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let path = diff.uri.strip_prefix("file://").unwrap_or(&diff.uri);
    let mut out = format!("Diff: {path}: -{removed} +{added} lines\n");
    let mut shown = Vec::new();
    for hunk in lines.unified_diff().context_radius(1).iter_hunks() {
        shown.push(format!("  {}", hunk.header()));
        for change in hunk.iter_changes() {
            let line = change.value().trim_end_matches(['\n', '\r']);
            shown.push(format!("  {}{line}", change.tag()));
        }
    }
    for line in shown.iter().take(DIFF_LINES) {
        out.push_str(line);
        out.push('\n');
    }
    if shown.len() > DIFF_LINES {
        out.push_str(&format!("  … {} more lines\n", shown.len() - DIFF_LINES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;
    use conclave::recovery::Severity;
    use conclave::runtime::{ApprovalOption, SubtaskId, TaskId};

    fn request(kind: ApprovalKind, options: Vec<ApprovalOption>) -> ApprovalRequest {
        ApprovalRequest {
            approval_id: uuid::Uuid::new_v4(),
            kind,
            task_id: TaskId::new(),
            subtask_id: Some(SubtaskId::new()),
            agent_id: String::new(),
            severity: Severity::High,
            title: "t".into(),
            detail: "d".into(),
            proposed_solution: None,
            diff: None,
            command: None,
            subtask_description: None,
            options,
            created_at: Utc::now(),
        }
    }

    #[test]
    fn auto_retries_an_escalation_once_then_aborts() {
        let mut auto = Automatic::new(ApprovePolicy::Auto);
        let escalation = request(ApprovalKind::Escalation, ApprovalOption::escalation());
        assert_eq!(auto.decide(&escalation).0.decision, ApprovalChoice::Retry);
        assert_eq!(auto.decide(&escalation).0.decision, ApprovalChoice::Abort);
        let other = request(ApprovalKind::Escalation, ApprovalOption::escalation());
        assert_eq!(auto.decide(&other).0.decision, ApprovalChoice::Retry);
        let command = request(ApprovalKind::Command, ApprovalOption::yes_no());
        assert_eq!(auto.decide(&command).0.decision, ApprovalChoice::Approve);
    }

    #[test]
    fn deny_rejects_and_aborts() {
        let mut deny = Automatic::new(ApprovePolicy::Deny);
        let escalation = request(ApprovalKind::Escalation, ApprovalOption::escalation());
        assert_eq!(deny.decide(&escalation).0.decision, ApprovalChoice::Abort);
        let change = request(ApprovalKind::FileChange, ApprovalOption::yes_no());
        assert_eq!(deny.decide(&change).0.decision, ApprovalChoice::Reject);
    }

    #[test]
    fn choices_parse_by_number_id_or_title() {
        let escalation = request(ApprovalKind::Escalation, ApprovalOption::escalation());
        assert_eq!(
            parse_choice(&escalation, "2"),
            Some(ApprovalChoice::Reassign)
        );
        assert_eq!(
            parse_choice(&escalation, " Abort "),
            Some(ApprovalChoice::Abort)
        );
        assert_eq!(
            parse_choice(&escalation, "modify the"),
            Some(ApprovalChoice::Modify)
        );
        assert_eq!(parse_choice(&escalation, "9"), None);
        assert_eq!(parse_choice(&escalation, "0"), None);
        assert_eq!(parse_choice(&escalation, ""), None);
    }

    #[test]
    fn diff_summary_counts_the_changed_lines_hunk_by_hunk() {
        let diff = FileDiff {
            uri: "file:///w/a.py".into(),
            before: "a\nb\nc\nd\n".into(),
            after: "a\nB\nB2\nd\n".into(),
        };
        let summary = diff_summary(&diff);
        assert_eq!(
            summary,
            "Diff: /w/a.py: -2 +2 lines\n  @@ -1,4 +1,4 @@\n   a\n  -b\n  -c\n  +B\n  +B2\n   d\n"
        );
        // Two edits far apart are two small hunks, not one region of everything between.
        let before: String = (1..=40).map(|i| format!("line {i}\n")).collect();
        let after = before
            .replace("line 2\n", "line two\n")
            .replace("line 39\n", "line thirty-nine\n");
        let far = FileDiff {
            uri: "file:///w/b.py".into(),
            before,
            after,
        };
        let summary = diff_summary(&far);
        assert!(
            summary.starts_with("Diff: /w/b.py: -2 +2 lines\n"),
            "{summary}"
        );
        assert!(
            summary.contains("  -line 39\n  +line thirty-nine\n"),
            "{summary}"
        );
        assert!(!summary.contains("line 20"), "{summary}");
        let same = FileDiff {
            uri: "x".into(),
            before: "a\n".into(),
            after: "a\n".into(),
        };
        assert_eq!(diff_summary(&same), "Diff: x: -0 +0 lines\n");
    }
}
