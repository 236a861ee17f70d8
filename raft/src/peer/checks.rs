//! Sanity checks on a Raft message's contents, run before openraft sees it:
//! the claimed leader or candidate is the sender, terms and indexes are
//! within reach of this node's own, entries follow each other, no log id is
//! from a leader after the message's own, and nothing contradicts what this
//! node has committed. openraft trusts its peers and asserts on what a
//! correct peer never sends (a term of `u64::MAX` wraps and panics its
//! core; a snapshot from a later leader than its vote, or one that skips
//! back below the committed index, trips an `assert!`); these checks turn
//! such input into a refusal.

use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::vote::RaftLeaderId;

use raftlock_storage::{CommittedLeaderId, LogId, NodeId, SnapshotMeta, TypeConfig, Vote};

/// What this node knows that a peer's message is checked against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Local {
    /// This node's current term.
    pub term: u64,
    /// The last log id this node knows committed.
    pub committed: Option<LogId>,
}

use crate::peer::content_refusal::ContentRefusal;
use crate::peer::snapshot_transfer::SnapshotChunk;

/// How far above this node's term a peer's term may be. A node cut off
/// from its cluster raises its term by one per failed election, about one
/// a second: a million takes days. Anything larger is not a Raft peer.
pub const MAX_TERM_STEP: u64 = 1 << 20;

/// No term or index may come near the top of `u64`, where openraft's
/// arithmetic would wrap.
pub const MAX_POSITION: u64 = u64::MAX >> 2;

/// Checks a vote request from `from`, given what this node knows.
pub fn check_vote(
    rpc: &VoteRequest<TypeConfig>,
    from: NodeId,
    local: Local,
) -> Result<(), ContentRefusal> {
    check_vote_of(&rpc.vote, from, local.term, "candidate")?;
    let Some(id) = rpc.last_log_id.as_ref() else {
        return Ok(());
    };
    check_index(id, "last log id")?;
    if id.leader_id.term > rpc.vote.leader_id().term {
        return Err(ContentRefusal::LastLogAfterVote {
            last: id.leader_id.term,
            candidate: rpc.vote.leader_id().term,
        });
    }
    Ok(())
}

/// Checks an append-entries request from `from`, given what this node
/// knows.
pub fn check_append(
    rpc: &AppendEntriesRequest<TypeConfig>,
    from: NodeId,
    local: Local,
) -> Result<(), ContentRefusal> {
    check_leader_vote(&rpc.vote, from, local.term)?;
    let leader = *rpc.vote.leader_id();
    check_log_id(rpc.prev_log_id.as_ref(), &leader, local, "prev log id")?;
    check_log_id(rpc.leader_commit.as_ref(), &leader, local, "leader commit")?;
    let first = rpc.prev_log_id.map_or(0, |id| id.index + 1);
    let mut before = rpc.prev_log_id.map(|id| id.leader_id);
    for (due, entry) in (first..).zip(&rpc.entries) {
        let id = entry.log_id;
        check_log_id(Some(&id), &leader, local, "entry")?;
        if id.index != due {
            return Err(ContentRefusal::Gap {
                index: id.index,
                due,
            });
        }
        // Log ids only grow along a log: openraft asserts each one it
        // appends is above the one before.
        if before.is_some_and(|before| id.leader_id < before) {
            return Err(ContentRefusal::EarlierLeader { id });
        }
        before = Some(id.leader_id);
    }
    Ok(())
}

/// Largest snapshot a node accepts. A snapshot is assembled in memory
/// before it is installed; this bounds what a sender can make a node hold.
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 30;

/// Checks a snapshot piece from `from`, given what this node knows.
pub fn check_snapshot(
    rpc: &SnapshotChunk,
    from: NodeId,
    local: Local,
) -> Result<(), ContentRefusal> {
    check_leader_vote(&rpc.vote, from, local.term)?;
    check_snapshot_meta(&rpc.meta, rpc.vote.leader_id())?;
    check_snapshot_position(&rpc.meta, local)?;
    let end = rpc.offset.checked_add(rpc.data.len() as u64);
    if end.is_none_or(|end| end > MAX_SNAPSHOT_BYTES) {
        return Err(ContentRefusal::SnapshotTooLarge {
            offset: rpc.offset,
            len: rpc.data.len(),
            limit: MAX_SNAPSHOT_BYTES,
        });
    }
    Ok(())
}

