//! The one tokio runtime the client's calls run on (`pyo3-async-runtimes`'),
//! refused in a process forked after it started.

use std::sync::OnceLock;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The process that started the shared runtime. Its threads do not survive
/// `fork()`: a child that used it would wait for ever on tasks no thread
/// runs, so it is told instead.
static RUNTIME_PID: OnceLock<u32> = OnceLock::new();

/// The shared runtime, if this process (not a parent it forked from)
/// started it.
pub fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    let pid = std::process::id();
    let runtime = pyo3_async_runtimes::tokio::get_runtime();
    if *RUNTIME_PID.get_or_init(|| pid) != pid {
        return Err(PyRuntimeError::new_err(
            "raftlock was used before this process forked, and its threads do not \
             survive fork(): create raftlock clients after forking (e.g. in a \
             gunicorn post_fork hook, not with --preload)",
        ));
    }
    Ok(runtime)
}
