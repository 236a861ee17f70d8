//! The low-level lease calls of [`Client`]: grant, keep-alive, revoke,
//! time-to-live and list, one RPC each.

use std::time::Duration;

use super::{Client, LeaseId};
use crate::error::Error;
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

impl Client {
    /// Grants a lease with `ttl` (100 ms ..= 1 day).
    pub async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::LeaseGrantRequest {
            request_id: Some(request_id),
            ttl_ms: ttl.as_millis() as u64,
        };
        Ok(rpc!(self, LeaseClient, grant, req)?.id)
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

    /// Revokes a lease, releasing its locks; answers how many holds ended.
    pub async fn revoke(&self, lease: LeaseId) -> Result<u32, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::LeaseRevokeRequest {
            request_id: Some(request_id),
            id: lease,
        };
        Ok(rpc!(self, LeaseClient, revoke, req)?.released)
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
