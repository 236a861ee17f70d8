//! The one thread that takes the GIL for the bridge: it takes records off
//! a bounded queue, hands them to `raftlock._logging.emit` in batches, and
//! reads the `raftlock` loggers' level again every [`REFRESH`]. No
//! runtime thread waits for it: a full queue drops the record and counts
//! it, and the next batch reports the count as a WARNING record.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

use super::record::{set_threshold, Record, Value};
use crate::run::with_python;

/// Records waiting for the forwarder; past this, records are dropped.
const CAPACITY: usize = 8192;

/// The most records handed to Python under one taking of the GIL.
const BATCH: usize = 512;

/// How often the forwarder reads the loggers' level again.
pub const REFRESH: Duration = Duration::from_millis(250);

enum Message {
    Record(Record),
    /// Answered once every message queued before it was handled.
    Flush(mpsc::Sender<()>),
}

/// The queue's sending end, once the forwarder runs.
static QUEUE: OnceLock<SyncSender<Message>> = OnceLock::new();

/// Records queued so far.
static SENT: AtomicU64 = AtomicU64::new(0);

/// Records dropped so far (queue full, or the forwarder gone at exit).
static DROPPED: AtomicU64 = AtomicU64::new(0);

/// Records queued and dropped so far.
pub fn counts() -> (u64, u64) {
    (SENT.load(Ordering::Relaxed), dropped())
}

fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Queues `record` for Python, or drops and counts it: never waits.
pub fn send(record: Record) {
    let sent = QUEUE
        .get()
        .is_some_and(|queue| queue.try_send(Message::Record(record)).is_ok());
    let counter = if sent { &SENT } else { &DROPPED };
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Waits (up to `wait`) until the records queued before this call were
/// handed to Python. Call it without the GIL: the forwarder needs it.
pub fn flush(wait: Duration) {
    let Some(queue) = QUEUE.get() else { return };
    let (done, handled) = mpsc::channel();
    if queue.try_send(Message::Flush(done)).is_ok() {
        let _ = handled.recv_timeout(wait);
    }
}

/// Starts the forwarder (once).
pub fn start() -> std::io::Result<()> {
    let (queue, records) = mpsc::sync_channel(CAPACITY);
    std::thread::Builder::new()
        .name("raftlock-logs".into())
        .spawn(move || forward(&records))?;
    // Only `install`'s `Once` calls this: the queue is empty before.
    let _ = QUEUE.set(queue);
    Ok(())
}

/// The forwarder's loop; it ends when the interpreter starts exiting.
fn forward(records: &Receiver<Message>) {
    let mut reported = 0;
    let mut refresh_at = Instant::now() + REFRESH;
    loop {
        let mut batch = Vec::new();
        match records.recv_timeout(refresh_at.saturating_duration_since(Instant::now())) {
            Ok(first) => batch.push(first),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while batch.len() < BATCH {
            match records.try_recv() {
                Ok(next) => batch.push(next),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        let refresh = Instant::now() >= refresh_at;
        let dropped = dropped();
        let mut flushes = Vec::new();
        let handed = with_python(|py| {
            let mut items = Vec::with_capacity(batch.len());
            for message in batch {
                match message {
                    Message::Record(record) => items.push(record),
                    Message::Flush(done) => flushes.push(done),
                }
            }
            if !items.is_empty() || dropped > reported {
                if let Err(e) = emit(py, items, dropped - reported) {
                    e.write_unraisable(py, None);
                }
            }
            refresh.then(|| threshold(py))
        });
        let Some(threshold) = handed else {
            // Exiting: Python is not entered again; later records are
            // dropped at the closed queue.
            return;
        };
        reported = dropped;
        if let Some(level) = threshold {
            refresh_at = Instant::now() + REFRESH;
            set_threshold(level);
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

/// `raftlock._logging.emit` and `.threshold`, looked up once.
static EMIT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static THRESHOLD: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The level of the `raftlock` loggers now (Python's level number); if
/// it cannot be read, WARNING, Python's default.
pub fn threshold(py: Python<'_>) -> u8 {
    THRESHOLD
        .import(py, "raftlock._logging", "threshold")
        .and_then(|f| f.call0())
        .and_then(|level| level.extract::<i64>())
        .map_or(30, |level| u8::try_from(level.clamp(1, 255)).unwrap_or(255))
}

fn emit(py: Python<'_>, records: Vec<Record>, dropped: u64) -> PyResult<()> {
    let mut items = Vec::with_capacity(records.len());
    for record in records {
        let fields = PyDict::new(py);
        for (name, value) in record.fields {
            match value {
                Value::Int(v) => fields.set_item(name, v)?,
                Value::Float(v) => fields.set_item(name, v)?,
                Value::Bool(v) => fields.set_item(name, v)?,
                Value::Text(v) => fields.set_item(name, v)?,
            }
        }
        items.push(PyTuple::new(
            py,
            [
                record.logger.into_pyobject(py)?.into_any(),
                record.level.into_pyobject(py)?.into_any(),
                record.text.into_pyobject(py)?.into_any(),
                fields.into_any(),
                record.created.into_pyobject(py)?.into_any(),
                record.thread.into_pyobject(py)?.into_any(),
                record.file.into_pyobject(py)?.into_any(),
                record.line.into_pyobject(py)?.into_any(),
            ],
        )?);
    }
    EMIT.import(py, "raftlock._logging", "emit")?
        .call1((items, dropped))?;
    Ok(())
}
