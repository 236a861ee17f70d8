//! `raftlock._native`: the Rust client bound for Python.
//!
//! One implementation of sessions, keep-alives, leader following and
//! exactly-once retries serves Rust and Python alike: this module only
//! carries calls across. Every call blocks the calling thread (with the GIL
//! released, Ctrl-C honoured) or, with `aio=True`, answers an asyncio
//! awaitable; both run on one tokio runtime shared by the process. The Python package (`python/raftlock`) builds the API
//! people use on top: context managers, the lost event, re-entry, the
//! Redis and grelmicro adapters. Errors become the exceptions of
//! `raftlock.errors`, one class per [`Error`] variant.

mod convert;
mod guards;
mod run;

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use pyo3::prelude::*;
use raftlock_client::{Acquire, Client, ClientOptions, ClientTls, Error, LockMode};
use tokio::sync::Mutex as AsyncMutex;

use convert::{secs, LeaderInfo, LeaseTtl, LockInfo};
use guards::{NativeGuard, NativeLeadership, NativeTaskGuard};
use run::{block, finish};

/// A connection to a raftlock cluster (`raftlock.Client` wraps it).
#[pyclass(module = "raftlock._native", frozen)]
struct NativeClient {
    client: Client,
}

pub(crate) type Boxed<T> =
    Pin<Box<dyn std::future::Future<Output = Result<T, Error>> + Send + 'static>>;

// Keyword arguments in Python; Rust sees them as parameters.
#[allow(clippy::too_many_arguments)]
#[pymethods]
impl NativeClient {
    /// Connects lazily: no call is made until the first request.
    #[new]
    #[pyo3(signature = (endpoints, *, session_ttl=None, safety_margin=None, retry_for=None, token=None, cacert=None, cert=None, key=None))]
    fn new(
        py: Python<'_>,
        endpoints: Vec<String>,
        session_ttl: Option<f64>,
        safety_margin: Option<f64>,
        retry_for: Option<f64>,
        token: Option<String>,
        cacert: Option<PathBuf>,
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
    ) -> PyResult<Self> {
        let mut options = ClientOptions::default();
        if let Some(ttl) = session_ttl {
            options.session_ttl = secs("session_ttl", ttl)?;
        }
        if let Some(margin) = safety_margin {
            options.safety_margin = Some(secs("safety_margin", margin)?);
        }
        if let Some(retry) = retry_for {
            options.retry_for = secs("retry_for", retry)?;
        }
        options.token = token;
        if cacert.is_some() || cert.is_some() || key.is_some() {
            let tls = ClientTls::from_files(cacert.as_deref(), cert.as_deref(), key.as_deref())
                .map_err(run::to_py)?;
            options.tls = Some(tls);
        }
        let client = block(
            py,
            async move { Client::connect_with(endpoints, options).await },
        )?;
        Ok(Self { client })
    }

    /// The endpoints this client uses.
    #[getter]
    fn endpoints(&self) -> Vec<String> {
        self.client.endpoints().to_vec()
    }

