//! The Election service. An election is a lock whose holder publishes a
//! value: Campaign is an exclusive Acquire that waits (FIFO), the leader's
//! fencing token is its term, Resign ends the hold or the candidacy.

use std::pin::Pin;
use std::sync::Arc;

use crate::serving::Serving;
use futures::Stream;
use raftlock_storage::command::CancelOutcome;
use raftlock_storage::state::LockState;
use raftlock_storage::{CommandError, Response};
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response as Reply, Status};

use super::checked::{Campaign, NamedRead};
use super::{admit, admit_by, header, read, unexpected, write, StreamPermit, StreamQuota};
use crate::auth::Auth;
use crate::pb;
use crate::serving::grant_wait::AcquireCall;
use crate::status::{to_status, wait_status};

/// Serves `raftlock.v1.Election`.
pub struct ElectionService {
    pub(crate) node: Arc<Serving>,
    pub(crate) auth: Auth,
    /// Campaign calls and Observe streams held open, per account.
    pub(crate) streams: StreamQuota,
}

/// The leader of `name` as the wire shows it (without header).
fn leader_of(state: &LockState, name: &str) -> pb::LeaderResponse {
    match state.lock(name).and_then(|l| l.holders.first()) {
        Some(h) => pb::LeaderResponse {
            header: None,
            has_leader: true,
            owner: h.owner.clone(),
            lease: h.lease,
            fence: h.fence,
            value: h.value.clone().unwrap_or_default(),
        },
        None => pb::LeaderResponse::default(),
    }
}

type LeaderStream = Pin<Box<dyn Stream<Item = Result<pb::LeaderResponse, Status>> + Send>>;

#[tonic::async_trait]
impl pb::election_server::Election for ElectionService {
    async fn campaign(
        &self,
        req: Request<pb::CampaignRequest>,
    ) -> Result<Reply<pb::CampaignResponse>, Status> {
        let default_lock_delay_ms = self.node.lock_delay_ms();
        let (who, campaign) = admit_by(&self.auth, req, |req| {
            Campaign::check(req, default_lock_delay_ms)
        })?;
        // A waiting campaign is held open: it takes a place until it ends.
        let _permit = match campaign.command.wait {
            true => self.streams.admit(who.account()).map_err(to_status)?,
            false => None,
        };
        let call = AcquireCall {
            command: campaign.command,
            timeout: campaign.timeout,
            origin: campaign.origin,
            caller: who.caller().clone(),
        };
        let tried_once = !call.command.wait;
        let grant = self.node.acquire(call).await.map_err(wait_status)?;
        Ok(Reply::new(match grant {
            Some(grant) => pb::CampaignResponse {
                header: header(&self.node, grant.revision),
                fence: grant.fence,
                busy: false,
            },
            // Only one try finds the election led and is answered busy.
            None if tried_once => pb::CampaignResponse {
                header: header(&self.node, 0),
                fence: 0,
                busy: true,
            },
            None => return Err(Status::internal("a waiting campaign was answered busy")),
        }))
    }

    async fn proclaim(
        &self,
        req: Request<pb::ProclaimRequest>,
    ) -> Result<Reply<pb::ProclaimResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::Proclaimed = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::ProclaimResponse {
            header: header(&self.node, index),
        }))
    }

    async fn leader(
        &self,
        req: Request<pb::LeaderRequest>,
    ) -> Result<Reply<pb::LeaderResponse>, Status> {
        let (_, NamedRead(req)) = admit(&self.auth, req)?;
        let (revision, mut leader) =
            read(&self.node, req.local, |s| leader_of(s, &req.name)).await?;
        leader.header = header(&self.node, revision);
        Ok(Reply::new(leader))
    }

    type ObserveStream = LeaderStream;

    async fn observe(
        &self,
        req: Request<pb::ObserveRequest>,
    ) -> Result<Reply<Self::ObserveStream>, Status> {
        let (who, NamedRead(pb::ObserveRequest { name })) = admit(&self.auth, req)?;
        let permit = self.streams.admit(who.account()).map_err(to_status)?;
        // Subscribe before the first read so no change falls between them.
        let changes = self.node.changes();
        let (revision, first) = read(&self.node, false, |s| leader_of(s, &name)).await?;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(observe(
            self.node.clone(),
            name,
            changes,
            first,
            revision,
            tx,
            permit,
        ));
        Ok(Reply::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn resign(
        &self,
        req: Request<pb::ResignRequest>,
    ) -> Result<Reply<pb::ResignResponse>, Status> {
        // Resigning what one does not hold or wait for is an error.
        let not_holder = CommandError::NotHolder {
            name: req.get_ref().name.clone(),
            owner: req.get_ref().owner.clone(),
        };
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        match response {
            Response::Cancelled {
                outcome: CancelOutcome::NotFound,
            } => Err(to_status(not_holder.into())),
            Response::Cancelled { .. } => Ok(Reply::new(pb::ResignResponse {
                header: header(&self.node, index),
            })),
            other => Err(unexpected(other)),
        }
    }
}

/// Sends every change of `name`'s leader (or value) until the caller
/// leaves, holding the stream's place in its account's quota (`_permit`).
async fn observe(
    node: Arc<Serving>,
    name: String,
    mut changes: broadcast::Receiver<String>,
    first: pb::LeaderResponse,
    revision: u64,
    tx: mpsc::Sender<Result<pb::LeaderResponse, Status>>,
    _permit: Option<StreamPermit>,
) {
    let mut last = first.clone();
    let mut out = first;
    out.header = header(&node, revision);
    if tx.send(Ok(out)).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            changed = changes.recv() => match changed {
                Ok(changed) if changed != name && !changed.is_empty() => continue,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = tx.closed() => return,
            _ = node.replica().stopped() => {
                let _ = tx.send(Err(Status::unavailable("node is shutting down; observe another node"))).await;
                return;
            }
        }
        let (current, revision) = (
            node.replica().read_state(|state| leader_of(state, &name)),
            node.replica().applied_index(),
        );
        if current != last {
            last = current.clone();
            let mut out = current;
            out.header = header(&node, revision);
            if tx.send(Ok(out)).await.is_err() {
                return;
            }
        }
    }
}
