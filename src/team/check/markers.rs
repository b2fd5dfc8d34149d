//! `stubs.marked`: the languages' own markers of unwritten code, `todo!()` and
//! `unimplemented!()` in Rust and a thrown "not implemented" in JavaScript or TypeScript.

use async_trait::async_trait;

use super::{Bench, Check, Phase, Work, extension, with_ext};
use crate::runtime::CheckResult;

/// `stubs.marked` over the Rust, JavaScript and TypeScript files.
pub struct Markers;

#[async_trait]
impl Check for Markers {
    fn rules(&self) -> &'static [&'static str] {
        &["stubs.marked"]
    }

    fn phase(&self) -> Phase {
        Phase::Code
    }

    async fn run(&self, bench: &Bench, work: &Work<'_>) -> Vec<CheckResult> {
        let scanned = with_ext(
            work.files,
            &["rs", "js", "mjs", "cjs", "ts", "tsx", "mts", "cts"],
        );
        if scanned.is_empty() {
            return Vec::new();
        }
        let mut problems = Vec::new();
        for file in &scanned {
            let text = tokio::fs::read_to_string(bench.root.join(file))
                .await
                .unwrap_or_default();
            problems.extend(marked_stubs(file, &text));
        }
        vec![bench.verdict("stubs.marked", "stub scan", &scanned, problems)]
    }
}

/// `todo!()` / `unimplemented!()` in Rust, a thrown "not implemented" in JS/TS.
pub fn marked_stubs(path: &str, text: &str) -> Vec<String> {
    let rust = extension(path) == "rs";
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let code = line.split("//").next().unwrap_or("");
            if rust {
                code.contains("todo!(") || code.contains("unimplemented!(")
            } else {
                let lower = code.to_lowercase();
                lower.contains("throw") && lower.contains("not implemented")
            }
        })
        .map(|(i, line)| format!("{path}:{}: left unimplemented: {}", i + 1, line.trim()))
        .collect()
}
