//! A raftlock node: the replica plus the client API listener. This is what
//! `raftlock serve` runs and what an application embeds. This file holds
//! the running node's handle — what it serves, how a client in its process
//! reaches it, how it stops.
//!
//! # Layout
//! - `builder`: [`NodeBuilder`], which checks the settings, binds the
//!   listeners and starts everything.
//! - `client_listener`: the client API's listener.
//! - `error`: why a node did not start, or found no leader.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

mod builder;
mod client_listener;
mod error;

/// The log target of what a node says of its own start and stop, the same
/// from every file of this module (a Python app's logger `raftlock.node`).
const LOG_TARGET: &str = module_path!();

use crate::Config;
pub use builder::NodeBuilder;
pub use error::{NoLeader, NodeError};
use raftlock_api::{NodeAccess, NodeAccessTls};
use raftlock_raft::storage::state::LockState;
use raftlock_raft::transport::tls::node_dns_name;
pub use raftlock_raft::NodeStatus;
use raftlock_raft::RaftNode;
use raftlock_raft::Replica;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::serving::{Serving, ServingTasks};

/// A running node. [`shutdown`](Node::shutdown) stops it in order; dropping
/// it instead aborts its tasks, like a crash (the data on disk stays).
pub struct Node {
    raft: RaftNode,
    /// The lock-serving layer on the replica, and its tasks.
    serving: Arc<Serving>,
    serving_tasks: ServingTasks,
    client_addr: SocketAddr,
    /// Tells the client listener to stop.
    stop: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
    /// Tells the admin listener to stop: the last thing a stop does, so
    /// health checks answer 503 until then.
    admin_stop: watch::Sender<bool>,
    /// The admin listener's address and task, if it runs.
    admin: Option<(SocketAddr, JoinHandle<()>)>,
}

impl Node {
    /// A builder with default settings (`raftlock serve` without flags).
    pub fn builder() -> NodeBuilder {
        NodeBuilder::default()
    }

    /// Starts a node with `config`.
    pub async fn start(config: Config) -> Result<Node, NodeError> {
        Node::builder().config(config).start().await
    }

