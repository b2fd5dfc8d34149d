//! The one spine of what happens in the runtime. A fact worth keeping is a store
//! [`Record`]; the journal commits it (when there is a store) and publishes the events
//! derived from it ([`events_of`]), so what a subscriber is told and what a restart reads
//! back cannot say different things. Events with nothing to keep (an agent that missed
//! its heartbeats) are only announced.

use super::events::{EventBus, RuntimeEvent};
use crate::store::{Record, Store};

/// Where the runtime's parts put their facts: the store and the event stream. Cheap to
/// clone.
#[derive(Clone, Default)]
pub struct Journal {
    events: EventBus,
    store: Option<Store>,
}

impl Journal {
    pub fn new(events: EventBus, store: Option<Store>) -> Self {
        Journal { events, store }
    }

    /// Commits `record` (one transaction for a [`Record::Group`]) and publishes what it
    /// says.
    pub fn keep(&self, record: Record) {
        // Told after it is handed to the store (its writer keeps the order), and made
        // only when someone listens: a message's record is on the bus's hot path.
        let listened = self.events.has_subscribers();
        let told = listened.then(|| events_of(&record));
        if let Some(store) = &self.store {
            store.record(record);
        }
        for event in told.into_iter().flatten() {
            self.events.publish(event);
        }
    }

    /// Publishes an event that is not kept.
    pub fn announce(&self, event: RuntimeEvent) {
        self.events.publish(event);
    }

    pub fn events(&self) -> &EventBus {
        &self.events
    }

    pub fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }
}

/// What subscribers are told of a record, in its order (a group's records in turn).
pub fn events_of(record: &Record) -> Vec<RuntimeEvent> {
    let event = match record {
        Record::Group(records) => return records.iter().flat_map(events_of).collect(),
        Record::AgentCreated(_) | Record::AgentRemoved { .. } | Record::FileTouched(_) => {
            return Vec::new();
        }
        Record::Transition(transition) => RuntimeEvent::AgentStatus(transition.clone()),
        Record::Message(message) => RuntimeEvent::Message(message.clone()),
        Record::WhiteboardVersion { snapshot, .. } => RuntimeEvent::WhiteboardChanged {
            id: snapshot.id,
            version: snapshot.version,
            content: snapshot.content.clone(),
            at: snapshot.updated_at,
        },
        Record::Decision(decision) => RuntimeEvent::Decision(decision.clone()),
        Record::Arbitration(result) => RuntimeEvent::Arbitration(result.clone()),
        Record::TaskCheckpoint(task) => RuntimeEvent::TaskUpdated(task.clone()),
        Record::Recovery(step) => RuntimeEvent::Recovery(step.clone()),
        Record::ApprovalRequested(request) => RuntimeEvent::ApprovalRequested(request.clone()),
        Record::ApprovalResolved {
            approval_id,
            task_id,
            answer,
            reason,
        } => RuntimeEvent::ApprovalResolved {
            approval_id: *approval_id,
            task_id: *task_id,
            decision: answer.as_ref().map(|a| a.decision),
            reason: reason.clone(),
        },
    };
    vec![event]
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::ids::AgentId;
    use crate::records::{
        AgentStatus, TaskContext, TaskOptions, TaskRecord, TaskStatus, Transition,
    };
    use crate::runtime::Tasks;

    #[tokio::test]
    async fn subscribers_hear_each_kept_record_then_the_task_it_changed() {
        let events = EventBus::new(16);
        let mut stream = events.subscribe();
        let tasks = Tasks::new(events, None);
        let task = TaskRecord::new(
            "t".into(),
            "t".into(),
            TaskContext::default(),
            TaskOptions::default(),
        );
        let id = task.id;
        tasks.insert(task);
        let transition = Transition {
            agent_id: AgentId::SYSTEM,
            from: AgentStatus::Idle,
            to: AgentStatus::Working,
            reason: "assigned".into(),
            at: Utc::now(),
        };
        tasks.update_with_records(id, vec![Record::Transition(transition)], |t| {
            t.status = TaskStatus::Running
        });

        let mut heard = Vec::new();
        while let Ok(event) = stream.try_recv() {
            heard.push(match event {
                RuntimeEvent::TaskUpdated(summary) => format!("task {:?}", summary.status),
                RuntimeEvent::AgentStatus(t) => format!("agent {}", t.reason),
                other => format!("{other:?}"),
            });
        }
        assert_eq!(
            heard,
            ["task Queued", "agent assigned", "task Running"],
            "the insert, then the record, then the task as it now stands"
        );
    }

    #[test]
    fn a_withdrawn_approval_is_told_with_its_task_and_reason() {
        let approval_id = uuid::Uuid::new_v4();
        let task_id = crate::ids::TaskId::new();
        let told = events_of(&Record::Group(vec![Record::ApprovalResolved {
            approval_id,
            task_id,
            answer: None,
            reason: Some("its task has ended".into()),
        }]));
        match told.as_slice() {
            [
                RuntimeEvent::ApprovalResolved {
                    approval_id: a,
                    task_id: t,
                    decision: None,
                    reason: Some(reason),
                },
            ] => {
                assert_eq!((*a, *t), (approval_id, task_id));
                assert_eq!(reason, "its task has ended");
            }
            other => panic!("{other:?}"),
        }
    }
}
