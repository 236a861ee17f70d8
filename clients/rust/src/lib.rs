//! The Rust client for `raftlock.v1`: everything a program needs to take
//! locks from a raftlock cluster, and nothing of the server (no openraft,
//! no sled). The wire types are the `raftlock-api` crate's, re-exported as
//! [`pb`] and [`metadata`]; the Python package binds this crate.
//!
//! [`Client`] talks to any node (nodes forward to the leader), follows
//! not-leader answers, retries transient failures with backoff, and re-sends
//! a retried call with the same request id so the cluster applies it once.
//!
//! A client lives on the tokio runtime it was made on: its connections and
//! its background work (the session's keep-alives, the release of a dropped
//! guard, the cleanup of an abandoned call) run there, whichever runtime a
//! call is polled on, so a call may be made from a runtime that runs only
//! while someone blocks on it.
//!
//! # Layout
//!
//! - this file: [`Client`], connecting, the session it holds, and the
//!   `rpc!` macro every low-level call goes through;
//! - `lease_calls`, `lock_calls`, `election_calls`, `cluster_calls`: the
//!   low-level calls, one per RPC (`grant_lease`, `acquire`, `release`,
//!   `campaign`, ...), with [`Acquire`], [`Acquired`] and [`LeaseTtl`];
//! - `options`: [`ClientOptions`] and [`ClientBuilder`]; `tls`:
//!   [`ClientTls`], the CA and client certificate; `node_access`:
//!   [`Client::for_node`], a client of a node in this process;
//! - `session`: the session lease kept alive in the background, and the
//!   force-release checks of the holds on it; `loss`: the lost signal
//!   and the one `Check` that proves a hold (`ensure_owned`);
//! - `lock_builder`, `lock_guard`: [`LockBuilder`] (`client.lock(name)`)
//!   and the [`LockGuard`] it returns;
//! - `semaphore`: [`Semaphore`] and [`RwLock`], built on the same guard;
//! - `election`: [`Election`], [`Leadership`] and the observe stream;
//! - `task_lock`: [`TaskLock`] for scheduled jobs;
//! - `fenced`: [`Fenced`], a resource that rejects stale fencing tokens;
//! - [`blocking`]: the same surface for code that is not async (also at
//!   `raftlock_client::blocking`);
//! - `endpoints`, `request_ids`: retries (bounded by the caller's
//!   deadline, and the dial timeout that moves a call past a paused or
//!   silent endpoint) and exactly-once request ids;
//! - `abandoned`: a dropped acquire, campaign or lease grant finished in
//!   the background (its outcome learnt, its grant given back), and the
//!   count of such cleanups that [`Client::close`] waits for; `unary`:
//!   the one generic send of such a call, as it is or as numbered attempts;
//! - `connect_failure`: why a node could not be reached or spoken to, in
//!   words; `cert_validity`: a certificate's dates.

