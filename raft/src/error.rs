//! The replication layer's errors.

use serde::{Deserialize, Serialize};

use raftlock_storage::{CommandError, NodeId};

/// Why a replicated call did not produce an answer.
#[non_exhaustive]
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
    /// A wait ran past its deadline and was cancelled.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A wait ended without a grant (cancelled, lease ended, force-released).
    #[error("{0}")]
    WaitEnded(String),
    /// Bad input caught before it reached the log.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// The data dir cannot be used (damaged, lost state, another node's or
    /// cluster's): the node does not start. The message names the file,
    /// the problem and what to do.
    #[error("{0}")]
    Storage(String),
    /// A TLS certificate, key or CA file cannot be used: the node does not
    /// start. The message names the setting, the file and the problem.
    #[error("{0}")]
    Tls(String),
    /// Peer authentication cannot be set up as configured (no join token
    /// for a cluster of several nodes, another cluster's token, an
    /// unreadable token file): the node does not start.
    #[error("{0}")]
    PeerAuth(String),
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
