//! The Lease service: grant, keep-alive, revoke, time-to-live, list, and
//! the operator's revoke of every lease of one identity or source.

use std::pin::Pin;
use std::sync::Arc;

use crate::serving::Serving;
use raftlock_raft::Error;
use raftlock_storage::{Caller, CommandError, Response};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::Stream;
use tonic::{Request, Response as Reply, Status, Streaming};

use super::checked::lease_id;
use super::{admit, header, read, unexpected, write, StreamPermit, StreamQuota};
use crate::auth::Auth;
use crate::pb;
use crate::status::to_status;

/// Serves `raftlock.v1.Lease`.
pub struct LeaseService {
    pub(crate) node: Arc<Serving>,
    pub(crate) auth: Auth,
    /// Keep-alive streams held open, per account.
    pub(crate) streams: StreamQuota,
}

#[tonic::async_trait]
impl pb::lease_server::Lease for LeaseService {
    async fn grant(
        &self,
        req: Request<pb::LeaseGrantRequest>,
    ) -> Result<Reply<pb::LeaseGrantResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::LeaseGranted { id, ttl_ms } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::LeaseGrantResponse {
            header: header(&self.node, index),
            id,
            ttl_ms,
        }))
    }

    async fn revoke(
        &self,
        req: Request<pb::LeaseRevokeRequest>,
    ) -> Result<Reply<pb::LeaseRevokeResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::LeaseRevoked { released, .. } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::LeaseRevokeResponse {
            header: header(&self.node, index),
            released,
        }))
    }

    async fn set_ttl(
        &self,
        req: Request<pb::LeaseSetTtlRequest>,
    ) -> Result<Reply<pb::LeaseSetTtlResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::LeaseTtlSet { id, ttl_ms } = response else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::LeaseSetTtlResponse {
            header: header(&self.node, index),
            id,
            ttl_ms,
        }))
    }

    async fn keep_alive(
        &self,
        req: Request<pb::LeaseKeepAliveRequest>,
    ) -> Result<Reply<pb::LeaseKeepAliveResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let id = req.into_inner().id;
        let ttl_ms = renew(&self.node, id, who.caller())
            .await
            .map_err(to_status)?;
        Ok(Reply::new(keep_alive_reply(&self.node, id, ttl_ms)))
    }

    type KeepAliveStreamStream = KeepAliveReplies;

    async fn keep_alive_stream(
        &self,
        req: Request<Streaming<pb::LeaseKeepAliveRequest>>,
    ) -> Result<Reply<Self::KeepAliveStreamStream>, Status> {
        let who = self.auth.authenticate(&req)?;
        let permit = self.streams.admit(who.account()).map_err(to_status)?;
        let (tx, rx) = mpsc::channel(16);
        let caller = who.caller().clone();
        tokio::spawn(serve_keep_alives(
            self.node.clone(),
            caller,
            req.into_inner(),
            tx,
            permit,
        ));
        Ok(Reply::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn revoke_all(
        &self,
        req: Request<pb::LeaseRevokeAllRequest>,
    ) -> Result<Reply<pb::LeaseRevokeAllResponse>, Status> {
        let (who, call) = admit(&self.auth, req)?;
        let (index, response) = write(&self.node, &who, call).await?;
        let Response::AccountLeasesRevoked {
            revoked,
            released,
            remaining,
        } = response
        else {
            return Err(unexpected(response));
        };
        Ok(Reply::new(pb::LeaseRevokeAllResponse {
            header: header(&self.node, index),
            revoked,
            released,
            remaining,
        }))
    }

    async fn time_to_live(
        &self,
        req: Request<pb::LeaseTimeToLiveRequest>,
    ) -> Result<Reply<pb::LeaseTimeToLiveResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let req = req.into_inner();
        lease_id(req.id).map_err(to_status)?;
        let (revision, found) = read(&self.node, req.local, |s| {
            s.lease(req.id).map(|l| {
                if !who.may_see_lease_of(l.identity.as_deref()) {
                    return Err(who.lease_denied(req.id, l.identity.as_deref()));
                }
                let attachments = s
                    .lease_attachments(req.id)
                    .into_iter()
                    .map(|(name, owner, held)| pb::LeaseAttachment { name, owner, held })
                    .collect::<Vec<_>>();
                Ok((l.ttl_ms, attachments))
            })
        })
        .await?;
        let found = found.transpose()?;
        let Some((granted_ttl_ms, attachments)) = found else {
            return Err(to_status(CommandError::LeaseNotFound(req.id).into()));
        };
        let remaining_ms = if req.local {
            None
        } else {
            self.node.lease_remaining(req.id).await.map_err(to_status)?
        };
        Ok(Reply::new(pb::LeaseTimeToLiveResponse {
            header: header(&self.node, revision),
            id: req.id,
            granted_ttl_ms,
            remaining_ms,
            attachments,
        }))
    }

    async fn list(
        &self,
        req: Request<pb::LeaseListRequest>,
    ) -> Result<Reply<pb::LeaseListResponse>, Status> {
        let who = self.auth.authenticate(&req)?;
        let local = req.into_inner().local;
        let (revision, leases) = read(&self.node, local, |s| {
            s.leases()
                .filter(|l| who.may_see_lease_of(l.identity.as_deref()))
                .map(|l| pb::LeaseInfo {
                    id: l.id,
                    ttl_ms: l.ttl_ms,
                })
                .collect::<Vec<_>>()
        })
        .await?;
        Ok(Reply::new(pb::LeaseListResponse {
            header: header(&self.node, revision),
            leases,
        }))
    }
}

type KeepAliveReplies =
    Pin<Box<dyn Stream<Item = Result<pb::LeaseKeepAliveResponse, Status>> + Send>>;

/// Renews lease `id` for `caller`; answers its TTL.
async fn renew(node: &Serving, id: u64, caller: &Caller) -> Result<u64, Error> {
    lease_id(id)?;
    node.keep_alive(id, caller).await
}

fn keep_alive_reply(node: &Serving, id: u64, ttl_ms: u64) -> pb::LeaseKeepAliveResponse {
    pb::LeaseKeepAliveResponse {
        header: header(node, node.replica().applied_index()),
        id,
        ttl_ms,
    }
}

/// Answers one stream's keep-alives in order until the client closes it,
/// a renewal fails for a reason other than "lease gone", or the node stops;
/// holds the stream's place in its account's quota (`_permit`) until then.
async fn serve_keep_alives(
    node: Arc<Serving>,
    caller: Caller,
    mut requests: Streaming<pb::LeaseKeepAliveRequest>,
    replies: mpsc::Sender<Result<pb::LeaseKeepAliveResponse, Status>>,
    _permit: Option<StreamPermit>,
) {
    loop {
        let next = tokio::select! {
            next = requests.message() => next,
            _ = node.replica().stopped() => {
                let _ = replies.send(Err(to_status(Error::ShuttingDown))).await;
                return;
            }
        };
        let Ok(Some(req)) = next else {
            return; // closed by the client, or broken
        };
        let reply = match renew(&node, req.id, &caller).await {
            Ok(ttl_ms) => Ok(keep_alive_reply(&node, req.id, ttl_ms)),
            Err(Error::Rejected(CommandError::LeaseNotFound(_))) => {
                Ok(keep_alive_reply(&node, req.id, 0))
            }
            Err(e) => Err(to_status(e)),
        };
        let ended = reply.is_err();
        if replies.send(reply).await.is_err() || ended {
            return;
        }
    }
}
