//! The deadline queue a leader alone keeps, on a monotonic clock: one
//! deadline per key, soonest first, cleared when leadership comes or goes,
//! and a wake-up for the task that sleeps until the next deadline. The
//! lease timer and the lock-delay timer are this queue with their own
//! rules on top.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// One deadline and a value (a TTL, a start slot) per key.
#[derive(Debug)]
pub struct Deadlines<K, V> {
    /// Only the leader tracks deadlines.
    active: bool,
    by_key: HashMap<K, (Instant, V)>,
    /// The same deadlines, soonest first.
    queue: BTreeSet<(Instant, K)>,
}

impl<K, V> Default for Deadlines<K, V> {
    fn default() -> Self {
        Deadlines {
            active: false,
            by_key: HashMap::new(),
            queue: BTreeSet::new(),
        }
    }
}

impl<K: Clone + Eq + Hash + Ord, V> Deadlines<K, V> {
    /// An empty queue of a node that has just become leader.
    pub fn of_leader() -> Self {
        Deadlines {
            active: true,
            ..Deadlines::default()
        }
    }

    /// Whether this node tracks as leader.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// `key` is due at `deadline`, replacing its earlier deadline.
    pub fn set(&mut self, key: K, value: V, deadline: Instant) {
        self.remove(&key);
        self.queue.insert((deadline, key.clone()));
        self.by_key.insert(key, (deadline, value));
    }

    /// Forgets `key`; its deadline and value if it was tracked.
    pub fn remove(&mut self, key: &K) -> Option<(Instant, V)> {
        let (deadline, value) = self.by_key.remove(key)?;
        self.queue.remove(&(deadline, key.clone()));
        Some((deadline, value))
    }

    /// `key`'s deadline and value, if tracked.
    pub fn get(&self, key: &K) -> Option<&(Instant, V)> {
        self.by_key.get(key)
    }

    /// Every tracked key with its deadline and value, soonest first.
    pub fn soonest_first(&self) -> impl Iterator<Item = (Instant, &K, &V)> {
        self.queue
            .iter()
            .filter_map(|(deadline, key)| Some((*deadline, key, &self.by_key.get(key)?.1)))
    }
}

/// A leader's queue `S` (a [`Deadlines`] with a timer's own state around
/// it), shared by the node's tasks. Cheap to clone; clones share state.
#[derive(Debug)]
pub struct LeaderQueue<S> {
    state: Arc<Mutex<S>>,
    wake: Arc<Notify>,
}

impl<S> Clone for LeaderQueue<S> {
    fn clone(&self) -> Self {
        LeaderQueue {
            state: self.state.clone(),
            wake: self.wake.clone(),
        }
    }
}

impl<S: Default> Default for LeaderQueue<S> {
    fn default() -> Self {
        LeaderQueue {
            state: Arc::default(),
            wake: Arc::default(),
        }
    }
}

impl<S> LeaderQueue<S> {
    /// The queue, locked (a panic elsewhere does not poison it: every
    /// change leaves it whole).
    pub fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells the sleeping task that a deadline may now be sooner.
    pub fn wake(&self) {
        self.wake.notify_one();
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
    async fn keys_are_kept_soonest_first_and_replaced_whole() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut d = Deadlines::<&str, u64>::of_leader();
        assert!(d.is_active() && !Deadlines::<&str, u64>::default().is_active());
        d.set("b", 2, at(200));
        d.set("a", 1, at(300));
        d.set("a", 9, at(100)); // replaces a's deadline and value
        let order: Vec<_> = d.soonest_first().map(|(t, k, v)| (t, *k, *v)).collect();
        assert_eq!(order, vec![(at(100), "a", 9), (at(200), "b", 2)]);
        assert_eq!(d.get(&"a"), Some(&(at(100), 9)));
        assert_eq!(d.remove(&"a"), Some((at(100), 9)));
        assert_eq!(d.remove(&"a"), None);
        assert_eq!(d.soonest_first().count(), 1);
    }
}
