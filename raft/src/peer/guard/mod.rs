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

use std::net::SocketAddr;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use uuid::Uuid;

use raftlock_storage::{LogStore, NodeId};

use crate::clock::wall_clock_ms;
use crate::error::Source;
use crate::metrics::PeerRefusals;
use crate::pb::Blob;
use crate::peer::auth::{ClusterKey, Direction, REPLAY_WINDOW};

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

    /// The answer to an identify request (already authenticated): who this
    /// node is, without the incarnation (which stays between members).
    pub fn identify(&self, data: Vec<u8>, request: &Blob) -> Blob {
        let mut reply = Blob {
            incarnation: Uuid::nil().as_bytes().to_vec(),
            ..self.envelope(0, data)
        };
        self.tag(&mut reply, "identify", Direction::Reply, &request.mac);
        reply
    }

    /// Wraps `data` as a request on `rpc` for node `to`, tagged.
    pub fn seal(&self, rpc: &str, to: NodeId, data: Vec<u8>) -> Blob {
        let mut blob = self.envelope(to, data);
        self.tag(&mut blob, rpc, Direction::Request, &[]);
        blob
    }

    /// Wraps `data` as the reply on `rpc` to `request` from node `to`,
    /// tagged and bound to the request's tag.
    pub fn seal_reply(&self, rpc: &str, to: NodeId, data: Vec<u8>, request: &Blob) -> Blob {
        let mut blob = self.envelope(to, data);
        self.tag(&mut blob, rpc, Direction::Reply, &request.mac);
        blob
    }

    fn envelope(&self, to: NodeId, data: Vec<u8>) -> Blob {
        Blob {
            data,
            cluster_id: self.cluster_id().map(|c| c.to_string()).unwrap_or_default(),
            from: self.id,
            to,
            boot: self.boot,
            incarnation: self.incarnation.as_bytes().to_vec(),
            mac: Vec::new(),
            sent_at_ms: wall_clock_ms(),
        }
    }

    fn tag(&self, blob: &mut Blob, rpc: &str, direction: Direction, bound: &[u8]) {
        if let Some(key) = &self.key {
            blob.mac = key.tag(rpc, direction, blob, bound);
        }
    }

    /// Checks a request's tag and sending time, before anything else is
    /// read from it. Without a secret (mTLS or `--insecure`) there is
    /// nothing to check.
    pub fn authenticate(&self, rpc: &str, blob: &Blob) -> Result<(), Refusal> {
        let Some(key) = &self.key else {
            return Ok(());
        };
        let from = blob.from;
        if blob.mac.is_empty() {
            let why = Unauthenticated::NoTag;
            return self.refused(from, "auth", Refusal::Unauthenticated(why));
        }
        if !key.verify(rpc, Direction::Request, blob, &[]) {
            let why = Unauthenticated::TagMismatch;
            return self.refused(from, "auth", Refusal::Unauthenticated(why));
        }
        let skew = wall_clock_ms().abs_diff(blob.sent_at_ms);
        if skew > REPLAY_WINDOW.as_millis() as u64 {
            let why = Unauthenticated::Replay {
                skew: Duration::from_millis(skew),
                window: REPLAY_WINDOW,
            };
            return self.refused(from, "replay", Refusal::Unauthenticated(why));
        }
        Ok(())
    }

    /// Checks an inbound request: for this cluster and this node, from a
    /// member (`is_member`; `None` while this node knows no membership),
    /// and not from a second process claiming the sender's id, from one
    /// that went back to an older data dir, or with an implausible boot
    /// count. Records nothing: once the message's contents passed their
    /// checks too, [`PeerGuard::record`] does.
    pub async fn admit(
        &self,
        blob: &Blob,
        remote: Option<SocketAddr>,
        is_member: Option<bool>,
    ) -> Result<Sender, Refusal> {
        let sender = self.check_addressing(blob)?;
        self.check_cluster(blob)?;
        if is_member == Some(false) {
            return self.refused(sender.id, "member", Refusal::NotMember { from: sender.id });
        }
        match self.speakers.judge(sender, remote, Instant::now()) {
            Ok(_) => Ok(sender),
            Err((kind, refusal)) => self.refused(sender.id, kind, refusal),
        }
    }

    /// Records a request [`PeerGuard::admit`] admitted and whose contents
    /// passed every check: learns the cluster id from it if this node has
    /// none, and notes the sender's process. Judges the sender again first,
    /// and once more under the table's lock as it records, so of two
    /// messages racing from two processes only one is recorded.
    pub async fn record(&self, blob: &Blob, remote: Option<SocketAddr>) -> Result<Sender, Refusal> {
        let sender = self.check_addressing(blob)?;
        self.check_cluster(blob)?;
        if let Err((kind, refusal)) = self.speakers.judge(sender, remote, Instant::now()) {
            return self.refused(sender.id, kind, refusal);
        }
        if let (None, Some(theirs)) = (self.cluster_id(), parse_cluster(&blob.cluster_id)?) {
            self.adopt(theirs).await?;
        }
        match self
            .speakers
            .record(self.id, sender, remote, Instant::now())
        {
            Ok(()) => Ok(sender),
            Err((kind, refusal)) => self.refused(sender.id, kind, refusal),
        }
    }

    /// Who sealed `blob`.
    pub fn sender(blob: &Blob) -> Result<Sender, Refusal> {
        parse(blob)
    }

    /// This process's boot count.
    pub fn boot(&self) -> u64 {
        self.boot
    }

    /// Whether an identify reply is tagged for `request` (always, without
    /// a secret).
    pub fn is_identify_reply(&self, blob: &Blob, request: &Blob) -> bool {
        self.key
            .as_ref()
            .is_none_or(|key| key.verify("identify", Direction::Reply, blob, &request.mac))
    }

    /// Checks a reply to `request` on `rpc`: tagged for it, from `target`,
    /// for this node, of this cluster.
    pub fn check_reply(
        &self,
        rpc: &str,
        blob: &Blob,
        request: &Blob,
        target: NodeId,
    ) -> Result<(), Refusal> {
        if let Some(key) = &self.key {
            if !key.verify(rpc, Direction::Reply, blob, &request.mac) {
                return Err(Refusal::Unauthenticated(Unauthenticated::ReplyTag));
            }
        }
        let sender = parse(blob)?;
        if blob.to != self.id {
            return Err(Refusal::WrongNode {
                to: blob.to,
                ours: self.id,
            });
        }
        if sender.id != target {
            return Err(Refusal::WrongNode {
                to: target,
                ours: sender.id,
            });
        }
        let theirs = parse_cluster(&blob.cluster_id)?;
        match (self.cluster_id(), theirs) {
            (Some(ours), Some(theirs)) if ours != theirs => Err(Refusal::ForeignCluster {
                ours: ours.to_string(),
                theirs: theirs.to_string(),
            }),
            _ => Ok(()),
        }
    }

    fn check_addressing(&self, blob: &Blob) -> Result<Sender, Refusal> {
        let sender = match parse(blob) {
            Ok(sender) => sender,
            Err(refusal) => return self.refused(blob.from, "malformed", refusal),
        };
        if blob.to != self.id {
            let refusal = Refusal::WrongNode {
                to: blob.to,
                ours: self.id,
            };
            return self.refused(sender.id, "addressee", refusal);
        }
        if sender.id == self.id && sender.incarnation != self.incarnation {
            let refusal = Refusal::Duplicate {
                from: sender.id,
                active: Box::new(SeenProcess::This),
                other: Box::new(SeenProcess::Another),
                ago: Duration::ZERO,
            };
            return self.refused(sender.id, "self", refusal);
        }
        if sender.boot > MAX_BOOT {
            let refusal = Refusal::ImplausibleBoot {
                from: sender.id,
                boot: sender.boot,
                seen: None,
            };
            return self.refused(sender.id, "boot", refusal);
        }
        Ok(sender)
    }

    /// Compares the message's cluster id with ours. One that names a
    /// cluster while this node knows none passes; [`PeerGuard::record`]
    /// learns it.
    fn check_cluster(&self, blob: &Blob) -> Result<(), Refusal> {
        let theirs = parse_cluster(&blob.cluster_id)?;
        match (self.cluster_id(), theirs) {
            (Some(ours), Some(theirs)) if ours == theirs => Ok(()),
            (None, _) => Ok(()),
            (Some(ours), theirs) => {
                let theirs = theirs.map_or_else(|| "none".to_string(), |t| t.to_string());
                let refusal = Refusal::ForeignCluster {
                    ours: ours.to_string(),
                    theirs,
                };
                self.refused(blob.from, "cluster", refusal)
            }
        }
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

fn parse(blob: &Blob) -> Result<Sender, Refusal> {
    let incarnation = Uuid::from_slice(&blob.incarnation)
        .map_err(|_| Refusal::Malformed(Malformed::Incarnation))?;
    if blob.from == 0 || blob.to == 0 {
        return Err(Refusal::Malformed(Malformed::ZeroNodeId));
    }
    Ok(Sender {
        id: blob.from,
        boot: blob.boot,
        incarnation,
    })
}

fn parse_cluster(text: &str) -> Result<Option<Uuid>, Refusal> {
    if text.is_empty() {
        return Ok(None);
    }
    Uuid::parse_str(text).map(Some).map_err(|_| {
        let text = text.to_string();
        Refusal::Malformed(Malformed::ClusterId { text })
    })
}

mod refusal_log;
mod speakers;
#[cfg(test)]
mod tests;
