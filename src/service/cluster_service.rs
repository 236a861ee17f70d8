//! The Cluster service: status, membership changes and backups.

use std::pin::Pin;
use std::sync::Arc;

use tokio_stream::Stream;

use raftlock_raft::error::{Internal, Problem, Step, ValidationError};
use raftlock_raft::Replica;
use raftlock_storage::NodeAddr;
use tonic::{Request, Response as Reply, Status};

use crate::auth::Auth;
use crate::pb;
use crate::status::to_status;

/// Serves `raftlock.v1.Cluster`.
pub struct ClusterService {
    pub(crate) node: Arc<Replica>,
    pub(crate) auth: Auth,
}

impl ClusterService {
    fn members(&self) -> Vec<pb::Member> {
        self.node
            .status()
            .members
            .into_iter()
            .map(|(id, (addr, voter))| pb::Member {
                id,
                peer_addr: addr.peer_addr,
                client_addr: addr.client_addr,
                voter,
            })
            .collect()
    }

    fn answer(&self, revision: u64) -> Reply<pb::MembershipResponse> {
        Reply::new(pb::MembershipResponse {
            members: self.members(),
            revision,
        })
    }
}

/// Bytes per backup chunk: well under every message size limit.
const BACKUP_CHUNK_BYTES: usize = 1 << 20;

type BackupStream = Pin<Box<dyn Stream<Item = Result<pb::BackupChunk, Status>> + Send>>;

fn node_id(id: u64) -> Result<u64, Status> {
    if id == 0 {
        let problem = Problem::AtLeast { min: 1 };
        return Err(to_status(ValidationError::field("node id", problem).into()));
    }
    Ok(id)
}

#[tonic::async_trait]
impl pb::cluster_server::Cluster for ClusterService {
    async fn status(
        &self,
        req: Request<pb::StatusRequest>,
    ) -> Result<Reply<pb::StatusResponse>, Status> {
        self.auth.authenticate(&req)?;
        if req.get_ref().linearizable {
            // The read barrier fails (UNAVAILABLE) when the leader cannot
            // confirm a quorum within `leader_wait`: a health check hears
            // the truth instead of this node's last view.
            self.node.read_barrier().await.map_err(to_status)?;
        }
        let s = self.node.status();
        let unready_reason = self.node.readiness().reason;
        Ok(Reply::new(pb::StatusResponse {
            node_id: s.id,
            role: s.role.to_string(),
            term: s.term,
            leader_id: s.leader.unwrap_or(0),
            last_log_index: s.last_log_index,
            applied_index: s.applied_index,
            snapshot_index: s.snapshot_index,
            members: self.members(),
            unready_reason,
        }))
    }

    async fn add_learner(
        &self,
        req: Request<pb::AddLearnerRequest>,
    ) -> Result<Reply<pb::MembershipResponse>, Status> {
        self.auth
            .authenticate(&req)?
            .check_admin("changing the membership")?;
        let req = req.into_inner();
        let id = node_id(req.id)?;
        if req.peer_addr.is_empty() || req.client_addr.is_empty() {
            let problem = Problem::Unset { hint: None };
            let e = ValidationError::field("peer_addr and client_addr", problem);
            return Err(to_status(e.into()));
        }
        let addr = NodeAddr {
            peer_addr: req.peer_addr,
            client_addr: req.client_addr,
        };
        let revision = self.node.add_learner(id, addr).await.map_err(to_status)?;
        Ok(self.answer(revision))
    }

    async fn promote(
        &self,
        req: Request<pb::PromoteRequest>,
    ) -> Result<Reply<pb::MembershipResponse>, Status> {
        self.auth
            .authenticate(&req)?
            .check_admin("changing the membership")?;
        let id = node_id(req.into_inner().id)?;
        let revision = self.node.promote(id).await.map_err(to_status)?;
        Ok(self.answer(revision))
    }

    async fn remove(
        &self,
        req: Request<pb::RemoveRequest>,
    ) -> Result<Reply<pb::MembershipResponse>, Status> {
        self.auth
            .authenticate(&req)?
            .check_admin("changing the membership")?;
        let id = node_id(req.into_inner().id)?;
        let revision = self.node.remove(id).await.map_err(to_status)?;
        Ok(self.answer(revision))
    }

    type BackupStream = BackupStream;

    async fn backup(
        &self,
        req: Request<pb::BackupRequest>,
    ) -> Result<Reply<Self::BackupStream>, Status> {
        self.auth
            .authenticate(&req)?
            .check_admin("taking a backup (it holds every lock and lease)")?;
        let backup = self
            .node
            .backup(req.into_inner().local)
            .await
            .map_err(to_status)?;
        let index = backup.index;
        let bytes = tokio::task::spawn_blocking(move || backup.encode())
            .await
            .map_err(|e| to_status(Internal::failed(Step::BackupWorker, e).into()))?
            .map_err(|e| to_status(Internal::failed(Step::EncodeBackup, e).into()))?;
        let total_bytes = bytes.len() as u64;
        let chunks: Vec<Result<pb::BackupChunk, Status>> = bytes
            .chunks(BACKUP_CHUNK_BYTES)
            .enumerate()
            .map(|(i, data)| {
                Ok(pb::BackupChunk {
                    data: data.to_vec(),
                    total_bytes: if i == 0 { total_bytes } else { 0 },
                    index: if i == 0 { index } else { 0 },
                })
            })
            .collect();
        Ok(Reply::new(Box::pin(tokio_stream::iter(chunks))))
    }
}
