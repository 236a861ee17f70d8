//! `NativeClient`: the calls of the Rust client, each blocking or, with
//! `aio=True`, answering an awaitable (see `run::finish`).

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use pyo3::prelude::*;
use raftlock_client::{Acquire, Client, Error};

use crate::client_options::{client_options, ClientSettings};
use crate::convert::{lock_delay_secs, secs, ttl_secs, LeaderInfo, LeaseTtl, LockInfo};
use crate::coordination::NativeCoordination;
use crate::guards::{NativeGuard, NativeLeadership, NativeTaskGuard};
use crate::node_link::NodeLink;
use crate::observer::NativeObserver;
use crate::run::{block, finish, to_py, Reply};

/// A connection to a raftlock cluster (`raftlock.Client` wraps it).
#[pyclass(module = "raftlock._native", frozen)]
pub struct NativeClient {
    client: Client,
    /// Its node in this process, for a client made by `node.client()`.
    link: NodeLink,
}

/// Every method but `new`, `endpoints` and `observe` takes `aio`: `True`
/// answers an awaitable, `False` blocks until done.
// Keyword arguments in Python; Rust sees them as parameters.
#[allow(clippy::too_many_arguments)]
#[pymethods]
impl NativeClient {
    /// Connects lazily: no call is made until the first request.
    #[new]
    #[pyo3(signature = (endpoints, *, session_ttl=None, safety_margin=None, retry_for=None, token=None, cacert=None, cert=None, key=None, dial_timeout=None))]
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
        dial_timeout: Option<f64>,
    ) -> PyResult<Self> {
        crate::log_bridge::install(py);
        let options = client_options(ClientSettings {
            session_ttl,
            safety_margin,
            retry_for,
            dial_timeout,
            token,
            cacert,
            cert,
            key,
        })?;
        let client = block(py, Client::connect_with(endpoints, options))?;
        Ok(Self::from_client(client))
    }

    /// The endpoints this client uses.
    #[getter]
    fn endpoints(&self) -> Vec<String> {
        self.client.endpoints().to_vec()
    }

    /// Takes a lock (`mode` "exclusive"), a shared hold ("shared") or
    /// `permits` of a semaphore of `limit` ("permits"); `None` when a
    /// try-lock (`wait=False`) finds it busy. `on_lost(reason)` is called,
    /// from a runtime thread, if the hold is lost.
    #[pyo3(signature = (name, ttl, timeout, wait, mode, permits, limit, owner, lock_delay, *, on_lost=None, aio=false))]
    fn lock<'py>(
        &self,
        py: Python<'py>,
        name: String,
        ttl: Option<f64>,
        timeout: Option<f64>,
        wait: bool,
        mode: &str,
        permits: u32,
        limit: u32,
        owner: Option<String>,
        lock_delay: Option<f64>,
        on_lost: Option<Py<PyAny>>,
        aio: bool,
    ) -> Reply<'py> {
        let mut builder = match mode {
            "exclusive" => self.client.lock(name),
            "shared" => self.client.lock(name).shared(),
            "permits" => self.client.semaphore(name, limit).builder(permits),
            other => {
                return Err(to_py(Error::InvalidArgument(format!(
                    "mode {other:?} is not exclusive, shared or permits"
                ))))
            }
        };
        if let Some(ttl) = ttl {
            builder = builder.ttl(ttl_secs("ttl", ttl)?);
        }
        if let Some(timeout) = timeout {
            builder = builder.timeout(secs("timeout", timeout)?);
        }
        if let Some(owner) = owner {
            builder = builder.owner(owner);
        }
        if let Some(delay) = lock_delay {
            builder = builder.lock_delay(lock_delay_secs(delay)?);
        }
        let link = self.link.clone();
        self.link.run(py, aio, async move {
            let guard = if wait {
                Some(builder.acquire().await?)
            } else {
                builder.try_acquire().await?
            };
            Ok(guard.map(|guard| NativeGuard::watched(guard, on_lost, link)))
        })
    }

    /// Whether `fence` is still the fence of a live hold of `name`.
    #[pyo3(signature = (name, fence, *, aio=false))]
    fn check<'py>(&self, py: Python<'py>, name: String, fence: u64, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.check(&name, fence).await
        })
    }

    /// The lock `name` (holders and waiters), `None` if nobody holds or waits.
    #[pyo3(signature = (name, *, aio=false))]
    fn describe<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(c.describe(&name).await?.map(LockInfo::from))
        })
    }

    /// Locks whose names start with `prefix`.
    #[pyo3(signature = (prefix, limit, *, aio=false))]
    fn list<'py>(&self, py: Python<'py>, prefix: String, limit: u32, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            let locks = c.list(&prefix, limit).await?;
            Ok(locks.into_iter().map(LockInfo::from).collect::<Vec<_>>())
        })
    }

    /// Operator override: ends every hold of `name`; answers how many.
    #[pyo3(signature = (name, *, aio=false))]
    fn force_release<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.force_release(&name).await
        })
    }

    /// Grants a lease of `ttl` seconds; answers its id.
    #[pyo3(signature = (ttl, *, aio=false))]
    fn grant_lease<'py>(&self, py: Python<'py>, ttl: f64, aio: bool) -> Reply<'py> {
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.grant_lease(ttl).await
        })
    }

    /// Renews a lease; answers its TTL in seconds.
    #[pyo3(signature = (lease, *, aio=false))]
    fn keep_alive<'py>(&self, py: Python<'py>, lease: u64, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(c.keep_alive(lease).await?.as_secs_f64())
        })
    }

    /// Revokes a lease; answers how many holds ended with it.
    #[pyo3(signature = (lease, *, aio=false))]
    fn revoke<'py>(&self, py: Python<'py>, lease: u64, aio: bool) -> Reply<'py> {
        self.link.run_on(
            py,
            aio,
            &self.client,
            |c| async move { c.revoke(lease).await },
        )
    }

    /// Gives a lease a new TTL from now (replicated); answers it.
    #[pyo3(signature = (lease, ttl, *, aio=false))]
    fn set_lease_ttl<'py>(&self, py: Python<'py>, lease: u64, ttl: f64, aio: bool) -> Reply<'py> {
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(c.set_lease_ttl(lease, ttl).await?.as_secs_f64())
        })
    }

    /// A lease's TTL, time left and attachments.
    #[pyo3(signature = (lease, *, aio=false))]
    fn time_to_live<'py>(&self, py: Python<'py>, lease: u64, aio: bool) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(LeaseTtl::from(c.time_to_live(lease).await?))
        })
    }

    /// Low-level exclusive acquire of `name` by `owner` through `lease`:
    /// `(fence, count)` when granted, `None` when busy (`wait=False`).
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
    ) -> Reply<'py> {
        let spec = Acquire {
            wait,
            timeout: timeout.map(|t| secs("timeout", t)).transpose()?,
            ..Acquire::exclusive(name, owner, lease)
        };
        self.link.run_on(py, aio, &self.client, |c| async move {
            Ok(c.acquire(&spec).await?.map(|a| (a.fence, a.count)))
        })
    }

    /// A try-lock of `name` for `owner` on a lease made for it in the same
    /// entry, ending `ttl` seconds after the grant: `(lease, fence)`, or
    /// `None` when busy.
    #[pyo3(signature = (name, owner, ttl, *, aio=false))]
    fn acquire_with_ttl<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        ttl: f64,
        aio: bool,
    ) -> Reply<'py> {
        let ttl = ttl_secs("ttl", ttl)?;
        self.link.run_on(py, aio, &self.client, |c| async move {
            let held = c.acquire_with_ttl(&name, &owner, ttl).await?;
            Ok(held.map(|(lease, a)| (lease, a.fence)))
        })
    }

    /// Low-level release of one level of `owner`'s hold; answers the
    /// re-entry depth left.
    #[pyo3(signature = (name, owner, *, aio=false))]
    fn release_on<'py>(
        &self,
        py: Python<'py>,
        name: String,
        owner: String,
        aio: bool,
    ) -> Reply<'py> {
        self.link.run_on(py, aio, &self.client, |c| async move {
            c.release(&name, &owner).await
        })
    }

    /// Campaigns in election `name` until elected (or `timeout`); a
    /// `timeout` of 0 is one try, answering `None` when another leads.
    #[pyo3(signature = (name, value, timeout, *, aio=false))]
    fn campaign<'py>(
        &self,
        py: Python<'py>,
        name: String,
        value: Vec<u8>,
        timeout: Option<f64>,
        aio: bool,
    ) -> Reply<'py> {
        let election = self.client.election(name);
        let link = self.link.clone();
        match timeout.map(|t| secs("timeout", t)).transpose()? {
            Some(Duration::ZERO) => self.link.run(py, aio, async move {
                let leadership = election.try_campaign(value).await?;
                Ok(leadership.map(|l| NativeLeadership::new(l, link)))
            }),
            timeout => {
                let election = match timeout {
                    Some(timeout) => election.timeout(timeout),
                    None => election,
                };
                self.link.run(py, aio, async move {
                    Ok(NativeLeadership::new(election.campaign(value).await?, link))
                })
            }
        }
    }

    /// The current leader of election `name`, if any.
    #[pyo3(signature = (name, *, aio=false))]
    fn leader<'py>(&self, py: Python<'py>, name: String, aio: bool) -> Reply<'py> {
        let election = self.client.election(name);
        self.link.run(py, aio, async move {
            Ok(election.leader().await?.map(LeaderInfo::from))
        })
    }

    /// Takes task lock `name` if no worker holds it (see `TaskLock`).
    #[pyo3(signature = (name, min_hold, max_hold, *, aio=false))]
    fn task_lock<'py>(
        &self,
        py: Python<'py>,
        name: String,
        min_hold: f64,
        max_hold: f64,
        aio: bool,
    ) -> Reply<'py> {
        let task = self.client.task_lock(
            name,
            secs("min_hold", min_hold)?,
            secs("max_hold", max_hold)?,
        );
        let link = self.link.clone();
        self.link.run(py, aio, async move {
            Ok(task
                .try_acquire()
                .await?
                .map(|g| NativeTaskGuard::new(g, link)))
        })
    }

    /// The session lease id, granting the session now if needed.
    #[pyo3(signature = (*, aio=false))]
    fn session_lease<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
        self.link.run_on(
            py,
            aio,
            &self.client,
            |c| async move { c.session_lease().await },
        )
    }

    /// Ends the session: revokes its lease, releasing its locks.
    #[pyo3(signature = (*, aio=false))]
    fn close<'py>(&self, py: Python<'py>, aio: bool) -> Reply<'py> {
        let client = self.client.clone();
        self.leave(
            py,
            aio,
            "close (the revoke of the session lease)",
            async move { client.close().await },
        )
    }

    /// Watches election `name`: each `next` answers the leader after a change.
    fn observe(&self, name: String) -> NativeObserver {
        NativeObserver::new(self.client.election(name).observe())
    }

    /// The coordination calls grelmicro's adapters make (holds with
    /// leases of their own, read-write steps, lead records, schedule
    /// fires), on this client's connection.
    #[getter]
    fn coordination(&self) -> NativeCoordination {
        NativeCoordination::new(self.client.clone(), self.link.clone())
    }
}

impl NativeClient {
    /// A client connected in Rust (an embedded node's own, `NativeNode::client`).
    pub(crate) fn from_client(client: Client) -> Self {
        Self {
            client,
            link: NodeLink::default(),
        }
    }

    /// A client of a node of this process (see [`NodeLink`]).
    pub(crate) fn of_node(client: Client, link: NodeLink) -> Self {
        Self { client, link }
    }

    /// [`finish`] of a leave (see [`NodeLink::leave`]).
    fn leave<'py, F>(&self, py: Python<'py>, aio: bool, what: &str, fut: F) -> Reply<'py>
    where
        F: Future<Output = Result<(), Error>> + Send + 'static,
    {
        finish(py, aio, self.link.leave(what.to_owned(), fut))
    }
}

/// A fresh owner token (a random UUID, as text), for a lock made without one.
#[pyfunction]
pub fn new_owner() -> String {
    uuid::Uuid::new_v4().to_string()
}
