//! Lease deadlines, tracked by the leader alone on a monotonic clock.
//!
//! A node that becomes leader restarts every deadline at now + TTL (never
//! shorter than what any earlier leader promised); a keep-alive moves one
//! deadline to now + TTL; when deadlines pass the timer proposes one
//! `ExpireLeases` entry for all of them. Followers keep nothing here, so a
//! deposed leader can neither renew nor expire a lease.
//!
//! A lease whose expiry has been proposed is marked *expiring* until that
//! entry's outcome is known. A keep-alive for it gets neither "renewed" nor
//! "not found" (the entry may still fail to commit, and then the lease lives
//! on): it is refused as retryable, and the retry sees the outcome.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use raftlock_storage::LeaseId;

use super::deadline_queue::{Deadlines, LeaderQueue};

/// Most lease ids in one expiry entry.
pub const MAX_EXPIRE_BATCH: usize = 5_000;

/// Every tracked lease's deadline and TTL, and the leases whose expiry
/// entry is in flight.
#[derive(Default)]
struct Leases {
    deadlines: Deadlines<LeaseId, u64>,
    expiring: HashSet<LeaseId>,
}

impl Leases {
    /// `id` due at `now` + its TTL.
    fn renew(&mut self, id: LeaseId, ttl_ms: u64, now: Instant) {
        let deadline = now + Duration::from_millis(ttl_ms);
        self.deadlines.set(id, ttl_ms, deadline);
    }
}

/// Why a keep-alive was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAliveRefused {
    /// This node is not (or no longer) the leader.
    NotLeader,
    /// The lease does not exist.
    NotFound,
    /// The entry expiring this lease is in flight; ask again once it has
    /// committed (then: not found) or failed (then: renewed by whoever leads).
    Expiring,
}

/// The leader's lease deadlines. Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct LeaseTimer {
    queue: LeaderQueue<Leases>,
}

impl LeaseTimer {
    /// Starts tracking as leader: every lease `leases` yields gets now + TTL.
    /// `leases` is read while the timer is locked, so a grant applied
    /// concurrently is either in it or arrives later through
    /// [`on_granted`](Self::on_granted).
    pub fn activate<I>(&self, now: Instant, leases: impl FnOnce() -> I)
    where
        I: IntoIterator<Item = (LeaseId, u64)>,
    {
        let mut d = self.queue.lock();
        *d = Leases {
            deadlines: Deadlines::of_leader(),
            expiring: HashSet::new(),
        };
        for (id, ttl_ms) in leases() {
            d.renew(id, ttl_ms, now);
        }
        drop(d);
        self.queue.wake();
    }

    /// Stops tracking (this node is no longer leader).
    pub fn deactivate(&self) {
        *self.queue.lock() = Leases::default();
    }

    /// Whether this timer is tracking as leader.
    pub fn is_active(&self) -> bool {
        self.queue.lock().deadlines.is_active()
    }

    /// A lease was granted: start its deadline if leader.
    pub fn on_granted(&self, id: LeaseId, ttl_ms: u64) {
        let mut d = self.queue.lock();
        if d.deadlines.is_active() && d.deadlines.get(&id).is_none() {
            d.renew(id, ttl_ms, Instant::now());
            drop(d);
            self.queue.wake();
        }
    }

    /// A lease ended: forget it.
    pub fn on_ended(&self, id: LeaseId) {
        let mut d = self.queue.lock();
        d.deadlines.remove(&id);
        d.expiring.remove(&id);
    }

    /// A TTL change for `id` is about to be proposed: keeps it from expiring
    /// while the entry is in flight by moving its deadline to at least now +
    /// `hold` (never sooner than it was). Refused like a keep-alive when not
    /// leader or when its expiry is in flight; a lease this timer does not
    /// track is left to the state machine to answer "not found".
    pub fn hold(&self, id: LeaseId, now: Instant, hold: Duration) -> Result<(), KeepAliveRefused> {
        let mut d = self.queue.lock();
        refused(&d, id)?;
        if let Some(&(deadline, ttl_ms)) = d.deadlines.get(&id) {
            d.deadlines.set(id, ttl_ms, (now + hold).max(deadline));
        }
        Ok(())
    }

