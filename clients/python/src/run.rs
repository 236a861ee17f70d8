//! Running the client's futures for Python: blocking (GIL released, Ctrl-C
//! honoured) or as an asyncio future, on the one tokio runtime of
//! `pyo3-async-runtimes`; runtime threads entering Python only while the
//! interpreter is not exiting.

use std::cell::Cell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use futures::FutureExt;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use pyo3::IntoPyObjectExt;
use raftlock_client::Error;

pub use crate::py_errors::to_py;
pub use crate::runtime::runtime;
use tokio::sync::oneshot;

/// How often a blocking call looks for a signal (Ctrl-C) while it waits.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `fut` to completion on the shared runtime, blocking this thread
/// with the GIL released. On Python's main thread, a signal handler that
/// raises (Ctrl-C: `KeyboardInterrupt`) stops the wait and drops the
/// future, which cancels the call as a dropped Rust future does (a queued
/// acquire leaves the queue).
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
    // The call runs on this thread (its GIL released), not handed to a
    // runtime thread and back: one thread switch fewer per call. A panic
    // in it is caught here, as a runtime task's would be.
    let mut fut = Box::pin(AssertUnwindSafe(fut).catch_unwind());
    let ended = if signals_run_here(py) {
        loop {
            let polled = py.detach(|| {
                runtime.block_on(async { tokio::time::timeout(SIGNAL_POLL, fut.as_mut()).await })
            });
            match polled {
                Ok(ended) => break ended,
                // Dropping `fut` on return cancels the call.
                Err(_elapsed) => py.check_signals()?,
            }
        }
    } else {
        // No signal handler runs on this thread: nothing to look for, and
        // no timer to set and clear on each wait.
        py.detach(|| runtime.block_on(fut.as_mut()))
    };
    match ended {
        Ok(result) => result.map_err(to_py),
        Err(panic) => {
            let why = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_owned());
            Err(PyRuntimeError::new_err(format!(
                "raftlock call failed: {why}"
            )))
        }
    }
}

thread_local! {
    /// Whether Python runs signal handlers on this thread, asked once.
    static SIGNALS_HERE: Cell<Option<bool>> = const { Cell::new(None) };
}

/// Whether this is Python's main thread, the only one on which a signal
/// handler (Ctrl-C's `KeyboardInterrupt`) runs; if Python cannot say,
/// `true` (a blocking call then looks for signals as it waits).
fn signals_run_here(py: Python<'_>) -> bool {
    SIGNALS_HERE.with(|here| {
        if let Some(known) = here.get() {
            return known;
        }
        let asked = (|| -> PyResult<bool> {
            let threading = py.import("threading")?;
            let main = threading.call_method0("main_thread")?.getattr("ident")?;
            main.eq(threading.call_method0("get_ident")?)
        })()
        .unwrap_or(true);
        here.set(Some(asked));
        asked
    })
}

/// `fut` as an asyncio future of the running loop. Cancelling it drops
/// `fut` (and so cancels the call). It ends through the loop's
/// [`LoopPort`](crate::loop_port): no runtime thread takes the GIL for it.
/// A loop that cannot watch a descriptor has the outcome handed to it with
/// `call_soon_threadsafe` instead, through [`with_python`], so a call that
/// ends while the interpreter exits is dropped instead of entering a
/// finalizing interpreter.
pub fn awaitable<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let runtime = runtime()?;
    let event_loop = GET_RUNNING_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    match crate::loop_port::port_of(&event_loop)? {
        Some(port) => crate::loop_port::through_port(&event_loop, &port, fut),
        None => awaitable_threadsafe(event_loop, runtime, fut),
    }
}

/// `asyncio.get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// [`awaitable`] for a loop without a port: the outcome is handed to the
/// loop with `call_soon_threadsafe`.
fn awaitable_threadsafe<'py, F, T>(
    event_loop: Bound<'py, PyAny>,
    runtime: &tokio::runtime::Runtime,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let py = event_loop.py();
    let py_future = event_loop.call_method0("create_future")?;
    let (cancel, cancelled) = oneshot::channel::<()>();
    let cancel = Mutex::new(Some(cancel));
    let on_done = PyCFunction::new_closure(py, None, None, move |args, _kwargs| -> PyResult<()> {
        let done = args.get_item(0)?;
        if done.call_method0("cancelled")?.is_truthy()? {
            if let Some(cancel) = cancel.lock().unwrap_or_else(|e| e.into_inner()).take() {
                let _ = cancel.send(());
            }
        }
        Ok(())
    })?;
    py_future.call_method1("add_done_callback", (on_done,))?;
    let target = py_future.clone().unbind();
    let event_loop = event_loop.unbind();
    runtime.spawn(async move {
        let result = tokio::select! {
            result = fut => result,
            _ = cancelled => return,
        };
        with_python(|py| {
            let (ok, value) = match result.map_err(to_py).and_then(|v| v.into_py_any(py)) {
                Ok(value) => (true, value),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            let resolved = py
                .import("raftlock._common")
                .and_then(|m| m.getattr("resolve"))
                .and_then(|resolve| {
                    event_loop.call_method1(
                        py,
                        "call_soon_threadsafe",
                        (resolve, &target, ok, value),
                    )
                });
            // A closed loop (its `asyncio.run` ended) has nobody to tell.
            drop(resolved);
        });
    });
    Ok(py_future)
}

/// Set once the interpreter starts exiting (`interpreter_exiting`): from
/// then on no runtime thread enters Python. A thread that takes the GIL
/// of a finalizing CPython is ended with `pthread_exit`, whose forced
/// unwinding through Rust frames crashed the process (SIGSEGV) when a call
/// ended just as an asyncio app exited.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Runtime threads between their check of [`EXITING`] and leaving Python.
static IN_PYTHON: AtomicUsize = AtomicUsize::new(0);

/// Runs `f` with the GIL from a runtime thread, unless the interpreter is
/// exiting (then `None`, and Python is not touched).
pub fn with_python<R>(f: impl FnOnce(Python<'_>) -> R) -> Option<R> {
    IN_PYTHON.fetch_add(1, Ordering::SeqCst);
    let result = if EXITING.load(Ordering::SeqCst) {
        None
    } else {
        Some(Python::attach(f))
    };
    IN_PYTHON.fetch_sub(1, Ordering::SeqCst);
    result
}

/// How long `interpreter_exiting` waits for runtime threads inside Python.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Called at interpreter exit (the package's last `atexit` hook): no
/// runtime thread enters Python from now on, and the ones inside leave
/// before this returns (the GIL released meanwhile), so none is there when
/// finalization begins.
#[pyfunction]
pub fn interpreter_exiting(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let deadline = std::time::Instant::now() + EXIT_WAIT;
        while IN_PYTHON.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// What a call answers Python: its value (blocking) or, with `aio`, an
/// awaitable of it.
pub type Reply<'py> = PyResult<Bound<'py, PyAny>>;

/// `fut` as a value (blocking) or, with `aio`, as an awaitable.
pub fn finish<'py, F, T>(py: Python<'py>, aio: bool, fut: F) -> Reply<'py>
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
