//! `CallFuture`: what an awaited call answers on a loop with a port
//! ([`LoopPort`](crate::loop_port)). It speaks asyncio's future protocol
//! (`_asyncio_future_blocking`, `add_done_callback`, `result`, `cancel`,
//! `get_loop`), so a task awaits it, and `asyncio.wait`, `gather`,
//! `shield` and `wait_for` take it, as they take an `asyncio.Future`.
//!
//! The difference is who runs the done-callbacks. The port resolves the
//! future in its drain, on the loop's thread, and runs its callbacks there
//! and then (the waiting task's step among them) instead of scheduling each
//! with `call_soon` for a later pass of the loop: an ended call costs no
//! `Handle` and no extra pass. Everywhere else (a cancel, a callback added
//! to a done future) callbacks are scheduled with `call_soon`, as asyncio's
//! futures do, since a task's step may not run inside another's.

use pyo3::exceptions::{PyRuntimeError, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};
use tokio::sync::oneshot;

/// Where a call stands.
enum State {
    Pending,
    Value(Py<PyAny>),
    Raised(Py<PyAny>),
    /// Cancelled, with the message given to `cancel`, if any.
    Cancelled(Option<Py<PyAny>>),
}

/// A done-callback and the context it runs in.
type Callback = (Py<PyAny>, Py<PyAny>);

/// The future of one awaited call (see the module's doc).
#[pyclass(module = "raftlock._native")]
pub struct CallFuture {
    /// asyncio's protocol: set when a task is to wait for this future.
    #[pyo3(get, set, name = "_asyncio_future_blocking")]
    blocking: bool,
    event_loop: Py<PyAny>,
    state: State,
    callbacks: Vec<Callback>,
    /// Tells the call it was cancelled, which drops it (as a dropped Rust
    /// future is cancelled).
    cancel: Option<oneshot::Sender<()>>,
}

/// An asyncio class, looked up once.
fn asyncio_class<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(cell.import(py, "asyncio", name)?.clone())
}

static CANCELLED_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INVALID_STATE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static COPY_CONTEXT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

impl CallFuture {
    /// A pending future of `event_loop`; `cancel` is told if it is cancelled.
    pub fn new(event_loop: Py<PyAny>, cancel: oneshot::Sender<()>) -> Self {
        CallFuture {
            blocking: false,
            event_loop,
            state: State::Pending,
            callbacks: Vec::new(),
            cancel: Some(cancel),
        }
    }

    /// Completes the future with the call's answer, unless it is done
    /// (cancelled): the callbacks to run now, in the order they were added.
    pub fn complete(&mut self, answer: PyResult<Py<PyAny>>, py: Python<'_>) -> Vec<Callback> {
        if !matches!(self.state, State::Pending) {
            return Vec::new();
        }
        self.state = match answer {
            Ok(value) => State::Value(value),
            Err(e) => State::Raised(e.into_value(py).into_any()),
        };
        self.cancel = None;
        std::mem::take(&mut self.callbacks)
    }

    /// The loop the future belongs to.
    pub fn event_loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }

    /// What `await` or `result()` raises or answers now.
    fn outcome(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.state {
            State::Pending => Err(PyErr::from_value(
                asyncio_class(py, &INVALID_STATE, "InvalidStateError")?
                    .call1(("Result is not set.",))?,
            )),
            State::Value(value) => Ok(value.clone_ref(py)),
            State::Raised(e) => Err(PyErr::from_value(e.bind(py).clone())),
            State::Cancelled(msg) => {
                let class = asyncio_class(py, &CANCELLED_ERROR, "CancelledError")?;
                let e = match msg {
                    Some(msg) => class.call1((msg,))?,
                    None => class.call0()?,
                };
                Err(PyErr::from_value(e))
            }
        }
    }
}

/// Schedules `callbacks` of `future` with `call_soon` on its loop.
pub fn schedule(future: &Bound<'_, CallFuture>, callbacks: Vec<Callback>) -> PyResult<()> {
    let py = future.py();
    let event_loop = future.borrow().event_loop.clone_ref(py);
    for (callback, context) in callbacks {
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "context"), context)?;
        event_loop.call_method(
            py,
            intern!(py, "call_soon"),
            (callback, future),
            Some(&kwargs),
        )?;
    }
    Ok(())
}

