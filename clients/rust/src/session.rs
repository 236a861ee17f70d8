//! Sessions: a lease the client keeps alive in the background, and the
//! holds (locks, permits, leaderships) that live on it.
//!
//! A session trusts its lease until `valid_until - margin`, where
//! `valid_until` is the *send* time of the last successful keep-alive plus
//! the TTL the server answered (the server starts counting later than that,
//! so this errs on the safe side). Keep-alives go out every third of the
//! TTL; when they keep failing past that point, or the server says the
//! lease is gone, the session is lost and every hold on it reports so.
//!
//! The keeper publishes that point as the session's trust window; code
//! about to act on a hold asks [`Session::check_trusted`] first, which
//! answers from the monotonic clock at once. The keeper's own timer can
//! only fire once the process runs again, so after a pause (SIGSTOP, a
//! long GC, a suspended VM) the window is what tells the truth first.
//!
//! Force-release is noticed in the background by asking `Check(name,
//! fence)` for every hold on the session once per keep-alive round (one
//! linearizable read per hold per third of the TTL); a hold's
//! `ensure_owned` asks the same at once, so code about to act on a hold
//! need not wait for the round.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio::time::{sleep_until, timeout_at, Instant};

use super::loss::{fence_gone, Tripwire};
use super::{Client, LeaseId};
use crate::error::Error;

/// A lease kept alive (or, for a task lock, deliberately left to run out).
#[derive(Debug)]
pub(crate) struct Session {
    pub lease: LeaseId,
    /// Tripped once the lease can no longer be trusted.
    pub lost: Tripwire,
    /// Until when the lease is trusted: the last confirmation's send time
    /// plus the TTL, minus the safety margin. Moved only by the keeper.
    trusted_until: Arc<Mutex<Instant>>,
    /// Holds to check for force-release each round.
    held: Arc<Mutex<HeldSet>>,
    /// The keep-alive task; aborted when the session goes away.
    keeper: AbortHandle,
    /// Whether this client granted the lease and has not revoked it yet (it
    /// revokes it when the session is ended or its last user goes away).
    owned: AtomicBool,
    /// Shares connections with the client but not its session slot, so the
    /// keeper does not keep the client alive.
    rpc: Client,
}

#[derive(Debug, Default)]
struct HeldSet {
    next: u64,
    holds: BTreeMap<u64, Held>,
}

#[derive(Debug, Clone)]
struct Held {
    name: String,
    fence: u64,
    lost: Tripwire,
}

/// A hold's entry in its session's check list; dropping it removes it.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    held: Arc<Mutex<HeldSet>>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut set = self.held.lock().unwrap_or_else(|e| e.into_inner());
        set.holds.remove(&self.id);
    }
}

impl Session {
    /// Grants a new lease of `ttl`. With `renew` false the lease is left
    /// to expire (task locks); the session is lost just before it does.
    pub async fn grant(client: &Client, ttl: Duration, renew: bool) -> Result<Arc<Self>, Error> {
        let sent = Instant::now();
        let lease = client.grant_lease(ttl).await?;
        Ok(Self::start(client, lease, ttl, sent + ttl, renew, true))
    }

    /// Adopts an existing lease (renewing it once to learn its TTL).
    pub async fn adopt(client: &Client, lease: LeaseId) -> Result<Arc<Self>, Error> {
        let sent = Instant::now();
        let ttl = client.keep_alive(lease).await?;
        Ok(Self::start(client, lease, ttl, sent + ttl, true, false))
    }

    fn start(
        client: &Client,
        lease: LeaseId,
        ttl: Duration,
        valid_until: Instant,
        renew: bool,
        owned: bool,
    ) -> Arc<Self> {
        let lost = Tripwire::new();
        let held = Arc::new(Mutex::new(HeldSet::default()));
        let rpc = client.detached();
        let margin = client.options().margin_for(ttl);
        let trusted_until = Arc::new(Mutex::new(trust_end(valid_until, margin)));
        let keeper = Keeper {
            rpc: rpc.clone(),
            lease,
            ttl,
            margin,
            renew,
            lost: lost.clone(),
            held: held.clone(),
            trusted_until: trusted_until.clone(),
        };
        let task = rpc.home().spawn(keeper.run(valid_until));
        Arc::new(Session {
            lease,
            lost,
            trusted_until,
            held,
            keeper: task.abort_handle(),
            owned: AtomicBool::new(owned),
            rpc,
        })
    }

    /// `Ok` if the lease is still trusted now: not lost, and confirmed by
    /// the cluster recently enough (TTL minus the safety margin ago, on the
    /// monotonic clock). Otherwise the session is marked lost (so every
    /// hold on it reports the loss) and the reason returned.
    pub fn check_trusted(&self) -> Result<(), String> {
        if let Some(why) = self.lost.reason() {
            return Err(why);
        }
        let until = *self.trusted_until.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now < until {
            return Ok(());
        }
        let why = format!(
            "lease {} lost: its last confirmation is older than its TTL minus the safety \
             margin ({:?} past the end of trust; was the process paused?)",
            self.lease,
            now - until
        );
        self.lost.trip(why.clone());
        Err(why)
    }

    /// Adds a hold to the force-release checks.
    pub fn register(&self, name: &str, fence: u64, lost: Tripwire) -> Registration {
        let mut set = self.held.lock().unwrap_or_else(|e| e.into_inner());
        set.next += 1;
        let id = set.next;
        set.holds.insert(
            id,
            Held {
                name: name.to_string(),
                fence,
                lost,
            },
        );
        Registration {
            id,
            held: self.held.clone(),
        }
    }

