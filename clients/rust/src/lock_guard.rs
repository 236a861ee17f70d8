//! The [`LockGuard`] that [`LockBuilder`](super::LockBuilder) returns,
//! which releases on drop and reports, through [`lost`](LockGuard::lost),
//! the moment the lock can no longer be trusted.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

use super::loss::{confirm_held, Tripwire};
use super::session::{Registration, Session};
use super::{Acquire, Acquired, Client, LeaseId};
use crate::error::Error;

/// A held lock (or shared hold, or semaphore permits). Released by
/// [`release`](Self::release) or, failing that, on drop (in the background,
/// on its client's runtime).
#[derive(Debug)]
#[must_use = "dropping a guard releases the lock at once"]
pub struct LockGuard {
    client: Client,
    spec: Acquire,
    fence: u64,
    count: u32,
    /// Tripped when a check finds the lock force-released or ended.
    lost: Tripwire,
    /// Tripped when the lease under the lock is lost.
    session_lost: Tripwire,
    /// The lease is this guard's alone (`ttl`): revoked on release.
    dedicated: bool,
    /// `None` once released.
    hold: Option<Hold>,
}

/// What a guard keeps alive while it holds.
#[derive(Debug)]
struct Hold {
    session: Arc<Session>,
    _registration: Registration,
    /// Dropping it stops the abort-on-loss watcher.
    _abort_watch: Option<oneshot::Sender<()>>,
}

impl LockGuard {
    pub(crate) fn new(
        client: Client,
        spec: Acquire,
        acquired: Acquired,
        session: Arc<Session>,
        dedicated: bool,
    ) -> Self {
        let lost = Tripwire::new();
        let registration = session.register(&spec.name, acquired.fence, lost.clone());
        LockGuard {
            client,
            fence: acquired.fence,
            count: acquired.count,
            lost,
            session_lost: session.lost.clone(),
            dedicated,
            hold: Some(Hold {
                session,
                _registration: registration,
                _abort_watch: None,
            }),
            spec,
        }
    }

    /// The runtime its background work runs on: its client's.
    pub(crate) fn home(&self) -> Handle {
        self.client.home()
    }

    pub(crate) fn watch_for_abort(mut self, abort: Option<AbortHandle>) -> Self {
        let Some(handle) = abort else {
            return self;
        };
        let (tx, rx) = oneshot::channel::<()>();
        let lost = self.lost();
        self.client.home().spawn(async move {
            tokio::select! {
                _ = lost => handle.abort(),
                _ = rx => {}
            }
        });
        if let Some(hold) = self.hold.as_mut() {
            hold._abort_watch = Some(tx);
        }
        self
    }

    /// The fencing token: strictly greater than any earlier grant of this
    /// name. Pass it to every resource the lock protects.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The owner token the lock is held under.
    pub fn owner(&self) -> &str {
        &self.spec.owner
    }

    /// The lease the lock is held on.
    pub fn lease(&self) -> LeaseId {
        self.spec.lease
    }

    /// The client the lock was acquired through.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Re-entry depth right after this guard was granted (1 = first hold).
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Checks, with no call, that the lock can still be trusted as far as
    /// this process knows: no loss was noticed, and its lease was confirmed
    /// by the cluster less than its TTL minus the safety margin ago
    /// (monotonic clock). After a pause (SIGSTOP, a long GC, a suspended
    /// VM) the background keep-alive cannot have noticed the loss yet, but
    /// this does, and then marks the lock lost. It does not see a
    /// force-release or revoke made elsewhere until the next keep-alive
    /// round (a third of the TTL): [`ensure_owned`](Self::ensure_owned)
    /// asks the cluster. [`Error::LockLost`] says why.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let guard = client.lock("reports").acquire().await?;
    /// guard.ensure_valid()?; // never start on a grant that may be gone
    /// // ... the work ...
    /// guard.release().await
    /// # }
    /// ```
    pub fn ensure_valid(&self) -> Result<(), Error> {
        let name = &self.spec.name;
        if let Some(why) = self.lost.reason() {
            return Err(Error::LockLost(format!("{name:?}: {why}")));
        }
        match &self.hold {
            Some(hold) => hold
                .session
                .check_trusted()
                .map_err(|why| Error::LockLost(format!("{name:?}: {why}"))),
            None => Err(Error::NotHeld(format!("{name:?} was released"))),
        }
    }