/// Runs `callbacks` of `future` now, each in its context.
pub fn run_now(future: &Bound<'_, CallFuture>, callbacks: Vec<Callback>) -> Vec<PyErr> {
    let py = future.py();
    let mut failed = Vec::new();
    for (callback, context) in callbacks {
        if let Err(e) = context.call_method1(py, intern!(py, "run"), (callback, future)) {
            failed.push(e);
        }
    }
    failed
}

#[pymethods]
impl CallFuture {
    /// What the garbage collector follows: a future's loop holds its port,
    /// which holds the future until its call ends, so a loop closed with
    /// calls in flight is a cycle only the collector can free.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.event_loop)?;
        match &self.state {
            State::Value(value) | State::Raised(value) | State::Cancelled(Some(value)) => {
                visit.call(value)?;
            }
            State::Pending | State::Cancelled(None) => {}
        }
        for (callback, context) in &self.callbacks {
            visit.call(callback)?;
            visit.call(context)?;
        }
        Ok(())
    }

    /// Drops what [`__traverse__`](Self::__traverse__) follows but the
    /// loop (the cycle breaks at the callbacks and the port).
    fn __clear__(&mut self) {
        self.callbacks.clear();
        if !matches!(self.state, State::Pending) {
            self.state = State::Cancelled(None);
        }
    }

    fn __await__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Yields the future to the awaiting task once, then ends with its
    /// outcome (asyncio's `Future.__await__`).
    fn __next__(mut slf: PyRefMut<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if matches!(slf.state, State::Pending) {
            if slf.blocking {
                return Err(PyRuntimeError::new_err("await wasn't used with future"));
            }
            slf.blocking = true;
            return Ok(slf.into_pyobject(py)?.into_any().unbind());
        }
        let value = slf.outcome(py)?;
        Err(PyStopIteration::new_err((value,)))
    }

    fn get_loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }

    fn done(&self) -> bool {
        !matches!(self.state, State::Pending)
    }

    fn cancelled(&self) -> bool {
        matches!(self.state, State::Cancelled(_))
    }

    fn result(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.outcome(py)
    }

    fn exception(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match &self.state {
            State::Raised(e) => Ok(Some(e.clone_ref(py))),
            State::Value(_) => Ok(None),
            State::Pending | State::Cancelled(_) => self.outcome(py).map(|_| None),
        }
    }

    /// Cancels the call unless it ended: its callbacks are scheduled.
    #[pyo3(signature = (msg=None))]
    fn cancel(slf: &Bound<'_, Self>, msg: Option<Py<PyAny>>) -> PyResult<bool> {
        let callbacks = {
            let mut this = slf.borrow_mut();
            if !matches!(this.state, State::Pending) {
                return Ok(false);
            }
            this.state = State::Cancelled(msg);
            if let Some(cancel) = this.cancel.take() {
                let _ = cancel.send(());
            }
            std::mem::take(&mut this.callbacks)
        };
        schedule(slf, callbacks)?;
        Ok(true)
    }

    #[pyo3(signature = (callback, *, context=None))]
    fn add_done_callback(
        slf: &Bound<'_, Self>,
        callback: Py<PyAny>,
        context: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let py = slf.py();
        let context = match context {
            Some(context) => context,
            None => COPY_CONTEXT
                .import(py, "contextvars", "copy_context")?
                .call0()?
                .unbind(),
        };
        if slf.borrow().done() {
            return schedule(slf, vec![(callback, context)]);
        }
        slf.borrow_mut().callbacks.push((callback, context));
        Ok(())
    }

    /// Removes every registration of `callback`; answers how many.
    fn remove_done_callback(slf: &Bound<'_, Self>, callback: &Bound<'_, PyAny>) -> PyResult<usize> {
        let py = slf.py();
        let registered: Vec<Py<PyAny>> = slf
            .borrow()
            .callbacks
            .iter()
            .map(|(cb, _)| cb.clone_ref(py))
            .collect();
        // Compared with no borrow held: `==` may run Python code.
        let mut matching = Vec::new();
        for cb in registered {
            if cb.bind(py).eq(callback)? {
                matching.push(cb.as_ptr());
            }
        }
        let mut this = slf.borrow_mut();
        let before = this.callbacks.len();
        this.callbacks
            .retain(|(cb, _)| !matching.contains(&cb.as_ptr()));
        Ok(before - this.callbacks.len())
    }

    fn __repr__(&self) -> String {
        let state = match self.state {
            State::Pending => "pending",
            State::Value(_) | State::Raised(_) => "finished",
            State::Cancelled(_) => "cancelled",
        };
        format!("<raftlock CallFuture {state}>")
    }
}
