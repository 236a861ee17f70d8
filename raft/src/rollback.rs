//! Rollback detection at start: a node restarted on an older copy of its
//! data dir (a backup put back, a disk or VM snapshot rolled back) has
//! forgotten votes it gave and entries it acknowledged. Raft's safety rests
//! on both: with a forgotten vote it can vote twice in one term, and with a
//! forgotten entry a majority that counted it may no longer hold it.
//!
//! Each node therefore remembers, in memory, what it saw of every peer:
//! - the highest boot count in the peer's messages and replies (a data
//!   dir's count rises at every start, before anything is sent);
//! - the highest term in which the peer granted it a vote (openraft grants
//!   only a vote it saved);
//! - as leader, its own term and the last log id each peer acknowledged
//!   (openraft's replication metrics; a follower acknowledges only what it
//!   synced), kept after it steps down.
//!
//! A starting node asks every other member for that record ([`Seen`], the
//! peer RPC `Recall`) before its Raft starts, and refuses to start when its
//! dir is older than any answer ([`judge`]). Peers that do not answer in
//! time are skipped: a whole cluster restarting at once has nobody to ask,
//! and what a peer saw dies with its process. The check catches a rollback
//! while at least one peer that saw the newer state is up, the case where
//! starting would do harm.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use openraft::{RaftMetrics, ServerState};
use serde::{Deserialize, Serialize};

use raftlock_storage::{LogId, NodeId, Position, TypeConfig};

use crate::network::{decode, encode, PeerNetwork};
use crate::pb::peer_client::PeerClient;

/// How long a starting node waits for each peer's answer.
pub const RECALL_TIMEOUT: Duration = Duration::from_secs(1);

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

/// Why a dir is older than what `peer` saw of node `node`; `None` when it
/// is not.
///
/// A vote term never goes down, and a boot count rises at every start. An
/// entry a follower acknowledged in term T stays in its log while its vote
/// is still of term T: only a leader of a later term can overwrite it, and
/// accepting that leader raises the vote.
pub fn judge(node: NodeId, own: &Position, peer: NodeId, seen: &Seen) -> Option<String> {
    if let Some(boot) = seen.boot.filter(|&boot| own.boots <= boot) {
        return Some(format!(
            "node {peer} saw node {node} on its start number {boot}, and this dir has \
             only {} starts on record",
            own.boots
        ));
    }
    let terms = [seen.vote_term, seen.acked.map(|a| a.term)];
    if let Some(term) = terms.into_iter().flatten().max() {
        if own.vote_term < term {
            return Some(format!(
                "node {node} gave node {peer} its vote or acknowledged its entries in term \
                 {term}, and this dir's saved vote is of term {}",
                own.vote_term
            ));
        }
    }
    if let Some(acked) = seen.acked {
        let last = own.last_log_index;
        if own.vote_term == acked.term && last.is_none_or(|last| last < acked.log_id.index) {
            return Some(format!(
                "node {node} acknowledged log entries up to index {} to node {peer} \
                 (leader in term {}), and this dir's log ends at {}",
                acked.log_id.index,
                acked.term,
                last.map_or_else(|| "no entry".to_string(), |i| format!("index {i}"))
            ));
        }
    }
    None
}

/// The refusal a node on an older dir stops with: what was found, and
/// what to do.
pub fn refusal(node: NodeId, data_dir: &std::path::Path, why: &str) -> String {
    format!(
        "data dir {} is older than what the cluster saw from node {node}: {why}. It was \
         rolled back (a backup, a disk or VM snapshot, a copy put back); started on it, \
         node {node} could vote twice in one term or lose entries a majority counted on. \
         If a newer copy of this dir exists, put it back. Otherwise replace the node: \
         run `raftlock cluster remove {node}` against the cluster, then add a node with \
         a new id and an empty data dir (`raftlock serve --join`, `raftlock cluster \
         add-learner`, `raftlock cluster promote`; README, \"Changing the membership\")",
        data_dir.display()
    )
}

