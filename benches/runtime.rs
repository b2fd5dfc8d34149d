//! Runtime core benchmarks (issue 2). Run: `cargo bench --bench runtime`.
//!
//! - bus throughput with 1,000 agents, recording off and on (messages handled per second,
//!   end to end: send → mailbox → agent task → behaviour);
//! - one heartbeat round over 1,000 agents (sending it, and until every agent acked);
//! - memory per idle agent (bytes allocated per agent, by a counting allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use conclave::config::{Config, TeamConfig};
use conclave::runtime::{
    AgentBehavior, AgentConfig, AgentContext, AgentError, AgentId, AgentStatus, HeartbeatScheduler,
    Layer, Message, MessageKind, Runtime,
};
use conclave::store::Store;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed through to the system allocator unchanged; counting the
// bytes allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout` (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATED.fetch_add(new_size, Ordering::Relaxed);
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with `layout` (the caller's contract).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const AGENTS: usize = 1000;

struct Counter(Arc<AtomicU64>);

#[async_trait]
impl AgentBehavior for Counter {
    fn responsibilities(&self) -> String {
        String::new()
    }
    async fn handle(&mut self, _: &AgentContext, _: Arc<Message>) -> Result<(), AgentError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn config() -> Config {
    Config {
        team: TeamConfig {
            max_agents: AGENTS + 10,
            ..TeamConfig::default()
        },
        ..Config::default()
    }
}

async fn spawn_agents(runtime: &Runtime, handled: &Arc<AtomicU64>) -> Vec<AgentId> {
    let mut ids = Vec::with_capacity(AGENTS);
    for i in 0..AGENTS {
        let handle = runtime
            .pool
            .create(
                AgentConfig::new(format!("bottom-{i}"), Layer::Bottom, "bench"),
                Box::new(Counter(handled.clone())),
            )
            .expect("agent");
        ids.push(handle.id());
    }
    for id in &ids {
        runtime
            .pool
            .get(*id)
            .unwrap()
            .wait_for_status(|s| *s == AgentStatus::Idle)
            .await;
    }
    ids
}

/// Sends `total` messages round-robin to the agents from two producer tasks and
/// returns messages handled per second.
async fn bus_throughput(
    runtime: &Arc<Runtime>,
    ids: &[AgentId],
    handled: &Arc<AtomicU64>,
    total: u64,
) -> f64 {
    let before = handled.load(Ordering::Relaxed);
    let started = Instant::now();
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let bus = runtime.bus.clone();
            let ids = ids.to_vec();
            tokio::spawn(async move {
                for n in 0..total / 2 {
                    let to = ids[(n as usize * 2 + p) % ids.len()];
                    bus.send(Message::to_agent(
                        AgentId::SYSTEM,
                        to,
                        MessageKind::ProgressReport,
                        serde_json::Value::Null,
                    ))
                    .expect("send");
                    if n % 256 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        p.await.unwrap();
    }
    while handled.load(Ordering::Relaxed) - before < total {
        tokio::task::yield_now().await;
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Memory per idle agent.
        let handled = Arc::new(AtomicU64::new(0));
        let runtime = Runtime::new(config(), None);
        let before = ALLOCATED.load(Ordering::Relaxed);
        let ids = spawn_agents(&runtime, &handled).await;
        let per_agent = (ALLOCATED.load(Ordering::Relaxed) - before) / AGENTS;
        println!("memory per idle agent: {per_agent} bytes ({:.1} KiB)", per_agent as f64 / 1024.0);

        // Bus throughput, recording off.
        bus_throughput(&runtime, &ids, &handled, 200_000).await; // warm-up
        let off: Vec<f64> = [0; 3].iter().map(|_| 0.0).collect();
        let mut off = off;
        for slot in off.iter_mut() {
            *slot = bus_throughput(&runtime, &ids, &handled, 2_000_000).await;
        }
        off.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!("bus throughput, 1,000 agents, recording off: {:.0} messages/s (median of 3)", off[1]);

        // Heartbeat round.
        let scheduler = HeartbeatScheduler::new(runtime.pool.clone(), runtime.bus.clone(), runtime.events.clone());
        let mut send_times = Vec::new();
        let mut ack_times = Vec::new();
        for _ in 0..20 {
            let started = Instant::now();
            let report = scheduler.round();
            send_times.push(started.elapsed());
            let agents = runtime.pool.all();
            while agents.iter().any(|a| a.last_acked_beat() < report.beat) {
                tokio::task::yield_now().await;
            }
            ack_times.push(started.elapsed());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        send_times.sort();
        ack_times.sort();
        println!(
            "heartbeat round over 1,000 agents: sent in {:.2} ms, all acked in {:.2} ms (median of 20; p95 {:.2} / {:.2} ms)",
            ms(send_times[10]), ms(ack_times[10]), ms(send_times[18]), ms(ack_times[18])
        );
        runtime.shutdown().await;

        // Bus throughput, recording on (SQLite file in WAL mode).
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("bench.db")).unwrap();
        let handled = Arc::new(AtomicU64::new(0));
        let runtime = Runtime::new(config(), Some(store.clone()));
        let ids = spawn_agents(&runtime, &handled).await;
        let total = 600_000;
        let started = Instant::now();
        let rate = bus_throughput(&runtime, &ids, &handled, total).await;
        store.flush().await.unwrap();
        let durable = total as f64 / started.elapsed().as_secs_f64();
        println!(
            "bus throughput, 1,000 agents, recording on: {rate:.0} messages/s handled; {durable:.0} messages/s including the store's commit of every one"
        );
        runtime.shutdown().await;
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
