//! The one tokio runtime the client's calls run on (`pyo3-async-runtimes`'),
//! refused in a process forked after it started, and the worker counts
//! of this module's runtimes, which `TOKIO_WORKER_THREADS` overrides.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// The process that started the shared runtime. Its threads do not survive
/// `fork()`: a child that used it would wait for ever on tasks no thread
/// runs, so it is told instead.
static RUNTIME_PID: OnceLock<u32> = OnceLock::new();

/// Set in the child of every `fork()` once the runtime started (a
/// `pthread_atfork` handler): only then can the runtime be a parent's, so
/// only then is the process id asked for, a system call a call would
/// otherwise make every time.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The variable tokio reads its worker count from.
const WORKER_THREADS_VAR: &str = "TOKIO_WORKER_THREADS";

/// The most worker threads the client's runtime takes by default. One
/// process's calls are made by Python code, which runs on one core at a
/// time (the GIL), and the Rust half of a call costs about what its
/// Python half does: two workers keep up with any one interpreter.
const CLIENT_WORKERS_MAX: usize = 2;

/// The shared runtime, if this process (not a parent it forked from)
/// started it.
pub fn runtime() -> PyResult<&'static tokio::runtime::Runtime> {
    let started = match RUNTIME_PID.get() {
        Some(_) if !FORKED.load(Ordering::Relaxed) => {
            return Ok(pyo3_async_runtimes::tokio::get_runtime());
        }
        Some(started) => *started,
        None => {
            // Before the first build: tokio's own reading of the variable
            // panics on a value it cannot parse (an empty one included).
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder
                .enable_all()
                .worker_threads(client_worker_threads()?);
            pyo3_async_runtimes::tokio::init(builder);
            let pid = std::process::id();
            let mut first = false;
            let started = *RUNTIME_PID.get_or_init(|| {
                first = true;
                pid
            });
            if first {
                // SAFETY: `forked` only stores to an atomic, which is
                // async-signal-safe, as a child-side fork handler must be.
                unsafe { libc::pthread_atfork(None, None, Some(forked)) };
            }
            started
        }
    };
    if started != std::process::id() {
        return Err(PyRuntimeError::new_err(
            "raftlock was used before this process forked, and its threads do not \
             survive fork(): create raftlock clients after forking (e.g. in a \
             gunicorn post_fork hook, not with --preload)",
        ));
    }
    Ok(pyo3_async_runtimes::tokio::get_runtime())
}

/// The worker threads of an embedded node's runtime: `TOKIO_WORKER_THREADS`
/// if set to a count above 0, the machine's parallelism if unset or
/// empty; any other value is a `ValueError` naming the variable.
pub fn worker_threads() -> PyResult<usize> {
    Ok(worker_threads_set()?.unwrap_or_else(parallelism))
}

/// The worker threads of the client's runtime: `TOKIO_WORKER_THREADS` as
/// for a node; unset or empty, one CPU fewer than the machine has (the
/// interpreter's thread keeps one), at least 1 and at most
/// [`CLIENT_WORKERS_MAX`]. A worker that would be woken to look for work
/// another has already taken costs a thread switch each time: on a
/// 2-core machine, 1 worker spends about a tenth less CPU per awaited
/// call than 2 (docs/performance.md, "Python clients").
pub fn client_worker_threads() -> PyResult<usize> {
    Ok(worker_threads_set()?
        .unwrap_or_else(|| parallelism().saturating_sub(1).clamp(1, CLIENT_WORKERS_MAX)))
}

fn parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, NonZeroUsize::get)
}

/// `TOKIO_WORKER_THREADS`' count, `None` if unset or empty.
fn worker_threads_set() -> PyResult<Option<usize>> {
    let set = std::env::var_os(WORKER_THREADS_VAR).filter(|v| !v.is_empty());
    let Some(value) = set else {
        return Ok(None);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<NonZeroUsize>().ok())
        .map(|n| Some(n.get()))
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{WORKER_THREADS_VAR} must be a number of threads above 0, or empty or \
                 unset for the default"
            ))
        })
}
