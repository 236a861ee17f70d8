//! The bridge from the Rust code's `tracing` events (the embedded node's,
//! the client's) to Python's `logging`: each event becomes a record of the
//! logger `raftlock` (or a child, by module: `logger_name`), its level
//! mapped (ERROR, WARNING, INFO, DEBUG, and TRACE as level 5), its message
//! followed by ` name=value` for each field, the fields also in
//! `record.raftlock_fields`. Nothing is printed by the bridge itself: with
//! no handler configured, Python's own last resort shows WARNING and
//! above, as for any library.
//!
//! It costs nothing when off: the `raftlock` loggers' level is cached
//! here (read again every [`forwarder::REFRESH`]), and an event below it is
//! disabled at its callsite, neither formatted nor sent. An event that
//! passes is queued for one forwarding thread, the only one that takes
//! the GIL; a runtime thread never waits for it (a full queue drops and
//! counts, reported as a WARNING record).
//!
//! - `layer`: the `tracing` layer, the level and the logger names;
//! - `forwarder`: the queue and the thread that takes the GIL.
//!
//! `RAFTLOCK_LOG` (an `EnvFilter` directive, as for `raftlock serve`) still
//! chooses which targets may log; by default the workspace's crates at
//! every level, other crates at WARNING and openraft off (it logs every
//! unreachable peer at ERROR many times a second).
//!
//! The bridge is the process's `tracing` subscriber from the first
//! `raftlock.Node` or client on. The `raftlock` command run in-process
//! before that (the wheel's script) installs its own, writing to stderr as
//! the cargo-built binary does; a process that has it keeps it.

mod forwarder;
mod layer;
mod record;

use std::sync::Once;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::OnceExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::EnvFilter;

pub use forwarder::flush;

/// Which targets may log when `RAFTLOCK_LOG` does not say.
const DEFAULT_FILTER: &str = "warn,raftlock=trace,raftlock_raft=trace,raftlock_storage=trace,\
                              raftlock_client=trace,_native=trace,openraft=off";

/// How long a node's start and stop wait for their records to reach
/// Python (`flush`), so they are logged when the call returns.
pub const FLUSH_WAIT: Duration = Duration::from_secs(1);

static INSTALLED: Once = Once::new();

/// Makes the bridge the process's subscriber, once (see the module docs),
/// and reads the loggers' level now: a node or client made just after
/// `logging` was configured logs by the new level from its first event.
/// (`call_once_py_attached`: a thread waiting for another's install lets
/// go of the GIL, which the other needs to read the level.)
pub fn install(py: Python<'_>) {
    record::set_threshold(forwarder::threshold(py));
    INSTALLED.call_once_py_attached(py, || {
        let filter = EnvFilter::try_from_env("RAFTLOCK_LOG")
            .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(layer::PythonLayer);
        // Fails only if the `raftlock` command ran in this process first:
        // its stderr subscriber stays, and so the queue is not needed.
        if subscriber.try_init().is_ok() {
            // Without a thread (none could start) every record is dropped
            // and counted.
            let _ = forwarder::start();
        }
    });
}

/// Waits (up to `timeout` seconds, the GIL released) until the records of
/// the events so far were handed to Python's `logging`.
#[pyfunction]
#[pyo3(signature = (timeout=1.0))]
pub fn flush_logs(py: Python<'_>, timeout: f64) {
    let wait = Duration::try_from_secs_f64(timeout).unwrap_or(Duration::ZERO);
    py.detach(|| flush(wait));
}

/// How many records were queued for Python, and how many were dropped
/// because its handlers fell behind, so far.
#[pyfunction]
pub fn log_record_counts() -> (u64, u64) {
    forwarder::counts()
}
