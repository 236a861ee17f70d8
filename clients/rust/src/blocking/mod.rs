//! `raftlock_client::blocking`: the client for code that is not async (threads).
//!
//! [`Client`] owns a small internal tokio runtime (one worker thread) on
//! which the async [`crate::Client`] runs, including the session
//! keep-alives. Every call blocks the calling thread; guards release (and
//! leaderships resign) when dropped, before `drop` returns. Do not call
//! these methods from inside an async runtime; use the async client there.
//!
//! - this file: [`Client`], its runtime, and the builders;
//! - `guards`: [`LockGuard`], [`Leadership`], [`TaskGuard`] and the
//!   [`Observe`] iterator.

mod guards;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use guards::{Leadership, LockGuard, Observe, TaskGuard};

use super::{ClientOptions, LeaderInfo, LeaseId, LockInfo};
use crate as nonblocking;
use crate::error::Error;

/// The internal runtime; shut down in the background when the last client
/// or guard goes away (so dropping it never blocks or panics).
#[derive(Debug)]
struct Runtime(Option<tokio::runtime::Runtime>);

impl Runtime {
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        match &self.0 {
            Some(rt) => rt.block_on(f),
            // Only `Drop` takes the runtime, and nothing runs after it.
            None => unreachable!("blocking runtime used after shutdown"),
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs futures for the blocking types; shared by a client and its guards.
#[derive(Debug, Clone)]
pub(crate) struct Blocker(Arc<Runtime>);

impl Blocker {
    fn new() -> Result<Self, Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("raftlock-client")
            .enable_all()
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the client runtime: {e}")))?;
        Ok(Blocker(Arc::new(Runtime(Some(rt)))))
    }

    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.0.block_on(f)
    }
}

/// A blocking connection to a raftlock cluster: the surface of the async
/// [`crate::Client`], one call at a time. Cheap to clone.
///
/// ```no_run
/// # fn demo() -> Result<(), raftlock_client::Error> {
/// let client = raftlock_client::blocking::Client::connect(["127.0.0.1:7379"])?;
/// let guard = client.lock("reports").acquire()?;
/// println!("fence {}", guard.fence());
/// drop(guard); // released before drop returns
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    inner: nonblocking::Client,
    rt: Blocker,
}

