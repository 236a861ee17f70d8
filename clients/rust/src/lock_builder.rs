//! `client.lock(name)`: the [`LockBuilder`], which acquires a lock and
//! returns the [`LockGuard`] that holds it.

use std::time::Duration;

use tokio::task::AbortHandle;
use uuid::Uuid;

use super::lock_guard::LockGuard;
use super::session::Session;
use super::{Acquire, Client, LockMode};
use crate::error::Error;
/// How to acquire a lock; made by [`Client::lock`], finished by
/// [`acquire`](Self::acquire) or [`try_acquire`](Self::try_acquire).
///
/// Cloning one gives a second builder with the same settings, which
/// [`Semaphore`](super::Semaphore) and [`RwLock`](super::RwLock) use as the
/// template of every acquire.
#[must_use = "a lock builder does nothing until `.acquire().await`"]
#[derive(Debug, Clone)]
pub struct LockBuilder {
    client: Client,
    name: String,
    /// `Some`: a lease of its own with this TTL instead of the session.
    ttl: Option<Duration>,
    /// `None`: wait until granted.
    timeout: Option<Duration>,
    mode: LockMode,
    permits: u32,
    limit: u32,
    owner: Option<String>,
    abort: Option<AbortHandle>,
    /// `false` for task locks: the dedicated lease is left to run out.
    renew: bool,
    /// `None`: the server's default lock-delay.
    lock_delay: Option<Duration>,
}

impl Client {
    /// Starts building a lock on `name` (exclusive, on the session lease,
    /// waiting until granted, with a fresh owner token).
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    ///
    /// let guard = client
    ///     .lock("invoices")
    ///     .timeout(Duration::from_secs(5))
    ///     .acquire()
    ///     .await?;
    /// tokio::select! {
    ///     err = guard.lost() => eprintln!("stop: {err}"),
    ///     _ = do_the_work(guard.fence()) => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// # async fn do_the_work(_fence: u64) {}
    /// ```
    pub fn lock(&self, name: impl Into<String>) -> LockBuilder {
        LockBuilder {
            client: self.clone(),
            name: name.into(),
            ttl: None,
            timeout: None,
            mode: LockMode::Exclusive,
            permits: 0,
            limit: 0,
            owner: None,
            abort: None,
            renew: true,
            lock_delay: None,
        }
    }
}

impl LockBuilder {
    /// Hold the lock on a lease of its own with this TTL (kept alive while
    /// the guard lives, revoked on release) instead of the session lease.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Wait at most this long in the queue; then [`Error::Timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// A shared (read) hold; exclusive by default.
    pub fn shared(mut self) -> Self {
        self.mode = LockMode::Shared;
        self
    }

    /// Use this owner token instead of a fresh UUID. Acquiring again with
    /// the same token (on the same lease) re-enters: the count goes up and
    /// the fencing token stays.
    pub fn owner(mut self, token: impl Into<String>) -> Self {
        self.owner = Some(token.into());
        self
    }

    /// Lock-delay (Consul, Chubby): if this hold is lost to lease expiry
    /// or force-release — this process paused or cut off — nobody else is
    /// granted the lock for `delay`, so writes this holder still has in
    /// flight land before the next holder starts. Never applied after a
    /// clean release. Default: the server's (`--lock-delay-ms`, 0 unless
    /// set); at most 60 s.
    pub fn lock_delay(mut self, delay: Duration) -> Self {
        self.lock_delay = Some(delay);
        self
    }

    /// Abort this task when the lock is lost (see [`LockGuard::lost`]).
    pub fn abort_on_loss(mut self, handle: AbortHandle) -> Self {
        self.abort = Some(handle);
        self
    }

    /// `permits` of a counting semaphore of `limit`.
    pub(crate) fn permits(mut self, permits: u32, limit: u32) -> Self {
        self.mode = LockMode::Permits;
        self.permits = permits;
        self.limit = limit;
        self
    }

    /// Leave the dedicated lease (see [`ttl`](Self::ttl)) to run out.
    pub(crate) fn without_renewal(mut self) -> Self {
        self.renew = false;
        self
    }

    /// Waits (up to the timeout, if one was set) until the lock is granted.
    pub async fn acquire(self) -> Result<LockGuard, Error> {
        let name = self.name.clone();
        self.run(true).await?.ok_or_else(|| {
            Error::Internal(format!(
                "server answered busy to a waiting acquire of {name:?}"
            ))
        })
    }

    /// Takes the lock only if it is free now: `Ok(None)` when busy.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// match client.lock("nightly-report").try_acquire().await? {
    ///     Some(guard) => println!("got it, fence {}", guard.fence()),
    ///     None => println!("someone else is on it"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(self) -> Result<Option<LockGuard>, Error> {
        self.run(false).await
    }

    async fn run(mut self, wait: bool) -> Result<Option<LockGuard>, Error> {
        let owner = self
            .owner
            .take()
            .unwrap_or_else(|| Uuid::new_v4().to_string());
        // A timeout bounds the whole acquire: granting the session,
        // connecting and retrying as well as the wait in the queue.
        let bounded = self.client.until_waited(wait, self.timeout);
        let mut retried = false;
        loop {
            let session = match self.ttl {
                Some(ttl) => Session::grant(&bounded, ttl, self.renew).await?,
                None => bounded.session().await?,
            };
            let spec = Acquire {
                name: self.name.clone(),
                owner: owner.clone(),
                lease: session.lease,
                mode: self.mode,
                permits: self.permits,
                limit: self.limit,
                wait,
                timeout: self.timeout,
                lock_delay: self.lock_delay,
            };
            let result = bounded.acquire(&spec).await;
            let dedicated = self.ttl.is_some();
            match result {
                Ok(Some(acquired)) => {
                    let guard = LockGuard::new(self.client, spec, acquired, session, dedicated);
                    return Ok(Some(guard.watch_for_abort(self.abort)));
                }
                // The session lease ended under us: one more try on a new one.
                Err(Error::LeaseExpired(why))
                    if !dedicated && !retried && self.client.options().lease.is_none() =>
                {
                    session.lost.trip(format!("the server says: {why}"));
                    retried = true;
                }
                other => {
                    if dedicated {
                        let _ = Session::close(session).await;
                    }
                    return other.map(|_| None);
                }
            }
        }
    }
}
