//! The one hook the layer above has on the leader: calls only the leader
//! can serve that replication does not understand (a lease's renewal on the
//! leader's timer). A follower forwards them as bytes over the peer API;
//! the leader hands the bytes to the service and the answer back.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::Error;

/// Serves the layer above's leader-only calls. Registered once per node
/// with [`Replica::serve_leader_calls`](crate::Replica::serve_leader_calls).
pub trait LeaderService: Send + Sync + 'static {
    /// Serves `call` on this node, which led when the call arrived. The
    /// service checks leadership itself where its answer depends on it
    /// (answering [`Error::NotLeader`] or [`Error::Unavailable`]), since
    /// leadership may be lost meanwhile.
    fn serve(&self, call: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, Error>>;
}

/// Where a node keeps its service: set once, after start.
pub(crate) type LeaderServiceSlot = std::sync::OnceLock<Arc<dyn LeaderService>>;
