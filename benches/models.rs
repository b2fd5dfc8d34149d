//! Throughput of the model layer's hot paths: the SSE parser, alone and with the
//! OpenAI-compatible stream reader on top (JSON decoding and tool-call assembly).
//!
//! Run with `cargo bench --bench models`. Prints MB/s per case; the SSE parser's target
//! is at least 100 MB/s.

use std::hint::black_box;
use std::time::{Duration, Instant};

use bytes::Bytes;
use conclave::model::sse::SseParser;
use conclave::model::{ModelError, OpenAiConfig, OpenAiProvider};

/// A realistic chat-completions stream: text deltas, then a tool call in fragments.
fn openai_stream(target_bytes: usize) -> String {
    let mut out = String::with_capacity(target_bytes + 1024);
    let mut n = 0u64;
    while out.len() < target_bytes {
        out.push_str(&format!(
            "data: {{\"id\":\"chatcmpl-{n}\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o-mini\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token {n} of a longish answer \"}},\"finish_reason\":null}}]}}\n\n"
        ));
        if n % 50 == 0 {
            out.push_str(": keep-alive\r\n\r\n");
        }
        n += 1;
    }
    out.push_str("data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"file_write\",\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n");
    out.push_str("data: [DONE]\n\n");
    out
}

fn chunks_of(data: &[u8], size: usize) -> Vec<Bytes> {
    data.chunks(size).map(Bytes::copy_from_slice).collect()
}

/// Runs `f` repeatedly for about `budget`, returning the best MB/s over `bytes` per run.
fn measure(bytes: usize, budget: Duration, mut f: impl FnMut()) -> f64 {
    f(); // warm up
    let start = Instant::now();
    let mut best = f64::MAX;
    while start.elapsed() < budget {
        let run = Instant::now();
        f();
        best = best.min(run.elapsed().as_secs_f64());
    }
    bytes as f64 / best / 1_000_000.0
}

fn main() {
    let stream = openai_stream(16 * 1024 * 1024);
    let size = stream.len();
    println!(
        "input: {:.1} MB of chat-completion SSE",
        size as f64 / 1_000_000.0
    );

    for chunk_size in [64usize, 1024, 16 * 1024] {
        let chunks = chunks_of(stream.as_bytes(), chunk_size);
        let mbps = measure(size, Duration::from_secs(2), || {
            let mut parser = SseParser::new();
            let mut events = Vec::with_capacity(64);
            let mut count = 0usize;
            for chunk in &chunks {
                parser.feed_into(chunk, &mut events);
                count += events.len();
                events.clear();
            }
            count += usize::from(parser.finish().is_some());
            black_box(count);
        });
        println!("sse parser, {chunk_size:>5}-byte chunks: {mbps:8.1} MB/s");
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    let provider =
        OpenAiProvider::new(OpenAiConfig::new("http://127.0.0.1:9/v1", "m")).expect("provider");
    let chunks = chunks_of(stream.as_bytes(), 16 * 1024);
    let mbps = measure(size, Duration::from_secs(3), || {
        let items: Vec<Result<Bytes, std::convert::Infallible>> =
            chunks.iter().cloned().map(Ok).collect();
        let mut delta_bytes = 0usize;
        let mut sink = |d: &str| delta_bytes += d.len();
        let answer = runtime
            .block_on(provider.read_stream(
                futures_util::stream::iter(items),
                &mut sink,
                |never| -> ModelError { match never {} },
            ))
            .expect("stream parses");
        black_box((answer.tool_calls.len(), delta_bytes));
    });
    println!("openai stream reader (SSE + JSON + assembly): {mbps:8.1} MB/s");
}
