//! [`ContentRefusal`]: why a peer message's contents fail their checks
//! ([`crate::peer::checks`]), with the terms, indexes and log ids that
//! made it one. The words go back to the sender and to the log.

use raftlock_storage::{CommittedLeaderId, LogId, NodeId};

use super::Source;

/// Why a Raft message's contents are refused before openraft sees them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentRefusal {
    /// A candidate's last log id is from a term after its own.
    #[error("last log id has term {last}, after the candidate's term {candidate}")]
    LastLogAfterVote { last: u64, candidate: u64 },
    /// Entries skip or repeat an index.
    #[error("entries do not follow each other: index {index} where {due} was due")]
    Gap { index: u64, due: u64 },
    /// An entry from an earlier leader than the one before it.
    #[error("entry {id} is from an earlier leader than the entry before it")]
    EarlierLeader { id: LogId },
    /// A snapshot piece that ends past the size limit.
    #[error("snapshot piece at offset {offset} of {len} bytes ends past the {limit}-byte limit")]
    SnapshotTooLarge { offset: u64, len: usize, limit: u64 },
    /// A leader's message with a vote not committed.
    #[error("a leader's message carries an uncommitted vote")]
    UncommittedVote,
    /// The leader or candidate named is not the sender.
    #[error("the {role} named in the message ({named:?}) is not its sender (node {from})")]
    NotSender {
        role: &'static str,
        named: NodeId,
        from: NodeId,
    },
    /// A term too far above this node's own.
    #[error("term {theirs} is implausibly far above this node's term {ours}")]
    TermTooFar { theirs: u64, ours: u64 },
    /// A snapshot's last log id from a leader after the sender's vote.
    #[error("snapshot's last log id is from leader {last}, after the sender's vote {leader}")]
    SnapshotAfterVote {
        last: CommittedLeaderId,
        leader: CommittedLeaderId,
    },
    /// A snapshot's membership from after its last log id.
    #[error("snapshot's membership is from after its last log id")]
    MembershipAfterSnapshot,
    /// A snapshot that contradicts what this node committed.
    #[error("snapshot at {last} contradicts the entries committed here up to {committed}")]
    SnapshotContradicts { last: LogId, committed: LogId },
    /// A log id (`what`) from a leader after the message's own.
    #[error("{what} is from leader {leader}, after the message's leader {message}")]
    AfterLeader {
        what: &'static str,
        leader: CommittedLeaderId,
        message: CommittedLeaderId,
    },
    /// A log id (`what`) that contradicts what this node committed.
    #[error("{what} {id} contradicts the entries committed here up to {committed}")]
    Contradicts {
        what: &'static str,
        id: LogId,
        committed: LogId,
    },
    /// An index near the top of `u64`.
    #[error("{what} index {index} is out of range")]
    OutOfRange { what: &'static str, index: u64 },
    /// The assembled snapshot does not verify (the storage layer's error).
    #[error("{0}")]
    Snapshot(Source),
}
