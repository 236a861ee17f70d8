//! The Coordination service: holds found again by their owner token on
//! leases of their own, read-write locks with write intents, election
//! records and schedule fires (grelmicro's coordination backends).

use std::sync::Arc;

use crate::serving::Serving;
use raftlock_storage::command::{ClaimFire, Hold, Lead, ReadWrite, Unhold};
use raftlock_storage::state::ElectionRecord;
use raftlock_storage::{Command, ReadWriteOp, ReadWriteOutcome, Response};
use tonic::{Request, Response as Reply, Status};

use super::{header, read, unexpected, write};
use crate::auth::Auth;
use crate::input;
use crate::pb;
use crate::status::to_status;

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

/// The read-write step a request asks for.
fn read_write_op(req: &pb::ReadWriteRequest) -> Result<ReadWriteOp, Status> {
    let ttl_ms = req.ttl_ms;
    Ok(match pb::ReadWriteOp::try_from(req.op) {
        Ok(pb::ReadWriteOp::Read) => ReadWriteOp::Read { ttl_ms },
        Ok(pb::ReadWriteOp::Write) => ReadWriteOp::Write {
            ttl_ms,
            intent: req.intent,
        },
        Ok(pb::ReadWriteOp::ReleaseRead) => ReadWriteOp::ReleaseRead,
        Ok(pb::ReadWriteOp::ReleaseWrite) => ReadWriteOp::ReleaseWrite,
        Ok(pb::ReadWriteOp::CancelIntent) => ReadWriteOp::CancelIntent,
        Ok(pb::ReadWriteOp::Downgrade) => ReadWriteOp::Downgrade { ttl_ms },
        Err(_) => {
            return Err(Status::invalid_argument(format!(
                "unknown read-write op {}",
                req.op
            )))
        }
    })
}

#[tonic::async_trait]
impl pb::coordination_server::Coordination for CoordinationService {
    async fn hold(&self, req: Request<pb::HoldRequest>) -> Result<Reply<pb::HoldResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let origin = input::request_id(req.request_id.as_ref()).map_err(to_status)?;
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        input::owner(&req.owner).map_err(to_status)?;
        let command = Command::Hold(Hold {
            name: req.name,
            owner: req.owner,
            ttl_ms: req.ttl_ms,
        });
        let (index, response) = write(&self.node, origin, who.caller(), command)
            .await
            .map_err(to_status)?;
        let (held, fence, lease) = match response {
            Response::Held { lease, fence } => (true, fence, lease),
            Response::Busy => (false, 0, 0),
            other => return Err(to_status(unexpected(other))),
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
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let origin = input::request_id(req.request_id.as_ref()).map_err(to_status)?;
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        input::owner(&req.owner).map_err(to_status)?;
        let command = Command::Unhold(Unhold {
            name: req.name,
            owner: req.owner,
        });
        let (index, response) = write(&self.node, origin, who.caller(), command)
            .await
            .map_err(to_status)?;
        let Response::Unheld { ended } = response else {
            return Err(to_status(unexpected(response)));
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
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let origin = input::request_id(req.request_id.as_ref()).map_err(to_status)?;
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        input::owner(&req.owner).map_err(to_status)?;
        let op = read_write_op(&req)?;
        let command = Command::ReadWrite(ReadWrite {
            name: req.name,
            owner: req.owner,
            op,
        });
        let (index, response) = write(&self.node, origin, who.caller(), command)
            .await
            .map_err(to_status)?;
        let Response::ReadWrite(outcome) = response else {
            return Err(to_status(unexpected(response)));
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
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        let (revision, state) = read(&self.node, false, |s| s.read_write_state(&req.name))
            .await
            .map_err(to_status)?;
        Ok(Reply::new(pb::ReadWriteStateResponse {
            header: header(&self.node, revision),
            generation: state.generation,
            writing: state.writing,
            readers: state.readers,
            waiting_writers: state.waiting_writers,
        }))
    }

    async fn lead(&self, req: Request<pb::LeadRequest>) -> Result<Reply<pb::LeadResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let origin = input::request_id(req.request_id.as_ref()).map_err(to_status)?;
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        input::owner(&req.owner).map_err(to_status)?;
        let command = Command::Lead(Lead {
            name: req.name,
            owner: req.owner,
            ttl_ms: req.ttl_ms,
            metadata: req.metadata.into_iter().collect(),
        });
        let (index, response) = write(&self.node, origin, who.caller(), command)
            .await
            .map_err(to_status)?;
        let Response::Led(record) = response else {
            return Err(to_status(unexpected(response)));
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
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        let (revision, record) = read(&self.node, false, |s| s.election(&req.name))
            .await
            .map_err(to_status)?;
        Ok(Reply::new(pb::LeaderRecordResponse {
            header: header(&self.node, revision),
            record: record.map(record_to_pb),
        }))
    }

    async fn claim_fire(
        &self,
        req: Request<pb::ClaimFireRequest>,
    ) -> Result<Reply<pb::ClaimFireResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        let origin = input::request_id(req.request_id.as_ref()).map_err(to_status)?;
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        let command = Command::ClaimFire(ClaimFire {
            name: req.name,
            due: req.due.to_bits(),
        });
        let (index, response) = write(&self.node, origin, who.caller(), command)
            .await
            .map_err(to_status)?;
        let Response::FireClaimed { won } = response else {
            return Err(to_status(unexpected(response)));
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
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        input::name(&req.name).map_err(to_status)?;
        who.check_name(&req.name)?;
        let (revision, last_fired) = read(&self.node, false, |s| s.last_fired(&req.name))
            .await
            .map_err(to_status)?;
        Ok(Reply::new(pb::LastFiredResponse {
            header: header(&self.node, revision),
            last_fired,
        }))
    }
}