    /// Ends the session now, whoever still uses it: stops keep-alives, trips
    /// `lost`, and revokes the lease if this client granted it.
    pub async fn end(&self) -> Result<(), Error> {
        self.keeper.abort();
        self.lost.trip("session closed");
        if !self.owned.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        match self.rpc.revoke(self.lease).await {
            Ok(_) | Err(Error::LeaseExpired(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Ends the session if `this` is its last user; otherwise the last
    /// user's drop revokes it.
    pub async fn close(this: Arc<Self>) -> Result<(), Error> {
        match Arc::into_inner(this) {
            Some(session) => session.end().await,
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.keeper.abort();
        if self.owned.swap(false, Ordering::SeqCst) {
            // Best effort: the lease expires on its own otherwise.
            let (rpc, lease) = (self.rpc.clone(), self.lease);
            let work = async move {
                let _ = rpc.revoke(lease).await;
            };
            self.rpc.inner.cleanups.spawn(&self.rpc.home(), work);
        }
    }
}

/// The background task of one session.
struct Keeper {
    rpc: Client,
    lease: LeaseId,
    ttl: Duration,
    margin: Duration,
    renew: bool,
    lost: Tripwire,
    held: Arc<Mutex<HeldSet>>,
    /// Shared with the session: see [`Session::check_trusted`].
    trusted_until: Arc<Mutex<Instant>>,
}

/// The end of trust in a lease valid until `valid_until`.
fn trust_end(valid_until: Instant, margin: Duration) -> Instant {
    valid_until.checked_sub(margin).unwrap_or(valid_until)
}

impl Keeper {
    async fn run(self, mut valid_until: Instant) {
        let interval = self.ttl / 3;
        let mut next = Instant::now() + interval;
        loop {
            let trust_until = valid_until.checked_sub(self.margin).unwrap_or(valid_until);
            tokio::select! {
                _ = sleep_until(next) => {}
                _ = sleep_until(trust_until) => {
                    return self.trip(if self.renew {
                        "keep-alives failed past the safety margin"
                    } else {
                        "its TTL is about to run out"
                    });
                }
            }
            if self.renew {
                let sent = Instant::now();
                let renewal = self.rpc.keep_alive_bounded(self.lease, interval);
                match timeout_at(trust_until, renewal).await {
                    Ok(Ok(ttl)) => {
                        valid_until = sent + ttl;
                        next = sent + interval;
                        let mut trusted =
                            self.trusted_until.lock().unwrap_or_else(|e| e.into_inner());
                        *trusted = trust_end(valid_until, self.margin);
                    }
                    Ok(Err(Error::LeaseExpired(_))) => {
                        return self.trip("the server says it expired or was revoked")
                    }
                    Ok(Err(e)) if e.is_retryable() => {
                        tracing::debug!(lease = self.lease, "keep-alive failed: {e}");
                        next = Instant::now() + interval / 4;
                        continue;
                    }
                    Ok(Err(e)) => return self.trip(format!("keep-alive refused: {e}")),
                    Err(_) => return self.trip("keep-alives failed past the safety margin"),
                }
            } else {
                next = Instant::now() + interval;
            }
            let trust_until = valid_until.checked_sub(self.margin).unwrap_or(valid_until);
            self.check_holds(next.min(trust_until), interval).await;
        }
    }

    fn trip(&self, why: impl std::fmt::Display) {
        tracing::debug!(lease = self.lease, "session lost: {why}");
        self.lost.trip(format!("lease {} lost: {why}", self.lease));
    }

    /// Trips every hold whose fence no longer holds its lock.
    async fn check_holds(&self, deadline: Instant, attempt: Duration) {
        let holds: Vec<Held> = {
            let set = self.held.lock().unwrap_or_else(|e| e.into_inner());
            set.holds.values().cloned().collect()
        };
        if holds.is_empty() {
            return;
        }
        let checks = holds.iter().map(|h| async move {
            if let Ok(false) = self.rpc.check_bounded(&h.name, h.fence, attempt).await {
                h.lost.trip(fence_gone(h.fence));
            }
        });
        let _ = timeout_at(deadline, futures::future::join_all(checks)).await;
    }
}

/// The session a client uses by default: created lazily, replaced once lost
/// (unless it is an explicit lease, which cannot be replaced).
#[derive(Debug)]
pub(crate) struct SessionSlot {
    explicit: Option<LeaseId>,
    current: tokio::sync::Mutex<Option<Arc<Session>>>,
}

impl SessionSlot {
    pub fn new(explicit: Option<LeaseId>) -> Self {
        SessionSlot {
            explicit,
            current: tokio::sync::Mutex::new(None),
        }
    }

    /// The live session, granting (or adopting) one if needed, by the
    /// deadline of `client` if it has one (another call may be granting
    /// the session already).
    pub async fn get(&self, client: &Client) -> Result<Arc<Session>, Error> {
        let mut current = match client.deadline {
            Some(deadline) => timeout_at(deadline, self.current.lock())
                .await
                .map_err(|_| {
                    Error::Timeout(
                        "no session within the call's timeout: another call is still \
                         granting it (is the cluster reachable?)"
                            .into(),
                    )
                })?,
            None => self.current.lock().await,
        };
        if let Some(s) = current.as_ref() {
            match (s.lost.reason(), self.explicit) {
                (None, _) => return Ok(s.clone()),
                (Some(why), Some(_)) => return Err(Error::LeaseExpired(why)),
                (Some(_), None) => {}
            }
        }
        let session = match self.explicit {
            Some(lease) => Session::adopt(client, lease).await?,
            None => Session::grant(client, client.options().session_ttl, true).await?,
        };
        *current = Some(session.clone());
        Ok(session)
    }

    /// The current session, if any was created and not taken.
    pub async fn take(&self) -> Option<Arc<Session>> {
        self.current.lock().await.take()
    }
}
