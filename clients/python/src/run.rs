//! Running the client's futures for Python: blocking (GIL released, Ctrl-C
//! honoured) or as an asyncio awaitable, on the one tokio runtime of
//! `pyo3-async-runtimes`; and the client's errors as `raftlock.errors`.

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use raftlock_client::Error;

/// How often a blocking call looks for a signal (Ctrl-C) while it waits.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

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

/// Runs `fut` to completion on the shared runtime, blocking this thread
/// with the GIL released. A signal handler that raises (Ctrl-C:
/// `KeyboardInterrupt`) stops the wait and drops the future, which cancels
/// the call as a dropped Rust future does (a queued acquire leaves the queue).
pub fn block<F, T>(py: Python<'_>, fut: F) -> PyResult<T>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: Send + 'static,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // Blocking a runtime thread on the runtime would deadlock or panic:
        // this is a blocking call made from a callback run by the client.
        return Err(PyRuntimeError::new_err(
            "a blocking raftlock call cannot run on the client's own threads; \
             hand it to another thread, or use raftlock.asyncio",
        ));
    }
    let runtime = runtime()?;
    let mut task = runtime.spawn(fut);
    loop {
        let polled = py.detach(|| {
            runtime.block_on(async { tokio::time::timeout(SIGNAL_POLL, &mut task).await })
        });
        match polled {
            Ok(Ok(result)) => return result.map_err(to_py),
            Ok(Err(join)) => {
                return Err(PyRuntimeError::new_err(format!(
                    "raftlock call failed: {join}"
                )))
            }
            Err(_elapsed) => {
                if let Err(signal) = py.check_signals() {
                    task.abort();
                    return Err(signal);
                }
            }
        }
    }
}

/// `fut` as an asyncio awaitable of the running loop. Cancelling the
/// awaitable drops the future (and so cancels the call).
pub fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    runtime()?;
    pyo3_async_runtimes::tokio::future_into_py(py, async move { fut.await.map_err(to_py) })
}

/// `fut` as a value (blocking) or, with `aio`, as an awaitable.
pub fn finish<'py, F, T>(py: Python<'py>, aio: bool, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    if aio {
        awaitable(py, fut)
    } else {
        block(py, fut)?.into_bound_py_any(py)
    }
}

/// The exception of `raftlock.errors` for `e`: one class per variant, its
/// message without the variant's words (the class says them).
pub fn to_py(e: Error) -> PyErr {
    let (class, message) = match &e {
        Error::InvalidArgument(m) => ("InvalidArgument", m.clone()),
        Error::LeaseExpired(m) => ("LeaseExpired", m.clone()),
        Error::NotHeld(m) => ("NotHeld", m.clone()),
        Error::Timeout(m) => ("Timeout", m.clone()),
        Error::WaitEnded(m) => ("WaitEnded", m.clone()),
        Error::LimitReached(m) => ("LimitReached", m.clone()),
        Error::LockLost(m) => ("LockLost", m.clone()),
        Error::StaleFence { .. } => ("StaleFence", e.to_string()),
        Error::OutcomeUnknown(m) => ("OutcomeUnknown", m.clone()),
        Error::Unauthenticated(m) => ("Unauthenticated", m.clone()),
        Error::PermissionDenied(m) => ("PermissionDenied", m.clone()),
        Error::NotServed(_) => ("NotServed", e.to_string()),
        Error::Unavailable(m) => ("Unavailable", m.clone()),
        Error::Tls(m) => ("TlsError", m.clone()),
        Error::Startup(m) => ("NodeError", m.clone()),
        _ => ("InternalError", e.to_string()),
    };
    Python::attach(|py| {
        let made = py
            .import("raftlock.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|cls| cls.call1((message.clone(),)));
        match made {
            Ok(exception) => PyErr::from_value(exception),
            Err(import) => import,
        }
    })
}
