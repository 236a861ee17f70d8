//! The low-level cluster calls of [`Client`]: node status, membership
//! changes and backups, one RPC each.

use super::{Client, NodeStatus};
use crate::error::Error;
use crate::pb;
use crate::pb::cluster_client::ClusterClient;

impl Client {
    /// The view of the node this client currently talks to.
    pub async fn status(&self) -> Result<NodeStatus, Error> {
        rpc!(self, ClusterClient, status, pb::StatusRequest::default())
    }

    /// Adds a learner; answers the members afterwards.
    pub async fn add_learner(
        &self,
        id: u64,
        peer_addr: &str,
        client_addr: &str,
    ) -> Result<Vec<pb::Member>, Error> {
        let req = pb::AddLearnerRequest {
            id,
            peer_addr: peer_addr.into(),
            client_addr: client_addr.into(),
        };
        Ok(rpc!(self, ClusterClient, add_learner, req)?.members)
    }

    /// Makes a learner a voter.
    pub async fn promote(&self, id: u64) -> Result<Vec<pb::Member>, Error> {
        Ok(rpc!(self, ClusterClient, promote, pb::PromoteRequest { id })?.members)
    }

    /// Removes a member.
    pub async fn remove_member(&self, id: u64) -> Result<Vec<pb::Member>, Error> {
        Ok(rpc!(self, ClusterClient, remove, pb::RemoveRequest { id })?.members)
    }

    /// A backup of the whole lock state, as the bytes of a backup file
    /// (`raftlock snapshot save`): a linearizable read of the leader's
    /// state, or the answering node's own with `local`. Needs the admin
    /// role when the cluster authenticates clients. A backup cut short is
    /// an error, never a shorter file.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let bytes = client.backup(false).await?;
    /// std::fs::write("raftlock.backup", bytes)?;
    /// # Ok(()) }
    /// ```
    pub async fn backup(&self, local: bool) -> Result<Vec<u8>, Error> {
        self.inner
            .endpoints
            .call(
                self.deadline,
                |ch: super::endpoints::Transport| async move {
                    let mut chunks = ClusterClient::new(ch)
                        .backup(pb::BackupRequest { local })
                        .await?
                        .into_inner();
                    let mut bytes = Vec::new();
                    let mut total = None;
                    while let Some(chunk) = chunks.message().await? {
                        total.get_or_insert(chunk.total_bytes);
                        bytes.extend_from_slice(&chunk.data);
                    }
                    match total {
                        Some(total) if total == bytes.len() as u64 => Ok(bytes),
                        _ => Err(tonic::Status::unavailable(format!(
                            "the backup stream ended after {} of {} bytes",
                            bytes.len(),
                            total.unwrap_or(0)
                        ))),
                    }
                },
            )
            .await
    }
}
