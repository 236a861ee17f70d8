//! `LoopPort`: where the awaited calls of one asyncio event loop end.
//!
//! A runtime thread never takes the GIL to finish an awaited call: it
//! queues the outcome here, still as Rust data, and wakes the loop by
//! writing one byte to a socket the loop watches (`loop.add_reader`), once
//! per batch. The loop's own thread, which holds the GIL anyway, drains the
//! queue, converts each outcome to Python and resolves its future (a
//! [`CallFuture`]), running the waiting tasks' steps there and then: one
//! wake-up and one pass of the loop serve every call that ended meanwhile,
//! and neither side waits for the other to let go of the GIL. The calls a
//! pass of the loop makes start together ([`LoopPort::flush`]), with one
//! hand-off to the runtime; those the woken tasks make in a drain start at
//! its end.
//!
//! The port lives as long as its loop (an attribute of the loop, or an
//! entry of a weak registry for loops that take no attributes); a loop
//! that cannot watch a descriptor gets none, and its calls end through
//! `call_soon_threadsafe` (`run::awaitable`).

use std::collections::HashMap;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::IntoPyObjectExt;
use pyo3::{PyTraverseError, PyVisit};
use raftlock_client::Error;
use tokio::sync::oneshot;

use crate::call_future::{self, CallFuture};
use crate::py_errors::to_py;

/// A finished call's answer, made Python on the loop's thread.
type Answer = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A finished call: its answer, or `None` if it was cancelled (its future
/// is done already).
type Outcome = Option<Answer>;

/// An awaited call, ready to run on the runtime.
type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What runtime threads share with the loop: finished calls and the wake-up.
struct Completions {
    /// Call id and outcome, in the order the calls ended.
    queue: Mutex<Vec<(u64, Outcome)>>,
    /// A wake-up byte was written and the loop has not drained since.
    signalled: AtomicBool,
    /// The writing end of the socket the loop watches.
    wake: UnixStream,
}

fn unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Completions {
    /// Queues `outcome`; wakes the loop unless a wake-up is pending.
    fn push(&self, id: u64, outcome: Outcome) {
        unpoisoned(&self.queue).push((id, outcome));
        if !self.signalled.swap(true, Ordering::AcqRel) {
            // Non-blocking: a full socket already holds a wake-up.
            let _ = (&self.wake).write(&[1]);
        }
    }
}

/// The completion port of one event loop (see the module's doc).
#[pyclass(module = "raftlock._native", frozen)]
pub struct LoopPort {
    completions: Arc<Completions>,
    /// The end the loop watches.
    readable: UnixStream,
    /// The future of each call in flight, by call id.
    pending: Mutex<HashMap<u64, Py<CallFuture>>>,
    /// Calls made since the last [`flush`](LoopPort::flush): one hand-off
    /// to the runtime starts them all, instead of one wake-up of a runtime
    /// thread per call.
    submitted: Mutex<Vec<Call>>,
    /// A drain is running: it starts the calls made meanwhile at its end,
    /// so they need no `flush` scheduled.
    draining: AtomicBool,
    next_id: AtomicU64,
}

#[pymethods]
impl LoopPort {
    /// The futures of the calls in flight, for the garbage collector (see
    /// `CallFuture::__traverse__`); a drain that holds the map meanwhile
    /// hides them from this one pass.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Ok(pending) = self.pending.try_lock() {
            for future in pending.values() {
                visit.call(future)?;
            }
        }
        Ok(())
    }

    /// Forgets the calls in flight: their loop is gone.
    fn __clear__(&self) {
        let forgotten = match self.pending.try_lock() {
            Ok(mut pending) => std::mem::take(&mut *pending),
            Err(_) => return,
        };
        drop(forgotten); // outside the lock: a future freed here may run code
    }

    #[new]
    fn new() -> PyResult<Self> {
        let (readable, wake) = UnixStream::pair()?;
        readable.set_nonblocking(true)?;
        wake.set_nonblocking(true)?;
        Ok(LoopPort {
            completions: Arc::new(Completions {
                queue: Mutex::new(Vec::new()),
                signalled: AtomicBool::new(false),
                wake,
            }),
            readable,
            pending: Mutex::new(HashMap::new()),
            submitted: Mutex::new(Vec::new()),
            draining: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
        })
    }

    /// The descriptor the loop watches.
    fn fileno(&self) -> i32 {
        self.readable.as_raw_fd()
    }

    /// Starts the calls made since the last flush (the loop runs it once
    /// per pass in which calls were made).
    fn flush(&self) -> PyResult<()> {
        let calls = std::mem::take(&mut *unpoisoned(&self.submitted));
        let runtime = crate::runtime::runtime()?;
        if calls.len() == 1 {
            calls.into_iter().for_each(|call| drop(runtime.spawn(call)));
        } else if !calls.is_empty() {
            // Spawned from a runtime thread, they queue there: no wake-ups.
            runtime.spawn(async move {
                for call in calls {
                    tokio::spawn(call);
                }
            });
        }
        Ok(())
    }

    /// Resolves the future of every call that ended and runs its
    /// callbacks (the loop runs it when the descriptor is readable), then
    /// starts the calls they made. A callback that raises is reported to
    /// the loop's exception handler, as the loop would; one that raises
    /// `KeyboardInterrupt` or `SystemExit` stops the drain's direct runs:
    /// the callbacks left are scheduled instead, and the exception
    /// propagates to the loop.
    fn drain(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let port = slf.get();
        // One read: a wake-up is one byte, and none is written again until
        // `signalled` is cleared below; a byte written after that leaves
        // the descriptor readable for the next drain.
        let mut buf = [0u8; 64];
        let _ = (&port.readable).read(&mut buf);
        // Cleared before taking the queue: a call that ends after the take
        // writes a new wake-up.
        port.completions.signalled.store(false, Ordering::Release);
        let ended = std::mem::take(&mut *unpoisoned(&port.completions.queue));
        port.draining.store(true, Ordering::Relaxed);
        let mut stopped: Option<PyErr> = None;
        for (id, outcome) in ended {
            let future = unpoisoned(&port.pending).remove(&id);
            let (Some(future), Some(outcome)) = (future, outcome) else {
                continue;
            };
            let future = future.into_bound(py);
            let answer = outcome(py);
            let callbacks = future.borrow_mut().complete(answer, py);
            if stopped.is_some() {
                if let Err(e) = call_future::schedule(&future, callbacks) {
                    e.write_unraisable(py, Some(&future));
                }
                continue;
            }
            for e in call_future::run_now(&future, callbacks) {
                if is_exit(py, &e) {
                    stopped.get_or_insert(e);
                } else {
                    report(py, &future, e);
                }
            }
        }
        port.draining.store(false, Ordering::Relaxed);
        let flushed = port.flush();
        match stopped {
            Some(e) => Err(e),
            None => flushed,
        }
    }
}

