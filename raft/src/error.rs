//! The replication layer's errors.

use serde::{Deserialize, Serialize};

use raftlock_storage::{CommandError, NodeId};

/// Why a replicated call did not produce an answer. It crosses the peer
/// API (a follower hands the leader's refusal on), so it carries words,
/// not sources.
///
/// Not `#[non_exhaustive]`: the one mapping to `tonic::Status`
/// (`raftlock::status`) names every variant, so a new one does not compile
/// until it is mapped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum Error {
    /// The state machine refused the request; nothing changed.
    #[error(transparent)]
    Rejected(#[from] CommandError),
    /// This node cannot serve the call and knows who can.
    #[error("not the leader; the leader is node {leader_id} at {leader_addr}")]
    NotLeader {
        /// Current leader's id.
        leader_id: NodeId,
        /// Current leader's client address.
        leader_addr: String,
    },
    /// No leader is known or reachable right now; retry later.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// Bad input caught before it reached the log.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// Local storage or an internal invariant failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Whether the caller may retry the same request (with the same request
    /// id) elsewhere or later.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::NotLeader { .. } | Error::Unavailable(_))
    }
}
