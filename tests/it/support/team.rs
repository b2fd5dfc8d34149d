//! Shared set-up for the team tests: an engine over a temp workspace, a scripted model
//! and an in-memory store, with recovery delays small enough to keep tests quick.

use std::sync::Arc;

use conclave::config::{Config, ReviewMode};
use conclave::engine::{Engine, EngineSetup, SubmitTask};
use conclave::model::scripted::ScriptedProvider;
use conclave::runtime::TaskId;
use conclave::store::Store;
use conclave::team::BehaviorFactory;
use serde_json::Value;

pub struct Team {
    pub engine: Arc<Engine>,
    pub model: Arc<ScriptedProvider>,
    pub workspace: tempfile::TempDir,
    pub store: Store,
}

/// A config for tests: the default team, rules review, one call attempt (so injected
/// errors reach the subtask ladder), base delays of a few milliseconds, and the checks
/// free to run the scripted code (`approvals.commands = "auto"`; the consent itself is
/// tested in tests/it/security.rs).
pub fn config() -> Config {
    let mut config = Config::default();
    config.governance.review = ReviewMode::Rules;
    config.approvals.commands = conclave::config::CommandPolicy::Auto;
    config.recovery.call.max_attempts = 1;
    for step in [
        &mut config.recovery.severity.low,
        &mut config.recovery.severity.medium,
        &mut config.recovery.severity.high,
    ] {
        step.base_delay_ms = 10;
    }
    config
}

pub async fn start(script: Value, config: Config) -> Team {
    start_with(script, config, None).await
}

pub async fn start_with(script: Value, config: Config, behaviors: Option<BehaviorFactory>) -> Team {
    let workspace = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedProvider::from_json(&script.to_string()).unwrap());
    let store = Store::in_memory().unwrap();
    let mut setup = EngineSetup::new(workspace.path(), config);
    setup.store = Some(store.clone());
    setup.model = Some(model.clone());
    setup.behaviors = behaviors;
    let engine = Engine::start(setup).await.unwrap();
    Team {
        engine,
        model,
        workspace,
        store,
    }
}

impl Team {
    pub fn submit(&self, description: &str) -> TaskId {
        self.engine
            .submit(SubmitTask {
                description: description.into(),
                ..SubmitTask::default()
            })
            .unwrap()
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.workspace.path().join(path)).unwrap_or_default()
    }

    /// What the agent named `name` (say `bottom-1-1`) wrote on its whiteboard.
    pub fn board_of(&self, name: &str) -> String {
        let agent = self
            .engine
            .agents()
            .into_iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("no agent {name}"));
        self.engine
            .whiteboard(&format!("agent:{}", agent.agent_id))
            .unwrap()
            .content
            .to_string()
    }

    /// What the (first) mid agent wrote on its whiteboard.
    pub fn mid_board(&self) -> String {
        let mid = self
            .engine
            .agents()
            .into_iter()
            .find(|a| a.layer == conclave::runtime::Layer::Mid)
            .unwrap();
        self.engine
            .whiteboard(&format!("agent:{}", mid.agent_id))
            .unwrap()
            .content
            .to_string()
    }
}

/// A plan answer for the mid's planning call.
pub fn plan(subtasks: &[&str]) -> Value {
    let list: Vec<Value> = subtasks
        .iter()
        .map(|d| serde_json::json!({ "description": d }))
        .collect();
    serde_json::json!({ "match": "Plan this task", "text": serde_json::json!({ "subtasks": list }).to_string() })
}

/// A bottom agent's two steps for `description`: write `path`, then say it is done.
pub fn writes(description: &str, path: &str, content: &str) -> [Value; 2] {
    [
        serde_json::json!({ "match": description, "toolCalls": [ { "name": "file_write", "arguments": { "path": path, "content": content } } ] }),
        serde_json::json!({ "match": format!("{path}"), "text": format!("Wrote {path}.") }),
    ]
}

/// A plan of two subtasks, "Create hello.txt" and "Create world.txt", and the steps that
/// write them.
pub fn two_greeting_files() -> Value {
    let [a1, a2] = writes("Create hello.txt", "hello.txt", "hello\n");
    let [b1, b2] = writes("Create world.txt", "world.txt", "world\n");
    serde_json::json!([
        plan(&["Create hello.txt", "Create world.txt"]),
        a1,
        a2,
        b1,
        b2
    ])
}
