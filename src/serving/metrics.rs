//! The serving layer's metrics: locks and leases, counted from applied
//! events and set from the applied state at scrape time. They are
//! registered under `raftlock_lock_` and `raftlock_lease_`, beside the
//! replication metrics of `raftlock_raft::NodeMetrics`, and encoded with
//! them into one `/metrics` text.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};
use raftlock_storage::{EndReason, Event};

/// A label set: (name, value) pairs.
type Labels = Vec<(&'static str, String)>;

/// The lock state as the gauges show it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockGauges {
    /// Leases in the applied state.
    pub leases: u64,
    /// Locks with at least one holder.
    pub locks_held: u64,
    /// Holders of all locks.
    pub holders: u64,
    /// Waiters of all locks.
    pub waiters: u64,
    /// Leases past their deadline whose expiry is not applied yet (leader
    /// only; `None` elsewhere).
    pub expiry_backlog: Option<u64>,
}

/// The serving layer's metrics of one node.
pub struct LockMetrics {
    registry: Registry,
    leases: Gauge,
    locks_held: Gauge,
    holders: Gauge,
    waiters: Gauge,
    expiry_backlog: Family<Labels, Gauge>,
    grants: Counter,
    releases: Family<Labels, Counter>,
    lease_grants: Counter,
    lease_ends: Family<Labels, Counter>,
    lock_delays: Counter,
    keep_alives: Counter,
    wait_time: Histogram,
    hold_time: Histogram,
    /// When each current hold began on this node, for the hold-time
    /// histogram; bounded by the number of live holds.
    holds: Mutex<HashMap<(String, String), Instant>>,
}

impl Default for LockMetrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Wait and hold-time buckets: 1 ms to about 9 h, times four.
fn long_durations() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 13))
}

/// A gauge value from a count (gauges are signed).
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl LockMetrics {
    /// A fresh set, registered under `raftlock_`.
    pub fn new() -> Self {
        let mut m = LockMetrics {
            registry: Registry::with_prefix("raftlock"),
            leases: Gauge::default(),
            locks_held: Gauge::default(),
            holders: Gauge::default(),
            waiters: Gauge::default(),
            expiry_backlog: Family::default(),
            grants: Counter::default(),
            releases: Family::default(),
            lease_grants: Counter::default(),
            lease_ends: Family::default(),
            lock_delays: Counter::default(),
            keep_alives: Counter::default(),
            wait_time: long_durations(),
            hold_time: long_durations(),
            holds: Mutex::default(),
        };
        let mut registry = std::mem::take(&mut m.registry);
        m.register(&mut registry);
        m.registry = registry;
        m
    }

    /// The registry these metrics are in, for the node's `/metrics`.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The one list of this layer's names, help texts and units
    /// (docs/operations.md lists the same).
    fn register(&self, r: &mut Registry) {
        let lock = r.sub_registry_with_prefix("lock");
        lock.register(
            "held",
            "Locks with at least one holder",
            self.locks_held.clone(),
        );
        lock.register("holders", "Holders over all locks", self.holders.clone());
        lock.register(
            "waiters",
            "Queued waiters over all locks",
            self.waiters.clone(),
        );
        lock.register(
            "grants",
            "Lock grants applied (immediate and off the queue)",
            self.grants.clone(),
        );
        lock.register(
            "releases",
            "Holds ended, by reason: released, lease_revoked, lease_expired, force_released",
            self.releases.clone(),
        );
        lock.register_with_unit(
            "wait",
            "Time from an Acquire or Campaign reaching this node to its grant",
            Unit::Seconds,
            self.wait_time.clone(),
        );
        lock.register_with_unit(
            "hold",
            "Time a hold lasted, from its grant to its end, as this node applied them",
            Unit::Seconds,
            self.hold_time.clone(),
        );
        lock.register(
            "delays",
            "Lock-delays begun: a lock closed after losing a holder to expiry or force-release",
            self.lock_delays.clone(),
        );
        let lease = r.sub_registry_with_prefix("lease");
        lease.register("live", "Live leases", self.leases.clone());
        lease.register("grants", "Leases granted", self.lease_grants.clone());
        lease.register(
            "ends",
            "Leases ended, by reason: revoked, expired",
            self.lease_ends.clone(),
        );
        lease.register(
            "keepalives",
            "Lease keep-alives answered through this node",
            self.keep_alives.clone(),
        );
        lease.register(
            "expiry_backlog",
            "Leases past their deadline whose expiry is not applied yet (leader only)",
            self.expiry_backlog.clone(),
        );
    }

    /// Counts one applied event.
    pub fn on_event(&self, event: &Event) {
        match event {
            Event::Granted { name, owner, .. } => {
                self.grants.inc();
                self.hold_map()
                    .entry((name.clone(), owner.clone()))
                    .or_insert_with(Instant::now);
            }
            Event::HoldEnded {
                name,
                owner,
                reason,
                ..
            } => {
                self.releases
                    .get_or_create(&vec![("reason", hold_reason(*reason).to_string())])
                    .inc();
                let started = self.hold_map().remove(&(name.clone(), owner.clone()));
                if let Some(started) = started {
                    self.hold_time.observe(started.elapsed().as_secs_f64());
                }
            }
            Event::LeaseGranted { .. } => {
                self.lease_grants.inc();
            }
            Event::LeaseEnded { reason, .. } => {
                let reason = match reason {
                    EndReason::LeaseExpired => "expired",
                    _ => "revoked",
                };
                self.lease_ends
                    .get_or_create(&vec![("reason", reason.to_string())])
                    .inc();
            }
            Event::LockDelayStarted { .. } => {
                self.lock_delays.inc();
            }
            Event::WaitEnded { .. }
            | Event::Changed { .. }
            | Event::LockDelayEnded { .. }
            | Event::LeaseTtlSet { .. } => {}
        }
    }

    /// A snapshot replaced the state: holds from before it are not timed.
    pub fn on_snapshot_installed(&self) {
        self.hold_map().clear();
    }

    /// Sets the gauges of the applied lock state and, on the leader, the
    /// lease timer's expiry backlog (`None` elsewhere, which clears it).
    pub fn set_gauges(&self, gauges: LockGauges) {
        self.leases.set(clamp(gauges.leases));
        self.locks_held.set(clamp(gauges.locks_held));
        self.holders.set(clamp(gauges.holders));
        self.waiters.set(clamp(gauges.waiters));
        self.expiry_backlog.clear();
        if let Some(backlog) = gauges.expiry_backlog {
            self.expiry_backlog
                .get_or_create(&Labels::new())
                .set(clamp(backlog));
        }
    }

    /// One keep-alive answered.
    pub fn on_keep_alive(&self) {
        self.keep_alives.inc();
    }

    /// A grant reached a caller `waited` after its Acquire arrived.
    pub fn on_granted_after(&self, waited: Duration) {
        self.wait_time.observe(waited.as_secs_f64());
    }

    fn hold_map(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Instant>> {
        self.holds.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The `reason` label of a hold that ended.
fn hold_reason(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Released => "released",
        EndReason::LeaseRevoked => "lease_revoked",
        EndReason::LeaseExpired => "lease_expired",
        EndReason::ForceReleased => "force_released",
    }
}

#[cfg(test)]
mod tests;
