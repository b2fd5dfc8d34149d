//! Logs to the editor: a tracing layer that copies Conclave's own events (info and
//! above, after the global filter) into a bounded channel, which `initialized` drains
//! into `window/logMessage`. Stderr keeps every line regardless; when the editor falls
//! behind, lines for it are dropped rather than slowing the runtime down.

use std::fmt::Write as _;

use tokio::sync::mpsc;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// How many lines wait for the editor at most.
const BACKLOG: usize = 1024;

pub struct LogLine {
    pub level: Level,
    pub text: String,
}

pub type LogLines = mpsc::Receiver<LogLine>;

pub struct ClientLogLayer {
    lines: mpsc::Sender<LogLine>,
}

/// The layer to install, and the lines it produces.
pub fn client_log_layer() -> (ClientLogLayer, LogLines) {
    let (lines, receiver) = mpsc::channel(BACKLOG);
    (ClientLogLayer { lines }, receiver)
}

impl<S: Subscriber> Layer<S> for ClientLogLayer {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        // The protocol library logs about the connection itself: sending that over the
        // same connection would loop.
        if *meta.level() > Level::INFO || !meta.target().starts_with("conclave") {
            return;
        }
        let mut text = Text::default();
        event.record(&mut text);
        let _ = self.lines.try_send(LogLine {
            level: *meta.level(),
            text: text.0,
        });
    }
}

/// `message` first, then `key=value` for the other fields.
#[derive(Default)]
struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value:?}{rest}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.insert_str(0, value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}
