//! The Rust client for `raftlock.v1`.
//!
//! [`Client`] talks to any node (nodes forward to the leader), follows
//! not-leader answers, retries transient failures with backoff, and re-sends
//! a retried call with the same request id so the cluster applies it once.
//!
//! # Layout
//!
//! - this file: [`Client`], connecting, and the low-level calls (one per
//!   RPC: `grant_lease`, `acquire`, `release`, `campaign`, ...);
//! - `options`: [`ClientOptions`] and [`ClientBuilder`];
//! - `session`: the session lease kept alive in the background, and the
//!   force-release checks of the holds on it; `loss`: the lost signal;
//! - `lock_guard`: [`LockBuilder`] and [`LockGuard`] (`client.lock(name)`);
//! - `semaphore`: [`Semaphore`] and [`RwLock`], built on the same guard;
//! - `election`: [`Election`], [`Leadership`] and the observe stream;
//! - `task_lock`: [`TaskLock`] for scheduled jobs;
//! - `fenced`: [`Fenced`], a resource that rejects stale fencing tokens;
//! - [`blocking`]: the same surface for code that is not async (also at
//!   `raftlock::blocking`);
//! - `endpoints`, `request_ids`: retries and exactly-once request ids.

pub mod blocking;
mod election;
mod endpoints;
mod fenced;
mod lock_guard;
mod loss;
mod options;
mod request_ids;
mod semaphore;
mod session;
mod task_lock;

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use tonic::transport::Channel;

use endpoints::Endpoints;
pub use endpoints::DEFAULT_RETRY_FOR;
use request_ids::RequestIds;
use session::SessionSlot;

pub use election::{Election, Leadership};
pub use fenced::Fenced;
pub use lock_guard::{LockBuilder, LockGuard};
pub use options::{ClientBuilder, ClientOptions, DEFAULT_SESSION_TTL};
pub use semaphore::{RwLock, Semaphore, SemaphoreGuard};
pub use task_lock::{TaskGuard, TaskLock};

use crate::error::{from_status, Error};
use crate::pb;
use crate::pb::cluster_client::ClusterClient;
use crate::pb::election_client::ElectionClient;
use crate::pb::lease_client::LeaseClient;
use crate::pb::lock_client::LockClient;

pub use crate::pb::{
    LeaderResponse as LeaderInfo, LockInfo, LockMode, StatusResponse as NodeStatus,
};

/// A lease id.
pub type LeaseId = u64;

/// A connection to a raftlock cluster. Cheap to clone; clones share
/// connections, request ids and the session lease.
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
    /// The session lease used by `lock`, `semaphore`, `election`, ...
    session: Arc<SessionSlot>,
}

#[derive(Debug)]
struct Inner {
    endpoints: Endpoints,
    ids: RequestIds,
    options: ClientOptions,
}

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

/// A lease's TTL and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseTtl {
    pub granted_ttl: Duration,
    /// Time left by the leader's timer.
    pub remaining: Option<Duration>,
    /// (lock name, owner, held) attached to the lease.
    pub attachments: Vec<(String, String, bool)>,
}

macro_rules! rpc {
    ($self:ident, $client:ident, $method:ident, $req:expr) => {{
        let req = $req;
        $self
            .inner
            .endpoints
            .call(|ch: Channel| {
                let req = req.clone();
                async move { $client::new(ch).$method(req).await.map(|r| r.into_inner()) }
            })
            .await
    }};
    ($self:ident, $client:ident, $method:ident, $req:expr, within $limit:expr) => {{
        let req = $req;
        $self
            .inner
            .endpoints
            .call_bounded(Some($limit), |ch: Channel| {
                let req = req.clone();
                async move { $client::new(ch).$method(req).await.map(|r| r.into_inner()) }
            })
            .await
    }};
}

