//! What an agent learned on a failed attempt, and who gets it (the seed's reflect step
//! and `helpPeer` / `share_knowledge`).
//!
//! A bottom agent whose attempt failed at its work reports what it learned with the
//! failure ([`Learned`]): the files it read, the tool errors it saw and, with
//! `team.reflect`, its own short account of what it tried, why it failed and what to do
//! differently (one small call of its model, kept on its whiteboard). The subtask's
//! supervisor keeps it on the task as a [`Lesson`]; with `team.shareKnowledge` the
//! lessons go into the context of the next attempt at the same subtask (the same agent
//! or the peer who takes over) and of the task's other subtasks that work on the same
//! files, and the supervisor's board says with whom they were shared.

use serde::{Deserialize, Serialize};

use super::Services;
use crate::executor::ExecutionOutcome;
use crate::ids::{AgentId, SubtaskId, TaskId};
use crate::model::{ChatMessage, ModelRequest};
use crate::recovery::Failure;
use crate::runtime::AgentContext;

/// The longest reflection kept (characters).
const REFLECTION_MAX_CHARS: usize = 500;
/// The lessons a task keeps (the latest).
const LESSONS_KEPT: usize = 8;
/// The lessons one attempt is given (the latest that concern it).
const LESSONS_GIVEN: usize = 3;

/// What a failed attempt learned, reported with its failure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Learned {
    /// Workspace-relative paths it read.
    pub files_read: Vec<String>,
    /// Tool errors it saw ("tool: first line").
    pub errors_seen: Vec<String>,
    /// Its own account of the attempt (`team.reflect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reflection: Option<String>,
}

