//! Replication for raftlock: openraft wired to the sled stores, a tonic peer
//! transport, forwarding to the leader, and the leader-side lease timer.
//!
//! # Layout
//!
//! - [`config`]: [`Config`], the one settings struct behind flags, env, config
//!   files and the embedded builder.
//! - [`node`]: [`RaftNode`], a running replica: start, write, linearizable
//!   read barrier, keep-alive, membership, shutdown.
//! - [`network`]: the openraft network over the peer gRPC service; with
//!   the `test-util` feature, a `LinkFilter` tests use to cut links.
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
//!   [`membership_checks`]: what a typed membership change must find first
//!   (a new learner answering as itself, a learner up and caught up).
//! - [`removal`]: noticing this node was removed, so it stops.
//! - [`proposer`]: group commit, many client writes per Raft entry.
//! - [`read_index`]: one leadership round shared by concurrent reads.
//! - [`lease_timer`]: deadlines of every lease, tracked by the leader only;
//!   [`lock_delay_timer`]: the same for lock-delays.
//! - `leader_tasks`: starts and stops those timers as leadership comes and
//!   goes, and proposes the expiries and delay ends they find due.
//! - [`replica`]: [`Replica`], the one handle `src/` has on a running
//!   replica; [`grant_wait`] is its Acquire and Campaign: propose, then hold
//!   the call open until the grant is applied here.
//! - [`event_router`]: routes applied events to callers waiting for a grant,
//!   the lease timer and election observers.
//! - [`metrics`]: the node's Prometheus metrics; [`scrape`] sets the state
//!   gauges when they are read; `raft_watch` counts elections, leader
//!   changes and snapshots and logs them.
//! - [`health`]: liveness and readiness, for `/healthz`, `/readyz` and the
//!   gRPC health service.
//! - [`error`]: this crate's error enum; `raft_errors` maps openraft's
//!   errors to it, in one place.

pub mod bounded_listener;
pub mod config;
pub mod error;
pub mod event_router;
pub mod forward;
pub mod grant_wait;
pub mod health;
pub mod leader_calls;
mod leader_tasks;
pub mod lease_timer;
mod link_filter;
pub mod lock_delay_timer;
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
#[cfg(feature = "test-util")]
pub use link_filter::LinkFilter;
pub use metrics::NodeMetrics;
pub use node::{NodeStatus, RaftNode};
pub use raftlock_storage as storage;

/// The openraft handle, over raftlock's type configuration and state
/// machine.
pub type Raft = openraft::Raft<raftlock_storage::TypeConfig, raftlock_storage::StateMachineStore>;
pub use replica::Replica;
pub use tls::NodeTls;
