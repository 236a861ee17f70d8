//! The `tracing` layer of the bridge: which events pass (the cached level
//! of Python's `raftlock` logger), and an event made into a `Record`
//! handed to the forwarder without ever waiting.

use std::fmt::{Debug, Write as _};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::forwarder;
use super::record::{level_hint, passes, python_level, Record, Value};

/// The Python logger of a tracing target: `raftlock` for the `raftlock`
/// crate, a child named by module (`raftlock::serving::grant` is
/// `raftlock.serving.grant`); the workspace's other crates are children by
/// their short name (`raftlock_raft::peer` is `raftlock.raft.peer`, this
/// extension's own `_native::node_link` is `raftlock.python.node_link`),
/// and any other crate's events (tonic, sled) go under
/// `raftlock.deps.<crate>`.
pub fn logger_name(target: &str) -> String {
    let (krate, rest) = target.split_once("::").unwrap_or((target, ""));
    let base = match krate {
        "raftlock" => "raftlock".to_owned(),
        "_native" => "raftlock.python".to_owned(),
        other => match other.strip_prefix("raftlock_") {
            Some(short) => format!("raftlock.{short}"),
            None => format!("raftlock.deps.{other}"),
        },
    };
    if rest.is_empty() {
        base
    } else {
        format!("{base}.{}", rest.replace("::", "."))
    }
}

/// The message and fields of an event.
#[derive(Default)]
struct Fields {
    message: String,
    fields: Vec<(&'static str, Value)>,
}

impl Fields {
    fn add(&mut self, field: &Field, value: Value) {
        // `log.*`: the metadata of a `log` crate record (sled), not fields.
        if !field.name().starts_with("log.") {
            self.fields.push((field.name(), value));
        }
    }

    /// The message, then ` name=value` for each field (no leading space
    /// for an event of fields only).
    fn text(&self) -> String {
        let mut text = self.message.clone();
        for (name, value) in &self.fields {
            if !text.is_empty() {
                text.push(' ');
            }
            let _ = match value {
                Value::Int(v) => write!(text, "{name}={v}"),
                Value::Float(v) => write!(text, "{name}={v}"),
                Value::Bool(v) => write!(text, "{name}={v}"),
                Value::Text(v) => write!(text, "{name}={v}"),
            };
        }
        text
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.add(field, Value::Text(format!("{value:?}")));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.add(field, Value::Text(value.to_owned()));
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.add(field, Value::Int(value.into()));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.add(field, Value::Int(value.into()));
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.add(field, Value::Int(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.add(field, Value::Float(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.add(field, Value::Bool(value));
    }
}

/// The layer: events at or above the threshold become [`Record`]s, handed
/// to the forwarder with a `try_send` (a full queue drops and counts).
pub struct PythonLayer;

impl<S: Subscriber> Layer<S> for PythonLayer {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        // Decided once per callsite, until the threshold changes (then
        // the forwarder rebuilds every callsite's interest): an event below
        // it costs what a disabled `tracing` event costs.
        if !metadata.is_event() || passes(metadata.level()) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>, _: Context<'_, S>) -> bool {
        !metadata.is_event() || passes(metadata.level())
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(level_hint())
    }

    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let metadata = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut fields);
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        let thread = std::thread::current();
        forwarder::send(Record {
            logger: logger_name(metadata.target()),
            level: python_level(metadata.level()),
            text: fields.text(),
            fields: fields.fields,
            created,
            thread: thread.name().unwrap_or("unnamed").to_owned(),
            file: metadata.file().unwrap_or("<unknown>"),
            line: metadata.line().unwrap_or(0),
        });
    }
}