impl Learned {
    /// What the execution gathered, when there was one.
    pub fn of(outcome: Option<&ExecutionOutcome>) -> Learned {
        outcome.map_or_else(Learned::default, |o| Learned {
            files_read: o.files_read.clone(),
            errors_seen: o.errors_seen.clone(),
            reflection: None,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.files_read.is_empty() && self.errors_seen.is_empty() && self.reflection.is_none()
    }
}

/// A lesson kept on the task: who learned what, on which subtask, about which files.
#[derive(Clone, Debug)]
pub struct Lesson {
    pub subtask: SubtaskId,
    /// The subtask's first line.
    pub subtask_title: String,
    pub agent: AgentId,
    pub agent_name: String,
    /// The files the attempt wrote or read, and those its subtask names.
    pub files: Vec<String>,
    /// "kind: first line" of the failure.
    pub failure: String,
    pub learned: Learned,
}

impl Lesson {
    /// The lesson as an attempt reads it: all of it, or (`whole` false) the reflection.
    fn describe(&self, whole: bool) -> Option<String> {
        if !whole {
            return self
                .learned
                .reflection
                .as_ref()
                .map(|r| format!("Its own account: {r}"));
        }
        let mut lines = vec![format!("It failed ({}).", self.failure)];
        if !self.learned.files_read.is_empty() {
            lines.push(format!("It read {}.", self.learned.files_read.join(", ")));
        }
        if !self.learned.errors_seen.is_empty() {
            lines.push(format!(
                "Errors it saw: {}.",
                self.learned.errors_seen.join("; ")
            ));
        }
        if let Some(reflection) = &self.learned.reflection {
            lines.push(format!("Its own account: {reflection}"));
        }
        Some(lines.join(" "))
    }
}

/// Asks the agent's model for its account of a failed attempt: what it tried, why it
/// failed, what to do differently. `None` when reflection is off, the failure is not one
/// of the work (`recovery::strategy::worth_a_reflection`), or the call fails (a
/// reflection is never worth a retry of its own).
pub async fn reflect(
    ctx: &AgentContext,
    s: &Services,
    description: &str,
    outcome: Option<&ExecutionOutcome>,
    failure: &Failure,
) -> Option<String> {
    if !s.config.team.reflect || !crate::recovery::strategy::worth_a_reflection(failure) {
        return None;
    }
    let model = s.model(crate::config::TeamLayer::Bottom)?;
    let did = outcome
        .map(|o| o.partial_results.join("\n"))
        .filter(|did| !did.trim().is_empty())
        .unwrap_or_else(|| "nothing that changed a file".into());
    let errors = outcome
        .map(|o| o.errors_seen.join("\n"))
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| "none".into());
    let request = ModelRequest {
        system: ctx.system_prompt(super::roles::BOTTOM),
        messages: vec![ChatMessage::user(format!(
            "Your attempt at this subtask failed.\n\nThe subtask:\n{description}\n\nWhat you did:\n{did}\n\n\
             Tool errors you saw:\n{errors}\n\nWhy it failed:\n{}\n\n\
             In at most three short sentences of plain text (no code): what you tried, why it failed, \
             and what to do differently on the next attempt.",
            crate::tools::truncate_text(&failure.message, 1_500)
        ))],
        tools: Vec::new(),
        max_tokens: 200,
        temperature: s.temperature(crate::config::TeamLayer::Bottom),
    };
    // A task paused at its spend limit waits for the person here, outside the time limit.
    model.ready().await.ok()?;
    let limit = std::time::Duration::from_millis(s.config.recovery.step_timeout_ms);
    match tokio::time::timeout(limit, model.complete(&request, &mut |_| {})).await {
        Ok(Ok(response)) => {
            let text = plain(&response.text);
            (!text.is_empty()).then_some(text)
        }
        Ok(Err(e)) => {
            tracing::info!("no reflection on the failed attempt: {e}");
            None
        }
        Err(_) => {
            tracing::info!("no reflection on the failed attempt: the call ran out of time");
            None
        }
    }
}

/// The answer as one paragraph of prose: code blocks dropped, cut to
/// [`REFLECTION_MAX_CHARS`].
fn plain(answer: &str) -> String {
    let mut in_code = false;
    let text = answer
        .lines()
        .filter(|line| {
            let fence = line.trim_start().starts_with("```");
            in_code ^= fence;
            !fence && !in_code
        })
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    crate::tools::truncate_text(&text, REFLECTION_MAX_CHARS)
}

/// Keeps `lesson` on its task (the latest [`LESSONS_KEPT`]).
pub fn keep(s: &Services, task_id: TaskId, lesson: Lesson) {
    let mut state = s.task_state.entry(task_id).or_default();
    state.lessons.push(lesson);
    let extra = state.lessons.len().saturating_sub(LESSONS_KEPT);
    state.lessons.drain(..extra);
}

/// What is given to an attempt at `subtask` by `assignee` whose work concerns `files`:
/// with `team.shareKnowledge`, the lessons of earlier attempts at the same subtask and of
/// the task's other subtasks that worked on one of the same files; with `team.reflect`
/// alone, the reflections of earlier attempts at the same subtask. The text for its
/// context and the names of the agents whose lessons it carries (other than the
/// assignee's own); `None` when there is nothing to give.
pub fn shared_with(
    s: &Services,
    task_id: TaskId,
    subtask: SubtaskId,
    assignee: AgentId,
    files: &[String],
) -> Option<(String, Vec<String>)> {
    let share = s.config.team.share_knowledge;
    if !share && !s.config.team.reflect {
        return None;
    }
    let lessons: Vec<Lesson> = s
        .task_state
        .get(&task_id)
        .map(|state| state.lessons.clone())
        .unwrap_or_default();
    given_to(&lessons, subtask, assignee, files, share)
}

/// The lessons of `lessons` given to an attempt (see [`shared_with`]): all that concern
/// it when `share`, else the reflections on the same subtask.
fn given_to(
    lessons: &[Lesson],
    subtask: SubtaskId,
    assignee: AgentId,
    files: &[String],
    share: bool,
) -> Option<(String, Vec<String>)> {
    let concerns = |lesson: &Lesson| {
        lesson.subtask == subtask || (share && lesson.files.iter().any(|f| files.contains(f)))
    };
    let given: Vec<(&Lesson, String)> = lessons
        .iter()
        .rev()
        .filter(|l| concerns(l))
        .filter_map(|l| l.describe(share).map(|text| (l, text)))
        .take(LESSONS_GIVEN)
        .collect();
    if given.is_empty() {
        return None;
    }
    let mut text = Vec::new();
    let mut from = Vec::new();
    for (lesson, said) in given.into_iter().rev() {
        let whose = if lesson.agent == assignee {
            "Your own earlier attempt at this subtask".to_string()
        } else if lesson.subtask == subtask {
            format!(
                "{} worked on this subtask before you took it over",
                lesson.agent_name
            )
        } else {
            format!(
                "{} worked on the same files for \"{}\"",
                lesson.agent_name, lesson.subtask_title
            )
        };
        if lesson.agent != assignee && !from.contains(&lesson.agent_name) {
            from.push(lesson.agent_name.clone());
        }
        text.push(format!("- {whose}. {said}"));
    }
    Some((
        format!(
            "What the team learned that concerns your work:\n{}\n",
            text.join("\n")
        ),
        from,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lesson(subtask: SubtaskId, agent: AgentId, name: &str, files: &[&str]) -> Lesson {
        Lesson {
            subtask,
            subtask_title: format!("work of {name}"),
            agent,
            agent_name: name.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
            failure: "check_failed: `add` has no body".into(),
            learned: Learned {
                files_read: vec!["calc.py".into()],
                errors_seen: vec!["file_edit: old_text not found".into()],
                reflection: Some(format!("{name} wrote a stub; write the body next time.")),
            },
        }
    }

    #[test]
    fn a_retry_and_a_peer_get_the_lessons_of_the_same_subtask() {
        let (subtask, first, peer) = (SubtaskId::new(), AgentId::new(), AgentId::new());
        let lessons = [lesson(subtask, first, "bottom-1-1", &["calc.py"])];
        let files = ["calc.py".to_string()];
        let (own, from) = given_to(&lessons, subtask, first, &files, true).unwrap();
        assert!(
            own.contains("Your own earlier attempt at this subtask"),
            "{own}"
        );
        assert!(
            own.contains("It read calc.py") && own.contains("old_text not found"),
            "{own}"
        );
        assert!(from.is_empty(), "the agent's own lesson is no one else's");
        let (taken_over, from) = given_to(&lessons, subtask, peer, &files, true).unwrap();
        assert!(
            taken_over.contains("bottom-1-1 worked on this subtask before you took it over"),
            "{taken_over}"
        );
        assert!(
            taken_over.contains("Its own account: bottom-1-1 wrote a stub"),
            "{taken_over}"
        );
        assert_eq!(from, ["bottom-1-1"]);
    }

    #[test]
    fn a_sibling_gets_the_lessons_on_the_same_files_only() {
        let (failed, sibling) = (SubtaskId::new(), SubtaskId::new());
        let lessons = [lesson(failed, AgentId::new(), "bottom-1-1", &["calc.py"])];
        let (text, from) = given_to(
            &lessons,
            sibling,
            AgentId::new(),
            &["calc.py".to_string()],
            true,
        )
        .unwrap();
        assert!(
            text.contains("bottom-1-1 worked on the same files for \"work of bottom-1-1\""),
            "{text}"
        );
        assert_eq!(from, ["bottom-1-1"]);
        let elsewhere = given_to(
            &lessons,
            sibling,
            AgentId::new(),
            &["report.py".to_string()],
            true,
        );
        assert!(elsewhere.is_none());
    }

    #[test]
    fn reflection_alone_gives_only_the_reflections_on_the_same_subtask() {
        let (subtask, sibling, agent) = (SubtaskId::new(), SubtaskId::new(), AgentId::new());
        let mut quiet = lesson(subtask, agent, "bottom-1-1", &["calc.py"]);
        quiet.learned.reflection = None;
        let lessons = [
            quiet.clone(),
            lesson(subtask, agent, "bottom-1-1", &["calc.py"]),
        ];
        let files = ["calc.py".to_string()];
        let (text, _) = given_to(&lessons, subtask, agent, &files, false).unwrap();
        assert!(text.contains("Its own account"), "{text}");
        assert!(
            !text.contains("It read calc.py"),
            "the facts are shared knowledge: {text}"
        );
        assert_eq!(text.matches("- Your own").count(), 1, "{text}");
        assert!(given_to(&lessons, sibling, agent, &files, false).is_none());
        assert!(given_to(&[quiet], subtask, agent, &files, false).is_none());
    }

    #[test]
    fn a_reflection_is_one_paragraph_of_prose() {
        assert_eq!(
            plain("I wrote a stub.\n\n```python\npass\n```\nNext: write the body."),
            "I wrote a stub. Next: write the body."
        );
        assert!(plain(&"x".repeat(2_000)).len() < 600);
    }
}
