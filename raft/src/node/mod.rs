//! A running replica: the handle on what [`RaftNode::start`] put
//! together, which serves the layer above and stops all of it in order.
//!
//! - `start`: the start sequence — checks, stores, network, openraft, the
//!   node's tasks, a new cluster's initialization.
//! - `start_checks`: what must hold before Raft starts (no other live
//!   process with this id, no rolled-back dir); [`rollback`]: the latter,
//!   asked of the peers.
//! - `peer_listener`: the peer API's listener (connection bounds, TLS).
//! - [`peer_service`]: the server side of the peer API.
//! - `raft_watch`: logs and counts what openraft's metrics show change, and
//!   reports a Raft core that stopped on its own.
//! - [`step_down`]: a leader that cannot keep its lease gives way.

mod peer_listener;
pub mod peer_service;
mod raft_watch;
pub mod rollback;
mod start;
mod start_checks;
mod start_error;
pub mod step_down;

pub use start_error::{StartError, StartIo};

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::peer::admin_credential::AdminCredential;
use crate::replica::Replica;
use crate::transport::tls::NodeTls;

/// A running replica. Dropping it without [`shutdown`](Self::shutdown)
/// aborts its tasks, like a crash.
pub struct RaftNode {
    inner: Arc<Replica>,
    /// The log store, to sync and record a clean shutdown's floor once Raft
    /// has stopped.
    log: raftlock_storage::LogStore,
    peer_addr: std::net::SocketAddr,
    /// The certificate files, read at start; `None`: plain text.
    tls: Option<NodeTls>,
    /// What admin clients present (derived from the peer secret); `None`
    /// when peers use mTLS or `--insecure`.
    admin_credential: Option<AdminCredential>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// Snapshot builds still holding the storage, waited out on shutdown.
    builds: raftlock_storage::sm_store::builds::Builds,
}

impl RaftNode {
    /// Shared state for the serving layer.
    pub fn inner(&self) -> &Arc<Replica> {
        &self.inner
    }

    /// The bound peer address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.peer_addr
    }

    /// The certificate files this node serves with; `None`: plain text.
    pub fn tls(&self) -> Option<&NodeTls> {
        self.tls.as_ref()
    }

    /// The admin credential derived from this cluster's secret; `None`
    /// when the cluster has none (mTLS peers, or `--insecure`).
    pub fn admin_credential(&self) -> Option<&AdminCredential> {
        self.admin_credential.as_ref()
    }

    /// Stops in order: the node's tasks are told to stop, then Raft, the
    /// peer listener, and sled is flushed when its last handle drops. The
    /// applied stream ends when the state machine is gone.
    pub async fn shutdown(&mut self) {
        if self.inner.fatal.borrow().is_some() {
            // Before any handle on the storage drops: see `abandon`.
            self.log.abandon();
        }
        self.inner.mark_stopping();
        let _ = self.stop.send(true);
        let raft_stopped = match self.inner.raft.shutdown().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("raft shutdown: {e}");
                false
            }
        };
        let failure = self.inner.fatal.borrow().clone();
        match (raft_stopped, failure) {
            // Only once Raft wrote its last entry: the floor records the
            // log's exact end as of a clean stop.
            (true, None) => match tokio::time::timeout(CLOSE_DEADLINE, self.log.close()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!("cannot record a clean shutdown in the data dir: {e}")
                }
                Err(_) => tracing::error!(
                    "the data dir's last sync did not finish within {CLOSE_DEADLINE:?} \
                     (a failing or full disk?); stopping without recording a clean shutdown"
                ),
            },
            // Storage that failed may never finish a sync (sled waits for
            // ever after a failed write): no clean-shutdown mark, no wait.
            (_, Some(why)) => tracing::error!(
                "stopping without recording a clean shutdown, the node failed: {why}"
            ),
            (false, None) => {}
        }
        for task in self.tasks.drain(..) {
            // Each watches `stop`.
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        // A snapshot build runs on past Raft's stop and holds the database
        // until it ends: the data dir is in use until then.
        if !self.builds.wait_idle(CLOSE_DEADLINE).await {
            tracing::warn!(
                "a snapshot build still holds the data dir after {CLOSE_DEADLINE:?}; stopping without waiting for it"
            );
        }
    }
}

/// How long a clean stop waits for the data dir's last sync.
const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

impl Drop for RaftNode {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Stops serving once the node learns it was removed; runs until `stop`.
pub(crate) async fn stop_when_removed(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    tokio::select! {
        why = node.removal.wait() => {
            tracing::warn!(node = node.id, "removed from the cluster: {why}; this node stops serving");
            node.mark_stopping();
        }
        _ = stop.changed() => {}
    }
}