/// Whether `e` is one the loop lets through (`KeyboardInterrupt`,
/// `SystemExit`) rather than reports.
fn is_exit(py: Python<'_>, e: &PyErr) -> bool {
    !e.is_instance_of::<pyo3::exceptions::PyException>(py)
}

/// Hands a callback's exception to the loop's exception handler.
fn report(py: Python<'_>, future: &Bound<'_, CallFuture>, e: PyErr) {
    let event_loop = future.borrow().event_loop(py);
    let context = pyo3::types::PyDict::new(py);
    let handled = context
        .set_item("message", "Exception in a raftlock call's done-callback")
        .and_then(|()| context.set_item("exception", e.value(py)))
        .and_then(|()| context.set_item("future", future))
        .and_then(|()| {
            event_loop.call_method1(py, intern!(py, "call_exception_handler"), (context,))
        });
    if let Err(e) = handled {
        e.write_unraisable(py, Some(future));
    }
}

/// Loops that take no attributes (uvloop's), weakly, with their ports.
static REGISTRY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The port of `event_loop`, made and watched on first use; `None` if the
/// loop cannot watch a descriptor or be referred to weakly.
pub fn port_of<'py>(event_loop: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, LoopPort>>> {
    let py = event_loop.py();
    let attr = intern!(py, "_raftlock_port");
    if let Ok(found) = event_loop.getattr(attr) {
        return Ok(found.cast_into::<LoopPort>().ok());
    }
    let registry = REGISTRY
        .get_or_try_init(py, || {
            py.import("weakref")?
                .getattr("WeakKeyDictionary")?
                .call0()
                .map(Bound::unbind)
        })?
        .bind(py);
    let Ok(found) = registry.call_method1(intern!(py, "get"), (event_loop,)) else {
        return Ok(None); // not weakly referable
    };
    if !found.is_none() {
        return Ok(found.cast_into::<LoopPort>().ok());
    }
    let port = Bound::new(py, LoopPort::new()?)?;
    let watched = event_loop.call_method1(
        intern!(py, "add_reader"),
        (port.borrow().fileno(), port.getattr(intern!(py, "drain"))?),
    );
    let kept: Py<PyAny> = if watched.is_ok() {
        port.clone().into_any().unbind()
    } else {
        py.None()
    };
    if event_loop.setattr(attr, &kept).is_err() {
        registry.set_item(event_loop, &kept)?;
    }
    Ok(watched.is_ok().then_some(port))
}

/// `fut` as a future of `event_loop`, completed through `port`, the
/// loop's (see [`port_of`]).
pub fn through_port<'py, F, T>(
    event_loop: &Bound<'py, PyAny>,
    port: &Bound<'py, LoopPort>,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = Result<T, Error>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let py = event_loop.py();
    let (cancel, cancelled) = oneshot::channel::<()>();
    let future = Bound::new(py, CallFuture::new(event_loop.clone().unbind(), cancel))?;
    let port_bound = port;
    let port = port.get();
    let id = port.next_id.fetch_add(1, Ordering::Relaxed);
    unpoisoned(&port.pending).insert(id, future.clone().unbind());
    let completions = port.completions.clone();
    let call: Call = Box::pin(async move {
        let outcome: Outcome = tokio::select! {
            result = fut => Some(Box::new(move |py: Python<'_>| {
                result.map_err(to_py).and_then(|v| v.into_py_any(py))
            })),
            _ = cancelled => None,
        };
        completions.push(id, outcome);
    });
    let first = {
        let mut submitted = unpoisoned(&port.submitted);
        submitted.push(call);
        submitted.len() == 1
    };
    if first && !port.draining.load(Ordering::Relaxed) {
        // The calls made in this pass of the loop start together, after it.
        event_loop.call_method1(
            intern!(py, "call_soon"),
            (port_bound.getattr(intern!(py, "flush"))?,),
        )?;
    }
    Ok(future.into_any())
}