/// Asks node `peer` at `addr` what it saw of this node; `None` when it
/// does not answer in time (down, unreachable, or too old to know `Recall`).
pub async fn ask(net: &PeerNetwork, peer: NodeId, addr: &str) -> Option<Seen> {
    let endpoint = net.endpoint(peer, addr).ok()?.timeout(RECALL_TIMEOUT);
    let call = async {
        let channel = endpoint.connect().await.ok()?;
        let sealed = net.guard().seal("recall", peer, encode(&()).ok()?);
        let reply = PeerClient::new(channel)
            .recall(tonic::Request::new(sealed.clone()))
            .await
            .ok()?
            .into_inner();
        net.guard()
            .check_reply("recall", &reply, &sealed, peer)
            .ok()?;
        decode::<Seen>(&reply.data).ok()
    };
    tokio::time::timeout(RECALL_TIMEOUT, call)
        .await
        .ok()
        .flatten()
}

/// Asks every peer in `peers` (id, peer address) at once; refuses when any
/// answer shows this dir is older.
pub async fn check_peers(
    net: &PeerNetwork,
    node: NodeId,
    own: &Position,
    peers: Vec<(NodeId, String)>,
    data_dir: &std::path::Path,
) -> Result<(), String> {
    let answers = futures::future::join_all(
        peers
            .iter()
            .map(|(peer, addr)| async move { (*peer, ask(net, *peer, addr).await) }),
    )
    .await;
    let mut asked = Vec::new();
    for (peer, seen) in answers {
        let Some(seen) = seen else { continue };
        if let Some(why) = judge(node, own, peer, &seen) {
            return Err(refusal(node, data_dir, &why));
        }
        asked.push(peer);
    }
    tracing::info!(
        node,
        "data dir checked against what peers {asked:?} saw of this node (of {} asked)",
        peers.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::vote::RaftLeaderId;
    use raftlock_storage::CommittedLeaderId;

    fn own(boots: u64, vote_term: u64, last: Option<u64>) -> Position {
        Position {
            boots,
            vote_term,
            last_log_index: last,
        }
    }

    fn acked(term: u64, index: u64) -> Option<Acked> {
        Some(Acked {
            term,
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
        })
    }

    #[test]
    fn a_dir_newer_than_everything_seen_passes() {
        let seen = Seen {
            boot: Some(4),
            vote_term: Some(7),
            acked: acked(7, 100),
        };
        assert_eq!(judge(2, &own(5, 7, Some(100)), 1, &seen), None);
        assert_eq!(
            judge(2, &own(5, 9, Some(20)), 1, &seen),
            None,
            "a later term may truncate"
        );
        assert_eq!(judge(2, &own(1, 0, None), 1, &Seen::default()), None);
    }

    #[test]
    fn a_boot_count_not_above_the_one_seen_is_a_rollback() {
        let seen = Seen {
            boot: Some(5),
            ..Seen::default()
        };
        let why = judge(2, &own(5, 9, Some(100)), 1, &seen).expect("refused");
        assert!(why.contains("start number 5"), "{why}");
        assert!(judge(2, &own(3, 9, Some(100)), 1, &seen).is_some());
    }

    #[test]
    fn a_forgotten_vote_is_a_rollback() {
        let seen = Seen {
            vote_term: Some(8),
            ..Seen::default()
        };
        let why = judge(2, &own(9, 7, Some(100)), 3, &seen).expect("refused");
        assert!(why.contains("term 8"), "{why}");
    }

    #[test]
    fn forgotten_acknowledged_entries_are_a_rollback() {
        let seen = Seen {
            acked: acked(7, 100),
            ..Seen::default()
        };
        let why = judge(2, &own(9, 7, Some(99)), 1, &seen).expect("refused");
        assert!(
            why.contains("index 100") && why.contains("index 99"),
            "{why}"
        );
        assert!(judge(2, &own(9, 7, None), 1, &seen).is_some());
        assert!(judge(2, &own(9, 6, Some(100)), 1, &seen).is_some());
    }

    #[test]
    fn the_record_keeps_the_highest_of_each() {
        let witness = Witness::default();
        witness.saw_boot(2, 5);
        witness.saw_boot(2, 3);
        witness.saw_vote(2, 4);
        witness.saw_vote(2, 2);
        assert_eq!(
            witness.of(2),
            Seen {
                boot: Some(5),
                vote_term: Some(4),
                acked: None
            }
        );
        assert_eq!(witness.of(3), Seen::default());
    }

    #[test]
    fn the_latest_acknowledgement_is_kept_by_term_then_index() {
        let witness = Witness::default();
        for (term, index) in [(3, 50), (4, 10), (3, 90), (4, 8)] {
            witness.saw_ack(2, acked(term, index).unwrap());
        }
        assert_eq!(witness.of(2).acked, acked(4, 10));
    }
}