impl Client {
    /// Connects with default options (see [`crate::Client::connect`]).
    pub fn connect<I, S>(endpoints: I) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::connect_with(endpoints, ClientOptions::default())
    }

    /// Connects with explicit options (session TTL, margin, retry budget,
    /// explicit lease).
    pub fn connect_with<I, S>(endpoints: I, options: ClientOptions) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let rt = Blocker::new()?;
        let endpoints: Vec<String> = endpoints.into_iter().map(Into::into).collect();
        let inner = rt.block_on(nonblocking::Client::connect_with(endpoints, options))?;
        Ok(Client { inner, rt })
    }

    /// The async client underneath (its futures must run on this client's
    /// runtime: use [`block_on`](Self::block_on)).
    pub fn async_client(&self) -> &nonblocking::Client {
        &self.inner
    }

    /// Runs any future of the async client to completion, e.g. a low-level
    /// call without a blocking twin.
    ///
    /// ```no_run
    /// # fn demo(client: raftlock_client::blocking::Client) -> Result<(), raftlock_client::Error> {
    /// let leases = client.block_on(client.async_client().leases())?;
    /// # Ok(()) }
    /// ```
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    /// A client sharing connections whose session is the existing `lease`.
    pub fn with_lease(&self, lease: LeaseId) -> Client {
        Client {
            inner: self.inner.with_lease(lease),
            rt: self.rt.clone(),
        }
    }

    /// The session lease id, granting the session if needed.
    pub fn session_lease(&self) -> Result<LeaseId, Error> {
        self.block_on(self.inner.session_lease())
    }

    /// Ends the session and revokes its lease (see [`crate::Client::close`]).
    pub fn close(&self) -> Result<(), Error> {
        self.block_on(self.inner.close())
    }

    /// Starts building a lock on `name` (see [`crate::Client::lock`]).
    ///
    /// ```no_run
    /// # fn demo(client: raftlock_client::blocking::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    ///
    /// if let Some(guard) = client.lock("cron").ttl(Duration::from_secs(30)).try_acquire()? {
    ///     // ... work, checking guard.is_lost() between steps ...
    ///     guard.release()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lock(&self, name: impl Into<String>) -> LockBuilder {
        LockBuilder {
            inner: self.inner.lock(name),
            rt: self.rt.clone(),
        }
    }

    /// A counting semaphore (see [`crate::Client::semaphore`]).
    pub fn semaphore(&self, name: impl Into<String>, limit: u32) -> Semaphore {
        Semaphore {
            inner: self.inner.semaphore(name, limit),
            rt: self.rt.clone(),
        }
    }

    /// A read-write lock (see [`crate::Client::rwlock`]).
    pub fn rwlock(&self, name: impl Into<String>) -> RwLock {
        RwLock {
            inner: self.inner.rwlock(name),
            rt: self.rt.clone(),
        }
    }

    /// An election (see [`crate::Client::election`]).
    pub fn election(&self, name: impl Into<String>) -> Election {
        Election {
            inner: self.inner.election(name),
            rt: self.rt.clone(),
        }
    }

    /// A task lock (see [`crate::Client::task_lock`]).
    pub fn task_lock(
        &self,
        name: impl Into<String>,
        min_hold: Duration,
        max_hold: Duration,
    ) -> TaskLock {
        TaskLock {
            inner: self.inner.task_lock(name, min_hold, max_hold),
            rt: self.rt.clone(),
        }
    }

    /// Whether `fence` still holds `name` (linearizable).
    pub fn check(&self, name: &str, fence: u64) -> Result<bool, Error> {
        self.block_on(self.inner.check(name, fence))
    }

    /// Grants a lease with `ttl`.
    pub fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, Error> {
        self.block_on(self.inner.grant_lease(ttl))
    }

    /// Renews a lease once; answers its TTL.
    pub fn keep_alive(&self, lease: LeaseId) -> Result<Duration, Error> {
        self.block_on(self.inner.keep_alive(lease))
    }

    /// Revokes a lease, releasing its locks.
    pub fn revoke(&self, lease: LeaseId) -> Result<u32, Error> {
        self.block_on(self.inner.revoke(lease))
    }

    /// Holders and waiters of `name`.
    pub fn describe(&self, name: &str) -> Result<Option<LockInfo>, Error> {
        self.block_on(self.inner.describe(name))
    }

    /// Ends every hold on `name` (operators only).
    pub fn force_release(&self, name: &str) -> Result<u32, Error> {
        self.block_on(self.inner.force_release(name))
    }
}

/// How to acquire a lock (see [`crate::LockBuilder`]).
#[must_use = "a lock builder does nothing until `.acquire()`"]
#[derive(Debug)]
pub struct LockBuilder {
    inner: nonblocking::LockBuilder,
    rt: Blocker,
}

impl LockBuilder {
    /// A lease of its own with this TTL instead of the session.
    pub fn ttl(self, ttl: Duration) -> Self {
        self.map(|b| b.ttl(ttl))
    }
    /// Wait at most this long.
    pub fn timeout(self, timeout: Duration) -> Self {
        self.map(|b| b.timeout(timeout))
    }
    /// A shared (read) hold.
    pub fn shared(self) -> Self {
        self.map(|b| b.shared())
    }
    /// Use this owner token (same token again = re-entry).
    pub fn owner(self, token: impl Into<String>) -> Self {
        self.map(|b| b.owner(token))
    }

    fn map(self, f: impl FnOnce(nonblocking::LockBuilder) -> nonblocking::LockBuilder) -> Self {
        LockBuilder {
            inner: f(self.inner),
            rt: self.rt,
        }
    }

    /// Blocks until granted (or the timeout).
    pub fn acquire(self) -> Result<LockGuard, Error> {
        let guard = self.rt.block_on(self.inner.acquire())?;
        Ok(LockGuard::new(guard, self.rt))
    }

