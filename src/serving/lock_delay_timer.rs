//! Lock-delay deadlines, tracked by the leader alone on a monotonic clock,
//! like lease deadlines (see `lease_timer`).
//!
//! A lock that lost a holder to expiry or force-release stays closed for
//! its delay (`LockDelay` in the state). The leader counts the delay from
//! when it learns of it — at apply, or at becoming leader for delays begun
//! under an earlier leader, which then run whole again (never shorter) — and
//! proposes `EndLockDelay` when it has passed. Followers keep nothing here.

use std::time::Duration;

use tokio::time::Instant;

use super::deadline_queue::{Deadlines, LeaderQueue};

/// One delay: the lock's name and the slot that started it.
pub type DelayKey = (String, u64);

/// The deadline and start slot of the delay in force, by lock name.
type Delays = Deadlines<String, u64>;

/// The leader's lock-delay deadlines. Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct LockDelayTimer {
    queue: LeaderQueue<Delays>,
}

impl LockDelayTimer {
    /// Starts tracking as leader: every delay `delays` yields (name, since,
    /// ms) runs whole from `now`. `delays` is read under the timer's lock,
    /// so a delay applied concurrently is in it or arrives later through
    /// [`on_started`](Self::on_started).
    pub fn activate<I>(&self, now: Instant, delays: impl FnOnce() -> I)
    where
        I: IntoIterator<Item = (String, u64, u64)>,
    {
        let mut d = self.queue.lock();
        *d = Delays::of_leader();
        for (name, since, ms) in delays() {
            d.set(name, since, now + Duration::from_millis(ms));
        }
        drop(d);
        self.queue.wake();
    }

    /// Stops tracking (this node is no longer leader).
    pub fn deactivate(&self) {
        *self.queue.lock() = Delays::default();
    }

    /// A delay began (or replaced the one in force on `name`).
    pub fn on_started(&self, name: String, since: u64, ms: u64) {
        let mut d = self.queue.lock();
        if d.is_active() {
            d.set(name, since, Instant::now() + Duration::from_millis(ms));
            drop(d);
            self.queue.wake();
        }
    }

    /// The delay `since` on `name` ended.
    pub fn on_ended(&self, name: &str, since: u64) {
        let mut d = self.queue.lock();
        let name = name.to_owned();
        if d.get(&name).is_some_and(|(_, s)| *s == since) {
            d.remove(&name);
        }
    }

    /// Delays whose deadline has passed (still tracked until their end is
    /// applied) and the next deadline still ahead.
    pub fn due(&self, now: Instant) -> (Vec<DelayKey>, Option<Instant>) {
        let d = self.queue.lock();
        let mut due = Vec::new();
        for (deadline, name, since) in d.soonest_first() {
            if deadline > now {
                return (due, Some(deadline));
            }
            due.push((name.clone(), *since));
        }
        (due, None)
    }

    /// Waits until `deadline` or until a new deadline may be sooner.
    pub async fn sleep_until(&self, deadline: Option<Instant>) {
        self.queue.sleep_until(deadline).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_new_leader_runs_every_delay_whole_and_followers_track_nothing() {
        let timer = LockDelayTimer::default();
        timer.on_started("a".into(), 7, 1_000);
        assert_eq!(timer.due(Instant::now() + Duration::from_secs(9)).0, vec![]);

        let t0 = Instant::now();
        timer.activate(t0, || vec![("a".to_string(), 7, 1_000)]);
        timer.on_started("b".into(), 9, 3_000);
        let (due, next) = timer.due(t0 + Duration::from_millis(999));
        assert!(due.is_empty());
        assert_eq!(next, Some(t0 + Duration::from_millis(1_000)));
        assert_eq!(
            timer.due(t0 + Duration::from_millis(1_000)).0,
            vec![("a".to_string(), 7)]
        );
        // A stale end leaves the delay in force alone; the right one ends it.
        timer.on_ended("a", 6);
        assert_eq!(timer.due(t0 + Duration::from_secs(1)).0.len(), 1);
        timer.on_ended("a", 7);
        assert!(timer.due(t0 + Duration::from_secs(1)).0.is_empty());
        // A delay restarted on the same lock replaces the earlier one.
        timer.on_started("b".into(), 12, 500);
        let (due, _) = timer.due(Instant::now() + Duration::from_millis(500));
        assert_eq!(due, vec![("b".to_string(), 12)]);

        timer.deactivate();
        assert!(timer.due(t0 + Duration::from_secs(60)).0.is_empty());
    }
}