/// A leader's vote: committed, and the leader is the sender.
fn check_leader_vote(vote: &Vote, from: NodeId, term: u64) -> Result<(), ContentRefusal> {
    if !vote.is_committed() {
        return Err(ContentRefusal::UncommittedVote);
    }
    check_vote_of(vote, from, term, "leader")
}

/// The vote names the sender, and its term is within reach of ours.
fn check_vote_of(
    vote: &Vote,
    from: NodeId,
    term: u64,
    role: &'static str,
) -> Result<(), ContentRefusal> {
    let named = *vote.leader_id().node_id();
    if named != from {
        return Err(ContentRefusal::NotSender { role, named, from });
    }
    check_term(vote.leader_id().term, term)
}

fn check_term(theirs: u64, ours: u64) -> Result<(), ContentRefusal> {
    let limit = ours.saturating_add(MAX_TERM_STEP).min(MAX_POSITION);
    if theirs > limit {
        return Err(ContentRefusal::TermTooFar { theirs, ours });
    }
    Ok(())
}

/// A snapshot's meta: its last log id in range and not from a leader after
/// the sender's vote, its membership from no later than that.
fn check_snapshot_meta(
    meta: &SnapshotMeta,
    leader: &CommittedLeaderId,
) -> Result<(), ContentRefusal> {
    let Some(last) = meta.last_log_id.as_ref() else {
        return Ok(());
    };
    check_index(last, "snapshot's last log id")?;
    if last.leader_id > *leader {
        return Err(ContentRefusal::SnapshotAfterVote {
            last: last.leader_id,
            leader: *leader,
        });
    }
    if meta.last_membership.log_id().is_some_and(|m| m > *last) {
        return Err(ContentRefusal::MembershipAfterSnapshot);
    }
    Ok(())
}

/// A snapshot past this node's committed log id must also be past its
/// index (openraft asserts so): a snapshot from a later leader at a lower
/// index would contradict entries this node committed. Run again on the
/// whole snapshot just before it is installed, as the committed id moves.
pub fn check_snapshot_position(meta: &SnapshotMeta, local: Local) -> Result<(), ContentRefusal> {
    match (meta.last_log_id.as_ref(), local.committed.as_ref()) {
        (Some(last), Some(committed)) if last > committed && last.index <= committed.index => {
            Err(ContentRefusal::SnapshotContradicts {
                last: *last,
                committed: *committed,
            })
        }
        _ => Ok(()),
    }
}

/// A leader's log id is in range, not from a leader after the message's
/// own, and does not contradict an entry this node committed (every log id
/// at or below the committed index is at or below the committed id).
fn check_log_id(
    id: Option<&LogId>,
    leader: &CommittedLeaderId,
    local: Local,
    what: &'static str,
) -> Result<(), ContentRefusal> {
    let Some(id) = id else { return Ok(()) };
    check_index(id, what)?;
    if id.leader_id > *leader {
        return Err(ContentRefusal::AfterLeader {
            what,
            leader: id.leader_id,
            message: *leader,
        });
    }
    if let Some(committed) = local.committed.as_ref() {
        if id.index <= committed.index && id > committed {
            return Err(ContentRefusal::Contradicts {
                what,
                id: *id,
                committed: *committed,
            });
        }
    }
    Ok(())
}

