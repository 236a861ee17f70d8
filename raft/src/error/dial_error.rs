//! [`DialError`]: why no endpoint can be made for a peer address.

use raftlock_storage::NodeId;

use super::Source;

/// Why node `target` at `addr` cannot be dialed; nothing was sent.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DialError {
    /// The address is not one a connection can be made to.
    #[error("bad peer address {addr}: {source}")]
    BadAddress {
        /// The address given.
        addr: String,
        /// The URI parser's error.
        source: Source,
    },
    /// This node's TLS settings make no client config for the node.
    #[error("TLS settings for node {target} at {addr}: {source}")]
    Tls {
        /// The node dialed.
        target: NodeId,
        /// Its address.
        addr: String,
        /// The transport's error.
        source: Source,
    },
}
