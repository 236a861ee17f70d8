//! What a Python program holds: a lock (or shared hold, or permits), a
//! leadership, a task lock. Each wraps the Rust client's guard, which keeps
//! the hold's session alive and watches for its loss; dropping the Python
//! object without releasing releases in the background, as dropping the
//! Rust guard does.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use pyo3::prelude::*;
use raftlock_client::{Error, Leadership, LockGuard, TaskGuard};
use tokio::task::AbortHandle;

use crate::node_link::NodeLink;
use crate::run::{finish, to_py, Reply};

/// A future a hold's call answers with.
type Proof<'a> = Pin<Box<dyn Future<Output = Result<(), Error>> + Send + 'a>>;

/// The loss signal and the checks every hold has: `ensure_valid` with no
/// call, `ensure_owned` with one linearizable `Check`.
pub trait Hold: Send + Sync + 'static {
    fn ensure_valid(&self) -> Result<(), Error>;
    fn ensure_owned(&self) -> Proof<'_>;
    fn is_lost(&self) -> bool;
    fn lost(&self) -> Pin<Box<dyn Future<Output = Error> + Send + 'static>>;
}

/// `Hold` for each client guard, whose methods of those names it calls.
macro_rules! impl_hold {
    ($($guard:ident),+) => {$(
        impl Hold for $guard {
            fn ensure_valid(&self) -> Result<(), Error> {
                $guard::ensure_valid(self)
            }
            fn ensure_owned(&self) -> Proof<'_> {
                Box::pin($guard::ensure_owned(self))
            }
            fn is_lost(&self) -> bool {
                $guard::is_lost(self)
            }
            fn lost(&self) -> Pin<Box<dyn Future<Output = Error> + Send + 'static>> {
                Box::pin($guard::lost(self))
            }
        }
    )+};
}

impl_hold!(LockGuard, Leadership, TaskGuard);