fn check_index(id: &LogId, what: &'static str) -> Result<(), ContentRefusal> {
    if id.index > MAX_POSITION {
        return Err(ContentRefusal::OutOfRange {
            what,
            index: id.index,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use raftlock_storage::{Entry, EntryPayload};

    use super::*;

    fn at(term: u64) -> Local {
        Local {
            term,
            committed: None,
        }
    }

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
        assert!(check_vote(&huge, 2, at(5))
            .unwrap_err()
            .to_string()
            .contains("implausibly"));
        let next = VoteRequest::new(Vote::new(6, 2), Some(log_id(5, 10)));
        assert_eq!(check_vote(&next, 2, at(5)), Ok(()));
        let far = VoteRequest::new(Vote::new(5 + MAX_TERM_STEP + 1, 2), None);
        assert!(check_vote(&far, 2, at(5)).is_err());
    }

    #[test]
    fn the_candidate_or_leader_must_be_the_sender() {
        let vote = VoteRequest::new(Vote::new(6, 2), None);
        assert!(check_vote(&vote, 3, at(5))
            .unwrap_err()
            .to_string()
            .contains("not its sender"));
        assert!(check_append(&append(5, None, vec![]), 2, at(5)).is_err());
        assert_eq!(check_append(&append(5, None, vec![]), 1, at(5)), Ok(()));
    }

    #[test]
    fn entries_must_follow_the_previous_one_in_order() {
        let ok = append(5, Some(3), vec![entry(5, 4), entry(5, 5)]);
        assert_eq!(check_append(&ok, 1, at(5)), Ok(()));
        let gap = append(5, Some(3), vec![entry(5, 4), entry(5, 6)]);
        assert!(check_append(&gap, 1, at(5))
            .unwrap_err()
            .to_string()
            .contains("follow"));
        let backwards = append(5, Some(3), vec![entry(5, 4), entry(4, 5)]);
        assert!(check_append(&backwards, 1, at(5))
            .unwrap_err()
            .to_string()
            .contains("earlier leader"));
        let mut other_leader = append(5, Some(3), vec![entry(5, 4), entry(5, 5)]);
        other_leader.prev_log_id = Some(LogId::new(CommittedLeaderId::new(3, 1), 3));
        other_leader.entries[0].log_id = LogId::new(CommittedLeaderId::new(4, 9), 4);
        assert_eq!(check_append(&other_leader, 1, at(5)), Ok(()));
        other_leader.entries[1].log_id = LogId::new(CommittedLeaderId::new(4, 2), 5);
        assert!(check_append(&other_leader, 1, at(5)).is_err());
        let future = append(5, Some(3), vec![entry(7, 4)]);
        assert!(check_append(&future, 1, at(5)).is_err());
        let top = append(5, Some(u64::MAX - 1), vec![entry(5, u64::MAX)]);
        assert!(check_append(&top, 1, at(5))
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        let mut uncommitted = append(5, None, vec![]);
        uncommitted.vote = Vote::new(5, 1);
        assert!(check_append(&uncommitted, 1, at(5)).is_err());
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
        assert_eq!(check_snapshot(&piece(0), 1, at(5)), Ok(()));
        assert!(check_snapshot(&piece(MAX_SNAPSHOT_BYTES), 1, at(5))
            .unwrap_err()
            .to_string()
            .contains("limit"));
        assert!(check_snapshot(&piece(u64::MAX - 4), 1, at(5)).is_err());
        assert!(check_snapshot(&piece(0), 2, at(5)).is_err());
    }

    /// Each of these trips an assertion in openraft's core (the snapshot
    /// ones in `FollowingHandler::install_full_snapshot`, the committed
    /// ones in `has_log_id` of debug builds): the core stops, and the node
    /// with it.
    #[test]
    fn log_ids_from_a_later_leader_or_against_the_committed_ones_are_refused() {
        let later_leader = LogId::new(CommittedLeaderId::new(5, 2), 4);
        let from_two = append(5, Some(3), vec![entry(5, 4)]);
        let mut from_two_later = from_two.clone();
        from_two_later.entries[0].log_id = later_leader;
        assert!(check_append(&from_two_later, 1, at(5))
            .unwrap_err()
            .to_string()
            .contains("after the message's leader"));
        let piece = |last: LogId| SnapshotChunk {
            vote: Vote::new_committed(5, 1),
            meta: SnapshotMeta {
                last_log_id: Some(last),
                last_membership: Default::default(),
            },
            offset: 0,
            data: Vec::new(),
            done: true,
        };
        assert!(check_snapshot(&piece(later_leader), 1, at(5)).is_err());

        // Committed here up to (3, 10): nothing at or below index 10 may be
        // from a later leader, and a later snapshot must reach past 10.
        let local = Local {
            term: 5,
            committed: Some(log_id(3, 10)),
        };
        let rewrite = append(5, Some(8), vec![entry(5, 9)]);
        assert!(check_append(&rewrite, 1, local)
            .unwrap_err()
            .to_string()
            .contains("committed"));
        let follow_on = AppendEntriesRequest {
            prev_log_id: Some(log_id(3, 10)),
            entries: vec![entry(5, 11)],
            ..append(5, None, vec![])
        };
        assert_eq!(check_append(&follow_on, 1, local), Ok(()));
        assert!(check_snapshot(&piece(log_id(5, 9)), 1, local)
            .unwrap_err()
            .to_string()
            .contains("contradicts"));
        assert_eq!(check_snapshot(&piece(log_id(5, 11)), 1, local), Ok(()));
        // Older than what is committed: openraft ignores it, no refusal.
        assert_eq!(check_snapshot(&piece(log_id(2, 9)), 1, local), Ok(()));
    }
}
