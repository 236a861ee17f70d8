//! The low-level cluster calls of [`Client`]: node status and membership
//! changes, one RPC each.

use super::{Client, NodeStatus};
use crate::error::Error;
use crate::pb;
use crate::pb::cluster_client::ClusterClient;

impl Client {
    /// The view of the node this client currently talks to.
    pub async fn status(&self) -> Result<NodeStatus, Error> {
        rpc!(self, ClusterClient, status, pb::StatusRequest {})
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
}
