//! Replication for raftlock: openraft wired to the sled stores, a tonic peer
//! transport, and forwarding to the leader. It knows nothing of leases,
//! locks or grants: the serving layer above (`raftlock::serving`) proposes
//! commands through [`Replica`] and reads what was applied.
//!
//! # Layout
//!
//! - [`config`]: [`Config`], the one settings struct behind flags, env, config
//!   files and the embedded builder.
//! - [`node`]: [`RaftNode`], a running replica: start, write, linearizable
//!   read barrier, keep-alive, membership, shutdown.
//! - [`network`]: the openraft network over the peer gRPC service, with a
//!   [`LinkFilter`] tests use to cut links.
//! - [`peer_service`]: the server side of the peer API.
//! - [`snapshot_transfer`]: snapshots cut into pieces by the leader and put
//!   back together by the follower.
//! - [`peer_guard`]: the envelope on every peer message (cluster id, sender,
//!   receiver, boot count, incarnation) and its checks.
//! - [`peer_auth`]: the cluster secret (join token) and the HMAC tag it
//!   puts on every peer message and reply, without a CA.
//! - [`peer_checks`]: bounds on terms and indexes in Raft messages.
//! - [`peer_probe`]: who answers at a peer address (`Identify`).
//! - [`bounded_listener`]: the connection budget of both listeners
//!   (connections in all and per address, handshake and idle timeouts).
//! - [`message_codec`]: the gRPC codec of both APIs (a malformed message is
//!   `INVALID_ARGUMENT`).
//! - [`tls`]: [`NodeTls`], the certificate files read at start, the
//!   rustls settings of both listeners and of peer channels, and the names
//!   (`node-N.raftlock`, `raftlock:client:NAME`) certificates carry;
//!   [`tls_acceptor`]: the listeners' TLS handshakes, and the WARN naming a
//!   peer whose certificate is refused (expired, not valid yet, ...).
//! - [`forward`]: what a follower hands to the leader and what comes back.
//! - [`leader_calls`]: calls only the leader serves, and forwarding them;
//!   [`leader_service`]: the hook through which the layer above serves its
//!   own leader-only calls (a lease's renewal);
//!   [`membership_checks`]: what a typed membership change must find first
//!   (a new learner answering as itself, a learner up and caught up).
//! - [`removal`]: noticing this node was removed, so it stops.
//! - [`proposer`]: group commit, many client writes per Raft entry.
//! - [`read_index`]: one leadership round shared by concurrent reads.
//! - [`replica`]: [`Replica`], the one handle `src/` has on a running
//!   replica: write (propose and get the applied result), read barrier,
//!   the applied stream, leadership changes, membership, status.
//! - [`clock`]: the wall clock, read in one place.
//! - [`metrics`]: the node's Prometheus metrics; [`scrape`] sets the state
//!   gauges when they are read; `raft_watch` counts elections, leader
//!   changes and snapshots and logs them.
//! - [`health`]: liveness and readiness, for `/healthz`, `/readyz` and the
//!   gRPC health service.
//! - [`error`]: this crate's error enum; `raft_errors` maps openraft's
//!   errors to it, in one place.

pub mod bounded_listener;
pub mod clock;
pub mod config;
pub mod error;
pub mod forward;
pub mod health;
pub mod leader_calls;
pub mod leader_service;
mod link_filter;
pub mod membership_checks;
pub mod message_codec;
pub mod metrics;
pub mod network;
pub mod node;
pub mod peer_auth;
pub mod peer_checks;
pub mod peer_guard;
pub mod peer_probe;
pub mod peer_service;
pub mod proposer;
mod raft_errors;
mod raft_watch;
pub mod read_index;
pub mod removal;
pub mod replica;
pub mod rollback;
pub mod scrape;
pub mod snapshot_transfer;
mod start_checks;
pub mod tls;
pub mod tls_acceptor;

/// Generated peer API.
pub mod pb {
    tonic::include_proto!("raftlock.peer.v1");
}

pub use config::{Config, ConfigError, InitialMember};
pub use error::Error;
pub use health::Health;
pub use leader_service::LeaderService;
pub use metrics::{LockGauges, NodeMetrics};
pub use network::LinkFilter;
pub use node::{NodeStatus, RaftNode};
pub use raftlock_storage as storage;

/// The openraft handle, over raftlock's type configuration and state
/// machine.
pub type Raft = openraft::Raft<raftlock_storage::TypeConfig, raftlock_storage::StateMachineStore>;
pub use replica::{Leadership, Replica};
pub use tls::NodeTls;
