//! The Coordination service: holds found again by their owner token on
//! leases of their own, read-write locks with write intents, election
//! records and schedule fires (grelmicro's coordination backends).

use std::sync::Arc;

use crate::serving::Serving;
use raftlock_storage::state::ElectionRecord;
use raftlock_storage::{ReadWriteOutcome, Response};
use tonic::{Request, Response as Reply, Status};

use super::checked::NamedRead;
use super::{admit, header, read, unexpected, write};
use crate::auth::Auth;
use crate::pb;

/// Serves `raftlock.v1.Coordination`.
pub struct CoordinationService {
    pub(crate) node: Arc<Serving>,
    pub(crate) auth: Auth,
}

/// Wire form of an election record.
fn record_to_pb(record: ElectionRecord) -> pb::ElectionRecord {
    pb::ElectionRecord {
        holder: record.holder,
        ttl_ms: record.ttl_ms,
        acquired_at_ms: record.acquired_at_ms,
        renewed_at_ms: record.renewed_at_ms,
        transitions: record.transitions,
        metadata: record.metadata.into_iter().collect(),
    }
}

#[tonic::async_trait]
impl pb::coordination_server::Coordination for CoordinationService {
    async fn hold(&self, req: Request<pb::HoldRequest>) -> Result<Reply<pb::HoldResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let (held, fence, lease) = match response {
            Response::Held { lease, fence } => (true, fence, lease),
            Response::Busy => (false, 0, 0),
            other => return Err(unexpected(other)),
        };
        Ok(Reply::new(pb::HoldResponse {
            header: header(&self.node, index),
            held,
            fence,
            lease,
        }))
    }

    async fn unhold(
        &self,
        req: Request<pb::UnholdRequest>,
    ) -> Result<Reply<pb::UnholdResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::Unheld { ended } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::UnholdResponse {
            header: header(&self.node, index),
            ended,
        }))
    }

    async fn read_write(
        &self,
        req: Request<pb::ReadWriteRequest>,
    ) -> Result<Reply<pb::ReadWriteResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::ReadWrite(outcome) = response else {
            return Err(unexpected(response));
        };
        let mut reply = pb::ReadWriteResponse {
            header: header(&self.node, index),
            ..Default::default()
        };
        match outcome {
            ReadWriteOutcome::Read { generation } => {
                reply.granted = generation.is_some();
                reply.generation = generation.unwrap_or(0);
            }
            ReadWriteOutcome::Write { granted } => {
                reply.granted = granted.is_some();
                if let Some((fence, poisoned)) = granted {
                    reply.fence = fence;
                    reply.generation = fence;
                    reply.poisoned = poisoned;
                }
            }
            ReadWriteOutcome::Ended { ended } => reply.granted = ended,
        }
        Ok(Reply::new(reply))
    }

    async fn read_write_state(
        &self,
        req: Request<pb::ReadWriteStateRequest>,
    ) -> Result<Reply<pb::ReadWriteStateResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let (revision, state) = read(&self.node, false, |s| s.read_write_state(&req.name)).await?;
        Ok(Reply::new(pb::ReadWriteStateResponse {
            header: header(&self.node, revision),
            generation: state.generation,
            writing: state.writing,
            readers: state.readers,
            waiting_writers: state.waiting_writers,
        }))
    }

    async fn lead(&self, req: Request<pb::LeadRequest>) -> Result<Reply<pb::LeadResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::Led(record) = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::LeadResponse {
            header: header(&self.node, index),
            record: Some(record_to_pb(record)),
        }))
    }

    async fn leader_record(
        &self,
        req: Request<pb::LeaderRecordRequest>,
    ) -> Result<Reply<pb::LeaderRecordResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let (revision, record) = read(&self.node, false, |s| s.election(&req.name)).await?;
        Ok(Reply::new(pb::LeaderRecordResponse {
            header: header(&self.node, revision),
            record: record.map(record_to_pb),
        }))
    }

    async fn claim_fire(
        &self,
        req: Request<pb::ClaimFireRequest>,
    ) -> Result<Reply<pb::ClaimFireResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::FireClaimed { won } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::ClaimFireResponse {
            header: header(&self.node, index),
            won,
        }))
    }

    async fn last_fired(
        &self,
        req: Request<pb::LastFiredRequest>,
    ) -> Result<Reply<pb::LastFiredResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let (revision, last_fired) = read(&self.node, false, |s| s.last_fired(&req.name)).await?;
        Ok(Reply::new(pb::LastFiredResponse {
            header: header(&self.node, revision),
            last_fired,
        }))
    }
}
