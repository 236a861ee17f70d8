//! [`TaskLock`]: run a scheduled job once per interval across workers.
//!
//! Every worker fires on its own schedule and tries the lock; the one that
//! gets it runs the job. The lock is held at least `min_hold` (so a worker
//! whose clock fires a little later does not run the job a second time) and
//! at most `max_hold`: it lives on a lease of its own whose TTL is
//! `max_hold` and which is *not* kept alive, so a worker that dies or hangs
//! mid-job frees the lock for the next interval by itself. This is
//! ShedLock's `lockAtLeastFor` / `lockAtMostFor`.

use std::future::Future;
use std::time::Duration;

use tokio::runtime::Handle;
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
            runtime: Handle::current(),
        }))
    }

    /// Runs `job` if this worker gets the lock (`Ok(Some(output))`), or
    /// does nothing if another worker holds it (`Ok(None)`). Returns once
    /// the job is done and `min_hold` has passed. A job that outlives
    /// `max_hold` is not stopped (race it against [`TaskGuard::lost`] via
    /// [`try_acquire`](Self::try_acquire) for that); it is logged.
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
        if let Err(e) = guard.finish().await {
            tracing::warn!("task lock: {e}");
        }
        Ok(Some(out))
    }
}

/// A held task lock. [`finish`](Self::finish) it when the job is done; on
/// drop it is released in the background once `min_hold` has passed.
#[derive(Debug)]
#[must_use = "dropping a task guard ends the hold after min_hold"]
pub struct TaskGuard {
    /// `None` once finished.
    guard: Option<LockGuard>,
    /// Not released before this.
    hold_until: Instant,
    runtime: Handle,
}

impl TaskGuard {
    /// The fencing token of this run.
    pub fn fence(&self) -> u64 {
        self.guard.as_ref().map_or(0, LockGuard::fence)
    }

    /// Checks, right now, that the hold can still be trusted (see
    /// [`LockGuard::ensure_valid`]).
    pub fn ensure_valid(&self) -> Result<(), Error> {
        match &self.guard {
            Some(guard) => guard.ensure_valid(),
            None => Err(Error::NotHeld("the task lock was finished".into())),
        }
    }

    /// Whether the hold ended early (`max_hold` about to pass, revoked or
    /// force-released).
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

    /// The job is done: waits until `min_hold` has passed, then releases.
    /// Fails with [`Error::LockLost`] if the hold had already ended before
    /// this call (the job overran `max_hold`, or was force-released).
    pub async fn finish(mut self) -> Result<(), Error> {
        let Some(guard) = self.guard.take() else {
            return Ok(());
        };
        let overran = guard.is_lost();
        tokio::time::sleep_until(self.hold_until).await;
        match guard.release().await {
            Err(Error::LockLost(why)) if overran => Err(Error::LockLost(why)),
            // Ran out right at max_hold, as allowed.
            Err(Error::LockLost(_)) => Ok(()),
            other => other,
        }
    }
}

impl Drop for TaskGuard {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            let hold_until = self.hold_until;
            self.runtime.spawn(async move {
                tokio::time::sleep_until(hold_until).await;
                drop(guard);
            });
        }
    }
}
