//! [`TaskLock`]: run a scheduled job once per interval across workers.
//!
//! Every worker fires on its own schedule and tries the lock; the one that
//! gets it runs the job. The lock is held at least `min_hold` (so a worker
//! whose clock fires a little later does not run the job a second time) and
//! at most `max_hold`: it lives on a lease of its own whose TTL is
//! `max_hold` and which is *not* kept alive, so a worker that dies or hangs
//! mid-job frees the lock for the next interval by itself. This is
//! ShedLock's `lockAtLeastFor` / `lockAtMostFor`. [`TaskLock::run`] waits
//! out `min_hold` before it returns; [`TaskGuard::finish_in_background`]
//! returns at once and leaves the rest of `min_hold` to the cluster (the
//! lease's TTL is cut to the time left), as grelmicro's `TaskLock` does.
//!
//! Both end with one linearizable `Check(name, fence)` when the job is
//! done: a fence that still holds then held the lock from its grant on (a
//! fence is never granted twice), so a run that reports success ran its
//! whole job under the lock, and a run whose lock was force-released,
//! revoked or ran out meanwhile reports [`Error::LockLost`].

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use super::{Client, LockGuard};
use crate::error::Error;

/// A lock for scheduled jobs; made by [`Client::task_lock`].
#[derive(Debug, Clone)]
pub struct TaskLock {
    client: Client,
    name: String,
    min_hold: Duration,
    max_hold: Duration,
}

impl Client {
    /// A task lock `name`, held at least `min_hold` and at most `max_hold`
    /// (at least 100 ms; keep it above the job's longest run).
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    ///
    /// let hourly = client.task_lock("hourly-report", Duration::from_secs(60), Duration::from_secs(600));
    /// let mut tick = tokio::time::interval(Duration::from_secs(3600));
    /// loop {
    ///     tick.tick().await;
    ///     match hourly.run(|| async { /* build the report */ 42 }).await? {
    ///         Some(out) => println!("ran the job: {out}"),
    ///         None => println!("another worker ran it"),
    ///     }
    /// }
    /// # }
    /// ```
    pub fn task_lock(
        &self,
        name: impl Into<String>,
        min_hold: Duration,
        max_hold: Duration,
    ) -> TaskLock {
        TaskLock {
            client: self.clone(),
            name: name.into(),
            min_hold,
            max_hold,
        }
    }
}

impl TaskLock {
    /// Takes the lock if no worker holds it; `Ok(None)` otherwise.
    pub async fn try_acquire(&self) -> Result<Option<TaskGuard>, Error> {
        if self.min_hold > self.max_hold {
            return Err(Error::InvalidArgument(format!(
                "task lock {:?}: min_hold {:?} exceeds max_hold {:?}",
                self.name, self.min_hold, self.max_hold
            )));
        }
        let guard = self
            .client
            .lock(self.name.clone())
            .ttl(self.max_hold)
            .without_renewal()
            .try_acquire()
            .await?;
        Ok(guard.map(|guard| TaskGuard {
            guard: Some(guard),
            hold_until: Instant::now() + self.min_hold,
        }))
    }

    /// Runs `job` if this worker gets the lock (`Ok(Some(output))`), or
    /// does nothing if another worker holds it (`Ok(None)`). Returns once
    /// the job is done and `min_hold` has passed (to return when the job
    /// is done, take the lock with [`try_acquire`](Self::try_acquire) and
    /// end it with [`TaskGuard::finish_in_background`]).
    ///
    /// `Ok(Some(_))` means the whole job ran under the lock: the cluster
    /// confirmed the hold when the job ended (see [`TaskGuard::finish`]).
    /// A job whose lock was lost before it ended — force-released,
    /// revoked, or `max_hold` passed — is not stopped (race it against
    /// [`TaskGuard::lost`] for that), and is reported as
    /// [`Error::LockLost`], its output dropped: another worker may have
    /// run the job meanwhile.
    pub async fn run<F, Fut, T>(&self, job: F) -> Result<Option<T>, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        let Some(guard) = self.try_acquire().await? else {
            return Ok(None);
        };
        // Never start the job on a grant that may already be gone.
        guard.ensure_valid()?;
        let out = job().await;
        guard.finish().await?;
        Ok(Some(out))
    }
}

/// A held task lock. [`finish`](Self::finish) it (or
/// [`finish_in_background`](Self::finish_in_background)) when the job is
/// done; dropping it does the latter.
#[derive(Debug)]
#[must_use = "dropping a task guard ends the hold after min_hold"]
pub struct TaskGuard {
    /// `None` once finished.
    guard: Option<LockGuard>,
    /// Not released before this.
    hold_until: Instant,
}

impl TaskGuard {
    /// The fencing token of this run.
    pub fn fence(&self) -> u64 {
        self.guard.as_ref().map_or(0, LockGuard::fence)
    }

    /// Checks, with no call, that the hold can still be trusted as far as
    /// this process knows (see [`LockGuard::ensure_valid`]).
    pub fn ensure_valid(&self) -> Result<(), Error> {
        match &self.guard {
            Some(guard) => guard.ensure_valid(),
            None => Err(Error::NotHeld("the task lock was finished".into())),
        }
    }

    /// Proves, with one round trip, that the hold still holds (see
    /// [`LockGuard::ensure_owned`]).
    pub async fn ensure_owned(&self) -> Result<(), Error> {
        match &self.guard {
            Some(guard) => guard.ensure_owned().await,
            None => Err(Error::NotHeld("the task lock was finished".into())),
        }
    }