/// One low-level call: `rpc!(self, LeaseClient, grant, req)` sends `req`
/// through the endpoints (retrying, following the leader, until the
/// client's deadline if it has one) and answers the response body;
/// `..., within limit` bounds each attempt.
macro_rules! rpc {
    ($self:ident, $client:ident, $method:ident, $req:expr) => {{
        let req = $req;
        $self
            .inner
            .endpoints
            .call($self.deadline, |ch: $crate::endpoints::Transport| {
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
            .call_bounded(
                $self.deadline,
                Some($limit),
                |ch: $crate::endpoints::Transport| {
                    let req = req.clone();
                    async move { $client::new(ch).$method(req).await.map(|r| r.into_inner()) }
                },
            )
            .await
    }};
}

pub mod blocking;
pub mod error;
/// The gRPC metadata keys of answers: `raftlock_api::metadata`.
pub use raftlock_api::metadata;
pub use raftlock_api::NodeAccess;
pub mod pb;

mod abandoned;
mod cert_validity;
mod cluster_calls;
mod connect_failure;
mod coordination_calls;
mod election;
mod election_calls;
mod endpoints;
mod fenced;
mod health_calls;
mod lease_calls;
mod lock_builder;
mod lock_calls;
mod lock_guard;
mod loss;
mod node_access;
mod options;
mod request_ids;
mod semaphore;
mod session;
mod task_lock;
mod tls;
mod unary;

use std::sync::Arc;
use std::time::Duration;

pub use endpoints::dial::DEFAULT_DIAL_TIMEOUT;
use endpoints::Endpoints;
pub use endpoints::DEFAULT_RETRY_FOR;
use request_ids::RequestIds;
use session::SessionSlot;
use tokio::runtime::Handle;
use tokio::time::Instant;

pub use coordination_calls::{Held, LeadRecord, ReadWriteOp, ReadWriteStep};
pub use election::{Election, Leadership};
pub use fenced::Fenced;
pub use lease_calls::{KeepAliveStream, LeaseAccount, LeaseTtl, RevokedAll};
pub use lock_builder::LockBuilder;
pub use lock_calls::{Acquire, Acquired};
pub use lock_guard::LockGuard;
pub use options::{
    ClientBuilder, ClientOptions, SettingNames, DEFAULT_SESSION_TTL, MIN_DIAL_TIMEOUT,
};
pub use semaphore::{RwLock, Semaphore, SemaphoreGuard};
pub use task_lock::{TaskGuard, TaskLock};
pub use tls::ClientTls;

pub use crate::error::Error;

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
    /// When the caller's timeout ends: calls made through this handle stop
    /// connecting and retrying then, unless a node may already hold the
    /// request (see `Endpoints::call_bounded`). Set only on the
    /// short-lived copies a call with a timeout makes ([`Client::until`]).
    deadline: Option<Instant>,
}

#[derive(Debug)]
struct Inner {
    endpoints: Endpoints,
    ids: RequestIds,
    options: ClientOptions,
    /// Background work `close` waits for: abandoned calls being finished,
    /// guards being released after a drop.
    cleanups: abandoned::Cleanups,
    /// The runtime the client was made on. Its connections' tasks run
    /// there, and so does its background work (session keep-alives,
    /// releases of dropped holds, the cleanup of abandoned calls, loss and
    /// hold-time watchers), whichever runtime a call is polled on: work
    /// spawned on a runtime that only runs while someone blocks on it
    /// would stall there.
    home: Handle,
}

impl Client {
    /// Connects to a cluster given some of its client endpoints
    /// (`host:port`). Connections are made lazily; the first call fails with
    /// [`Error::Unavailable`] (naming each address and why) if no endpoint
    /// answers within the retry budget or the call's timeout.
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
    /// # async fn demo() -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    /// use raftlock_client::{Client, ClientOptions};
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
        let endpoints = Endpoints::new(&addrs, &options)?;
        Ok(Client {
            session: Arc::new(SessionSlot::new(options.lease)),
            deadline: None,
            inner: Arc::new(Inner {
                endpoints,
                ids: RequestIds::new(),
                options,
                cleanups: abandoned::Cleanups::new(),
                home: Handle::current(),
            }),
        })
    }

    /// A builder: session TTL, safety margin, retry budget, explicit lease.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), raftlock_client::Error> {
    /// use std::time::Duration;
    ///
    /// let client = raftlock_client::Client::builder(["127.0.0.1:7379", "127.0.0.1:7380"])
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
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let lease = client.grant_lease(std::time::Duration::from_secs(30)).await?;
    /// let on_lease = client.with_lease(lease);
    /// let guard = on_lease.lock("reports").acquire().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_lease(&self, lease: LeaseId) -> Client {
        Client {
            inner: self.inner.clone(),
            session: Arc::new(SessionSlot::new(Some(lease))),
            deadline: None,
        }
    }

    /// Shares connections but not the session: for background tasks, so
    /// they do not keep the client's session alive through a cycle.
    pub(crate) fn detached(&self) -> Client {
        Client {
            inner: self.inner.clone(),
            session: Arc::new(SessionSlot::new(None)),
            deadline: None,
        }
    }

    /// This client (same connections and session) for one call bounded
    /// by `deadline`: its session grant, connecting, retries and waits.
    /// Never keep the copy past the call (holds keep the client they were
    /// acquired through, so they use the unbounded one).
    pub(crate) fn until(&self, deadline: Option<Instant>) -> Client {
        Client {
            inner: self.inner.clone(),
            session: self.session.clone(),
            deadline: endpoints::earliest(deadline, self.deadline),
        }
    }

    /// This client for one call bounded by `timeout` from now if it
    /// `wait`s (a try is bounded by the client's deadline alone).
    pub(crate) fn until_waited(&self, wait: bool, timeout: Option<Duration>) -> Client {
        self.until(wait.then(|| self.deadline_after(timeout)).flatten())
    }

    /// The deadline of a call that waits at most `timeout` from now, or
    /// this client's own deadline if that comes first.
    pub(crate) fn deadline_after(&self, timeout: Option<Duration>) -> Option<Instant> {
        endpoints::earliest(timeout.map(|t| Instant::now() + t), self.deadline)
    }

    /// The runtime background work runs on (see `Inner::home`).
    pub(crate) fn home(&self) -> Handle {
        self.inner.home.clone()
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
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let lease = client.session_lease().await?;
    /// println!("holding locks on lease {lease}");
    /// # Ok(()) }
    /// ```
    pub async fn session_lease(&self) -> Result<LeaseId, Error> {
        Ok(self.session().await?.lease)
    }

    /// Ends the session: waits (within the retry budget) for the
    /// background cleanups of dropped acquires and guards, then stops the
    /// session's keep-alives and revokes its lease (if this client granted
    /// it), which releases every lock held on it; their guards report
    /// [`lost`](LockGuard::lost). The next call that needs a
    /// session grants a new one. Locks on dedicated leases (`.ttl`) are not
    /// affected.
    ///
    /// ```no_run
    /// # async fn demo(client: raftlock_client::Client) -> Result<(), raftlock_client::Error> {
    /// let guard = client.lock("batch").acquire().await?;
    /// // ... work ...
    /// drop(guard);
    /// client.close().await?;
    /// # Ok(()) }
    /// ```
    pub async fn close(&self) -> Result<(), Error> {
        // First what dropped calls and guards left to do in the background
        // (bounded by the retry budget: the session's revoke ends the rest).
        let left = self.inner.cleanups.wait(self.inner.options.retry_for).await;
        if left > 0 {
            tracing::debug!("closing with {left} cleanups of dropped calls unfinished");
        }
        match self.session.take().await {
            Some(session) => session.end().await,
            None => Ok(()),
        }
    }

    /// The endpoints this client uses.
    pub fn endpoints(&self) -> &[String] {
        self.inner.endpoints.addrs()
    }
}
