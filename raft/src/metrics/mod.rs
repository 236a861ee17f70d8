//! A node's Prometheus metrics: one registry per node (a test process runs
//! several), every name prefixed `raftlock_`, with help text and unit.
//!
//! Counters move where things happen: applied events (every node applies
//! every entry, so each node counts every grant), the proposer (batches),
//! the peer transport (errors), the client-facing request layer, and the
//! task that watches openraft's metrics (elections, leader changes,
//! snapshots). Gauges that describe state (term, indexes, leases, locks,
//! per-peer lag) are set from the node when `/metrics` is scraped, by
//! the replica's `scrape` module. The pure state machine knows none of this.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::transport::bounded_listener::ListenerMetrics;
use raftlock_storage::{EndReason, Event, NodeId};

/// A label set: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;

/// A family of counters keyed by labels.
type Counters = Family<Labels, Counter>;
/// A family of gauges keyed by labels.
type Gauges = Family<Labels, Gauge>;
/// A family of histograms keyed by labels.
type Histograms = Family<Labels, Histogram, fn() -> Histogram>;

/// Latency buckets: 100 µs to about 52 s, doubling.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 20))
}

/// Wait and hold-time buckets: 1 ms to about 9 h, times four.
fn long_durations() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 13))
}

/// The lock state as the gauges show it, counted by the serving layer.
#[derive(Debug, Clone, Copy, Default)]
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
    /// only).
    pub expiry_backlog: Option<u64>,
}

/// A gauge value from a count or index (gauges are signed).
pub(crate) fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Every metric of one node.
pub struct NodeMetrics {
    registry: Registry,
    // Raft, set at scrape time.
    pub(crate) term: Gauge,
    pub(crate) is_leader: Gauge,
    pub(crate) leader_id: Gauge,
    pub(crate) last_log_index: Gauge,
    /// Only on the leader: followers do not know the commit index.
    pub(crate) commit_index: Gauges,
    pub(crate) applied_index: Gauge,
    pub(crate) snapshot_index: Gauge,
    pub(crate) log_entries: Gauge,
    pub(crate) voters: Gauge,
    pub(crate) learners: Gauge,
    // Raft, counted as it happens.
    pub(crate) elections: Counter,
    pub(crate) leader_changes: Counter,
    pub(crate) snapshots_built: Counter,
    pub(crate) snapshots_installed: Counter,
    pub(crate) snapshot_size: Gauge,
    proposals: Counter,
    proposed_entries: Counter,
    requests_per_entry: Histogram,
    log_append: Histogram,
    log_append_entries: Histogram,
    proposal_time: Histogram,
    // Locks and leases, set at scrape time.
    pub(crate) leases: Gauge,
    pub(crate) locks_held: Gauge,
    pub(crate) holders: Gauge,
    pub(crate) waiters: Gauge,
    pub(crate) expiry_backlog: Gauges,
    // Locks and leases, counted from applied events.
    grants: Counter,
    releases: Counters,
    lease_grants: Counter,
    lease_ends: Counters,
    lock_delays: Counter,
    keep_alives: Counter,
    wait_time: Histogram,
    hold_time: Histogram,
    // Client requests.
    requests: Counters,
    request_time: Histograms,
    // Peers.
    pub(crate) peer_lag: Gauges,
    peer_errors: Counters,
    peer_append_time: Histograms,
    append_served_time: Histogram,
    // Connections, per listener ("client", "peer").
    connections_open: Gauges,
    connections_refused: Counters,
    connections_timed_out: Counters,
    /// When each current hold began on this node, for the hold-time
    /// histogram; bounded by the number of live holds.
    holds: Mutex<HashMap<(String, String), Instant>>,
    /// Snapshots installed so far, so the Raft watcher can tell a built
    /// snapshot from an installed one.
    pub(crate) installs_seen: AtomicU64,
}

