//! The low-level lock calls of [`Client`]: acquire, release, cancel,
//! force-release, check, describe and list, one RPC each, and the
//! [`Acquire`] request they start from.

use std::time::Duration;

use super::abandoned::{Call, Pending};
use super::unary::Unary;
use super::{Client, LeaseId, LockInfo, LockMode};
use crate::error::Error;
use crate::pb;
use crate::pb::lock_client::LockClient;

/// What [`Client::acquire`] asks for.
#[derive(Debug, Clone)]
pub struct Acquire {
    pub name: String,
    pub owner: String,
    pub lease: LeaseId,
    pub mode: LockMode,
    /// For [`LockMode::Permits`]: permits taken and the semaphore's limit.
    pub permits: u32,
    pub limit: u32,
    /// `false`: try-lock.
    pub wait: bool,
    /// `None`: wait until granted.
    pub timeout: Option<Duration>,
    /// `None`: the server's default lock-delay (see
    /// [`LockBuilder::lock_delay`](super::LockBuilder::lock_delay)).
    pub lock_delay: Option<Duration>,
}

impl Acquire {
    /// An exclusive lock of `name` for `owner` on `lease`, waiting forever.
    pub fn exclusive(name: impl Into<String>, owner: impl Into<String>, lease: LeaseId) -> Self {
        Acquire {
            name: name.into(),
            owner: owner.into(),
            lease,
            mode: LockMode::Exclusive,
            permits: 0,
            limit: 0,
            wait: true,
            timeout: None,
            lock_delay: None,
        }
    }
}

/// A granted lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    /// Fencing token: strictly greater than any earlier grant of the name.
    pub fence: u64,
    /// Re-entry depth.
    pub count: u32,
}

impl Client {
    /// Acquires per `spec`: `Ok(Some(_))` when granted, `Ok(None)` when a
    /// try-lock found the lock busy.
    pub async fn acquire(&self, spec: &Acquire) -> Result<Option<Acquired>, Error> {
        let req = pb::AcquireRequest {
            request_id: None,
            name: spec.name.clone(),
            owner: spec.owner.clone(),
            lease: spec.lease,
            mode: spec.mode as i32,
            permits: spec.permits,
            limit: spec.limit,
            wait: spec.wait,
            wait_timeout_ms: 0,
            lock_delay_ms: spec
                .lock_delay
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            ttl_ms: None,
        };
        // The wait, connecting and retries all end by the caller's timeout.
        let deadline = self.deadline_after(spec.timeout);
        let r = self
            .wait_call(Call::Acquire(req.clone()), &req, deadline)
            .await?;
        Ok(r.acquired.then_some(Acquired {
            fence: r.fence,
            count: r.count,
        }))
    }

    /// Try-locks `name` exclusively for `owner` on a lease made for it in
    /// the same Raft entry: a lock whose TTL is its own (Redis `SET NX
    /// PX`), ending `ttl` (1 ms ..= 1 day) after the grant. Nothing keeps
    /// it alive: extend it with [`set_lease_ttl`](Self::set_lease_ttl) and
    /// end it with [`revoke`](Self::revoke) of the lease answered. `None`
    /// when the lock is busy (then no lease is made).
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    /// if let Some((lease, held)) = client
    ///     .acquire_with_ttl("report", "worker-1", Duration::from_secs(30))
    ///     .await?
    /// {
    ///     println!("fence {}", held.fence);
    ///     client.revoke(lease).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_with_ttl(
        &self,
        name: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<(LeaseId, Acquired)>, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::AcquireRequest {
            request_id: None,
            name: name.to_owned(),
            owner: owner.to_owned(),
            mode: LockMode::Exclusive as i32,
            ttl_ms: Some(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
            ..pb::AcquireRequest::default()
        };
        // Dropped before its answer, the call is finished in the background.
        let pending = Pending::new(self, Call::Acquire(req.clone()), request_id.clone(), open);
        let sent = req.with_id(&request_id);
        let r = pending
            .send(&self.inner.endpoints, self.deadline, &sent)
            .await?;
        Ok(r.acquired.then_some((
            r.lease,
            Acquired {
                fence: r.fence,
                count: r.count,
            },
        )))
    }

    /// Releases one level of `owner`'s hold; answers the depth still held.
    /// If the call is dropped before its answer, the release still
    /// completes, in the background.
    pub async fn release(&self, name: &str, owner: &str) -> Result<u32, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ReleaseRequest {
            request_id: Some(request_id.clone()),
            name: name.into(),
            owner: owner.into(),
        };
        // Dropped before its answer, the release is completed in the
        // background (under the same id: it never applies twice).
        let pending = Pending::new(self, Call::Release(req.clone()), request_id, open);
        let reply = pending.send(&self.inner.endpoints, self.deadline, &req);
        Ok(reply.await?.remaining)
    }

    /// Leaves the queue or releases entirely; answers "dequeued",
    /// "released" or "not_found".
    pub async fn cancel(&self, name: &str, owner: &str) -> Result<String, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::CancelRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        Ok(open.settle(rpc!(self, LockClient, cancel, req))?.outcome)
    }

    /// Ends every hold on `name` (operators only); answers how many.
    pub async fn force_release(&self, name: &str) -> Result<u32, Error> {
        let (request_id, open) = self.inner.ids.next();
        let req = pb::ForceReleaseRequest {
            request_id: Some(request_id),
            name: name.into(),
        };
        Ok(open
            .settle(rpc!(self, LockClient, force_release, req))?
            .holders)
    }

    /// Whether `fence` still holds `name` (linearizable): how a resource
    /// that cannot store tokens rejects a stale holder. See [`Fenced`](super::Fenced) for
    /// one that can.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client, fence: u64) -> Result<(), raftlock_client::Error> {
    /// if !client.check("orders", fence).await? {
    ///     return Ok(()); // the writer's lock is gone: refuse its write
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn check(&self, name: &str, fence: u64) -> Result<bool, Error> {
        let req = pb::CheckRequest {
            name: name.into(),
            fence,
            local: false,
        };
        Ok(rpc!(self, LockClient, check, req)?.valid)
    }

    /// `check` where one attempt may take at most `attempt`.
    pub(crate) async fn check_bounded(
        &self,
        name: &str,
        fence: u64,
        attempt: Duration,
    ) -> Result<bool, Error> {
        let req = pb::CheckRequest {
            name: name.into(),
            fence,
            local: false,
        };
        Ok(rpc!(self, LockClient, check, req, within attempt)?.valid)
    }

    /// Holders and waiters of `name`; `None` when nobody holds or waits.
    pub async fn describe(&self, name: &str) -> Result<Option<LockInfo>, Error> {
        let req = pb::DescribeRequest {
            name: name.into(),
            local: false,
        };
        Ok(rpc!(self, LockClient, describe, req)?.lock)
    }

    /// Locks whose name starts with `prefix` (at most `limit`, 0 = 1000).
    pub async fn list(&self, prefix: &str, limit: u32) -> Result<Vec<LockInfo>, Error> {
        let req = pb::ListLocksRequest {
            prefix: prefix.into(),
            limit,
            local: false,
        };
        Ok(rpc!(self, LockClient, list, req)?.locks)
    }
}
