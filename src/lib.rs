//! raftlock: a lock service that stays correct when machines fail.
//!
//! A cluster of one, three or five nodes replicates leases, locks, their
//! owners, FIFO waiters and fencing tokens through Raft (openraft), keeps them
//! on disk with sled, and serves etcd-like lease, lock and election calls over
//! gRPC (`raftlock.v1`).
//!
//! An application embeds a node and talks to it with the client crate
//! (`raftlock-client`). The library does not depend on it, nor on the
//! command line (`raftlock-cli`, the `raftlock` binary, which is a client
//! too); all of them share the wire types of the `raftlock-api` crate.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let node = raftlock::Node::start(raftlock::Config::default()).await?;
//! let client = raftlock_client::Client::for_node(node.access()).await?;
//! let guard = client.lock("jobs/nightly").acquire().await?; // session lease kept alive for you
//! let lost = guard.lost();
//! tokio::select! {
//!     err = lost => eprintln!("stop: someone else may hold the lock now ({err})"),
//!     _ = write_with_fence(guard.fence()) => guard.release().await?,
//! }
//! # Ok(()) }
//! # async fn write_with_fence(_fence: u64) {}
//! ```
//!
//! # Layout
//!
//! - [`node`]: [`Node`], a running node (replica + client API listener), for
//!   `raftlock serve` and for embedding in an application.
//! - [`service`]: the gRPC services Lease, Lock, Election, Coordination
//!   and Cluster: each request is checked into one form (a `TryFrom` per
//!   call, with the state machine's own bounds, `Command::check`), handed to
//!   the serving layer, and its answer mapped back.
//! - [`serving`]: the lock-serving layer: grant waits, the leader's lease
//!   and lock-delay timers and their tasks, routing of applied events, a
//!   lease's leader-only calls. It reaches replication only through
//!   `raftlock_raft::Replica`'s methods.
//! - [`auth`]: who a client call comes from (token or certificate) and
//!   what its roles let it touch; the auth file format in [`auth::policy`].
//! - [`status`]: the one mapping from internal errors to gRPC statuses.
//! - [`observe`]: the admin listener (`/metrics`, `/healthz`, `/readyz`,
//!   the status page), the gRPC health service and per-call metrics.
//! - [`config_layers`]: a node's [`Config`] filled in layers (defaults, a
//!   TOML file, then overlays such as `raftlock serve`'s flags and
//!   `RAFTLOCK_*` variables), merged key by key by serde, never by hand.
//! - [`duration`]: durations as the command line writes them (`500ms`,
//!   `10s`, `2m`), also used by the chaos tool.
//! - [`pb`]: the generated `raftlock.v1` API (the messages of the
//!   `raftlock-api` crate and the server stubs generated here);
//!   [`NodeAccess`]: what a client in this process needs to reach a node
//!   ([`Node::access`]).
//!
//! Below this crate: `raftlock_raft` (replication: openraft, the peer
//! transport, forwarding, membership; nothing of leases or locks) and
//! `raftlock_storage` (the pure lock state machine and its sled
//! persistence). Dependencies point down only: services → serving →
//! replication → storage.

// The services' futures nest the serving layer's, which nest replication's
// (forwarding, the leader's own path, openraft's calls): deeper than the
// compiler's default layout depth of 128.
#![recursion_limit = "256"]

pub mod auth;
pub mod config;
pub mod config_layers;
pub mod duration;
pub mod node;
pub mod observe;
pub mod pb;
pub mod service;
pub mod serving;
pub mod status;

pub use config::{Config, ServingConfig};
pub use config_layers::ConfigLayers;
pub use node::{NoLeader, Node, NodeBuilder, NodeError};
pub use raftlock_api::NodeAccess;
pub use raftlock_raft::peer::admin_credential::AdminCredential;
pub use raftlock_raft::peer::auth::ClusterKey;
pub use raftlock_raft::Config as ReplicationConfig;
/// Links a test has cut (feature `test-util`; not in a default build).
#[cfg(feature = "test-util")]
pub use raftlock_raft::LinkFilter;
pub use raftlock_raft::{ConfigError, InitialMember};
