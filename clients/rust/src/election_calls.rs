//! The low-level election calls of [`Client`]: campaign, proclaim, leader,
//! resign and observe, one RPC each.

use std::time::Duration;

use futures::{Stream, StreamExt};

use super::abandoned::Call;
use super::{Client, LeaderInfo, LeaseId};
use crate::error::{from_status, Error};
use crate::pb;
use crate::pb::election_client::ElectionClient;

impl Client {
    /// Campaigns for `name`; returns the leadership fencing token once
    /// elected.
    pub async fn campaign(
        &self,
        name: &str,
        owner: &str,
        lease: LeaseId,
        value: &[u8],
        timeout: Option<Duration>,
    ) -> Result<u64, Error> {
        let req = campaign_request(name, owner, lease, value, false);
        let fence = self.campaign_call(req, timeout).await?;
        fence.ok_or_else(|| {
            Error::Internal(format!("a waiting campaign of {name:?} was answered busy"))
        })
    }

    /// Campaigns for `name` once: the fencing token if it had no leader
    /// and this call leads now, `None` (at once, keeping no place in the
    /// queue) if it has one.
    pub async fn try_campaign(
        &self,
        name: &str,
        owner: &str,
        lease: LeaseId,
        value: &[u8],
    ) -> Result<Option<u64>, Error> {
        let req = campaign_request(name, owner, lease, value, true);
        self.campaign_call(req, None).await
    }

    async fn campaign_call(
        &self,
        req: pb::CampaignRequest,
        timeout: Option<Duration>,
    ) -> Result<Option<u64>, Error> {
        let deadline = self.deadline_after(timeout);
        let r = self
            .wait_call(Call::Campaign(req.clone()), &req, deadline)
            .await?;
        Ok((!r.busy).then_some(r.fence))
    }

    /// Publishes a new value as the leader of `name`.
    pub async fn proclaim(&self, name: &str, owner: &str, value: &[u8]) -> Result<(), Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ProclaimRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            value: value.to_vec(),
        };
        open.settle(rpc!(self, ElectionClient, proclaim, req))
            .map(|_| ())
    }

    /// The current leader of `name` (linearizable); `has_leader` is false
    /// when there is none.
    pub async fn leader(&self, name: &str) -> Result<LeaderInfo, Error> {
        rpc!(
            self,
            ElectionClient,
            leader,
            pb::LeaderRequest {
                name: name.into(),
                local: false
            }
        )
    }

    /// Ends `owner`'s leadership or candidacy.
    pub async fn resign(&self, name: &str, owner: &str) -> Result<(), Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ResignRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        open.settle(rpc!(self, ElectionClient, resign, req))
            .map(|_| ())
    }

    /// Every change of `name`'s leader, starting with the current one.
    pub async fn observe(
        &self,
        name: &str,
    ) -> Result<impl Stream<Item = Result<LeaderInfo, Error>>, Error> {
        let req = pb::ObserveRequest { name: name.into() };
        let stream = rpc!(self, ElectionClient, observe, req)?;
        Ok(stream.map(|item| item.map_err(|s| from_status(&s))))
    }
}

/// A Campaign of `name` by `owner` on `lease`, waiting or (`no_wait`) one
/// try; the request id and wait are filled in per attempt.
fn campaign_request(
    name: &str,
    owner: &str,
    lease: LeaseId,
    value: &[u8],
    no_wait: bool,
) -> pb::CampaignRequest {
    pb::CampaignRequest {
        request_id: None,
        name: name.into(),
        owner: owner.into(),
        lease,
        value: value.to_vec(),
        wait_timeout_ms: 0,
        no_wait,
    }
}
