//! Shared helpers for the runtime tests: a runtime over an in-memory store, a test agent
//! whose behaviour the test controls, and whether python3 is here.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use conclave::config::Config;
use conclave::runtime::EventStream;
use conclave::runtime::{
    AgentBehavior, AgentConfig, AgentContext, AgentError, AgentStatus, Message, MessageKind,
    Runtime, RuntimeEvent,
};
use conclave::store::Store;
use tokio::sync::{broadcast, mpsc};

pub fn runtime(config: Config) -> Arc<Runtime> {
    Runtime::new(config, Some(Store::in_memory().expect("in-memory store")))
}

/// A behaviour that forwards every message it handles to the test, works on
/// `task_assign` (working → idle, counting the task), and wedges for ever on a
/// `warning` whose payload says `"hang": true`.
pub struct Probe {
    pub seen: mpsc::UnboundedSender<Arc<Message>>,
}

#[async_trait]
impl AgentBehavior for Probe {
    fn responsibilities(&self) -> String {
        "Proves the lifecycle in tests.".into()
    }

    async fn handle(
        &mut self,
        ctx: &AgentContext,
        message: Arc<Message>,
    ) -> Result<(), AgentError> {
        let _ = self.seen.send(message.clone());
        match message.kind {
            MessageKind::TaskAssign => {
                ctx.handle
                    .transition(AgentStatus::Working, "task assigned")?;
                ctx.handle.set_current_task(message.task_id.clone());
                ctx.handle
                    .update_metrics(|m| m.record_task(true, Duration::from_millis(10)));
                ctx.handle.set_current_task(None);
                ctx.handle.transition(AgentStatus::Idle, "task done")?;
            }
            MessageKind::StatusQuery => {
                ctx.reply(
                    &message,
                    MessageKind::ProgressReport,
                    serde_json::json!({"ok": true}),
                )
                .map_err(|e| AgentError::Behavior {
                    agent: ctx.id(),
                    message: e.to_string(),
                })?;
            }
            MessageKind::Warning if message.payload["hang"] == true => {
                std::future::pending::<()>().await;
            }
            _ => {}
        }
        Ok(())
    }
}

/// Spawns a probe agent and waits until it is idle. Returns the receiver of what it handled.
pub async fn spawn_probe(
    runtime: &Runtime,
    config: AgentConfig,
) -> (
    Arc<conclave::runtime::AgentHandle>,
    mpsc::UnboundedReceiver<Arc<Message>>,
) {
    let (seen, rx) = mpsc::unbounded_channel();
    let handle = runtime
        .pool
        .create(config, Box::new(Probe { seen }))
        .expect("agent created");
    handle.wait_for_status(|s| *s == AgentStatus::Idle).await;
    (handle, rx)
}

/// The next event matching `want`, skipping others.
pub async fn next_event(
    events: &mut EventStream,
    mut want: impl FnMut(&RuntimeEvent) -> bool,
) -> RuntimeEvent {
    loop {
        match events.recv().await {
            Ok(event) if want(&event) => return event,
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(e) => panic!("event stream ended: {e}"),
        }
    }
}

/// Whether python3 runs here; without it a test says SKIPPED, and under CI (whose
/// machines have it) fails.
pub fn python_available() -> bool {
    let found = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok();
    assert!(
        found || std::env::var_os("CI").is_none(),
        "python3 is needed by this test and is not installed"
    );
    if !found {
        eprintln!("SKIPPED: python3 is not installed");
    }
    found
}