    /// Takes a lock, a shared hold or semaphore permits (see `lock_fut`).
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, ttl, timeout, wait, mode, permits, limit, owner, lock_delay, *, aio=false))]
    fn lock<'py>(
        &self,
        py: Python<'py>,
        name: String,
        ttl: Option<f64>,
        timeout: Option<f64>,
        wait: bool,
        mode: String,
        permits: u32,
        limit: u32,
        owner: Option<String>,
        lock_delay: Option<f64>,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(
            py,
            aio,
            self.lock_fut(
                name, ttl, timeout, wait, mode, permits, limit, owner, lock_delay,
            )?,
        )
    }
    /// Whether `fence` is still the fence of a live hold of `name`.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, fence, *, aio=false))]
    fn check<'py>(
        &self,
        py: Python<'py>,
        name: String,
        fence: u64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.check_fut(name, fence)?)
    }
    /// The lock `name` (holders and waiters), `None` if nobody holds or waits.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, *, aio=false))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        name: String,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.describe_fut(name)?)
    }
    /// Locks whose names start with `prefix`.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (prefix, limit, *, aio=false))]
    fn list<'py>(
        &self,
        py: Python<'py>,
        prefix: String,
        limit: u32,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.list_fut(prefix, limit)?)
    }
    /// Operator override: ends every hold of `name`; answers how many.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, *, aio=false))]
    fn force_release<'py>(
        &self,
        py: Python<'py>,
        name: String,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.force_release_fut(name)?)
    }
    /// Grants a lease of `ttl` seconds; answers its id.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (ttl, *, aio=false))]
    fn grant_lease<'py>(
        &self,
        py: Python<'py>,
        ttl: f64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.grant_lease_fut(ttl)?)
    }
    /// Renews a lease; answers its TTL in seconds.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (lease, *, aio=false))]
    fn keep_alive<'py>(
        &self,
        py: Python<'py>,
        lease: u64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.keep_alive_fut(lease)?)
    }
    /// Revokes a lease; answers how many holds ended with it.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (lease, *, aio=false))]
    fn revoke<'py>(&self, py: Python<'py>, lease: u64, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.revoke_fut(lease)?)
    }
    /// Gives a lease a new TTL from now (replicated); answers it.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (lease, ttl, *, aio=false))]
    fn set_lease_ttl<'py>(
        &self,
        py: Python<'py>,
        lease: u64,
        ttl: f64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.set_lease_ttl_fut(lease, ttl)?)
    }
    /// A lease's TTL, time left and attachments.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (lease, *, aio=false))]
    fn time_to_live<'py>(
        &self,
        py: Python<'py>,
        lease: u64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.time_to_live_fut(lease)?)
    }
    /// Low-level acquire of `name` by `owner` through `lease`:
    /// `(fence, count)` when granted, `None` when busy (`wait=False`).
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, owner, lease, wait, timeout, *, aio=false))]
    fn acquire_on<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        lease: u64,
        wait: bool,
        timeout: Option<f64>,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(
            py,
            aio,
            self.acquire_on_fut(name, owner, lease, wait, timeout)?,
        )
    }
    /// A try-lock of `name` for `owner` on a lease made for it in the same
    /// entry, ending `ttl` seconds after the grant: `(lease, fence)`, or
    /// `None` when busy.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, owner, ttl, *, aio=false))]
    fn acquire_with_ttl<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        ttl: f64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let ttl = secs("ttl", ttl)?;
        let client = self.client.clone();
        finish(py, aio, async move {
            let held = client.acquire_with_ttl(&name, &owner, ttl).await?;
            Ok(held.map(|(lease, a)| (lease, a.fence)))
        })
    }

    /// Low-level release of one level of `owner`'s hold; answers the
    /// re-entry depth left.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, owner, *, aio=false))]
    fn release_on<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.release_on_fut(name, owner)?)
    }
    /// Campaigns in election `name` until elected (or `timeout`).
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, value, timeout, *, aio=false))]
    fn campaign<'py>(
        &self,
        py: Python<'py>,
        name: String,
        value: Vec<u8>,
        timeout: Option<f64>,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.campaign_fut(name, value, timeout)?)
    }
    /// The current leader of election `name`, if any.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, *, aio=false))]
    fn leader<'py>(&self, py: Python<'py>, name: String, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.leader_fut(name)?)
    }
    /// Takes task lock `name` if no worker holds it (see `TaskLock`).
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (name, min_hold, max_hold, *, aio=false))]
    fn task_lock<'py>(
        &self,
        py: Python<'py>,
        name: String,
        min_hold: f64,
        max_hold: f64,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.task_lock_fut(name, min_hold, max_hold)?)
    }
    /// The session lease id, granting the session now if needed.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (*, aio=false))]
    fn session_lease<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.session_lease_fut()?)
    }
    /// Ends the session: revokes its lease, releasing its locks.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (*, aio=false))]
    fn close<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.close_fut()?)
    }

    /// Watches election `name`: each `next` answers the leader after a change.
    fn observe(&self, name: String) -> NativeObserver {
        let stream = self.client.election(name).observe();
        NativeObserver {
            stream: Arc::new(AsyncMutex::new(Box::pin(stream))),
        }
    }
}

