//! Lock-delay deadlines, tracked by the leader alone on a monotonic clock,
//! like lease deadlines (see `lease_timer`).
//!
//! A lock that lost a holder to expiry or force-release stays closed for
//! its delay (`LockDelay` in the state). The leader counts the delay from
//! when it learns of it — at apply, or at becoming leader for delays begun
//! under an earlier leader, which then run whole again (never shorter) — and
//! proposes `EndLockDelay` when it has passed. Followers keep nothing here.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// One delay: the lock's name and the slot that started it.
pub type DelayKey = (String, u64);

#[derive(Default)]
struct Deadlines {
    /// Only the leader tracks deadlines.
    active: bool,
    /// Deadline and start slot of the delay in force, by lock name.
    by_name: HashMap<String, (Instant, u64)>,
    /// The same, soonest first.
    queue: BTreeSet<(Instant, String, u64)>,
}

impl Deadlines {
    fn set(&mut self, name: String, since: u64, ms: u64, now: Instant) {
        self.remove(&name);
        let deadline = now + Duration::from_millis(ms);
        self.queue.insert((deadline, name.clone(), since));
        self.by_name.insert(name, (deadline, since));
    }

    fn remove(&mut self, name: &str) {
        if let Some((deadline, since)) = self.by_name.remove(name) {
            self.queue.remove(&(deadline, name.to_owned(), since));
        }
    }
}

/// The leader's lock-delay deadlines. Cheap to clone; clones share state.
#[derive(Clone, Default)]
pub struct LockDelayTimer {
    inner: Arc<Mutex<Deadlines>>,
    wake: Arc<Notify>,
}

impl LockDelayTimer {
    fn lock(&self) -> std::sync::MutexGuard<'_, Deadlines> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts tracking as leader: every delay `delays` yields (name, since,
    /// ms) runs whole from `now`. `delays` is read under the timer's lock,
    /// so a delay applied concurrently is in it or arrives later through
    /// [`on_started`](Self::on_started).
    pub fn activate<I>(&self, now: Instant, delays: impl FnOnce() -> I)
    where
        I: IntoIterator<Item = (String, u64, u64)>,
    {
        let mut d = self.lock();
        *d = Deadlines {
            active: true,
            ..Deadlines::default()
        };
        for (name, since, ms) in delays() {
            d.set(name, since, ms, now);
        }
        drop(d);
        self.wake.notify_one();
    }

    /// Stops tracking (this node is no longer leader).
    pub fn deactivate(&self) {
        *self.lock() = Deadlines::default();
    }

    /// A delay began (or replaced the one in force on `name`).
    pub fn on_started(&self, name: String, since: u64, ms: u64) {
        let mut d = self.lock();
        if d.active {
            d.set(name, since, ms, Instant::now());
            drop(d);
            self.wake.notify_one();
        }
    }

    /// The delay `since` on `name` ended.
    pub fn on_ended(&self, name: &str, since: u64) {
        let mut d = self.lock();
        if d.by_name.get(name).is_some_and(|(_, s)| *s == since) {
            d.remove(name);
        }
    }

    /// Delays whose deadline has passed (still tracked until their end is
    /// applied) and the next deadline still ahead.
    pub fn due(&self, now: Instant) -> (Vec<DelayKey>, Option<Instant>) {
        let d = self.lock();
        let mut due = Vec::new();
        for (deadline, name, since) in &d.queue {
            if *deadline > now {
                return (due, Some(*deadline));
            }
            due.push((name.clone(), *since));
        }
        (due, None)
    }

    /// Waits until `deadline` or until a new deadline may be sooner.
    pub async fn sleep_until(&self, deadline: Option<Instant>) {
        let far = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)) => {}
            _ = self.wake.notified() => {}
        }
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
