//! Logging: tracing to stderr (stdout belongs to the protocol), optionally also to a
//! file, with the level from `RUST_LOG` (default `default_level`: `info`, or `warn` for
//! commands that draw their own progress on stderr).

use std::fs::OpenOptions;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// `client` also copies Conclave's own events to the editor (`conclave serve`).
pub fn init(
    log_file: Option<&Path>,
    default_level: &str,
    client: Option<conclave::lsp::ClientLogLayer>,
) -> anyhow::Result<()> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    // Every line is redacted on its way out (`conclave::redact`).
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(|| conclave::redact::Writer::new(std::io::stderr()))
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let file = match log_file {
        Some(path) => {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| anyhow::anyhow!("cannot open log file {}: {e}", path.display()))?;
            let file = std::sync::Arc::new(Mutex::new(file));
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(move || conclave::redact::Writer::new(SharedFile(file.clone())))
                    .with_ansi(false),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(stderr)
        .with(file)
        .with(client)
        .try_init()?;
    Ok(())
}

/// The log file, locked for each write.
struct SharedFile(std::sync::Arc<Mutex<std::fs::File>>);

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}
