//! A node's Prometheus metrics: one registry per node (a test process runs
//! several), every name prefixed `raftlock_`, with help text and unit.
//!
//! Counters move where things happen: the proposer (batches), the log
//! store (appends), the peer transport (errors), the client-facing request
//! layer and listeners, and the task that watches openraft's metrics
//! (elections, leader changes, snapshots). Gauges that describe state
//! (term, indexes, members, per-peer lag) are set when `/metrics` is
//! scraped, by the replica's `scrape` module. Locks and leases are the
//! serving layer's to count (`raftlock::serving::metrics`); its registry is
//! encoded with this one ([`NodeMetrics::encode_with`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::transport::bounded_listener::ListenerMetrics;
use raftlock_storage::NodeId;

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
    // Client requests.
    requests: Counters,
    request_time: Histograms,
    // Peers.
    pub(crate) peer_lag: Gauges,
    peer_errors: Counters,
    peer_refused: Counters,
    peer_append_time: Histograms,
    append_served_time: Histogram,
    // Connections, per listener ("client", "peer").
    connections_open: Gauges,
    connections_refused: Counters,
    connections_timed_out: Counters,
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
            requests: Counters::default(),
            request_time: Histograms::new_with_constructor(latency),
            peer_lag: Gauges::default(),
            peer_errors: Counters::default(),
            peer_refused: Counters::default(),
            peer_append_time: Histograms::new_with_constructor(latency),
            append_served_time: latency(),
            connections_open: Gauges::default(),
            connections_refused: Counters::default(),
            connections_timed_out: Counters::default(),
            installs_seen: AtomicU64::new(0),
        };
        m.register(&mut r);
        NodeMetrics { registry: r, ..m }
    }

    /// The metrics in the Prometheus (OpenMetrics) text format.
    pub fn encode(&self) -> String {
        self.encode_with(&Registry::default())
    }

    /// These metrics and those of `layer_above` (registered by the layer
    /// that serves clients), as one text in the Prometheus (OpenMetrics)
    /// format.
    pub fn encode_with(&self, layer_above: &Registry) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, layer_above);
        let _ = encode_eof(&mut out);
        out
    }

    /// A snapshot replaced the state.
    pub fn on_snapshot_installed(&self) {
        self.snapshots_installed.inc();
        self.installs_seen.fetch_add(1, Ordering::Relaxed);
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

    /// A Raft RPC to `peer` failed.
    pub fn on_peer_error(&self, peer: NodeId, rpc: &'static str) {
        self.peer_errors
            .get_or_create(&vec![("peer", peer.to_string()), ("rpc", rpc.to_string())])
            .inc();
    }

    /// The counter of peer messages this node refuses, by reason, for its
    /// peer guard.
    pub fn peer_refusals(&self) -> PeerRefusals {
        PeerRefusals(self.peer_refused.clone())
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
}

/// Counts refused peer messages by reason (`raftlock_peer_refused_total`);
/// a clone counts into the same family.
#[derive(Clone, Debug, Default)]
pub struct PeerRefusals(Counters);

impl PeerRefusals {
    /// One peer message refused for `reason` (one of the guard's fixed
    /// reasons, so the label set stays small).
    pub fn inc(&self, reason: &'static str) {
        self.0
            .get_or_create(&vec![("reason", reason.to_string())])
            .inc();
    }
}

mod register;
#[cfg(test)]
mod tests;