    /// This node's Raft id.
    pub fn id(&self) -> u64 {
        self.raft.inner().id()
    }
    /// The bound client API address.
    pub fn client_addr(&self) -> SocketAddr {
        self.client_addr
    }
    /// The bound peer API address.
    pub fn peer_addr(&self) -> SocketAddr {
        self.raft.peer_addr()
    }
    /// The bound admin listener address, if it runs.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(|(addr, _)| *addr)
    }
    /// Whether both listeners serve TLS.
    pub fn tls_enabled(&self) -> bool {
        self.raft.tls().is_some()
    }
    /// What a client in this process needs to reach this node as the
    /// application that embeds it (an admin of its cluster): the address,
    /// the TLS material (trust the cluster CA, expect this node's
    /// certificate `node-ID.raftlock`, present the node's own), the admin
    /// credential when peers use a join token. The client crate makes a
    /// client from it; any node accepts any call and forwards to the
    /// leader, so talking to the local one is enough.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let node = raftlock::Node::start(raftlock::Config::default()).await?;
    /// let client = raftlock_client::Client::for_node(node.access()).await?;
    /// let lease = client.grant_lease(std::time::Duration::from_secs(10)).await?;
    /// # let _ = lease;
    /// # Ok(())
    /// # }
    /// ```
    pub fn access(&self) -> NodeAccess {
        NodeAccess {
            endpoint: self.client_endpoint(),
            tls: self.raft.tls().map(|tls| NodeAccessTls {
                ca_pem: tls.ca_pem().to_vec(),
                cert_pem: tls.cert_pem().to_vec(),
                key_pem: tls.key_pem().to_vec(),
                server_name: node_dns_name(self.id()),
            }),
            token: self.admin_token(),
        }
    }

    /// The cluster's admin credential as a bearer token (what
    /// [`access`](Self::access) carries), for a client of this process that
    /// makes operator calls; `None` when peers use mTLS (the node
    /// certificate is the admin identity then) or `--insecure`.
    pub fn admin_token(&self) -> Option<String> {
        self.raft.admin_credential().map(|c| c.to_bearer())
    }

    /// Where a client in this process reaches this node: the bound client
    /// address, over loopback when bound to every interface.
    pub fn client_endpoint(&self) -> String {
        let mut addr = self.client_addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(match addr {
                SocketAddr::V4(_) => Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => Ipv6Addr::LOCALHOST.into(),
            });
        }
        addr.to_string()
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> NodeStatus {
        self.raft.inner().status()
    }

    /// The id of the cluster this node belongs to, once it knows one.
    pub fn cluster_id(&self) -> Option<uuid::Uuid> {
        self.raft.inner().cluster_id()
    }

    /// This node's metrics in the Prometheus text format, as `/metrics` on
    /// the admin listener serves them.
    pub fn metrics_text(&self) -> String {
        self.serving.scrape_metrics()
    }

    /// Runs `f` on the lock state this node has applied, without a read
    /// barrier: what this one node knows now (a client's local read).
    pub fn read_state<R>(&self, f: impl FnOnce(&LockState) -> R) -> R {
        self.raft.inner().read_state(f)
    }

    /// Resolves with the reason if this node's Raft core stops on its own
    /// (a storage failure, a broken invariant). The node has then stopped
    /// serving; an application embedding it should shut it down and exit or
    /// restart it. `raftlock serve` exits non-zero.
    pub async fn failed(&self) -> String {
        self.raft.inner().failed().await
    }

    /// Resolves with the reason once this node learns it was removed from
    /// the cluster (`cluster remove`): it has then stopped serving, and its
    /// data dir can be deleted. `raftlock serve` exits 0.
    pub async fn removed(&self) -> String {
        self.raft.inner().removed().await
    }

    /// Stops the Raft core behind the node's back, as a storage failure
    /// would: for tests of what [`Node::failed`] promises.
    #[doc(hidden)]
    pub async fn stop_raft_core(&self) {
        self.raft.inner().stop_core().await
    }

    /// The replica, for the serving layer.
    pub(crate) fn inner(&self) -> &Arc<Replica> {
        self.raft.inner()
    }

    /// Waits until this node knows a leader, up to `timeout`.
    pub async fn wait_for_leader(&self, timeout: Duration) -> Result<u64, NoLeader> {
        self.inner()
            .wait_for_leader(timeout)
            .await
            .ok_or(NoLeader { waited: timeout })
    }

    /// Stops accepting client calls, lets in-flight ones finish (up to 5 s),
    /// then stops Raft and flushes storage. The admin listener stays up
    /// until the end, its health checks answering 503 "the node is
    /// shutting down", so a probe sees a stopping node rather than a
    /// refused connection.
    pub async fn shutdown(mut self) {
        self.inner().mark_stopping();
        let _ = self.stop.send(true);
        if let Some(server) = self.server.take() {
            if tokio::time::timeout(Duration::from_secs(5), server)
                .await
                .is_err()
            {
                tracing::warn!("client calls still running after 5 s; stopping anyway");
            }
        }
        self.serving_tasks.stop().await;
        let id = self.id();
        self.raft.shutdown().await;
        self.stop_admin().await;
        tracing::info!(id, "node stopped");
    }
}

impl Node {
    /// Stops at once, without draining calls: as close to a crash as a node
    /// sharing its process with others gets. The data dir keeps whatever
    /// was flushed, which is everything Raft was told is durable.
    pub async fn kill(mut self) {
        self.inner().mark_stopping();
        if let Some(server) = self.server.take() {
            server.abort();
        }
        if let Some((_, admin)) = self.admin.take() {
            admin.abort();
        }
        self.serving_tasks.abort();
        self.raft.shutdown().await;
    }

    /// Stops the admin listener, waiting up to 2 s for a page or scrape in
    /// progress.
    async fn stop_admin(&mut self) {
        let _ = self.admin_stop.send(true);
        if let Some((_, admin)) = self.admin.take() {
            let abort = admin.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), admin)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(server) = &self.server {
            server.abort();
        }
        if let Some((_, admin)) = &self.admin {
            admin.abort();
        }
    }
}
