//! Why a [`Node`](super::Node) did not start, with the cause as its source.

use raftlock_raft::node::StartError;
use raftlock_raft::ConfigError;

/// Why a node did not start. Nothing is left running when it is returned.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// Settings that cannot work together.
    #[error("invalid settings: {0}")]
    Config(#[from] ConfigError),
    /// The auth file cannot be read, or says something that cannot work.
    #[error("auth file {path}: {source}")]
    AuthFile {
        path: String,
        /// What is wrong with it.
        source: crate::auth::policy_error::AuthFileError,
    },
    /// A listener (`client` or `admin`) could not bind or learn its address.
    #[error("cannot listen on {which} address {addr}: {source}")]
    Listen {
        which: &'static str,
        addr: String,
        #[source]
        source: std::io::Error,
    },
    /// Replication did not start: the data dir, TLS files, peer
    /// authentication, the start checks against the other members.
    #[error(transparent)]
    Replication(#[from] StartError),
    /// The serving layer did not start on the replica.
    #[error("serving layer: {0}")]
    Serving(#[source] raftlock_raft::Error),
}

/// [`Node::wait_for_leader`](super::Node::wait_for_leader) ran out of
/// time: this node knew no leader for all of `waited`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no leader after {waited:?}")]
pub struct NoLeader {
    /// How long it waited.
    pub waited: std::time::Duration,
}
