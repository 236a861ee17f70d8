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

use std::path::PathBuf;
use std::time::Duration;

use raftlock_storage::{NodeId, Position};

use crate::pb::peer_client::PeerClient;
use crate::peer::network::PeerNetwork;
use crate::peer::payload::{decode, encode};
use crate::peer::witness::Seen;

/// How long a starting node waits for each peer's answer.
pub const RECALL_TIMEOUT: Duration = Duration::from_secs(1);

/// Why a dir is older than what `peer` saw of node `node`; `None` when it
/// is not.
///
/// A vote term never goes down, and a boot count rises at every start. An
/// entry a follower acknowledged in term T stays in its log while its vote
/// is still of term T: only a leader of a later term can overwrite it, and
/// accepting that leader raises the vote.
pub fn judge(node: NodeId, own: &Position, peer: NodeId, seen: &Seen) -> Option<Older> {
    if let Some(boot) = seen.boot.filter(|&boot| own.boots <= boot) {
        return Some(Older::Boot {
            node,
            peer,
            seen: boot,
            own: own.boots,
        });
    }
    let terms = [seen.vote_term, seen.acked.map(|a| a.term)];
    if let Some(term) = terms.into_iter().flatten().max() {
        if own.vote_term < term {
            return Some(Older::Vote {
                node,
                peer,
                term,
                own: own.vote_term,
            });
        }
    }
    if let Some(acked) = seen.acked {
        let last = own.last_log_index;
        if own.vote_term == acked.term && last.is_none_or(|last| last < acked.log_id.index) {
            return Some(Older::Entries {
                node,
                peer,
                index: acked.log_id.index,
                term: acked.term,
                own_last: last,
            });
        }
    }
    None
}

/// What a peer saw of node `node` that its dir has forgotten.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Older {
    /// A start number at least the dir's own count.
    #[error(
        "node {peer} saw node {node} on its start number {seen}, and this dir has only {own} \
         starts on record"
    )]
    Boot {
        node: NodeId,
        peer: NodeId,
        seen: u64,
        own: u64,
    },
    /// A vote or acknowledgement in a term above the dir's saved vote.
    #[error(
        "node {node} gave node {peer} its vote or acknowledged its entries in term {term}, \
         and this dir's saved vote is of term {own}"
    )]
    Vote {
        node: NodeId,
        peer: NodeId,
        term: u64,
        own: u64,
    },
    /// Entries acknowledged in the dir's own vote term past its log's end.
    #[error(
        "node {node} acknowledged log entries up to index {index} to node {peer} (leader in \
         term {term}), and this dir's log ends at {}",
        own_last.map_or_else(|| "no entry".to_string(), |i| format!("index {i}"))
    )]
    Entries {
        node: NodeId,
        peer: NodeId,
        index: u64,
        term: u64,
        own_last: Option<u64>,
    },
}

/// The refusal a node on an older dir stops with: what was found, and
/// what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "data dir {} is older than what the cluster saw from node {node}: {why}. It was \
     rolled back (a backup, a disk or VM snapshot, a copy put back); started on it, \
     node {node} could vote twice in one term or lose entries a majority counted on. \
     If a newer copy of this dir exists, put it back. Otherwise replace the node: \
     run `raftlock cluster remove {node}` against the cluster, then add a node with \
     a new id and an empty data dir (`raftlock serve --join`, `raftlock cluster \
     add-learner`, `raftlock cluster promote`; README, \"Changing the membership\")",
    data_dir.display()
)]
pub struct RolledBack {
    /// This node.
    pub node: NodeId,
    /// Its data dir.
    pub data_dir: PathBuf,
    /// What a peer saw that the dir forgot.
    pub why: Older,
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
) -> Result<(), RolledBack> {
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
            return Err(RolledBack {
                node,
                data_dir: data_dir.to_path_buf(),
                why,
            });
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
    use crate::peer::witness::{Acked, Witness};
    use openraft::vote::RaftLeaderId;
    use raftlock_storage::{CommittedLeaderId, LogId};

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
        let why = judge(2, &own(5, 9, Some(100)), 1, &seen)
            .expect("refused")
            .to_string();
        assert!(why.contains("start number 5"), "{why}");
        assert!(judge(2, &own(3, 9, Some(100)), 1, &seen).is_some());
    }

    #[test]
    fn a_forgotten_vote_is_a_rollback() {
        let seen = Seen {
            vote_term: Some(8),
            ..Seen::default()
        };
        let why = judge(2, &own(9, 7, Some(100)), 3, &seen)
            .expect("refused")
            .to_string();
        assert!(why.contains("term 8"), "{why}");
    }

    #[test]
    fn forgotten_acknowledged_entries_are_a_rollback() {
        let seen = Seen {
            acked: acked(7, 100),
            ..Seen::default()
        };
        let why = judge(2, &own(9, 7, Some(99)), 1, &seen)
            .expect("refused")
            .to_string();
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
