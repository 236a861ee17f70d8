//! Sanity checks on a Raft message's contents, run before openraft sees it:
//! the claimed leader or candidate is the sender, terms and indexes are
//! within reach of this node's own, and entries follow each other. openraft
//! trusts its peers and asserts on what a correct peer never sends (a term
//! of `u64::MAX` wraps and panics its core); these checks turn such input
//! into a refusal.

use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::vote::RaftLeaderId;

use raftlock_storage::{LogId, NodeId, TypeConfig, Vote};

use crate::snapshot_transfer::SnapshotChunk;

/// How far above this node's term a peer's term may be. A node cut off
/// from its cluster raises its term by one per failed election, about one
/// a second: a million takes days. Anything larger is not a Raft peer.
pub const MAX_TERM_STEP: u64 = 1 << 20;

/// No term or index may come near the top of `u64`, where openraft's
/// arithmetic would wrap.
pub const MAX_POSITION: u64 = u64::MAX >> 2;

/// Checks a vote request from `from`, given this node's term.
pub fn check_vote(rpc: &VoteRequest<TypeConfig>, from: NodeId, term: u64) -> Result<(), String> {
    check_vote_of(&rpc.vote, from, term, "candidate")?;
    check_log_id(
        rpc.last_log_id.as_ref(),
        rpc.vote.leader_id().term,
        "last log id",
    )
}

/// Checks an append-entries request from `from`, given this node's term.
pub fn check_append(
    rpc: &AppendEntriesRequest<TypeConfig>,
    from: NodeId,
    term: u64,
) -> Result<(), String> {
    check_leader_vote(&rpc.vote, from, term)?;
    let vote_term = rpc.vote.leader_id().term;
    check_log_id(rpc.prev_log_id.as_ref(), vote_term, "prev log id")?;
    check_log_id(rpc.leader_commit.as_ref(), vote_term, "leader commit")?;
    let first = rpc.prev_log_id.map_or(0, |id| id.index + 1);
    let mut last_term = rpc.prev_log_id.map_or(0, |id| id.leader_id.term);
    for (due, entry) in (first..).zip(&rpc.entries) {
        let id = entry.log_id;
        check_log_id(Some(&id), vote_term, "entry")?;
        if id.index != due {
            return Err(format!(
                "entries do not follow each other: index {} where {due} was due",
                id.index
            ));
        }
        if id.leader_id.term < last_term {
            return Err(format!(
                "entry {} has term {}, below the term {last_term} before it",
                id.index, id.leader_id.term
            ));
        }
        last_term = id.leader_id.term;
    }
    Ok(())
}

/// Largest snapshot a node accepts. A snapshot is assembled in memory
/// before it is installed; this bounds what a sender can make a node hold.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// Checks a snapshot piece from `from`, given this node's term.
pub fn check_snapshot(rpc: &SnapshotChunk, from: NodeId, term: u64) -> Result<(), String> {
    check_leader_vote(&rpc.vote, from, term)?;
    check_log_id(
        rpc.meta.last_log_id.as_ref(),
        rpc.vote.leader_id().term,
        "snapshot's last log id",
    )?;
    let end = rpc.offset.checked_add(rpc.data.len() as u64);
    if end.is_none_or(|end| end > MAX_SNAPSHOT_BYTES) {
        return Err(format!(
            "snapshot piece at offset {} of {} bytes ends past the {MAX_SNAPSHOT_BYTES}-byte limit",
            rpc.offset,
            rpc.data.len()
        ));
    }
    Ok(())
}

/// A leader's vote: committed, and the leader is the sender.
fn check_leader_vote(vote: &Vote, from: NodeId, term: u64) -> Result<(), String> {
    if !vote.is_committed() {
        return Err("a leader's message carries an uncommitted vote".into());
    }
    check_vote_of(vote, from, term, "leader")
}

/// The vote names the sender, and its term is within reach of ours.
fn check_vote_of(vote: &Vote, from: NodeId, term: u64, role: &str) -> Result<(), String> {
    let voted_for = *vote.leader_id().node_id();
    if voted_for != from {
        return Err(format!(
            "the {role} named in the message ({voted_for:?}) is not its sender (node {from})"
        ));
    }
    check_term(vote.leader_id().term, term)
}

