//! `NativeNode`: a raftlock node inside the Python process
//! (`raftlock.Node`, `raftlock.asyncio.Node` wrap it).
//!
//! Each node runs on a tokio runtime of its own, whose threads never take
//! the GIL: a Python thread holding it, a blocked event loop or a slow
//! callback on the client's shared runtime cannot delay a heartbeat, a
//! vote or a lease's expiry. Starting and stopping happen on a plain
//! thread, so a runtime is never dropped inside async code and a caller
//! that gives up (Ctrl-C) leaves the node started or stopped, not half.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use raftlock::{Config, Node};
use raftlock_client::{Client, ClientOptions, Error};
use tokio::runtime::Runtime;
use tokio::sync::{oneshot, watch};

use crate::client::NativeClient;
use crate::client_options::PYTHON_NAMES;
use crate::convert::secs;
use crate::log_bridge::{self, FLUSH_WAIT};
use crate::node_link::NodeLink;
use crate::node_options::{config_from, option_names, OptionValue};
use crate::node_status::NodeStatus;
use crate::run::{block, finish, to_py};

/// How long `stop()` lets the node's last tasks end after its shutdown.
const RUNTIME_STOP: Duration = Duration::from_secs(5);

/// How often `wait_ready` looks at the node's view of the cluster.
const READY_POLL: Duration = Duration::from_millis(20);

/// The data dirs of the nodes this process runs (started or stopping).
/// sled's file lock tells other processes; this tells this one, by name.
static DATA_DIRS: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn data_dirs() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    DATA_DIRS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This process's claim on a data dir, given up when dropped (once the
/// node on it has stopped and sled has closed it).
struct DirClaim(PathBuf);

impl DirClaim {
    fn take(dir: &Path) -> Result<DirClaim, Error> {
        let dir = std::path::absolute(dir)
            .map_err(|e| Error::Startup(format!("data dir {}: {e}", dir.display())))?;
        let dir = dir.canonicalize().unwrap_or(dir);
        if !data_dirs().insert(dir.clone()) {
            return Err(Error::Startup(format!(
                "data dir {} is in use by another raftlock.Node of this process; \
                 stop() that node first, or give this one a data dir of its own",
                dir.display()
            )));
        }
        Ok(DirClaim(dir))
    }
}

impl Drop for DirClaim {
    fn drop(&mut self) {
        data_dirs().remove(&self.0);
    }
}

/// A started node, its runtime and its data dir claim. Dropped without
/// [`stop`](Self::stop) (a caller that gave up waiting), it stops itself
/// on a thread of its own: a runtime must not be dropped in async code.
struct Running {
    parts: Option<(Node, Runtime, DirClaim)>,
    /// The process that started it.
    pid: u32,
}

impl Running {
    /// Starts a node with `config` on a new runtime (blocking).
    fn start(config: Config, claim: DirClaim, workers: usize) -> Result<Running, Error> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name(format!("raftlock-node-{}", config.replication.id))
            .enable_all()
            .build()
            .map_err(|e| Error::Startup(format!("cannot start the node's runtime: {e}")))?;
        // Python raises it as `raftlock.errors.NodeError`, its words
        // carrying the cause.
        let node = runtime
            .block_on(Node::start(config))
            .map_err(|e| Error::Startup(e.to_string()))?;
        Ok(Running {
            parts: Some((node, runtime, claim)),
            pid: std::process::id(),
        })
    }

    fn node(&self) -> Option<&Node> {
        self.parts.as_ref().map(|(node, _, _)| node)
    }

    /// Shuts the node down in order, then its runtime (blocking).
    fn stop(mut self) {
        if let Some((node, runtime, claim)) = self.parts.take() {
            runtime.block_on(node.shutdown());
            runtime.shutdown_timeout(RUNTIME_STOP);
            drop(claim);
        }
    }

    /// [`stop`](Self::stop) on a thread of its own; the receiver hears
    /// when it is done.
    fn stop_in_background(self) -> oneshot::Receiver<()> {
        let (done, stopped) = oneshot::channel();
        let spawned = std::thread::Builder::new()
            .name("raftlock-node-stop".into())
            .spawn(move || {
                self.stop();
                log_bridge::flush(FLUSH_WAIT);
                let _ = done.send(());
            });
        if let Err(e) = spawned {
            // The closure (and the node in it) was dropped: its tasks are
            // aborted as in a crash; the data on disk stays.
            eprintln!("raftlock: cannot start a thread to stop the node: {e}");
        }
        stopped
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(parts) = self.parts.take() else {
            return;
        };
        if std::process::id() != self.pid {
            // A forked child: the node's threads are not here to stop.
            std::mem::forget(parts);
            return;
        }
        let rest = Running {
            parts: Some(parts),
            pid: self.pid,
        };
        drop(rest.stop_in_background());
    }
}