    /// Whether the hold ended early (`max_hold` about to pass, revoked or
    /// force-released), as far as this process noticed (no call).
    pub fn is_lost(&self) -> bool {
        self.guard.as_ref().is_none_or(LockGuard::is_lost)
    }

    /// Resolves when the hold can no longer be trusted: just before
    /// `max_hold` runs out, or when it is revoked or force-released.
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let lost = self.guard.as_ref().map(LockGuard::lost);
        async move {
            match lost {
                Some(lost) => lost.await,
                None => Error::LockLost("task lock already finished".into()),
            }
        }
    }

    /// The job is done: asks the cluster whether the hold still holds
    /// (one round trip, see [`ensure_owned`](Self::ensure_owned)), waits
    /// until `min_hold` has passed, then releases (a lost hold at once).
    /// `Ok` means the hold lasted until the job was done. Fails with
    /// [`Error::LockLost`] if it had ended before (the job overran
    /// `max_hold`, or the lock was force-released or its lease revoked),
    /// and with the check's error if the cluster could not be asked and
    /// the release could not confirm the hold either.
    pub async fn finish(mut self) -> Result<(), Error> {
        let Some(guard) = self.guard.take() else {
            return Ok(());
        };
        let held = guard.ensure_owned().await;
        if !matches!(held, Err(Error::LockLost(_))) {
            tokio::time::sleep_until(self.hold_until).await;
        }
        settle(held, guard.release().await)
    }

    /// The job is done, and the caller need not wait for `min_hold`:
    /// releases the lock now if `min_hold` has passed since it was taken;
    /// otherwise returns at once and the lock stays held until then. The
    /// lease's TTL is cut to the time left, so the cluster ends the hold
    /// at `min_hold` by itself (even if this process has exited by then),
    /// and this client also releases it at that moment if it still runs.
    /// Should the cluster not take the new TTL within a few seconds, the
    /// hold ends at `max_hold` instead: never before `min_hold`. Asks the
    /// cluster first and fails with [`Error::LockLost`] as
    /// [`finish`](Self::finish) does (a lost hold is released at once).
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    ///
    /// let nightly = client.task_lock("nightly", Duration::from_secs(60), Duration::from_secs(600));
    /// if let Some(guard) = nightly.try_acquire().await? {
    ///     guard.ensure_valid()?;
    ///     // ... the job ...
    ///     guard.finish_in_background().await?; // no wait for the minute to pass
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn finish_in_background(mut self) -> Result<(), Error> {
        let Some(guard) = self.guard.take() else {
            return Ok(());
        };
        let held = guard.ensure_owned().await;
        if matches!(held, Err(Error::LockLost(_))) || !held_on(&guard, self.hold_until).await {
            return settle(held, guard.release().await);
        }
        release_at(guard, self.hold_until);
        held
    }
}

/// What `finish` reports, from `held` (the check when the job was done)
/// and `released` (the release after it): whether the job ran under the
/// lock to its end.
fn settle(held: Result<(), Error>, released: Result<(), Error>) -> Result<(), Error> {
    match (held, released) {
        (Err(Error::LockLost(why)), _) => Err(Error::LockLost(why)),
        // Not asked, but the release found it still held: held throughout.
        (Err(_), Ok(())) => Ok(()),
        (Err(e), Err(_)) => Err(e),
        (Ok(()), Ok(())) => Ok(()),
        // Held when the job was done; what happened to the hold after is
        // no loss of the job's: it ran out at max_hold while min_hold was
        // waited out (allowed), or the release could not reach the
        // cluster (the lease then ends at max_hold by itself).
        (Ok(()), Err(e)) => {
            tracing::debug!("task lock release after the job: {e}");
            Ok(())
        }
    }
}

/// How long handing the rest of `min_hold` to the cluster may hold up the
/// worker; past it the lease ends at `max_hold` instead.
const HAND_OVER_WITHIN: Duration = Duration::from_secs(2);

/// Leaves `guard`'s lock held until `until` without the caller waiting:
/// gives its lease (its own, never renewed) the TTL left until then.
/// `false` if `min_hold` has passed already: release it now.
async fn held_on(guard: &LockGuard, until: Instant) -> bool {
    let left = until.saturating_duration_since(Instant::now());
    if left < Duration::from_millis(1) {
        return false;
    }
    let client = guard
        .client()
        .until(Some(Instant::now() + HAND_OVER_WITHIN));
    if let Err(e) = client.set_lease_ttl(guard.lease(), left).await {
        tracing::debug!(
            "task lock {:?}: min_hold left to max_hold: {e}",
            guard.name()
        );
    }
    true
}

/// Releases `guard` at `until`, in the background on its client's runtime
/// (if the process is gone by then, the lease's own end frees the lock).
fn release_at(guard: LockGuard, until: Instant) {
    guard.home().spawn(async move {
        tokio::time::sleep_until(until).await;
        if let Err(e) = guard.release().await {
            tracing::debug!("task lock release at min_hold: {e}");
        }
    });
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let hold_until = self.hold_until;
            guard.home().spawn(async move {
                if guard.is_lost() || !held_on(&guard, hold_until).await {
                    drop(guard);
                } else {
                    release_at(guard, hold_until);
                }
            });
        }
    }
}