    /// Lease `id` was given TTL `ttl_ms` (applied): its deadline becomes now
    /// + `ttl_ms`, sooner or later than before.
    pub fn on_ttl_set(&self, id: LeaseId, ttl_ms: u64) {
        let mut d = self.queue.lock();
        if refused(&d, id).is_ok() && d.deadlines.get(&id).is_some() {
            d.renew(id, ttl_ms, Instant::now());
            drop(d);
            self.queue.wake();
        }
    }

    /// Renews `id` to now + its TTL. `ttl_of` reads the lease's TTL from the
    /// applied state (`None`: no such lease); it runs under the timer's lock
    /// so no expiry can slip between the check and the renewal.
    pub fn keep_alive(
        &self,
        id: LeaseId,
        now: Instant,
        ttl_of: impl FnOnce() -> Option<u64>,
    ) -> Result<u64, KeepAliveRefused> {
        let mut d = self.queue.lock();
        refused(&d, id)?;
        let ttl_ms = ttl_of().ok_or(KeepAliveRefused::NotFound)?;
        d.renew(id, ttl_ms, now);
        Ok(ttl_ms)
    }

    /// Time left before `id` expires, if the leader tracks it.
    pub fn remaining(&self, id: LeaseId, now: Instant) -> Option<Duration> {
        let d = self.queue.lock();
        d.deadlines
            .get(&id)
            .map(|(deadline, _)| deadline.saturating_duration_since(now))
    }

    /// Leases whose deadline has passed, marked expiring (at most
    /// [`MAX_EXPIRE_BATCH`]), and the next deadline still ahead.
    pub fn take_due(&self, now: Instant) -> (Vec<LeaseId>, Option<Instant>) {
        let mut d = self.queue.lock();
        let mut due = Vec::new();
        let mut next = None;
        for (deadline, &id, _) in d.deadlines.soonest_first() {
            if deadline > now {
                next = Some(deadline);
                break;
            }
            if d.expiring.contains(&id) {
                continue;
            }
            due.push(id);
            if due.len() == MAX_EXPIRE_BATCH {
                next = Some(now);
                break;
            }
        }
        d.expiring.extend(due.iter().copied());
        (due, next)
    }

    /// Leases past their deadline that have not ended yet (their expiry
    /// is due or in flight): the expiry backlog, for metrics.
    pub fn backlog(&self, now: Instant) -> usize {
        let d = self.queue.lock();
        d.deadlines
            .soonest_first()
            .take_while(|(deadline, _, _)| *deadline <= now)
            .count()
    }

    /// The expiry of `ids` could not be proposed; try again on the next tick.
    pub fn unmark(&self, ids: &[LeaseId]) {
        let mut d = self.queue.lock();
        for id in ids {
            d.expiring.remove(id);
        }
    }

    /// Waits until `deadline` or until a new deadline may be sooner.
    pub async fn sleep_until(&self, deadline: Option<Instant>) {
        self.queue.sleep_until(deadline).await;
    }
}