/// The `#[pymethods]` of a class wrapping a [`Held`] in its `held` field:
/// the checks every hold has, each with the doc its class gives it
/// (`is_held` where the class has it), then the class's own methods.
macro_rules! hold_methods {
    (
        $class:ident;
        $(#[doc = $valid:literal])* ensure_valid;
        $(#[doc = $owned:literal])* ensure_owned;
        $(#[doc = $is_lost:literal])* is_lost;
        $(#[doc = $on_lost:literal])* on_lost;
        $($(#[doc = $is_held:literal])* is_held;)?
        { $($own:tt)* }
    ) => {
        #[pymethods]
        impl $class {
            $(#[doc = $valid])*
            fn ensure_valid(&self) -> PyResult<()> {
                self.held.ensure_valid()
            }

            $(#[doc = $owned])*
            /// `aio=True`: an awaitable; otherwise blocks until done.
            #[pyo3(signature = (*, aio=false))]
            fn ensure_owned<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
                self.held.ensure_owned(py, aio)
            }

            $(#[doc = $is_lost])*
            fn is_lost(&self) -> bool {
                self.held.is_lost()
            }

            $(#[doc = $on_lost])*
            fn on_lost(&self, callback: Py<PyAny>) -> PyResult<()> {
                self.held.on_lost(callback)
            }

            $(
                $(#[doc = $is_held])*
                fn is_held(&self) -> bool {
                    self.held.is_held()
                }
            )?

            $($own)*
        }
    };
}

/// A hold until it is released: `None` after. Calls that borrow the hold
/// (re-enter, proclaim) clone the `Arc` for their duration; releasing waits
/// for them to finish.
pub struct Held<G: Hold> {
    slot: Mutex<Option<Arc<G>>>,
    /// The tasks running `on_lost` callbacks; stopped on release.
    watchers: Mutex<Vec<AbortHandle>>,
    /// "lock \"x\"", "leadership of \"x\"": for errors.
    what: String,
    /// The node in this process of the client that made it, if any.
    link: NodeLink,
}

fn unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<G: Hold> Held<G> {
    fn new(hold: G, what: String, link: NodeLink) -> Arc<Self> {
        Arc::new(Held {
            slot: Mutex::new(Some(Arc::new(hold))),
            watchers: Mutex::new(Vec::new()),
            what,
            link,
        })
    }

    /// [`finish`] of a call on the hold, which ends at once if the node
    /// of its client stops.
    fn run<'py, F, T>(&self, py: Python<'py>, aio: bool, fut: F) -> Reply<'py>
    where
        F: Future<Output = Result<T, Error>> + Send + 'static,
        T: for<'a> IntoPyObject<'a> + Send + 'static,
    {
        finish(py, aio, self.link.call(fut))
    }

    /// [`finish`] of leaving the hold (`doing`: "release", "resign"; see
    /// [`NodeLink::leave`]).
    fn leave<'py, F>(&self, py: Python<'py>, aio: bool, doing: &str, fut: F) -> Reply<'py>
    where
        F: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let what = format!("{doing} of {}", self.what);
        finish(py, aio, self.link.leave(what, fut))
    }

    /// [`leave`](Self::leave) by `end` (release, resign), given the hold
    /// once it is taken out.
    fn end<'py, F>(
        self: &Arc<Self>,
        py: Python<'py>,
        aio: bool,
        doing: &str,
        end: impl FnOnce(G) -> F + Send + 'static,
    ) -> Reply<'py>
    where
        F: Future<Output = Result<(), Error>> + Send + 'static,
    {
        let held = self.clone();
        self.leave(py, aio, doing, async move { end(held.take().await?).await })
    }

    fn get(&self) -> Result<Arc<G>, Error> {
        unpoisoned(&self.slot)
            .clone()
            .ok_or_else(|| Error::NotHeld(format!("{} was already released", self.what)))
    }

    fn ensure_valid(&self) -> PyResult<()> {
        self.get().and_then(|h| h.ensure_valid()).map_err(to_py)
    }

    /// `ensure_owned` of the hold: blocks, or with `aio` an awaitable.
    fn ensure_owned<'py>(self: &Arc<Self>, py: Python<'py>, aio: bool) -> Reply<'py> {
        let held = self.clone();
        self.run(py, aio, async move {
            let hold = held.get()?;
            hold.ensure_owned().await
        })
    }

    fn is_lost(&self) -> bool {
        unpoisoned(&self.slot).as_ref().is_some_and(|h| h.is_lost())
    }

    fn is_held(&self) -> bool {
        unpoisoned(&self.slot).is_some()
    }

    /// Calls `callback(reason)` once, from a runtime thread, when the hold
    /// is lost; never after it was released.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<()> {
        let lost = self.get().map_err(to_py)?.lost();
        self.watch(crate::run::runtime()?.handle(), lost, callback);
        Ok(())
    }

    /// Runs `callback(reason)` on `runtime` when `lost` resolves.
    fn watch(
        &self,
        runtime: &tokio::runtime::Handle,
        lost: Pin<Box<dyn Future<Output = Error> + Send + 'static>>,
        callback: Py<PyAny>,
    ) {
        let task = runtime.spawn(async move {
            let why = match lost.await {
                Error::LockLost(why) => why,
                other => other.to_string(),
            };
            crate::run::with_python(|py| {
                if let Err(e) = callback.call1(py, (why,)) {
                    e.write_unraisable(py, Some(callback.bind(py)));
                }
            });
        });
        unpoisoned(&self.watchers).push(task.abort_handle());
    }

    fn stop_watchers(&self) {
        for watcher in unpoisoned(&self.watchers).drain(..) {
            watcher.abort();
        }
    }

    /// Takes the hold out to end it, once no call borrows it.
    async fn take(self: Arc<Self>) -> Result<G, Error> {
        let taken = unpoisoned(&self.slot).take();
        let mut hold =
            taken.ok_or_else(|| Error::NotHeld(format!("{} was already released", self.what)))?;
        self.stop_watchers();
        loop {
            match Arc::try_unwrap(hold) {
                Ok(hold) => return Ok(hold),
                Err(shared) => {
                    hold = shared;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }
    }
}

impl<G: Hold> Drop for Held<G> {
    fn drop(&mut self) {
        self.stop_watchers();
    }
}

/// A held lock, shared hold or semaphore permits (`raftlock.Lock` wraps it).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeGuard {
    held: Arc<Held<LockGuard>>,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    owner: String,
    #[pyo3(get)]
    fence: u64,
    #[pyo3(get)]
    lease: u64,
    #[pyo3(get)]
    count: u32,
}

impl NativeGuard {
    /// A guard that calls `on_lost(reason)` when the hold is lost, made
    /// inside the call that acquired it: the watcher starts on the runtime
    /// thread that runs the call, with no hand-off to another thread.
    pub fn watched(guard: LockGuard, on_lost: Option<Py<PyAny>>, link: NodeLink) -> Self {
        let lost = on_lost.map(|callback| (guard.lost(), callback));
        let native = NativeGuard::new(guard, link);
        if let Some((lost, callback)) = lost {
            native
                .held
                .watch(&tokio::runtime::Handle::current(), Box::pin(lost), callback);
        }
        native
    }

    pub fn new(guard: LockGuard, link: NodeLink) -> Self {
        let name = guard.name().to_owned();
        NativeGuard {
            owner: guard.owner().to_owned(),
            fence: guard.fence(),
            lease: guard.lease(),
            count: guard.count(),
            held: Held::new(guard, format!("lock {name:?}"), link),
            name,
        }
    }
}

hold_methods! {
    NativeGuard;
    /// Raises `LockLost` unless the hold can be trusted as far as this
    /// process knows (no call).
    ensure_valid;
    /// Raises `LockLost` unless the cluster confirms the hold (one
    /// linearizable `Check`); a loss found is kept for `is_lost`.
    ensure_owned;
    /// Whether the hold was lost (not released).
    is_lost;
    /// Calls `callback(reason)` from a client thread when the hold is lost.
    on_lost;
    /// Whether the hold is still this object's (not released).
    is_held;
    {
        /// The same lock again under the same owner: count + 1, same fence.
        /// `aio=True`: an awaitable; otherwise blocks until done.
        #[pyo3(signature = (*, aio=false))]
        fn reenter<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
            let held = self.held.clone();
            self.held.run(py, aio, async move {
                let guard = held.get()?;
                Ok(NativeGuard::new(guard.reenter().await?, held.link.clone()))
            })
        }
        /// Releases this level of the hold; raises `LockLost` if it had
        /// been lost meanwhile.
        /// `aio=True`: an awaitable; otherwise blocks until done.
        #[pyo3(signature = (*, aio=false))]
        fn release<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
            self.held.end(py, aio, "release", |guard| guard.release())
        }
    }
}

/// Leadership of an election (`raftlock.Leadership` wraps it).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeLeadership {
    held: Arc<Held<Leadership>>,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    owner: String,
    #[pyo3(get)]
    fence: u64,
    #[pyo3(get)]
    lease: u64,
}

impl NativeLeadership {
    pub fn new(leadership: Leadership, link: NodeLink) -> Self {
        let name = leadership.name().to_owned();
        NativeLeadership {
            owner: leadership.owner().to_owned(),
            fence: leadership.fence(),
            lease: leadership.lease(),
            held: Held::new(leadership, format!("leadership of {name:?}"), link),
            name,
        }
    }
}

hold_methods! {
    NativeLeadership;
    /// Raises `LockLost` unless the leadership can be trusted as far as
    /// this process knows (no call).
    ensure_valid;
    /// Raises `LockLost` unless the cluster confirms the leadership (one
    /// linearizable `Check`).
    ensure_owned;
    /// Whether the leadership was lost (not resigned).
    is_lost;
    /// Calls `callback(reason)` from a client thread when leadership is lost.
    on_lost;
    /// Whether this object still leads (not resigned).
    is_held;
    {
        /// Publishes a new value as leader.
        /// `aio=True`: an awaitable; otherwise blocks until done.
        #[pyo3(signature = (value, *, aio=false))]
        fn proclaim<'py>(&self, py: Python<'py>, value: Vec<u8>, aio: bool) -> Reply<'py> {
            let held = self.held.clone();
            self.held.run(py, aio, async move { held.get()?.proclaim(value).await })
        }
        /// Steps down; the next candidate is elected.
        /// `aio=True`: an awaitable; otherwise blocks until done.
        #[pyo3(signature = (*, aio=false))]
        fn resign<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
            self.held.end(py, aio, "resign", |leadership| leadership.resign())
        }
    }
}