impl NativeClient {
    #[allow(clippy::too_many_arguments)]
    fn lock_fut(
        &self,
        name: String,
        ttl: Option<f64>,
        timeout: Option<f64>,
        wait: bool,
        mode: String,
        permits: u32,
        limit: u32,
        owner: Option<String>,
        lock_delay: Option<f64>,
    ) -> PyResult<Boxed<Option<NativeGuard>>> {
        let mut builder = match mode.as_str() {
            "exclusive" => self.client.lock(name),
            "shared" => self.client.lock(name).shared(),
            "permits" => self.client.semaphore(name, limit).builder(permits),
            other => {
                return Err(run::to_py(Error::InvalidArgument(format!(
                    "mode {other:?} is not exclusive, shared or permits"
                ))))
            }
        };
        if let Some(ttl) = ttl {
            builder = builder.ttl(secs("ttl", ttl)?);
        }
        if let Some(timeout) = timeout {
            builder = builder.timeout(secs("timeout", timeout)?);
        }
        if let Some(owner) = owner {
            builder = builder.owner(owner);
        }
        if let Some(delay) = lock_delay {
            builder = builder.lock_delay(secs("lock_delay", delay)?);
        }
        Ok(Box::pin(async move {
            let guard = if wait {
                Some(builder.acquire().await?)
            } else {
                builder.try_acquire().await?
            };
            Ok(guard.map(NativeGuard::new))
        }))
    }