impl Default for NodeMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl NodeMetrics {
    /// A fresh set of metrics, registered under `raftlock_`.
    pub fn new() -> Self {
        let mut r = Registry::with_prefix("raftlock");
        let m = NodeMetrics {
            registry: Registry::default(),
            term: Gauge::default(),
            is_leader: Gauge::default(),
            leader_id: Gauge::default(),
            last_log_index: Gauge::default(),
            commit_index: Gauges::default(),
            applied_index: Gauge::default(),
            snapshot_index: Gauge::default(),
            log_entries: Gauge::default(),
            voters: Gauge::default(),
            learners: Gauge::default(),
            elections: Counter::default(),
            leader_changes: Counter::default(),
            snapshots_built: Counter::default(),
            snapshots_installed: Counter::default(),
            snapshot_size: Gauge::default(),
            proposals: Counter::default(),
            proposed_entries: Counter::default(),
            requests_per_entry: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            log_append: latency(),
            log_append_entries: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            proposal_time: latency(),
            leases: Gauge::default(),
            locks_held: Gauge::default(),
            holders: Gauge::default(),
            waiters: Gauge::default(),
            expiry_backlog: Gauges::default(),
            grants: Counter::default(),
            releases: Counters::default(),
            lease_grants: Counter::default(),
            lock_delays: Counter::default(),
            lease_ends: Counters::default(),
            keep_alives: Counter::default(),
            wait_time: long_durations(),
            hold_time: long_durations(),
            requests: Counters::default(),
            request_time: Histograms::new_with_constructor(latency),
            peer_lag: Gauges::default(),
            peer_errors: Counters::default(),
            peer_append_time: Histograms::new_with_constructor(latency),
            append_served_time: latency(),
            connections_open: Gauges::default(),
            connections_refused: Counters::default(),
            connections_timed_out: Counters::default(),
            holds: Mutex::default(),
            installs_seen: AtomicU64::new(0),
        };
        m.register(&mut r);
        NodeMetrics { registry: r, ..m }
    }

    /// The metrics in the Prometheus (OpenMetrics) text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
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
        self.snapshots_installed.inc();
        self.installs_seen.fetch_add(1, Ordering::Relaxed);
        self.hold_map().clear();
    }

    /// One proposed entry carrying `writes` client writes.
    pub fn on_proposed(&self, writes: usize) {
        self.proposals.inc_by(writes as u64);
        self.proposed_entries.inc();
        self.requests_per_entry.observe(writes as f64);
    }

    /// A proposed entry was applied on this leader `took` after it was
    /// proposed.
    pub fn on_proposal_applied(&self, took: Duration) {
        self.proposal_time.observe(took.as_secs_f64());
    }

    /// An AppendEntries RPC carrying entries to `peer` was answered `took`
    /// after it was sent.
    pub fn on_peer_append(&self, peer: NodeId, took: Duration) {
        self.peer_append_time
            .get_or_create(&vec![("peer", peer.to_string())])
            .observe(took.as_secs_f64());
    }

    /// This node answered an AppendEntries RPC carrying entries `took`
    /// after it arrived.
    pub fn on_append_served(&self, took: Duration) {
        self.append_served_time.observe(took.as_secs_f64());
    }

    /// One log append of `entries` entries, written and synced in `took`.
    pub fn on_log_append(&self, entries: usize, took: Duration) {
        self.log_append.observe(took.as_secs_f64());
        self.log_append_entries.observe(entries as f64);
    }

    /// Sets the gauges of the applied lock state and, on the leader, the
    /// lease timer's expiry backlog (`None` elsewhere, which clears it).
    /// The serving layer calls this just before a scrape.
    pub fn set_lock_gauges(&self, gauges: LockGauges) {
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

    /// A Raft RPC to `peer` failed.
    pub fn on_peer_error(&self, peer: NodeId, rpc: &'static str) {
        self.peer_errors
            .get_or_create(&vec![("peer", peer.to_string()), ("rpc", rpc.to_string())])
            .inc();
    }

    /// The metrics a listener named `listener` ("client", "peer") reports
    /// its connections to.
    pub fn listener(&self, listener: &'static str) -> ListenerMetrics {
        let of = |reason: Option<&str>| {
            let mut labels: Labels = vec![("listener", listener.to_string())];
            if let Some(r) = reason {
                labels.push(("reason", r.to_string()));
            }
            labels
        };
        // One statement each: `get_or_create` holds the family's lock until
        // its guard drops, and a second call in the same expression would
        // wait for it for ever.
        let open = self.connections_open.get_or_create(&of(None)).clone();
        let refused_full = self
            .connections_refused
            .get_or_create(&of(Some("full")))
            .clone();
        let refused_per_ip = self
            .connections_refused
            .get_or_create(&of(Some("per_ip")))
            .clone();
        let timed_out = self.connections_timed_out.get_or_create(&of(None)).clone();
        ListenerMetrics {
            open,
            refused_full,
            refused_per_ip,
            timed_out,
        }
    }

    /// One client API call: `rpc` as `Service/Method`, its gRPC status
    /// code, and how long it took.
    pub fn on_request(&self, rpc: &str, code: &str, took: Duration) {
        let labels = vec![("rpc", rpc.to_string()), ("code", code.to_string())];
        self.requests.get_or_create(&labels).inc();
        self.request_time
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
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

mod register;
#[cfg(test)]
mod tests;
