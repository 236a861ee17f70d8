//! Routes what the state machine applied to whoever is waiting for it: a
//! caller blocked in Acquire or Campaign, the leader's lease timer, and
//! election observers.
//!
//! Every node applies every entry, so a caller waits on the node it is
//! connected to, leader or not: the grant reaches it as soon as that node
//! applies the entry that made it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{broadcast, mpsc};

use raftlock_storage::{Applied, EndReason, Event, Fence};

use super::metrics::LockMetrics;

use super::lease_timer::LeaseTimer;
use super::lock_delay_timer::LockDelayTimer;

/// What a registered (name, owner) pair is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// The owner was granted the lock; the waiter reads the hold (and its
    /// token) from the applied state, so the signal carries nothing.
    Granted,
    /// The owner's wait ended without a grant.
    WaitEnded(EndReason),
    /// The owner's hold ended.
    HoldEnded { fence: Fence, reason: EndReason },
    /// The state was replaced by a snapshot: re-read it.
    Recheck,
}

type Key = (String, String);

#[derive(Default)]
struct Registry {
    next_id: u64,
    by_key: HashMap<Key, Vec<(u64, mpsc::UnboundedSender<Signal>)>>,
}

/// Callers waiting on (lock name, owner) pairs.
#[derive(Clone, Default)]
pub struct Waiters {
    inner: Arc<Mutex<Registry>>,
}

/// A registration; dropping it unregisters.
pub struct Watch {
    key: Key,
    id: u64,
    rx: mpsc::UnboundedReceiver<Signal>,
    registry: Waiters,
}

impl Watch {
    /// The next signal. `None` only if the router stopped (node shutdown).
    pub async fn recv(&mut self) -> Option<Signal> {
        self.rx.recv().await
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut reg = self.registry.lock();
        if let Some(list) = reg.by_key.get_mut(&self.key) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                reg.by_key.remove(&self.key);
            }
        }
    }
}

impl Waiters {
    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts listening for `owner`'s signals on `name`. Register before
    /// proposing the request so no signal is missed.
    pub fn watch(&self, name: &str, owner: &str) -> Watch {
        let (tx, rx) = mpsc::unbounded_channel();
        let key = (name.to_string(), owner.to_string());
        let mut reg = self.lock();
        reg.next_id += 1;
        let id = reg.next_id;
        reg.by_key.entry(key.clone()).or_default().push((id, tx));
        Watch {
            key,
            id,
            rx,
            registry: self.clone(),
        }
    }

    fn send(&self, name: &str, owner: &str, signal: Signal) {
        let reg = self.lock();
        if let Some(list) = reg.by_key.get(&(name.to_string(), owner.to_string())) {
            for (_, tx) in list {
                let _ = tx.send(signal.clone());
            }
        }
    }

    fn broadcast(&self, signal: Signal) {
        let reg = self.lock();
        for list in reg.by_key.values() {
            for (_, tx) in list {
                let _ = tx.send(signal.clone());
            }
        }
    }

    /// Number of registrations (for tests and metrics).
    pub fn len(&self) -> usize {
        self.lock().by_key.values().map(Vec::len).sum()
    }

    /// Whether nobody is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Consumes the state machine's [`Applied`] stream until it closes.
pub async fn route_events(
    mut rx: mpsc::UnboundedReceiver<Applied>,
    waiters: Waiters,
    timers: (LeaseTimer, LockDelayTimer),
    changed: broadcast::Sender<String>,
    metrics: Arc<LockMetrics>,
) {
    while let Some(applied) = rx.recv().await {
        match applied {
            Applied::Snapshot { .. } => {
                metrics.on_snapshot_installed();
                waiters.broadcast(Signal::Recheck);
                // Observers re-read every name they watch.
                let _ = changed.send(String::new());
            }
            Applied::Entry { events, .. } => {
                for event in events {
                    metrics.on_event(&event);
                    route(event, &waiters, &timers, &changed);
                }
            }
        }
    }
}

fn route(
    event: Event,
    waiters: &Waiters,
    (timer, delays): &(LeaseTimer, LockDelayTimer),
    changed: &broadcast::Sender<String>,
) {
    match event {
        Event::Granted { name, owner, .. } => waiters.send(&name, &owner, Signal::Granted),
        Event::WaitEnded {
            name,
            owner,
            reason,
        } => waiters.send(&name, &owner, Signal::WaitEnded(reason)),
        Event::HoldEnded {
            name,
            owner,
            fence,
            reason,
        } => waiters.send(&name, &owner, Signal::HoldEnded { fence, reason }),
        Event::Changed { name } => {
            let _ = changed.send(name);
        }
        Event::LeaseGranted { id, ttl_ms } => timer.on_granted(id, ttl_ms),
        Event::LeaseEnded { id, .. } => timer.on_ended(id),
        Event::LeaseTtlSet { id, ttl_ms } => timer.on_ttl_set(id, ttl_ms),
        Event::LockDelayStarted { name, since, ms } => delays.on_started(name, since, ms),
        Event::LockDelayEnded { name, since } => delays.on_ended(&name, since),
    }
}
