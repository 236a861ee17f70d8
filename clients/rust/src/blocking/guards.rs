//! The blocking guards: each wraps its async twin and the runtime it lives
//! on, and releases (or resigns) before `drop` returns.

use std::pin::Pin;
use std::time::Duration;

use futures::{Stream, StreamExt};

use super::Blocker;
use crate::error::Error;
use crate::{self as nonblocking, LeaderInfo, LeaseId};

/// How long a drop waits for its release before leaving it to the lease.
const RELEASE_ON_DROP_FOR: Duration = Duration::from_secs(5);

/// Whether this thread may block on the runtime (it is not itself running
/// inside one, where `block_on` would panic).
fn may_block() -> bool {
    tokio::runtime::Handle::try_current().is_err()
}

/// Waits up to `timeout` (forever if `None`) for `lost`; `Some(why)` if it
/// resolved.
fn wait_for(
    rt: &Blocker,
    lost: impl std::future::Future<Output = Error>,
    timeout: Option<Duration>,
) -> Option<Error> {
    rt.block_on(async move {
        match timeout {
            Some(t) => tokio::time::timeout(t, lost).await.ok(),
            None => Some(lost.await),
        }
    })
}

/// A held lock, permits or read/write hold (see
/// [`crate::LockGuard`]); released when dropped.
#[derive(Debug)]
#[must_use = "dropping a guard releases the lock at once"]
pub struct LockGuard {
    /// `None` once released.
    inner: Option<nonblocking::LockGuard>,
    rt: Blocker,
}

impl LockGuard {
    pub(super) fn new(inner: nonblocking::LockGuard, rt: Blocker) -> Self {
        LockGuard {
            inner: Some(inner),
            rt,
        }
    }

    fn guard(&self) -> &nonblocking::LockGuard {
        match &self.inner {
            Some(g) => g,
            // Only `release` and `drop` take it, and both consume `self`.
            None => unreachable!("blocking guard used after release"),
        }
    }

    /// The fencing token.
    pub fn fence(&self) -> u64 {
        self.guard().fence()
    }
    /// The lock's name.
    pub fn name(&self) -> &str {
        self.guard().name()
    }
    /// The owner token.
    pub fn owner(&self) -> &str {
        self.guard().owner()
    }
    /// The lease the lock is held on.
    pub fn lease(&self) -> LeaseId {
        self.guard().lease()
    }
    /// Re-entry depth right after this guard was granted.
    pub fn count(&self) -> u32 {
        self.guard().count()
    }
    /// Whether the lock can no longer be trusted, as far as this process
    /// noticed (no call).
    pub fn is_lost(&self) -> bool {
        self.guard().is_lost()
    }
    /// Proves with one round trip that the lock is still held (see
    /// [`crate::LockGuard::ensure_owned`]).
    pub fn ensure_owned(&self) -> Result<(), Error> {
        self.rt.block_on(self.guard().ensure_owned())
    }
    /// Blocks until the lock is lost (`Some(why)`) or `timeout` passes
    /// (`None`); `timeout` `None` waits as long as it takes.
    pub fn wait_lost(&self, timeout: Option<Duration>) -> Option<Error> {
        wait_for(&self.rt, self.guard().lost(), timeout)
    }
    /// Re-enters under the same owner token.
    pub fn reenter(&self) -> Result<LockGuard, Error> {
        let again = self.rt.block_on(self.guard().reenter())?;
        Ok(LockGuard::new(again, self.rt.clone()))
    }
    /// Releases this hold (see [`crate::LockGuard::release`]).
    pub fn release(mut self) -> Result<(), Error> {
        match self.inner.take() {
            Some(g) => self.rt.block_on(g.release()),
            None => Ok(()),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(guard) = self.inner.take() else {
            return;
        };
        if may_block() {
            // The timer must be made inside the runtime.
            let release =
                async { tokio::time::timeout(RELEASE_ON_DROP_FOR, guard.release()).await };
            let _ = self.rt.block_on(release);
        }
        // Otherwise the async guard's own drop releases in the background.
    }
}

/// Leadership of an election (see [`crate::Leadership`]); resigned
/// when dropped.
#[derive(Debug)]
#[must_use = "dropping a leadership resigns it at once"]
pub struct Leadership {
    inner: Option<nonblocking::Leadership>,
    rt: Blocker,
}

impl Leadership {
    pub(super) fn new(inner: nonblocking::Leadership, rt: Blocker) -> Self {
        Leadership {
            inner: Some(inner),
            rt,
        }
    }

    fn leadership(&self) -> &nonblocking::Leadership {
        match &self.inner {
            Some(l) => l,
            None => unreachable!("blocking leadership used after resign"),
        }
    }

