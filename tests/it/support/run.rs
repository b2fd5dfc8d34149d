//! The `conclave.toml` of tests that drive `conclave run` (the real binary) on the
//! scripted model: no retries to wait for, rules for the review.

/// The scripted model (`script.json` in the workspace), one call attempt, short waits.
pub const SCRIPTED: &str = r#"
heartbeatMs = 500

[llm]
provider = "scripted"
script = "script.json"

[governance]
review = "rules"

[recovery.call]
maxAttempts = 1

[recovery.severity.low]
baseDelayMs = 5

[recovery.severity.medium]
baseDelayMs = 5

[recovery.severity.high]
baseDelayMs = 5
"#;

/// A breaker that never opens within a test: failures are the point of some.
pub const BREAKER_OFF: &str = "\n[recovery.breaker]\nminCalls = 100\n";

/// [`SCRIPTED`] with [`BREAKER_OFF`], then `extra` (TOML).
pub fn scripted_without_breaker(extra: &str) -> String {
    format!("{SCRIPTED}{BREAKER_OFF}\n{extra}")
}
