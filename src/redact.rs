//! Secrets never leave: the last line of defence behind the scrubbed environment.
//!
//! Whatever reaches a model prompt, the store, ERROR_REPORT.md, the logs or an editor
//! passes through [`text`]: the values of the configured key variables and of every
//! credential-looking variable of the server's environment ([`register_environment`]),
//! and text shaped like a common credential (provider keys, GitHub, GitLab, Slack, AWS
//! and Google tokens, bearer tokens, private key blocks), become `[REDACTED]`.
//!
//! The list of known values is process-wide: a secret is a secret wherever it shows up,
//! whichever workspace the server holds.

use std::borrow::Cow;
use std::sync::{OnceLock, RwLock};

use regex::Regex;

/// What stands in for a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are not taken for secrets (they would match ordinary text).
const MIN_SECRET_LEN: usize = 8;

fn known() -> &'static RwLock<Vec<String>> {
    static KNOWN: OnceLock<RwLock<Vec<String>>> = OnceLock::new();
    KNOWN.get_or_init(|| RwLock::new(Vec::new()))
}

fn shapes() -> &'static Regex {
    static SHAPES: OnceLock<Regex> = OnceLock::new();
    SHAPES.get_or_init(|| {
        Regex::new(concat!(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
            r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{20,}",
            r"|\bgh[pousr]_[A-Za-z0-9]{20,}",
            r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
            r"|\bglpat-[A-Za-z0-9_\-]{20,}",
            r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}",
            r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            r"|\bAIza[0-9A-Za-z_\-]{35}",
            r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{20,}=*",
        ))
        .expect("the credential shapes are a valid pattern")
    })
}

/// Takes `value` for a secret from now on.
pub fn register(value: &str) {
    let value = value.trim();
    if value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut known = known().write().unwrap_or_else(|e| e.into_inner());
    if !known.iter().any(|k| k == value) {
        known.push(value.to_string());
        // Longest first, so a secret that contains another is replaced whole.
        known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }
}

/// Registers the values of `names` and of every credential-looking variable of this
/// process's environment.
pub fn register_environment(names: &[String]) {
    for (name, value) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if crate::exec::env::is_secret_env_name(&name) || names.iter().any(|n| *n == name) {
            register(&value.to_string_lossy());
        }
    }
}

/// `input` with every known secret and credential-shaped text replaced.
pub fn text(input: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(input);
    {
        let known = known().read().unwrap_or_else(|e| e.into_inner());
        for secret in known.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
    }
    if shapes().is_match(&out) {
        let replaced = shapes().replace_all(&out, |caps: &regex::Captures<'_>| {
            let found = &caps[0];
            if found.len() > 6 && found[..6].eq_ignore_ascii_case("bearer") {
                format!("Bearer {REDACTED}")
            } else {
                REDACTED.to_string()
            }
        });
        out = Cow::Owned(replaced.into_owned());
    }
    out
}

/// [`text`], owned.
pub fn string(input: String) -> String {
    match text(&input) {
        Cow::Borrowed(_) => input,
        Cow::Owned(redacted) => redacted,
    }
}

/// A writer that redacts what goes through it, line by line (for log output).
pub struct Writer<W> {
    inner: W,
}

impl<W> Writer<W> {
    pub fn new(inner: W) -> Writer<W> {
        Writer { inner }
    }
}

impl<W: std::io::Write> std::io::Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let shown = String::from_utf8_lossy(buf);
        let redacted = text(&shown);
        self.inner.write_all(redacted.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_credential_shapes_are_redacted() {
        register("hunter2-very-secret-value");
        let leaked = "env: MY_KEY=hunter2-very-secret-value PATH=/usr/bin";
        assert_eq!(text(leaked), "env: MY_KEY=[REDACTED] PATH=/usr/bin");
        for (shape, kept) in [
            (
                "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx",
                "OPENAI_API_KEY=[REDACTED]",
            ),
            (
                "token ghp_0123456789abcdefghijABCDEFGHIJ here",
                "token [REDACTED] here",
            ),
            ("aws AKIAIOSFODNN7EXAMPLE.", "aws [REDACTED]."),
            (
                "Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXk\\n-----END OPENSSH PRIVATE KEY-----",
                "[REDACTED]",
            ),
        ] {
            assert_eq!(text(shape), kept, "{shape}");
        }
        let plain = "def sk(x): return x  # a skeleton, sk-1";
        assert!(
            matches!(text(plain), Cow::Borrowed(_)),
            "ordinary text is untouched"
        );
    }

    #[test]
    fn short_values_are_not_taken_for_secrets() {
        register("abc");
        assert_eq!(text("abc def"), "abc def");
    }

    #[test]
    fn json_stays_json() {
        register("sk-test-9f8e7d6c5b4a");
        let frame = r#"{"output":"key=sk-test-9f8e7d6c5b4a\n"}"#;
        let redacted = text(frame);
        let value: serde_json::Value = serde_json::from_str(&redacted).unwrap();
        assert_eq!(value["output"], "key=[REDACTED]\n");
    }
}
