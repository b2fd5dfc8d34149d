//! Executor overhead per model round trip.
//!
//! A zero-latency in-bench model asks for one cheap tool call (`file_read` of a small
//! file in a temporary workspace), then finishes: two model round trips per execution.
//! Time spent inside the model double is measured and subtracted, so the figure is what
//! the loop itself costs: building requests, normalising calls, dispatch, the tool call,
//! failure tracking and output notes.
//!
//! Run with `cargo bench --bench executor`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use conclave::config::CommandPolicy;
use conclave::executor::builtin::{BuiltinExecutor, BuiltinSettings};
use conclave::executor::{Executor, SubtaskSpec};
use conclave::model::{
    ChatMessage, DeltaSink, ModelError, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage,
};
use conclave::tools::{DiskWriter, Sandbox, ToolRegistry, ToolSettings};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const WARMUP: u32 = 500;
const EXECUTIONS: u32 = 5_000;
const TARGET_US: f64 = 200.0;

/// Answers instantly: a tool call when the last message is the user's, else a summary.
struct InstantModel {
    tool_turn: ModelResponse,
    final_turn: ModelResponse,
    nanos_inside: AtomicU64,
}

#[async_trait]
impl ModelProvider for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: DeltaSink<'_>,
    ) -> Result<ModelResponse, ModelError> {
        let started = Instant::now();
        let response = match request.messages.last() {
            Some(ChatMessage::User { .. }) => self.tool_turn.clone(),
            _ => self.final_turn.clone(),
        };
        on_delta(&response.text);
        self.nanos_inside
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        Ok(response)
    }
}

fn main() {
    let dir = tempfile::tempdir().expect("temp workspace");
    std::fs::write(dir.path().join("small.txt"), "fn main() {}\n".repeat(20)).expect("write");
    let sandbox = Sandbox::new(dir.path()).expect("sandbox");
    let writer = Arc::new(DiskWriter::new(sandbox.clone()));
    let tools = Arc::new(ToolRegistry::new(
        sandbox,
        writer,
        ToolSettings {
            command_policy: CommandPolicy::Auto,
            ..ToolSettings::default()
        },
        None,
    ));
    let model = Arc::new(InstantModel {
        tool_turn: ModelResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "file_read".into(),
                arguments: json!({ "path": "small.txt" }),
            }],
            usage: Usage::default(),
            stop_reason: StopReason::ToolUse,
        },
        final_turn: ModelResponse {
            text: "Read it.".into(),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            stop_reason: StopReason::EndTurn,
        },
        nanos_inside: AtomicU64::new(0),
    });
    let executor = BuiltinExecutor::new(
        model.clone(),
        tools,
        BuiltinSettings {
            max_iterations: 5,
            max_retries_per_tool: 2,
            step_timeout: Duration::from_secs(30),
            max_tokens: 1024,
            temperature: None,
            context_window: 8192,
            disabled: Vec::new(),
            error_strategies: true,
        },
    );
    let spec = SubtaskSpec {
        subtask_id: "bench".into(),
        description: "Read small.txt and summarise it.".into(),
        system_prompt: "You are a bottom-layer coder.".into(),
        context: String::new(),
        target_files: Vec::new(),
        task_names: Vec::new(),
        asks_for_changes: false,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let run = |count: u32| {
        runtime.block_on(async {
            for _ in 0..count {
                let mut sink = |_: &str| {};
                let outcome = executor
                    .execute(&spec, CancellationToken::new(), &mut sink)
                    .await
                    .expect("execution");
                assert!(outcome.success && outcome.iterations == 2);
            }
        })
    };
    run(WARMUP);
    model.nanos_inside.store(0, Ordering::Relaxed);
    let started = Instant::now();
    run(EXECUTIONS);
    let elapsed = started.elapsed();

    let round_trips = f64::from(EXECUTIONS * 2);
    let model_ns = model.nanos_inside.load(Ordering::Relaxed) as f64;
    let total_us = elapsed.as_nanos() as f64 / round_trips / 1_000.0;
    let model_us = model_ns / round_trips / 1_000.0;
    let overhead_us = total_us - model_us;
    println!("executor bench: {EXECUTIONS} executions x 2 model round trips, 1 file_read each");
    println!("  wall time per round trip:          {total_us:8.1} µs");
    println!("  of which inside the model double:  {model_us:8.1} µs");
    println!(
        "  executor overhead per round trip:  {overhead_us:8.1} µs (target < {TARGET_US} µs) {}",
        if overhead_us < TARGET_US {
            "OK"
        } else {
            "OVER TARGET"
        }
    );
}