/// Why a keep-alive or TTL change of `id` cannot be served now, if it
/// cannot: this node does not lead, or the lease's expiry is in flight.
fn refused(d: &Leases, id: LeaseId) -> Result<(), KeepAliveRefused> {
    if !d.deadlines.is_active() {
        return Err(KeepAliveRefused::NotLeader);
    }
    if d.expiring.contains(&id) {
        return Err(KeepAliveRefused::Expiring);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn deadlines_restart_on_activation_and_keep_alive() {
        let timer = LeaseTimer::default();
        let t0 = Instant::now();
        assert_eq!(
            timer.keep_alive(1, t0, || Some(1000)),
            Err(KeepAliveRefused::NotLeader)
        );

        timer.activate(t0, || vec![(1, 1000), (2, 3000)]);
        assert_eq!(
            timer.take_due(t0 + Duration::from_millis(999)).0,
            Vec::<LeaseId>::new()
        );

        // A keep-alive at 900 ms moves lease 1 to 1900 ms.
        assert_eq!(
            timer.keep_alive(1, t0 + Duration::from_millis(900), || Some(1000)),
            Ok(1000)
        );
        assert!(timer
            .take_due(t0 + Duration::from_millis(1500))
            .0
            .is_empty());
        let (due, next) = timer.take_due(t0 + Duration::from_millis(1900));
        assert_eq!(due, vec![1]);
        assert_eq!(next, Some(t0 + Duration::from_millis(3000)));

        // Expiring: not handed out twice, and a keep-alive is told to retry,
        // not that the lease is gone: the entry may yet fail to commit.
        assert!(timer
            .take_due(t0 + Duration::from_millis(1950))
            .0
            .is_empty());
        assert_eq!(
            timer.keep_alive(1, t0 + Duration::from_millis(1950), || Some(1000)),
            Err(KeepAliveRefused::Expiring)
        );
        // A failed proposal is retried.
        timer.unmark(&[1]);
        assert_eq!(timer.take_due(t0 + Duration::from_millis(1960)).0, vec![1]);
        timer.on_ended(1);
        assert_eq!(timer.remaining(1, t0), None);

        // A lease missing from the applied state cannot be kept alive.
        assert_eq!(
            timer.keep_alive(9, t0, || None),
            Err(KeepAliveRefused::NotFound)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_ttl_change_holds_the_lease_then_moves_its_deadline() {
        let timer = LeaseTimer::default();
        let t0 = Instant::now();
        assert_eq!(
            timer.hold(1, t0, Duration::from_secs(5)),
            Err(KeepAliveRefused::NotLeader)
        );
        timer.activate(t0, || vec![(1, 100)]);
        // In flight: the lease outlives its old deadline.
        timer.hold(1, t0, Duration::from_secs(5)).unwrap();
        assert!(timer
            .take_due(t0 + Duration::from_millis(4999))
            .0
            .is_empty());
        // Applied: now + the new TTL, even when that is sooner.
        timer.on_ttl_set(1, 50);
        assert_eq!(timer.remaining(1, t0), Some(Duration::from_millis(50)));
        assert_eq!(timer.take_due(t0 + Duration::from_millis(50)).0, vec![1]);
        // Expiring: a change is refused as retryable, and not applied.
        assert_eq!(
            timer.hold(1, t0, Duration::from_secs(5)),
            Err(KeepAliveRefused::Expiring)
        );
        timer.on_ttl_set(1, 10_000);
        assert_eq!(
            timer.take_due(t0 + Duration::from_secs(1)).0,
            Vec::<LeaseId>::new()
        );
        assert_eq!(timer.remaining(1, t0), Some(Duration::from_millis(50)));
    }

    #[tokio::test(start_paused = true)]
    async fn followers_track_nothing() {
        let timer = LeaseTimer::default();
        timer.on_granted(1, 100);
        assert_eq!(timer.remaining(1, Instant::now()), None);
        timer.activate(Instant::now(), Vec::new);
        timer.on_granted(1, 100);
        assert_eq!(
            timer.remaining(1, Instant::now()),
            Some(Duration::from_millis(100))
        );
        timer.deactivate();
        assert!(timer
            .take_due(Instant::now() + Duration::from_secs(10))
            .0
            .is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn expiry_batches_are_bounded() {
        let timer = LeaseTimer::default();
        let t0 = Instant::now();
        timer.activate(t0, || {
            (1..=(MAX_EXPIRE_BATCH as u64 + 10)).map(|id| (id, 100))
        });
        let (first, next) = timer.take_due(t0 + Duration::from_millis(100));
        assert_eq!(first.len(), MAX_EXPIRE_BATCH);
        assert_eq!(next, Some(t0 + Duration::from_millis(100)));
        let (second, _) = timer.take_due(t0 + Duration::from_millis(100));
        assert_eq!(second.len(), 10);
    }
}
