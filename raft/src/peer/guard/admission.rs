//! The envelope on the way in: what a request must pass before openraft
//! sees it — its tag and sending time ([`PeerGuard::authenticate`]), its
//! addressing, cluster and sender ([`PeerGuard::admit`]), recorded only
//! once its contents passed too ([`PeerGuard::record`]) — and what a reply
//! must pass before its caller reads it ([`PeerGuard::check_reply`]).
//! Apart from the sealing, which writes what these read.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use uuid::Uuid;

use raftlock_storage::NodeId;

use crate::clock::wall_clock_ms;
use crate::pb::Blob;
use crate::peer::auth::{Direction, REPLAY_WINDOW};

use super::{Malformed, PeerGuard, Refusal, SeenProcess, Sender, Unauthenticated, MAX_BOOT};

impl PeerGuard {
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
