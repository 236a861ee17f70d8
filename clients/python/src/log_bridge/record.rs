//! What the layer hands the forwarder: a [`Record`] of an event, and the
//! level threshold the forwarder reads from Python's loggers and the
//! layer checks every event against.

use std::sync::atomic::{AtomicU8, Ordering};

use tracing::level_filters::LevelFilter;
use tracing::Level;

/// Python's level numbers (`logging.ERROR`...); TRACE is 5, below DEBUG,
/// so a logger at DEBUG does not get tracing's most verbose events.
pub fn python_level(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 40,
        Level::WARN => 30,
        Level::INFO => 20,
        Level::DEBUG => 10,
        Level::TRACE => 5,
    }
}

/// The lowest Python level the `raftlock` loggers take now (Python's
/// default, WARNING, until the first read): an event below it is neither
/// formatted nor sent.
static THRESHOLD: AtomicU8 = AtomicU8::new(30);

/// Caches the threshold; when it changed, every callsite is asked again
/// whether it is enabled.
pub fn set_threshold(python_level: u8) {
    if THRESHOLD.swap(python_level, Ordering::Relaxed) != python_level {
        tracing::callsite::rebuild_interest_cache();
    }
}

pub fn passes(level: &Level) -> bool {
    python_level(level) >= THRESHOLD.load(Ordering::Relaxed)
}

/// The most verbose tracing level that passes the threshold.
pub fn level_hint() -> LevelFilter {
    let threshold = THRESHOLD.load(Ordering::Relaxed);
    [
        Level::TRACE,
        Level::DEBUG,
        Level::INFO,
        Level::WARN,
        Level::ERROR,
    ]
    .into_iter()
    .find(|level| python_level(level) >= threshold)
    .map_or(LevelFilter::OFF, LevelFilter::from_level)
}

/// A field's value, kept as its Python type for `record.raftlock_fields`.
pub enum Value {
    Int(i128),
    Float(f64),
    Bool(bool),
    Text(String),
}

/// An event on its way to Python.
pub struct Record {
    pub logger: String,
    /// Python's level number.
    pub level: u8,
    /// The message followed by ` name=value` for each field.
    pub text: String,
    pub fields: Vec<(&'static str, Value)>,
    /// Seconds since the epoch, when the event happened.
    pub created: f64,
    /// The emitting thread's name (`raftlock-node-1`, a tokio worker).
    pub thread: String,
    pub file: &'static str,
    pub line: u32,
}
