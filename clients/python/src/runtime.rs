//! The one tokio runtime the client's calls run on (`pyo3-async-runtimes`'),
//! refused in a process forked after it started, and the worker count
//! every runtime of this module takes from `TOKIO_WORKER_THREADS`.

use std::num::NonZeroUsize;
use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The process that started the shared runtime. Its threads do not survive
/// `fork()`: a child that used it would wait for ever on tasks no thread
/// runs, so it is told instead.
static RUNTIME_PID: OnceLock<u32> = OnceLock::new();

/// The variable tokio reads its worker count from.
const WORKER_THREADS_VAR: &str = "TOKIO_WORKER_THREADS";

/// The shared runtime, if this process (not a parent it forked from)
/// started it.
pub fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    let pid = std::process::id();
    let started = match RUNTIME_PID.get() {
        Some(started) => *started,
        None => {
            // Before the first build: tokio's own reading of the variable
            // panics on a value it cannot parse (an empty one included).
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.enable_all().worker_threads(worker_threads()?);
            pyo3_async_runtimes::tokio::init(builder);
            *RUNTIME_PID.get_or_init(|| pid)
        }
    };
    if started != pid {
        return Err(PyRuntimeError::new_err(
            "raftlock was used before this process forked, and its threads do not \
             survive fork(): create raftlock clients after forking (e.g. in a \
             gunicorn post_fork hook, not with --preload)",
        ));
    }
    Ok(pyo3_async_runtimes::tokio::get_runtime())
}

/// The worker threads of a runtime: `TOKIO_WORKER_THREADS` if set to a
/// count above 0, the machine's parallelism if unset or empty; any other
/// value is a `ValueError` naming the variable.
pub fn worker_threads() -> PyResult<usize> {
    let set = std::env::var_os(WORKER_THREADS_VAR).filter(|v| !v.is_empty());
    let Some(value) = set else {
        return Ok(std::thread::available_parallelism().map_or(1, NonZeroUsize::get));
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<NonZeroUsize>().ok())
        .map(NonZeroUsize::get)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{WORKER_THREADS_VAR} must be a number of threads above 0, or empty or \
                 unset for one per CPU"
            ))
        })
}
