//! What this node saw of each peer, in memory: the highest boot count in
//! its messages, the highest term in which it granted this node a vote,
//! and, while this node led, the last log id it acknowledged. The peer
//! transport records it as messages pass their checks; a starting peer asks
//! for it (`Recall`) to tell whether its data dir was rolled back
//! (`crate::node::rollback`).

use std::collections::HashMap;
use std::sync::Mutex;

use openraft::{RaftMetrics, ServerState};
use serde::{Deserialize, Serialize};

use raftlock_storage::{LogId, NodeId, TypeConfig};

/// Most peers a node keeps a record of (members only are recorded; the
/// bound keeps a misconfigured cluster from growing the table).
const MAX_RECORDS: usize = 1024;

/// What one node saw of one peer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// The highest boot count in the peer's messages or replies.
    pub boot: Option<u64>,
    /// The highest term in which the peer granted this node a vote.
    pub vote_term: Option<u64>,
    /// The latest acknowledgement the peer gave this node as leader.
    pub acked: Option<Acked>,
}

/// A leader's record of what a follower synced in the leader's term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acked {
    pub term: u64,
    pub log_id: LogId,
}

/// The in-memory record of what this node saw of its peers.
#[derive(Debug, Default)]
pub struct Witness {
    seen: Mutex<HashMap<NodeId, Seen>>,
}

impl Witness {
    /// A message or reply from `peer` carried boot count `boot`; call only
    /// once its envelope passed every check.
    pub fn saw_boot(&self, peer: NodeId, boot: u64) {
        self.update(peer, |seen| seen.boot = seen.boot.max(Some(boot)));
    }

    /// `peer` granted this node its vote in `term`.
    pub fn saw_vote(&self, peer: NodeId, term: u64) {
        self.update(peer, |seen| seen.vote_term = seen.vote_term.max(Some(term)));
    }

    /// As leader, this node saw `peer` acknowledge `acked`; kept after it
    /// steps down (the peer's dir still promised it).
    pub fn saw_ack(&self, peer: NodeId, acked: Acked) {
        self.update(peer, |seen| seen.acked = later(seen.acked, Some(acked)));
    }

    /// Records what the leader's replication metrics show each follower
    /// acknowledged (called on every change of the metrics).
    pub fn saw_leading(&self, metrics: &RaftMetrics<TypeConfig>) {
        let Some(replication) = metrics.replication.as_ref() else {
            return;
        };
        for peer in replication.keys() {
            if let Some(acked) = acked_as_leader(metrics, *peer) {
                self.saw_ack(*peer, acked);
            }
        }
    }

    /// What this node saw of `peer`.
    pub fn of(&self, peer: NodeId) -> Seen {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&peer).copied().unwrap_or_default()
    }

    fn update(&self, peer: NodeId, change: impl FnOnce(&mut Seen)) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(record) = seen.get_mut(&peer) {
            change(record);
        } else if seen.len() < MAX_RECORDS {
            change(seen.entry(peer).or_default());
        }
    }
}

/// The later of two acknowledgements (by term, then index).
pub fn later(a: Option<Acked>, b: Option<Acked>) -> Option<Acked> {
    match (a, b) {
        (Some(x), Some(y)) if (y.term, y.log_id.index) > (x.term, x.log_id.index) => Some(y),
        (Some(x), _) => Some(x),
        (None, y) => y,
    }
}

/// As leader, the last log id `peer` acknowledged in this leader's term.
pub fn acked_as_leader(metrics: &RaftMetrics<TypeConfig>, peer: NodeId) -> Option<Acked> {
    if metrics.state != ServerState::Leader {
        return None;
    }
    let log_id = (*metrics.replication.as_ref()?.get(&peer)?)?;
    Some(Acked {
        term: metrics.vote.leader_id().term,
        log_id,
    })
}
