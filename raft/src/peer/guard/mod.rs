//! Who may speak Raft to this node: the envelope every peer message carries
//! (cluster id, sender, receiver, the sender's boot count and incarnation),
//! sealed on the way out and checked on the way in before openraft sees
//! anything.
//!
//! Checking and recording are two steps: [`PeerGuard::admit`] only checks,
//! and [`PeerGuard::record`] (called once the message's contents passed
//! their own checks too) learns the cluster id and notes the sender's boot
//! and incarnation. A message refused for any reason changes nothing here.
//!
//! The checks catch a message for another cluster or another node, a node
//! id claimed by two live processes at once (a copied data dir started as
//! a second member), and a node that comes back with an older copy of its
//! data dir. They are not authentication: that is the cluster secret's
//! tag on every message ([`crate::peer::auth`], checked here before anything
//! else) or mTLS (a certificate that names the sender); with `--insecure`
//! a forger who knows the cluster id and a silent member's id passes
//! them. See docs/security.md.
//!
//! # Layout
//! - this file: the guard, its settings and the cluster id it learns.
//! - `seal`: the envelope on the way out, tagged.
//! - `admission`: the checks on the way in, of requests and of replies.
//! - `speakers`: per node id, the process that last spoke, and the rules
//!   a new one must pass.
//! - `refusal_log`: refusals counted and logged, rate-limited.

use std::sync::RwLock;
use std::time::{Duration, Instant};

use uuid::Uuid;

use raftlock_storage::{LogStore, NodeId};

use crate::error::Source;
use crate::metrics::PeerRefusals;
use crate::peer::auth::ClusterKey;

pub use crate::error::refusal::{Malformed, Refusal, SeenProcess, Unauthenticated};
use refusal_log::RefusalLog;
use speakers::Speakers;

/// Most senders remembered: far above any cluster's size, so the table
/// cannot be grown by made-up ids while the membership is still unknown.
const MAX_SENDERS: usize = 1024;

/// Highest boot count a sender may claim. A data dir's count rises by one
/// per start: 2^32 starts, one a second, take 136 years. A higher count is
/// forged, and recording it would make every real message of that node look
/// like one from an older data dir, for good.
pub const MAX_BOOT: u64 = 1 << 32;

/// How far above the boot count last seen from a node its next one may be.
/// A node restarts once per start; this many starts while this node kept
/// running (one a second for 18 hours, or months of a crash loop under a
/// service manager's back-off) is not a restart but a forgery.
pub const MAX_BOOT_STEP: u64 = 1 << 16;

/// A checked envelope: who sent the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    pub id: NodeId,
    pub boot: u64,
    pub incarnation: Uuid,
}

/// This node's side of the envelope.
pub struct PeerGuard {
    id: NodeId,
    boot: u64,
    incarnation: Uuid,
    /// The cluster this node belongs to; `None` until it initializes one
    /// or hears from a member of one.
    cluster: RwLock<Option<Uuid>>,
    /// Records a cluster id learnt from a peer, before it is relied on.
    /// `None` for guards in unit tests.
    log: Option<LogStore>,
    /// Serializes learning the cluster id.
    adopting: tokio::sync::Mutex<()>,
    /// Per node id, the process that last sent this node a request.
    speakers: Speakers,
    /// Logs refusals (rate-limited) and counts them by reason.
    refusals: RefusalLog,
    /// The cluster secret every message is tagged with; `None` with mTLS
    /// or `--insecure`.
    key: Option<ClusterKey>,
}

impl PeerGuard {
    /// The guard of node `id` on a data dir started `boot` times. `log`
    /// records a learnt cluster id; `alive_for` is how long after its last
    /// request a process counts as alive (a few election timeouts).
    pub fn new(id: NodeId, boot: u64, log: Option<LogStore>, alive_for: Duration) -> Self {
        Self::with_key(id, boot, log, alive_for, None)
    }

    /// [`PeerGuard::new`], tagging and checking every message with `key`.
    pub fn with_key(
        id: NodeId,
        boot: u64,
        log: Option<LogStore>,
        alive_for: Duration,
        key: Option<ClusterKey>,
    ) -> Self {
        let cluster = log.as_ref().and_then(|l| l.cluster_id());
        Self {
            id,
            boot,
            incarnation: Uuid::new_v4(),
            cluster: RwLock::new(cluster),
            log,
            adopting: tokio::sync::Mutex::new(()),
            speakers: Speakers::new(alive_for),
            refusals: RefusalLog::new(id, PeerRefusals::default()),
            key,
        }
    }

    /// The same guard, counting its refusals into `counters` (the node's
    /// `raftlock_peer_refused_total`).
    pub fn counting_refusals(mut self, counters: PeerRefusals) -> Self {
        self.refusals = RefusalLog::new(self.id, counters);
        self
    }

    /// The cluster secret, if messages are tagged with one.
    pub fn key(&self) -> Option<&ClusterKey> {
        self.key.as_ref()
    }

    /// The cluster id, if known.
    pub fn cluster_id(&self) -> Option<Uuid> {
        *self.cluster.read().unwrap_or_else(|e| e.into_inner())
    }

    /// This process's incarnation.
    pub fn incarnation(&self) -> Uuid {
        self.incarnation
    }

    /// Makes a new cluster's id (the initializing node does, once).
    pub async fn create_cluster_id(&self) -> Result<Uuid, Refusal> {
        if let Some(id) = self.cluster_id() {
            return Ok(id);
        }
        self.adopt(Uuid::new_v4()).await
    }

    /// This process's boot count.
    pub fn boot(&self) -> u64 {
        self.boot
    }

    async fn adopt(&self, cluster: Uuid) -> Result<Uuid, Refusal> {
        let _one_at_a_time = self.adopting.lock().await;
        if let Some(ours) = self.cluster_id() {
            if ours == cluster {
                return Ok(ours);
            }
            return Err(Refusal::ForeignCluster {
                ours: ours.to_string(),
                theirs: cluster.to_string(),
            });
        }
        if let Some(log) = &self.log {
            log.record_cluster_id(cluster)
                .await
                .map_err(|e| Refusal::Storage(Source::new(e)))?;
        }
        *self.cluster.write().unwrap_or_else(|e| e.into_inner()) = Some(cluster);
        tracing::info!(node = self.id, cluster = %cluster, "cluster id recorded");
        Ok(cluster)
    }

    /// Counts and logs `refusal` (rate-limited: see [`refusal_log`]) and
    /// returns it.
    fn refused<T>(&self, from: NodeId, kind: &'static str, refusal: Refusal) -> Result<T, Refusal> {
        self.note_refused(from, kind, &refusal);
        Err(refusal)
    }

    /// Counts and logs (rate-limited) a message from `from` that the peer
    /// service refused for `kind` beyond the envelope: a certificate that
    /// names another node (`certificate`), contents that fail their checks
    /// (`content`).
    pub fn note_refused(&self, from: NodeId, kind: &'static str, refusal: &Refusal) {
        self.refusals.refused(from, kind, refusal, Instant::now());
    }
}

mod admission;
mod refusal_log;
mod seal;
mod speakers;
#[cfg(test)]
mod tests;