/// A raftlock node in this process (`weakref`: the package stops the
/// nodes still running at interpreter exit without keeping them alive).
#[pyclass(module = "raftlock._native", frozen, weakref)]
pub struct NativeNode {
    config: Config,
    /// The process that made this object: a forked child has none of the
    /// node's threads.
    pid: u32,
    /// `None` before `start` and after `stop`.
    running: Arc<Mutex<Option<Running>>>,
    /// `true` from the moment `stop` is called until the next `start`:
    /// the node's clients end their calls at once ([`NodeLink`]).
    stopping: watch::Sender<bool>,
}

impl NativeNode {
    fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn check_pid(&self) -> PyResult<()> {
        if std::process::id() != self.pid {
            return Err(PyRuntimeError::new_err(
                "this raftlock.Node was started before the process forked, and its \
                 threads do not survive fork(): start nodes after forking",
            ));
        }
        Ok(())
    }

    /// Runs `f` on the started node; an error if it is not running.
    fn with_node<R>(&self, f: impl FnOnce(&Node) -> R) -> PyResult<R> {
        self.check_pid()?;
        match self.running().as_ref().and_then(Running::node) {
            Some(node) => Ok(f(node)),
            None => Err(to_py(Error::Startup(format!(
                "node {} is not running: start() it first (it is stopped after stop())",
                self.config.replication.id
            )))),
        }
    }
}

#[pymethods]
impl NativeNode {
    /// Reads the options (keyword, value) as `raftlock serve` reads its
    /// flags; nothing starts yet.
    #[new]
    fn new(py: Python<'_>, options: Vec<(String, OptionValue)>) -> PyResult<Self> {
        log_bridge::install(py);
        let config = config_from(options).map_err(to_py)?;
        Ok(NativeNode {
            config,
            pid: std::process::id(),
            running: Arc::new(Mutex::new(None)),
            stopping: watch::channel(false).0,
        })
    }

    /// The option keywords: (name, is a switch, help), in `raftlock serve
    /// --help`'s order.
    #[staticmethod]
    fn options() -> Vec<(String, bool, String)> {
        option_names()
    }

    /// Opens the data dir, binds the listeners and starts Raft.
    #[pyo3(signature = (*, aio=false))]
    fn start<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        self.check_pid()?;
        if self.running().is_some() {
            return Err(to_py(Error::Startup(format!(
                "node {} is already running",
                self.config.replication.id
            ))));
        }
        let workers = crate::runtime::worker_threads()?;
        let claim = DirClaim::take(&self.config.replication.data_dir).map_err(to_py)?;
        self.stopping.send_replace(false);
        let config = self.config.clone();
        let (send, started) = oneshot::channel();
        std::thread::Builder::new()
            .name("raftlock-node-start".into())
            .spawn(move || {
                let result = Running::start(config, claim, workers);
                // Its start-up records are logged when `start()` returns.
                log_bridge::flush(FLUSH_WAIT);
                if let Err(Ok(running)) = send.send(result) {
                    // Nobody waits any more (Ctrl-C): do not leave it running.
                    running.stop();
                }
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
        let slot = self.running.clone();
        finish(py, aio, async move {
            let running = started
                .await
                .map_err(|_| Error::Startup("the node's start thread ended".into()))??;
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.take() {
                // Started twice at once: keep the first.
                Some(first) => {
                    *slot = Some(first);
                    drop(running.stop_in_background());
                }
                None => *slot = Some(running),
            }
            Ok(())
        })
    }

    /// Waits until this node knows a leader (up to `timeout` seconds);
    /// answers its id.
    #[pyo3(signature = (timeout=None, *, aio=false))]
    fn wait_ready<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
        aio: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.with_node(|_| ())?;
        let limit = timeout.map(|t| secs("timeout", t)).transpose()?;
        let deadline = limit.map(|l| Instant::now() + l);
        let slot = self.running.clone();
        let id = self.config.replication.id;
        finish(py, aio, async move {
            loop {
                let status = {
                    let running = slot.lock().unwrap_or_else(PoisonError::into_inner);
                    match running.as_ref().and_then(Running::node) {
                        Some(node) => node.status(),
                        None => return Err(Error::Startup(format!("node {id} was stopped"))),
                    }
                };
                if let Some(leader) = status.leader {
                    return Ok(leader);
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(Error::Timeout(format!(
                        "node {id} knows no leader after {:?} (role {}, term {}, {} members): \
                         are a majority of the members running and reachable?",
                        limit.unwrap_or_default(),
                        status.role,
                        status.term,
                        status.members.len()
                    )));
                }
                tokio::time::sleep(READY_POLL).await;
            }
        })
    }

