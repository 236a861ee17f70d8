//! The health call of [`Client`]: a node's status after a read barrier,
//! what `raftlock endpoint health` asks every endpoint.

use super::{Client, NodeStatus};
use crate::error::Error;
use crate::pb;
use crate::pb::cluster_client::ClusterClient;

impl Client {
    /// The view of the node this client talks to, answered only after it
    /// confirmed through the leader that a quorum still follows it and it
    /// applied everything committed before the call (a linearizable read).
    /// Fails with [`Error::Unavailable`] when it cannot: no leader, or a
    /// leader without a quorum.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let status = client.linearizable_status().await?;
    /// println!("node {} serves linearizable reads (leader {})", status.node_id, status.leader_id);
    /// # Ok(()) }
    /// ```
    pub async fn linearizable_status(&self) -> Result<NodeStatus, Error> {
        let req = pb::StatusRequest { linearizable: true };
        rpc!(self, ClusterClient, status, req)
    }
}
