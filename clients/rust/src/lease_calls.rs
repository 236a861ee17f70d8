//! The low-level lease calls of [`Client`]: grant, keep-alive, revoke,
//! time-to-live and list, one RPC each; the operator's revoke of every
//! lease of one [`LeaseAccount`]; and [`KeepAliveStream`] for keeping many
//! leases alive over one stream.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::abandoned::{Call, Pending};
use super::{Client, LeaseId};
use crate::error::{from_status, Error};
use crate::pb;
use crate::pb::lease_client::LeaseClient;

/// A lease's TTL and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseTtl {
    pub granted_ttl: Duration,
    /// Time left by the leader's timer.
    pub remaining: Option<Duration>,
    /// (lock name, owner, held) attached to the lease.
    pub attachments: Vec<(String, String, bool)>,
}

/// Whose leases [`Client::revoke_all`] revokes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseAccount {
    /// A user of the cluster's auth file.
    Identity(String),
    /// An IP address clients connect from, on a cluster without
    /// authentication (where leases are counted per source address).
    Source(std::net::IpAddr),
}

/// What [`Client::revoke_all`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RevokedAll {
    /// Leases revoked.
    pub revoked: u64,
    /// Holds that ended with them.
    pub released: u64,
}

impl Client {
    /// Grants a lease with `ttl` (1 ms ..= 1 day; one kept alive needs
    /// at least 100 ms).
    pub async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::LeaseGrantRequest {
            request_id: Some(request_id.clone()),
            ttl_ms: ttl.as_millis() as u64,
        };
        // Dropped before its answer, the lease is revoked in the background.
        let pending = Pending::new(self, Call::Lease(req.clone()), request_id, open);
        let reply = pending.send(&self.inner.endpoints, self.deadline, &req);
        Ok(reply.await?.id)
    }

    /// Renews a lease; answers the TTL it now has from when this call was
    /// sent.
    pub async fn keep_alive(&self, lease: LeaseId) -> Result<Duration, Error> {
        let req = pb::LeaseKeepAliveRequest { id: lease };
        Ok(Duration::from_millis(
            rpc!(self, LeaseClient, keep_alive, req)?.ttl_ms,
        ))
    }

    /// `keep_alive` where one attempt may take at most `attempt`.
    pub(crate) async fn keep_alive_bounded(
        &self,
        lease: LeaseId,
        attempt: Duration,
    ) -> Result<Duration, Error> {
        let req = pb::LeaseKeepAliveRequest { id: lease };
        let r = rpc!(self, LeaseClient, keep_alive, req, within attempt)?;
        Ok(Duration::from_millis(r.ttl_ms))
    }

    /// Opens a keep-alive stream to one node, for callers that renew many
    /// leases (as etcd's `LeaseKeepAlive`): each renewal is one message on
    /// the stream instead of one call.
    ///
    /// ```no_run
    /// # async fn f(client: raftlock_client::Client, leases: Vec<u64>) -> Result<(), raftlock_client::Error> {
    /// let mut stream = client.keep_alive_stream().await?;
    /// for lease in leases {
    ///     let ttl = stream.keep_alive(lease).await?;
    ///     println!("lease {lease} lives {ttl:?} more");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn keep_alive_stream(&self) -> Result<KeepAliveStream, Error> {
        self.inner
            .endpoints
            .call(self.deadline, |ch| async move {
                let (requests, rx) = mpsc::channel(16);
                let replies = LeaseClient::new(ch)
                    .keep_alive_stream(ReceiverStream::new(rx))
                    .await?
                    .into_inner();
                Ok(KeepAliveStream { requests, replies })
            })
            .await
    }

    /// Gives a lease the TTL `ttl` (1 ms ..= 1 day), replicated: it now
    /// ends `ttl` after this call was sent unless kept alive or changed
    /// again (sooner or later than before), and later keep-alives renew to
    /// `ttl`. On a lease that is never kept alive this extends (or shortens)
    /// a lock whose TTL is its own, as Redis' `PEXPIRE` does.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    /// let lease = client.grant_lease(Duration::from_millis(500)).await?;
    /// client.set_lease_ttl(lease, Duration::from_secs(2)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_lease_ttl(&self, lease: LeaseId, ttl: Duration) -> Result<Duration, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::LeaseSetTtlRequest {
            request_id: Some(request_id),
            id: lease,
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        };
        let reply = open.settle(rpc!(self, LeaseClient, set_ttl, req))?;
        Ok(Duration::from_millis(reply.ttl_ms))
    }

    /// Revokes a lease, releasing its locks; answers how many holds ended.
    /// If the call is dropped before its answer, the revoke still
    /// completes, in the background.
    pub async fn revoke(&self, lease: LeaseId) -> Result<u32, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::LeaseRevokeRequest {
            request_id: Some(request_id.clone()),
            id: lease,
        };
        let pending = Pending::new(self, Call::Revoke(req.clone()), request_id, open);
        let reply = pending.send(&self.inner.endpoints, self.deadline, &req);
        Ok(reply.await?.released)
    }

    /// Revokes every lease of `account` (an operator call: the admin role
    /// on a cluster with authentication), releasing what they hold: clears
    /// out a caller that filled its quota. The cluster revokes a bounded
    /// number per call; this calls again until none are left, and answers
    /// the totals.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use raftlock_client::LeaseAccount;
    /// let done = client.revoke_all(&LeaseAccount::Identity("billing".into())).await?;
    /// println!("{} leases revoked", done.revoked);
    /// # Ok(()) }
    /// ```
    pub async fn revoke_all(&self, account: &LeaseAccount) -> Result<RevokedAll, Error> {
        use pb::lease_revoke_all_request::Account as Named;
        let named = match account {
            LeaseAccount::Identity(name) => Named::Identity(name.clone()),
            LeaseAccount::Source(addr) => Named::Source(addr.to_string()),
        };
        let mut total = RevokedAll::default();
        loop {
            let (request_id, open) = self.inner.ids.next();
            let req = pb::LeaseRevokeAllRequest {
                request_id: Some(request_id),
                account: Some(named.clone()),
            };
            let reply = open.settle(rpc!(self, LeaseClient, revoke_all, req))?;
            total.revoked += u64::from(reply.revoked);
            total.released += u64::from(reply.released);
            // A call that revoked none while some are left would loop for
            // ever; the server never answers so, but a client must not hang.
            if reply.remaining == 0 || reply.revoked == 0 {
                return Ok(total);
            }
        }
    }

    /// A lease's TTL, time left and attachments.
    pub async fn time_to_live(&self, lease: LeaseId) -> Result<LeaseTtl, Error> {
        let req = pb::LeaseTimeToLiveRequest {
            id: lease,
            local: false,
        };
        let r = rpc!(self, LeaseClient, time_to_live, req)?;
        Ok(LeaseTtl {
            granted_ttl: Duration::from_millis(r.granted_ttl_ms),
            remaining: r.remaining_ms.map(Duration::from_millis),
            attachments: r
                .attachments
                .into_iter()
                .map(|a| (a.name, a.owner, a.held))
                .collect(),
        })
    }

    /// Every live lease: (id, ttl).
    pub async fn leases(&self) -> Result<Vec<(LeaseId, Duration)>, Error> {
        let r = rpc!(
            self,
            LeaseClient,
            list,
            pb::LeaseListRequest { local: false }
        )?;
        Ok(r.leases
            .into_iter()
            .map(|l| (l.id, Duration::from_millis(l.ttl_ms)))
            .collect())
    }
}

/// Keep-alives over one stream to one node; see
/// [`Client::keep_alive_stream`].
#[derive(Debug)]
pub struct KeepAliveStream {
    requests: mpsc::Sender<pb::LeaseKeepAliveRequest>,
    replies: tonic::Streaming<pb::LeaseKeepAliveResponse>,
}

impl KeepAliveStream {
    /// Renews `lease`; answers the TTL it now has from when this call was
    /// sent. [`Error::LeaseExpired`] if the lease is gone (the stream stays
    /// usable); any other error means the stream has ended: open another.
    pub async fn keep_alive(&mut self, lease: LeaseId) -> Result<Duration, Error> {
        let closed = || Error::Unavailable("keep-alive stream closed".into());
        self.requests
            .send(pb::LeaseKeepAliveRequest { id: lease })
            .await
            .map_err(|_| closed())?;
        match self.replies.message().await {
            Ok(Some(r)) if r.ttl_ms == 0 => Err(Error::LeaseExpired(format!(
                "lease {lease} not found (expired or revoked)"
            ))),
            Ok(Some(r)) => Ok(Duration::from_millis(r.ttl_ms)),
            Ok(None) => Err(closed()),
            Err(status) => Err(from_status(&status)),
        }
    }
}