    /// Takes the lock only if it is free now.
    pub fn try_acquire(self) -> Result<Option<LockGuard>, Error> {
        let guard = self.rt.block_on(self.inner.try_acquire())?;
        Ok(guard.map(|g| LockGuard::new(g, self.rt)))
    }
}

/// A counting semaphore (see [`crate::Semaphore`]).
#[derive(Debug, Clone)]
pub struct Semaphore {
    inner: nonblocking::Semaphore,
    rt: Blocker,
}

impl Semaphore {
    /// Blocks until `permits` permits are granted.
    pub fn acquire(&self, permits: u32) -> Result<LockGuard, Error> {
        let guard = self.rt.block_on(self.inner.acquire(permits))?;
        Ok(LockGuard::new(guard, self.rt.clone()))
    }
    /// Takes `permits` permits only if they are free now.
    pub fn try_acquire(&self, permits: u32) -> Result<Option<LockGuard>, Error> {
        let guard = self.rt.block_on(self.inner.try_acquire(permits))?;
        Ok(guard.map(|g| LockGuard::new(g, self.rt.clone())))
    }
}

/// A read-write lock (see [`crate::RwLock`]).
#[derive(Debug, Clone)]
pub struct RwLock {
    inner: nonblocking::RwLock,
    rt: Blocker,
}

impl RwLock {
    /// Blocks for a shared (read) hold.
    pub fn read(&self) -> Result<LockGuard, Error> {
        let guard = self.rt.block_on(self.inner.read())?;
        Ok(LockGuard::new(guard, self.rt.clone()))
    }
    /// Blocks for the exclusive (write) hold.
    pub fn write(&self) -> Result<LockGuard, Error> {
        let guard = self.rt.block_on(self.inner.write())?;
        Ok(LockGuard::new(guard, self.rt.clone()))
    }
}

/// An election (see [`crate::Election`]).
#[derive(Debug, Clone)]
pub struct Election {
    inner: nonblocking::Election,
    rt: Blocker,
}

impl Election {
    /// Blocks until elected.
    pub fn campaign(&self, value: impl Into<Vec<u8>>) -> Result<Leadership, Error> {
        let leadership = self.rt.block_on(self.inner.campaign(value))?;
        Ok(Leadership::new(leadership, self.rt.clone()))
    }
    /// One try: leads if the election has no leader now, else `Ok(None)`.
    pub fn try_campaign(&self, value: impl Into<Vec<u8>>) -> Result<Option<Leadership>, Error> {
        let leadership = self.rt.block_on(self.inner.try_campaign(value))?;
        Ok(leadership.map(|l| Leadership::new(l, self.rt.clone())))
    }
    /// The current leader; `None` when there is none.
    pub fn leader(&self) -> Result<Option<LeaderInfo>, Error> {
        self.rt.block_on(self.inner.leader())
    }
    /// Every change of leader, as a blocking iterator (`None` items: no
    /// leader).
    pub fn observe(&self) -> Observe {
        Observe::new(Box::pin(self.inner.observe()), self.rt.clone())
    }
}

/// A task lock (see [`crate::TaskLock`]).
#[derive(Debug, Clone)]
pub struct TaskLock {
    inner: nonblocking::TaskLock,
    rt: Blocker,
}

impl TaskLock {
    /// Takes the lock if no worker holds it.
    pub fn try_acquire(&self) -> Result<Option<TaskGuard>, Error> {
        let guard = self.rt.block_on(self.inner.try_acquire())?;
        Ok(guard.map(|g| TaskGuard::new(g, self.rt.clone())))
    }

    /// Runs `job` on this thread if this worker gets the lock; returns once
    /// it is done and `min_hold` has passed. [`Error::LockLost`] (the
    /// output dropped) if the lock was lost before the job ended (see
    /// [`crate::TaskLock::run`]).
    pub fn run<T>(&self, job: impl FnOnce() -> T) -> Result<Option<T>, Error> {
        let Some(guard) = self.try_acquire()? else {
            return Ok(None);
        };
        // Never start the job on a grant that may already be gone.
        guard.ensure_valid()?;
        let out = job();
        guard.finish()?;
        Ok(Some(out))
    }
}