fn check_term(theirs: u64, ours: u64) -> Result<(), String> {
    let limit = ours.saturating_add(MAX_TERM_STEP).min(MAX_POSITION);
    if theirs > limit {
        return Err(format!(
            "term {theirs} is implausibly far above this node's term {ours}"
        ));
    }
    Ok(())
}

/// A log id is in range and not from a term after the message's own.
fn check_log_id(id: Option<&LogId>, vote_term: u64, what: &str) -> Result<(), String> {
    let Some(id) = id else { return Ok(()) };
    if id.index > MAX_POSITION {
        return Err(format!("{what} index {} is out of range", id.index));
    }
    if id.leader_id.term > vote_term {
        return Err(format!(
            "{what} has term {}, after the message's term {vote_term}",
            id.leader_id.term
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use raftlock_storage::{CommittedLeaderId, Entry, EntryPayload, SnapshotMeta};

    use super::*;

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(CommittedLeaderId::new(term, 1), index)
    }

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: log_id(term, index),
            payload: EntryPayload::Blank,
        }
    }

    fn append(
        term: u64,
        prev: Option<u64>,
        entries: Vec<Entry>,
    ) -> AppendEntriesRequest<TypeConfig> {
        AppendEntriesRequest {
            vote: Vote::new_committed(term, 1),
            prev_log_id: prev.map(|i| log_id(term, i)),
            entries,
            leader_commit: None,
        }
    }

    #[test]
    fn a_huge_term_is_refused_a_plausible_one_passes() {
        let huge = VoteRequest::new(Vote::new(u64::MAX, 2), None);
        assert!(check_vote(&huge, 2, 5).unwrap_err().contains("implausibly"));
        let next = VoteRequest::new(Vote::new(6, 2), Some(log_id(5, 10)));
        assert_eq!(check_vote(&next, 2, 5), Ok(()));
        let far = VoteRequest::new(Vote::new(5 + MAX_TERM_STEP + 1, 2), None);
        assert!(check_vote(&far, 2, 5).is_err());
    }

    #[test]
    fn the_candidate_or_leader_must_be_the_sender() {
        let vote = VoteRequest::new(Vote::new(6, 2), None);
        assert!(check_vote(&vote, 3, 5)
            .unwrap_err()
            .contains("not its sender"));
        assert!(check_append(&append(5, None, vec![]), 2, 5).is_err());
        assert_eq!(check_append(&append(5, None, vec![]), 1, 5), Ok(()));
    }

    #[test]
    fn entries_must_follow_the_previous_one_in_order() {
        let ok = append(5, Some(3), vec![entry(5, 4), entry(5, 5)]);
        assert_eq!(check_append(&ok, 1, 5), Ok(()));
        let gap = append(5, Some(3), vec![entry(5, 4), entry(5, 6)]);
        assert!(check_append(&gap, 1, 5).unwrap_err().contains("follow"));
        let future = append(5, Some(3), vec![entry(7, 4)]);
        assert!(check_append(&future, 1, 5).is_err());
        let top = append(5, Some(u64::MAX - 1), vec![entry(5, u64::MAX)]);
        assert!(check_append(&top, 1, 5)
            .unwrap_err()
            .contains("out of range"));
        let mut uncommitted = append(5, None, vec![]);
        uncommitted.vote = Vote::new(5, 1);
        assert!(check_append(&uncommitted, 1, 5).is_err());
    }

    #[test]
    fn a_snapshot_piece_past_the_size_limit_is_refused() {
        let piece = |offset: u64| SnapshotChunk {
            vote: Vote::new_committed(5, 1),
            meta: SnapshotMeta::default(),
            offset,
            data: vec![0; 16],
            done: false,
        };
        assert_eq!(check_snapshot(&piece(0), 1, 5), Ok(()));
        assert!(check_snapshot(&piece(MAX_SNAPSHOT_BYTES), 1, 5)
            .unwrap_err()
            .contains("limit"));
        assert!(check_snapshot(&piece(u64::MAX - 4), 1, 5).is_err());
        assert!(check_snapshot(&piece(0), 2, 5).is_err());
    }
}