/// A held task lock (`raftlock.TaskLock` hands it out).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeTaskGuard {
    held: Arc<Held<TaskGuard>>,
    #[pyo3(get)]
    fence: u64,
}

impl NativeTaskGuard {
    pub fn new(guard: TaskGuard, link: NodeLink) -> Self {
        NativeTaskGuard {
            fence: guard.fence(),
            held: Held::new(guard, "task lock".to_owned(), link),
        }
    }
}

hold_methods! {
    NativeTaskGuard;
    /// Raises `LockLost` unless the hold can be trusted as far as this
    /// process knows (no call).
    ensure_valid;
    /// Raises `LockLost` unless the cluster confirms the hold (one
    /// linearizable `Check`); a loss found is kept for `is_lost`.
    ensure_owned;
    /// Whether the hold ended early (`max_hold`, revoked, force-released).
    is_lost;
    /// Calls `callback(reason)` from a client thread when the hold is lost.
    on_lost;
    {
        /// The job is done: asks the cluster whether the hold lasted until now
        /// (raises `LockLost` if not), then releases now if `min_hold` has
        /// passed, else leaves the lock held until then without the caller
        /// waiting (see `TaskGuard::finish_in_background`).
        /// `aio=True`: an awaitable; otherwise blocks until done.
        #[pyo3(signature = (*, aio=false))]
        fn finish<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
            let held = self.held.clone();
            self.held.run(py, aio, async move {
                held.take().await?.finish_in_background().await
            })
        }
    }
}