    /// Proves, with one round trip, that this hold still holds the lock:
    /// [`ensure_valid`](Self::ensure_valid), then `Check(name, fence)`, a
    /// linearizable read served through the leader, then `ensure_valid`
    /// again (the call may have taken long). A force-release, revoke or
    /// expiry the cluster applied before this call is seen: the lock is
    /// marked lost (so [`lost`](Self::lost) resolves and
    /// [`release`](Self::release) reports it) and [`Error::LockLost`]
    /// answered. Any other error means the cluster could not be asked: the
    /// hold is not proven, so do not act on it. Call it right before an
    /// act that must not overlap another holder's.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let guard = client.lock("ledger").acquire().await?;
    /// // ... a long computation; meanwhile an operator may force-release ...
    /// guard.ensure_owned().await?; // refuses if the lock is gone
    /// // ... write with guard.fence() ...
    /// guard.release().await
    /// # }
    /// ```
    pub async fn ensure_owned(&self) -> Result<(), Error> {
        self.ensure_valid()?;
        confirm_held(&self.client, &self.spec.name, self.fence, &self.lost).await?;
        self.ensure_valid()
    }

    /// Whether [`lost`](Self::lost) has resolved (no call: a loss this
    /// process has not noticed yet is not seen; see
    /// [`ensure_owned`](Self::ensure_owned)).
    pub fn is_lost(&self) -> bool {
        self.lost.reason().is_some() || self.session_lost.reason().is_some()
    }

    /// Resolves (with [`Error::LockLost`] saying why) as soon as the lock can
    /// no longer be trusted: its lease was revoked or expired, keep-alives
    /// failed past the safety margin, or it was force-released (noticed
    /// within a keep-alive round, a third of the TTL). Does not borrow the
    /// guard, so it can be spawned or raced against the work.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let guard = client.lock("migrations").acquire().await?;
    /// tokio::select! {
    ///     err = guard.lost() => return Err(err),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
    /// }
    /// guard.release().await
    /// # }
    /// ```
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let (own, session) = (self.lost.clone(), self.session_lost.clone());
        let name = self.spec.name.clone();
        async move {
            let why = tokio::select! {
                why = own.tripped() => why,
                why = session.tripped() => why,
            };
            Error::LockLost(format!("{name:?}: {why}"))
        }
    }

    /// Acquires the same lock again under the same owner token: a new guard
    /// with the same fence and a count one higher. The lock is free only
    /// once every guard is released.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let outer = client.lock("ledger").acquire().await?;
    /// let inner = outer.reenter().await?;
    /// assert_eq!(inner.fence(), outer.fence());
    /// # Ok(()) }
    /// ```
    pub async fn reenter(&self) -> Result<LockGuard, Error> {
        let hold = self
            .hold
            .as_ref()
            .ok_or_else(|| Error::NotHeld(format!("{:?} was already released", self.spec.name)))?;
        let spec = Acquire {
            wait: true,
            timeout: None,
            ..self.spec.clone()
        };
        let acquired =
            self.client.acquire(&spec).await?.ok_or_else(|| {
                Error::Internal(format!("re-entry of {:?} answered busy", spec.name))
            })?;
        let session = hold.session.clone();
        Ok(LockGuard::new(
            self.client.clone(),
            spec,
            acquired,
            session,
            self.dedicated,
        ))
    }

    /// Releases this hold (one level of re-entry). Fails with
    /// [`Error::LockLost`] if the lock had already been lost, so the caller
    /// learns its critical section may have overlapped another holder's.
    pub async fn release(mut self) -> Result<(), Error> {
        let Some(hold) = self.hold.take() else {
            return Ok(());
        };
        let Hold {
            session,
            _registration,
            _abort_watch,
        } = hold;
        // Stop checking (and watching) before the release makes Check false.
        drop((_registration, _abort_watch));
        // Lost already: the release below is only cleanup, and the loss is
        // what the caller must hear, even if the cluster cannot be reached.
        let lost = self.lost.reason().or_else(|| self.session_lost.reason());
        let released = self.client.release(&self.spec.name, &self.spec.owner).await;
        if self.dedicated {
            let _ = Session::close(session).await;
        }
        match released {
            Err(e)
                if lost.is_some() && !matches!(e, Error::NotHeld(_) | Error::LeaseExpired(_)) =>
            {
                Err(Error::LockLost(format!(
                    "{:?} was lost before it was released: {}",
                    self.spec.name,
                    lost.unwrap_or_default()
                )))
            }
            Ok(_) => Ok(()),
            Err(Error::NotHeld(why) | Error::LeaseExpired(why)) => Err(Error::LockLost(format!(
                "{:?} was lost before it was released: {why}",
                self.spec.name
            ))),
            Err(e) => Err(e),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(hold) = self.hold.take() else {
            return;
        };
        let client = self.client.clone();
        let (name, owner) = (self.spec.name.clone(), self.spec.owner.clone());
        // A shut-down runtime drops the task; the lease then frees the lock.
        // `Client::close` waits for it.
        let work = async move {
            if let Err(e) = client.release(&name, &owner).await {
                tracing::debug!("release of {name:?} on drop failed: {e}");
            }
            drop(hold);
        };
        self.client.inner.cleanups.spawn(&self.client.home(), work);
    }
}