impl Client {
    /// Connects to a cluster given some of its client endpoints
    /// (`host:port`). Connections are made lazily; the first call fails with
    /// [`Error::Unavailable`] if no endpoint answers within the retry budget.
    pub async fn connect<I, S>(endpoints: I) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::connect_with_retry(endpoints, DEFAULT_RETRY_FOR).await
    }

    /// Like [`connect`](Self::connect) with a custom retry budget per call.
    pub async fn connect_with_retry<I, S>(
        endpoints: I,
        retry_for: Duration,
    ) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let options = ClientOptions {
            retry_for,
            ..ClientOptions::default()
        };
        Self::connect_with(endpoints, options).await
    }

    /// Connects with explicit [`ClientOptions`].
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), raftlock::Error> {
    /// use std::time::Duration;
    /// use raftlock::client::{Client, ClientOptions};
    ///
    /// let options = ClientOptions {
    ///     session_ttl: Duration::from_secs(5),
    ///     ..ClientOptions::default()
    /// };
    /// let client = Client::connect_with(["127.0.0.1:7379"], options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with<I, S>(endpoints: I, options: ClientOptions) -> Result<Client, Error>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        options.validate()?;
        let addrs: Vec<String> = endpoints.into_iter().map(Into::into).collect();
        let endpoints = Endpoints::new(&addrs, options.retry_for)?;
        Ok(Client {
            session: Arc::new(SessionSlot::new(options.lease)),
            inner: Arc::new(Inner {
                endpoints,
                ids: RequestIds::new(),
                options,
            }),
        })
    }

    /// A builder: session TTL, safety margin, retry budget, explicit lease.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), raftlock::Error> {
    /// use std::time::Duration;
    ///
    /// let client = raftlock::Client::builder(["127.0.0.1:7379", "127.0.0.1:7380"])
    ///     .session_ttl(Duration::from_secs(5))
    ///     .connect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn builder<I, S>(endpoints: I) -> ClientBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ClientBuilder::new(endpoints.into_iter().map(Into::into).collect())
    }

    /// The settings this client was made with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// A client sharing this one's connections whose session is the existing
    /// lease `lease` (kept alive, never revoked by the client).
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock::Client) -> Result<(), raftlock::Error> {
    /// let lease = client.grant_lease(std::time::Duration::from_secs(30)).await?;
    /// let on_lease = client.with_lease(lease);
    /// let guard = on_lease.lock("reports").acquire().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_lease(&self, lease: LeaseId) -> Client {
        Client {
            inner: self.inner.clone(),
            session: Arc::new(SessionSlot::new(Some(lease))),
        }
    }

    /// Shares connections but not the session: for background tasks, so
    /// they do not keep the client's session alive through a cycle.
    pub(crate) fn detached(&self) -> Client {
        Client {
            inner: self.inner.clone(),
            session: Arc::new(SessionSlot::new(None)),
        }
    }

    /// Makes the next call try another endpoint first.
    pub(crate) fn skip_current_endpoint(&self) {
        self.inner.endpoints.skip_current();
    }

    /// The session (granted now if there is none, or if it was lost).
    pub(crate) async fn session(&self) -> Result<Arc<session::Session>, Error> {
        self.session.get(self).await
    }

    /// The session lease id, granting the session now if needed.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock::Client) -> Result<(), raftlock::Error> {
    /// let lease = client.session_lease().await?;
    /// println!("holding locks on lease {lease}");
    /// # Ok(()) }
    /// ```
    pub async fn session_lease(&self) -> Result<LeaseId, Error> {
        Ok(self.session().await?.lease)
    }

    /// Ends the session: stops its keep-alives and revokes its lease (if
    /// this client granted it), which releases every lock held on it; their
    /// guards report [`lost`](LockGuard::lost). The next call that needs a
    /// session grants a new one. Locks on dedicated leases (`.ttl`) are not
    /// affected.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock::Client) -> Result<(), raftlock::Error> {
    /// let guard = client.lock("batch").acquire().await?;
    /// // ... work ...
    /// drop(guard);
    /// client.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<(), Error> {
        match self.session.take().await {
            Some(session) => session.end().await,
            None => Ok(()),
        }
    }

    /// The endpoints this client uses.
    pub fn endpoints(&self) -> &[String] {
        self.inner.endpoints.addrs()
    }

    // ------------------------------------------------------------ leases

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

    // ------------------------------------------------------------ locks

    /// Acquires per `spec`: `Ok(Some(_))` when granted, `Ok(None)` when a
    /// try-lock found the lock busy.
    pub async fn acquire(&self, spec: &Acquire) -> Result<Option<Acquired>, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::AcquireRequest {
            request_id: Some(request_id),
            name: spec.name.clone(),
            owner: spec.owner.clone(),
            lease: spec.lease,
            mode: spec.mode as i32,
            permits: spec.permits,
            limit: spec.limit,
            wait: spec.wait,
            wait_timeout_ms: spec
                .timeout
                .map(|t| t.as_millis().max(1) as u64)
                .unwrap_or(0),
        };
        let r = rpc!(self, LockClient, acquire, req)?;
        Ok(r.acquired.then_some(Acquired {
            fence: r.fence,
            count: r.count,
        }))
    }

    /// Releases one level of `owner`'s hold; answers the depth still held.
    pub async fn release(&self, name: &str, owner: &str) -> Result<u32, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::ReleaseRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        Ok(rpc!(self, LockClient, release, req)?.remaining)
    }

    /// Leaves the queue or releases entirely; answers "dequeued",
    /// "released" or "not_found".
    pub async fn cancel(&self, name: &str, owner: &str) -> Result<String, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::CancelRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        Ok(rpc!(self, LockClient, cancel, req)?.outcome)
    }

    /// Ends every hold on `name` (operators only); answers how many.
    pub async fn force_release(&self, name: &str) -> Result<u32, Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::ForceReleaseRequest {
            request_id: Some(request_id),
            name: name.into(),
        };
        Ok(rpc!(self, LockClient, force_release, req)?.holders)
    }

    /// Whether `fence` still holds `name` (linearizable): how a resource
    /// that cannot store tokens rejects a stale holder. See [`Fenced`] for
    /// one that can.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock::Client, fence: u64) -> Result<(), raftlock::Error> {
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

    // ------------------------------------------------------------ elections

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
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::CampaignRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            lease,
            value: value.to_vec(),
            wait_timeout_ms: timeout.map(|t| t.as_millis().max(1) as u64).unwrap_or(0),
        };
        Ok(rpc!(self, ElectionClient, campaign, req)?.fence)
    }

    /// Publishes a new value as the leader of `name`.
    pub async fn proclaim(&self, name: &str, owner: &str, value: &[u8]) -> Result<(), Error> {
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::ProclaimRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
            value: value.to_vec(),
        };
        rpc!(self, ElectionClient, proclaim, req).map(|_| ())
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
        let (request_id, _open) = self.inner.ids.next();
        let req = pb::ResignRequest {
            request_id: Some(request_id),
            name: name.into(),
            owner: owner.into(),
        };
        rpc!(self, ElectionClient, resign, req).map(|_| ())
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

    // ------------------------------------------------------------ cluster

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