    /// The leadership's fencing token.
    pub fn fence(&self) -> u64 {
        self.leadership().fence()
    }
    /// Publishes a new value.
    pub fn proclaim(&self, value: impl Into<Vec<u8>>) -> Result<(), Error> {
        self.rt.block_on(self.leadership().proclaim(value))
    }
    /// Whether the leadership can no longer be trusted, as far as this
    /// process noticed (no call).
    pub fn is_lost(&self) -> bool {
        self.leadership().is_lost()
    }
    /// Proves with one round trip that this still leads (see
    /// [`crate::Leadership::ensure_owned`]).
    pub fn ensure_owned(&self) -> Result<(), Error> {
        self.rt.block_on(self.leadership().ensure_owned())
    }
    /// Blocks until lost (`Some(why)`) or `timeout` passes (`None`).
    pub fn wait_lost(&self, timeout: Option<Duration>) -> Option<Error> {
        wait_for(&self.rt, self.leadership().lost(), timeout)
    }
    /// Steps down.
    pub fn resign(mut self) -> Result<(), Error> {
        match self.inner.take() {
            Some(l) => self.rt.block_on(l.resign()),
            None => Ok(()),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        let Some(leadership) = self.inner.take() else {
            return;
        };
        if may_block() {
            // The timer must be made inside the runtime.
            let resign =
                async { tokio::time::timeout(RELEASE_ON_DROP_FOR, leadership.resign()).await };
            let _ = self.rt.block_on(resign);
        }
    }
}

/// A held task lock (see [`crate::TaskGuard`]). Dropping it ends
/// the hold in the background once `min_hold` has passed.
#[derive(Debug)]
#[must_use = "dropping a task guard ends the hold after min_hold"]
pub struct TaskGuard {
    inner: Option<nonblocking::TaskGuard>,
    rt: Blocker,
}

impl TaskGuard {
    pub(super) fn new(inner: nonblocking::TaskGuard, rt: Blocker) -> Self {
        TaskGuard {
            inner: Some(inner),
            rt,
        }
    }

    /// The fencing token of this run.
    pub fn fence(&self) -> u64 {
        self.inner.as_ref().map_or(0, |g| g.fence())
    }
    /// Whether the hold ended early, as far as this process noticed (no
    /// call).
    pub fn is_lost(&self) -> bool {
        self.inner.as_ref().is_none_or(|g| g.is_lost())
    }
    /// Checks, with no call, that the hold can still be trusted (see
    /// [`crate::TaskGuard::ensure_valid`]).
    pub fn ensure_valid(&self) -> Result<(), Error> {
        match &self.inner {
            Some(g) => g.ensure_valid(),
            None => Err(Error::NotHeld("the task lock was finished".into())),
        }
    }
    /// Proves with one round trip that the hold still holds (see
    /// [`crate::TaskGuard::ensure_owned`]).
    pub fn ensure_owned(&self) -> Result<(), Error> {
        match &self.inner {
            Some(g) => self.rt.block_on(g.ensure_owned()),
            None => Err(Error::NotHeld("the task lock was finished".into())),
        }
    }
    /// Asks the cluster whether the hold lasted until now, blocks until
    /// `min_hold` has passed, then releases; [`Error::LockLost`] if the
    /// hold had ended before (see [`crate::TaskGuard::finish`]).
    pub fn finish(mut self) -> Result<(), Error> {
        match self.inner.take() {
            Some(g) => self.rt.block_on(g.finish()),
            None => Ok(()),
        }
    }
    /// Returns without waiting for `min_hold`; the lock stays held until
    /// then (see [`crate::TaskGuard::finish_in_background`]).
    pub fn finish_in_background(mut self) -> Result<(), Error> {
        match self.inner.take() {
            Some(g) => self.rt.block_on(g.finish_in_background()),
            None => Ok(()),
        }
    }
}

/// Every change of an election's leader, blocking for each (see
/// [`crate::Election::observe`]).
pub struct Observe {
    stream: Pin<Box<dyn Stream<Item = Result<Option<LeaderInfo>, Error>> + Send>>,
    rt: Blocker,
}

impl std::fmt::Debug for Observe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observe").finish_non_exhaustive()
    }
}

impl Observe {
    pub(super) fn new(
        stream: Pin<Box<dyn Stream<Item = Result<Option<LeaderInfo>, Error>> + Send>>,
        rt: Blocker,
    ) -> Self {
        Observe { stream, rt }
    }

    /// The next change, or `None` if none arrives within `timeout`.
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<Result<Option<LeaderInfo>, Error>> {
        let stream = &mut self.stream;
        self.rt
            .block_on(async { tokio::time::timeout(timeout, stream.next()).await.ok() })
            .flatten()
    }
}

impl Iterator for Observe {
    type Item = Result<Option<LeaderInfo>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let stream = &mut self.stream;
        self.rt.block_on(stream.next())
    }
}