    fn check_fut(&self, name: String, fence: u64) -> PyResult<Boxed<bool>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.check(&name, fence).await }))
    }

    fn describe_fut(&self, name: String) -> PyResult<Boxed<Option<LockInfo>>> {
        let client = self.client.clone();
        Ok(Box::pin(async move {
            Ok(client.describe(&name).await?.map(LockInfo::from))
        }))
    }

    fn list_fut(&self, prefix: String, limit: u32) -> PyResult<Boxed<Vec<LockInfo>>> {
        let client = self.client.clone();
        Ok(Box::pin(async move {
            let locks = client.list(&prefix, limit).await?;
            Ok(locks.into_iter().map(LockInfo::from).collect())
        }))
    }

    fn force_release_fut(&self, name: String) -> PyResult<Boxed<u32>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.force_release(&name).await }))
    }

    fn grant_lease_fut(&self, ttl: f64) -> PyResult<Boxed<u64>> {
        let ttl = secs("ttl", ttl)?;
        let client = self.client.clone();
        Ok(Box::pin(async move { client.grant_lease(ttl).await }))
    }

    fn keep_alive_fut(&self, lease: u64) -> PyResult<Boxed<f64>> {
        let client = self.client.clone();
        Ok(Box::pin(async move {
            Ok(client.keep_alive(lease).await?.as_secs_f64())
        }))
    }

    fn revoke_fut(&self, lease: u64) -> PyResult<Boxed<u32>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.revoke(lease).await }))
    }

    fn set_lease_ttl_fut(&self, lease: u64, ttl: f64) -> PyResult<Boxed<f64>> {
        let ttl = secs("ttl", ttl)?;
        let client = self.client.clone();
        Ok(Box::pin(async move {
            Ok(client.set_lease_ttl(lease, ttl).await?.as_secs_f64())
        }))
    }

    fn time_to_live_fut(&self, lease: u64) -> PyResult<Boxed<LeaseTtl>> {
        let client = self.client.clone();
        Ok(Box::pin(async move {
            Ok(LeaseTtl::from(client.time_to_live(lease).await?))
        }))
    }

    fn acquire_on_fut(
        &self,
        name: String,
        owner: String,
        lease: u64,
        wait: bool,
        timeout: Option<f64>,
    ) -> PyResult<Boxed<Option<(u64, u32)>>> {
        let timeout = timeout.map(|t| secs("timeout", t)).transpose()?;
        let client = self.client.clone();
        let spec = Acquire {
            wait,
            timeout,
            mode: LockMode::Exclusive,
            ..Acquire::exclusive(name, owner, lease)
        };
        Ok(Box::pin(async move {
            Ok(client.acquire(&spec).await?.map(|a| (a.fence, a.count)))
        }))
    }

    fn release_on_fut(&self, name: String, owner: String) -> PyResult<Boxed<u32>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.release(&name, &owner).await }))
    }

    fn campaign_fut(
        &self,
        name: String,
        value: Vec<u8>,
        timeout: Option<f64>,
    ) -> PyResult<Boxed<NativeLeadership>> {
        let mut election = self.client.election(name);
        if let Some(timeout) = timeout {
            election = election.timeout(secs("timeout", timeout)?);
        }
        Ok(Box::pin(async move {
            Ok(NativeLeadership::new(election.campaign(value).await?))
        }))
    }

    fn leader_fut(&self, name: String) -> PyResult<Boxed<Option<LeaderInfo>>> {
        let election = self.client.election(name);
        Ok(Box::pin(async move {
            Ok(election.leader().await?.map(LeaderInfo::from))
        }))
    }

    fn task_lock_fut(
        &self,
        name: String,
        min_hold: f64,
        max_hold: f64,
    ) -> PyResult<Boxed<Option<NativeTaskGuard>>> {
        let task = self.client.task_lock(
            name,
            secs("min_hold", min_hold)?,
            secs("max_hold", max_hold)?,
        );
        Ok(Box::pin(async move {
            Ok(task.try_acquire().await?.map(NativeTaskGuard::new))
        }))
    }

    fn session_lease_fut(&self) -> PyResult<Boxed<u64>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.session_lease().await }))
    }

    fn close_fut(&self) -> PyResult<Boxed<()>> {
        let client = self.client.clone();
        Ok(Box::pin(async move { client.close().await }))
    }
}

type LeaderStream =
    Pin<Box<dyn Stream<Item = Result<Option<raftlock_client::LeaderInfo>, Error>> + Send>>;

/// The changes of one election's leader (`Election.observe`).
#[pyclass(module = "raftlock._native", frozen)]
struct NativeObserver {
    stream: Arc<AsyncMutex<LeaderStream>>,
}

#[pymethods]
impl NativeObserver {
    /// The next change: `(True, leader or None)`, or `(False, None)`
    /// when the stream has ended.
    /// `aio=True`: an awaitable; otherwise blocks until done.
    #[pyo3(signature = (*, aio=false))]
    fn next<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        finish(py, aio, self.next_fut()?)
    }
}

impl NativeObserver {
    fn next_fut(&self) -> PyResult<Boxed<(bool, Option<LeaderInfo>)>> {
        let stream = self.stream.clone();
        Ok(Box::pin(async move {
            match stream.lock().await.next().await {
                Some(item) => Ok((true, item?.map(LeaderInfo::from))),
                None => Ok((false, None)),
            }
        }))
    }
}

/// The native half of the `raftlock` package.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeClient>()?;
    m.add_class::<NativeGuard>()?;
    m.add_class::<NativeLeadership>()?;
    m.add_class::<NativeTaskGuard>()?;
    m.add_class::<NativeObserver>()?;
    m.add_class::<LockInfo>()?;
    m.add_class::<convert::Holder>()?;
    m.add_class::<convert::Waiter>()?;
    m.add_class::<LeaderInfo>()?;
    m.add_class::<LeaseTtl>()?;
    Ok(())
}
