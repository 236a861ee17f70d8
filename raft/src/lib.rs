//! Replication for raftlock: openraft wired to the sled stores, a tonic peer
//! transport, and forwarding to the leader. It knows nothing of leases,
//! locks or grants: the serving layer above (`raftlock::serving`) proposes
//! commands through [`Replica`] and reads what was applied.
//!
//! # Layout
//!
//! Folders by concern; each depends only on those listed after it.
//!
//! - [`node`]: [`RaftNode`], a running replica: start (with its checks
//!   against a second live process and a rolled-back dir), the peer
//!   listener and its service, shutdown in order.
//! - [`replica`]: [`Replica`], the one handle the layer above has: write,
//!   read barrier, applied stream, [`Leadership`], the leader-call hook,
//!   membership, status; the proposer (group commit) and read-index rounds.
//! - [`membership`]: checks before a membership change, and noticing that
//!   this node was removed.
//! - [`peer`]: the peer transport and its guards: the openraft network, the
//!   envelope ([`peer::guard`]) and cluster-secret tags ([`peer::auth`]) on
//!   every message, bounds on terms and indexes ([`peer::checks`]), snapshot
//!   pieces, what a follower forwards to the leader, what this node saw of
//!   each peer.
//! - [`transport`]: what both listeners share: connection budgets, TLS
//!   ([`NodeTls`]), the gRPC codec.
//! - [`metrics`]: the node's Prometheus metrics.
//! - [`config`]: [`Config`], the settings struct behind flags, env, config
//!   files and the embedded builder.
//! - [`leader_service`], [`clock`], [`error`]: the layer above's leader-only
//!   call hook, the wall clock, this crate's error enum.

pub mod clock;
pub mod config;
pub mod error;
pub mod leader_service;
pub mod membership;
pub mod metrics;
pub mod node;
pub mod peer;
pub mod replica;
pub mod source;
pub mod transport;

/// Generated peer API.
pub mod pb {
    tonic::include_proto!("raftlock.peer.v1");
}

pub use config::{Config, ConfigError, InitialMember};
pub use error::Error;
pub use leader_service::LeaderService;
pub use metrics::NodeMetrics;
pub use node::RaftNode;
#[cfg(feature = "test-util")]
pub use peer::link_filter::LinkFilter;
pub use raftlock_storage as storage;
pub use replica::health::Health;

/// The openraft handle, over raftlock's type configuration and state
/// machine.
pub type Raft = openraft::Raft<raftlock_storage::TypeConfig, raftlock_storage::StateMachineStore>;
pub use replica::{Leadership, NodeStatus, Replica};
pub use transport::tls::NodeTls;
