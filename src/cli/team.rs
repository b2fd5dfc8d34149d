//! `conclave team`: the runtime core on its own — the configured team starts, answers
//! heartbeats and status queries, and everything is recorded in the workspace's store.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use conclave::config::Config;
use conclave::runtime::{CoreBehavior, Layer, Message, MessageKind, Runtime};
use conclave::store::Store;

#[derive(Args)]
pub struct TeamArgs {
    /// The workspace (its `conclave.toml` is read; the store goes to `.conclave/`).
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Heartbeat rounds to run before printing the report.
    #[arg(long, default_value_t = 3)]
    beats: u32,
    /// Overrides `heartbeatMs`.
    #[arg(long)]
    heartbeat_ms: Option<u64>,
}

pub async fn run(args: TeamArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.workspace)
        .with_context(|| format!("cannot create workspace {}", args.workspace.display()))?;
    let workspace = args.workspace.canonicalize()?;
    let mut config = Config::load(&workspace, None)?;
    if let Some(ms) = args.heartbeat_ms {
        config.heartbeat_ms = ms;
    }
    let store = Store::open(&Store::default_path(&workspace))?;
    let runtime = Runtime::new(config, Some(store.clone()));
    let team = runtime.build_team(|agent| Box::new(CoreBehavior::new(agent.role.clone())))?;
    tracing::info!(agents = team.len(), "team started");
    runtime.start_heartbeats();

    let beat = Duration::from_millis(runtime.config.heartbeat_ms.max(1));
    tokio::time::sleep(beat * args.beats + beat / 2).await;

    // Every mid asks its bottom agents how they are, as a supervisor would.
    let mut answered = 0;
    for mid in runtime.pool.by_layer(Layer::Mid) {
        for bottom in mid.config().subordinates {
            let query = Message::to_agent(
                mid.id(),
                bottom,
                MessageKind::StatusQuery,
                serde_json::Value::Null,
            );
            if runtime.bus.request(query, beat).await.is_ok() {
                answered += 1;
            }
        }
    }

    println!(
        "{:<12} {:<7} {:<13} {:>6} {:>9} {:>7}",
        "agent", "layer", "status", "score", "beats ok", "missed"
    );
    for agent in runtime.agents() {
        println!(
            "{:<12} {:<7} {:<13} {:>6.1} {:>9} {:>7}",
            agent.name,
            agent.layer.as_str(),
            agent.status.as_str(),
            agent.metrics.performance_score,
            agent.metrics.heartbeats_responded,
            agent.metrics.heartbeats_missed
        );
    }
    runtime.shutdown().await;
    let transitions = store.transitions(None).await?.len();
    let messages = store.message_count().await?;
    println!(
        "\n{} agents, {answered} status queries answered; recorded {transitions} transitions and {messages} messages in {}",
        team.len(),
        Store::default_path(&workspace).display()
    );
    Ok(ExitCode::SUCCESS)
}