    /// This node's view of the cluster.
    fn status(&self) -> PyResult<NodeStatus> {
        self.with_node(|node| NodeStatus::from(node.status()))
    }

    /// Whether this node is running (started, not stopped).
    fn is_running(&self) -> bool {
        std::process::id() == self.pid && self.running().is_some()
    }

    /// This node's Raft id.
    #[getter]
    fn id(&self) -> u64 {
        self.config.replication.id
    }

    /// The data dir.
    #[getter]
    fn data_dir(&self) -> PathBuf {
        self.config.replication.data_dir.clone()
    }

    /// The bound client, peer and admin addresses (the admin one `None`
    /// when off).
    fn addresses(&self) -> PyResult<(String, String, Option<String>)> {
        self.with_node(|node| {
            (
                node.client_addr().to_string(),
                node.peer_addr().to_string(),
                node.admin_addr().map(|a| a.to_string()),
            )
        })
    }

    /// A client of this node (which forwards to the leader), with the
    /// node's own TLS identity when it has one, else (no `token`) the
    /// cluster's admin credential: the embedding application is trusted
    /// with its cluster, as `raftlock_client::Client::for_node` is.
    #[pyo3(signature = (*, session_ttl=None, safety_margin=None, retry_for=None, token=None))]
    fn client(
        &self,
        py: Python<'_>,
        session_ttl: Option<f64>,
        safety_margin: Option<f64>,
        retry_for: Option<f64>,
        token: Option<String>,
    ) -> PyResult<NativeClient> {
        let access = self.with_node(|node| node.access())?;
        let endpoint = access.endpoint.clone();
        let mut options = ClientOptions {
            setting_names: PYTHON_NAMES,
            ..ClientOptions::for_node(access)
        };
        if token.is_some() {
            options.token = token;
        }
        if let Some(ttl) = session_ttl {
            options.session_ttl = secs("session_ttl", ttl)?;
        }
        if let Some(margin) = safety_margin {
            options.safety_margin = Some(secs("safety_margin", margin)?);
        }
        if let Some(retry) = retry_for {
            options.retry_for = secs("retry_for", retry)?;
        }
        let client = block(py, Client::connect_with([endpoint], options))?;
        let link = NodeLink::new(self.config.replication.id, self.stopping.subscribe());
        Ok(NativeClient::of_node(client, link))
    }

    /// Stops the node in order: stops accepting client calls, lets
    /// running ones end (up to 5 s), stops Raft, flushes storage, frees
    /// the data dir. Nothing happens if it is not running.
    #[pyo3(signature = (*, aio=false))]
    fn stop<'py>(&self, py: Python<'py>, aio: bool) -> PyResult<Bound<'py, PyAny>> {
        self.check_pid()?;
        self.stopping.send_replace(true);
        let running = self.running().take();
        finish(py, aio, async move {
            if let Some(running) = running {
                let _ = running.stop_in_background().await;
            }
            Ok(())
        })
    }

    /// `stop()` for interpreter exit: blocks without the client runtime
    /// and does nothing in a forked child. Its records reach `logging`
    /// before it returns, as `stop()`'s do: the package's last exit hook
    /// closes the bridge right after, and a record still queued then is
    /// dropped.
    fn stop_at_exit(&self, py: Python<'_>) {
        if std::process::id() != self.pid {
            return;
        }
        self.stopping.send_replace(true);
        let running = self.running().take();
        if let Some(running) = running {
            py.detach(|| {
                running.stop();
                log_bridge::flush(FLUSH_WAIT);
            });
        }
    }
}
