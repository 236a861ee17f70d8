//! A running replica: opens the stores, starts openraft and the peer
//! listener, and stops all of it in order.
//!
//! - `start_checks`: what must hold before Raft starts (no other live
//!   process with this id, no rolled-back dir); [`rollback`]: the latter,
//!   asked of the peers.
//! - [`peer_service`]: the server side of the peer API.
//! - `raft_watch`: logs and counts what openraft's metrics show change, and
//!   reports a Raft core that stopped on its own.
//! - [`step_down`]: a leader that cannot keep its lease gives way.

pub mod peer_service;
mod raft_watch;
pub mod rollback;
mod start_checks;
mod start_error;
pub mod step_down;

pub use start_error::{StartError, StartIo};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;

use raftlock_storage::{AppendTimer, NodeAddr, NodeId, Quotas};

use crate::config::Config;
use crate::membership::removal::Removal;
use crate::metrics::NodeMetrics;
use crate::pb::peer_server::PeerServer;
use crate::peer::admin_credential::AdminCredential;
use crate::peer::auth::{key_path, plan_key, KeyPlan};
use crate::peer::guard::PeerGuard;
use crate::peer::network::{LinkFilter, PeerNetwork};
use crate::replica::proposer::Proposer;
use crate::replica::read_index::ReadIndexRounds;
use crate::replica::Replica;
use crate::transport::bounded_listener::bounded_incoming;
use crate::transport::tls::{peer_node_id, NodeTls};
use crate::transport::tls_acceptor::{tls_incoming, TlsAcceptor};
use crate::Raft;
use peer_service::PeerService;
use raft_watch::watch_raft;

/// A running replica. Dropping it without [`shutdown`](Self::shutdown)
/// aborts its tasks, like a crash.
pub struct RaftNode {
    inner: Arc<Replica>,
    /// The log store, to sync and record a clean shutdown's floor once Raft
    /// has stopped.
    log: raftlock_storage::LogStore,
    peer_addr: std::net::SocketAddr,
    /// The certificate files, read at start; `None`: plain text.
    tls: Option<NodeTls>,
    /// What admin clients present (derived from the peer secret); `None`
    /// when peers use mTLS or `--insecure`.
    admin_credential: Option<AdminCredential>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    /// Snapshot builds still holding the storage, waited out on shutdown.
    builds: raftlock_storage::sm_store::builds::Builds,
}

impl RaftNode {
    /// Opens `config.data_dir`, starts Raft and the peer listener, and
    /// initializes a new cluster if the store is empty and `config.join` is
    /// not set. The entries this node proposes as leader carry `quotas`
    /// (the serving layer's setting). `peer_listener` overrides
    /// `config.peer_addr` (tests bind port 0 first).
    pub async fn start(
        config: Config,
        quotas: Quotas,
        peer_listener: Option<TcpListener>,
    ) -> Result<RaftNode, StartError> {
        Self::start_filtered(config, quotas, peer_listener, LinkFilter::default()).await
    }

    /// Like [`start`](Self::start), with the links `filter` cuts (a test
    /// fault injector; feature `test-util`).
    #[cfg(feature = "test-util")]
    pub async fn start_with_link_filter(
        config: Config,
        quotas: Quotas,
        peer_listener: Option<TcpListener>,
        filter: LinkFilter,
    ) -> Result<RaftNode, StartError> {
        Self::start_filtered(config, quotas, peer_listener, filter).await
    }

    async fn start_filtered(
        config: Config,
        quotas: Quotas,
        peer_listener: Option<TcpListener>,
        filter: LinkFilter,
    ) -> Result<RaftNode, StartError> {
        config.validate()?;
        let raft_config = config.raft_config().map_err(|e| StartError::Raft {
            doing: "take the Raft settings",
            source: Box::new(e),
        })?;
        // Before the data dir is touched: a bad certificate is a start
        // error, not a node that cannot reach its peers.
        let tls = NodeTls::load(&config)?;
        // Before the data dir is touched too: a node that cannot
        // authenticate its peers does not start.
        let key_plan = plan_key(&config)?;
        if config.insecure {
            tracing::warn!(
                "INSECURE: --insecure is set: peers are not authenticated, and anyone who can \
                 reach the peer port {} can rewrite or erase every lock",
                config.peer_addr
            );
        }
        std::fs::create_dir_all(&config.data_dir).map_err(|source| StartError::Io {
            doing: StartIo::CreateDataDir(config.data_dir.clone()),
            source,
        })?;

        let (events_tx, events_rx) = mpsc::unbounded_channel();
        if config.unsafe_no_fsync {
            tracing::warn!(
                "UNSAFE: --unsafe-no-fsync is set: writes are acknowledged without fsync, \
                 and a power loss can lose acknowledged locks. For tests only."
            );
        }
        let data_dir = config.data_dir.clone();
        let options = config.open_options();
        let (log_store, sm_store) = tokio::task::spawn_blocking(move || {
            raftlock_storage::open(&data_dir, &options, events_tx)
        })
        .await
        .map_err(|source| StartError::Task {
            doing: "storage open",
            source,
        })?
        .map_err(|e| match e {
            raftlock_storage::Error::DataDir { .. } | raftlock_storage::Error::InUse { .. } => {
                StartError::DataDir(e)
            }
            source => StartError::Open {
                dir: config.data_dir.clone(),
                source,
            },
        })?;
        let closing_log = log_store.clone();
        let builds = sm_store.builds();
        sm_store.check_cluster_with(log_store.clone());
        let state = sm_store.state();

        if let KeyPlan::New(key) = &key_plan {
            key.write_file(&key_path(&config.data_dir))?;
        }
        let admin_credential = key_plan.key().map(AdminCredential::derive);
        let metrics = Arc::new(NodeMetrics::new());
        let guard = Arc::new(
            PeerGuard::with_key(
                config.id,
                log_store.boots(),
                Some(log_store.clone()),
                config.election_timeout * 4,
                key_plan.key().cloned(),
            )
            .counting_refusals(metrics.peer_refusals()),
        );
        let members = sm_store.applied_members();
        let removal = Removal::new(config.id, members.clone(), log_store.clone());
        let net = PeerNetwork::new(
            config.id,
            filter,
            guard.clone(),
            config.max_peer_message_bytes,
            tls.clone(),
            metrics.clone(),
            {
                let removal = removal.clone();
                Arc::new(move |peer, index| removal.refused_by(peer, index))
            },
        )
        // openraft's `election_timeout_max` (see `Config::raft_config`).
        .with_append_deadline(config.election_timeout * 2);
        start_checks::refuse_unsafe_start(&config, &log_store, &sm_store, &net).await?;
        let raft = Raft::new(
            config.id,
            Arc::new(raft_config),
            net.clone(),
            log_store.with_append_timer(append_timer(metrics.clone())),
            sm_store,
        )
        .await
        .map_err(|e| StartError::Raft {
            doing: "start raft",
            source: Box::new(e),
        })?;

        let listener = match peer_listener {
            Some(l) => l,
            None => TcpListener::bind(&config.peer_addr)
                .await
                .map_err(|source| StartError::Io {
                    doing: StartIo::ListenPeer(config.peer_addr.clone()),
                    source,
                })?,
        };
        let peer_addr = listener.local_addr().map_err(|source| StartError::Io {
            doing: StartIo::PeerListenerAddr,
            source,
        })?;

        let peer_tls = tls.as_ref().map(NodeTls::peer_server_config);
        let (stop, stop_rx) = watch::channel(false);
        let (proposer, proposing) =
            Proposer::start(raft.clone(), quotas, stop_rx.clone(), metrics.clone());
        let inner = Arc::new(Replica {
            id: config.id,
            config,
            raft,
            state,
            applied: std::sync::Mutex::new(Some(events_rx)),
            leader_service: Default::default(),
            net,
            guard,
            members,
            removal,
            fatal: watch::channel(None).0,
            proposer,
            read_rounds: ReadIndexRounds::default(),
            stopping: watch::channel(false).0,
            metrics,
            leader_contact: std::sync::Mutex::new(None),
        });
        let tasks = vec![
            tokio::spawn(proposing),
            tokio::spawn(watch_raft(inner.clone(), stop_rx.clone())),
            tokio::spawn(step_down::give_way_when_starved(
                inner.clone(),
                stop_rx.clone(),
            )),
            tokio::spawn(stop_when_removed(inner.clone(), stop_rx.clone())),
            tokio::spawn(serve_peers(inner.clone(), listener, peer_tls, stop_rx)),
        ];

        let node = RaftNode {
            inner,
            log: closing_log,
            peer_addr,
            tls,
            admin_credential,
            stop,
            tasks,
            builds,
        };
        node.initialize_if_new().await?;
        Ok(node)
    }

    async fn initialize_if_new(&self) -> Result<(), StartError> {
        let inner = &self.inner;
        let initialized = inner
            .raft
            .is_initialized()
            .await
            .map_err(|e| StartError::Raft {
                doing: "read whether the cluster is initialized",
                source: Box::new(e),
            })?;
        if initialized || inner.config.join {
            return Ok(());
        }
        let members: BTreeMap<NodeId, NodeAddr> = inner
            .config
            .initial_members()
            .into_iter()
            .map(|m| (m.id, m.addr))
            .collect();
        // Only the lowest id of a new cluster initializes it; the others
        // learn the membership from its first append. Were every member to
        // initialize, a member starting a moment late would campaign at once
        // and depose the first leader.
        if members.keys().next() != Some(&inner.id) {
            tracing::info!(
                node = inner.id,
                "waiting for the lowest-id member to initialize the cluster"
            );
            return Ok(());
        }
        // Before the first message goes out: every one carries it.
        let cluster = inner
            .guard
            .create_cluster_id()
            .await
            .map_err(StartError::ClusterId)?;
        tracing::info!(node = inner.id, cluster = %cluster, "initializing a new cluster");
        match inner.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(openraft::error::RaftError::APIError(
                openraft::error::InitializeError::NotAllowed(_),
            )) => Ok(()),
            Err(e) => Err(StartError::Raft {
                doing: "initialize cluster",
                source: Box::new(e),
            }),
        }
    }

    /// Shared state for the serving layer.
    pub fn inner(&self) -> &Arc<Replica> {
        &self.inner
    }

    /// The bound peer address.
    pub fn peer_addr(&self) -> std::net::SocketAddr {
        self.peer_addr
    }

    /// The certificate files this node serves with; `None`: plain text.
    pub fn tls(&self) -> Option<&NodeTls> {
        self.tls.as_ref()
    }

    /// The admin credential derived from this cluster's secret; `None`
    /// when the cluster has none (mTLS peers, or `--insecure`).
    pub fn admin_credential(&self) -> Option<&AdminCredential> {
        self.admin_credential.as_ref()
    }

    /// Stops in order: the node's tasks are told to stop, then Raft, the
    /// peer listener, and sled is flushed when its last handle drops. The
    /// applied stream ends when the state machine is gone.
    pub async fn shutdown(&mut self) {
        if self.inner.fatal.borrow().is_some() {
            // Before any handle on the storage drops: see `abandon`.
            self.log.abandon();
        }
        self.inner.mark_stopping();
        let _ = self.stop.send(true);
        let raft_stopped = match self.inner.raft.shutdown().await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("raft shutdown: {e}");
                false
            }
        };
        let failure = self.inner.fatal.borrow().clone();
        match (raft_stopped, failure) {
            // Only once Raft wrote its last entry: the floor records the
            // log's exact end as of a clean stop.
            (true, None) => match tokio::time::timeout(CLOSE_DEADLINE, self.log.close()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!("cannot record a clean shutdown in the data dir: {e}")
                }
                Err(_) => tracing::error!(
                    "the data dir's last sync did not finish within {CLOSE_DEADLINE:?} \
                     (a failing or full disk?); stopping without recording a clean shutdown"
                ),
            },
            // Storage that failed may never finish a sync (sled waits for
            // ever after a failed write): no clean-shutdown mark, no wait.
            (_, Some(why)) => tracing::error!(
                "stopping without recording a clean shutdown, the node failed: {why}"
            ),
            (false, None) => {}
        }
        for task in self.tasks.drain(..) {
            // Each watches `stop`.
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
        // A snapshot build runs on past Raft's stop and holds the database
        // until it ends: the data dir is in use until then.
        if !self.builds.wait_idle(CLOSE_DEADLINE).await {
            tracing::warn!(
                "a snapshot build still holds the data dir after {CLOSE_DEADLINE:?};                  stopping without waiting for it"
            );
        }
    }
}

/// How long a clean stop waits for the data dir's last sync.
const CLOSE_DEADLINE: Duration = Duration::from_secs(10);

impl Drop for RaftNode {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Serves the peer API until `stop`. With `tls`, every connection must
/// present a certificate signed by the cluster CA, and every call one that
/// names a node (a client certificate from the same CA is refused).
async fn serve_peers(
    node: Arc<Replica>,
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) {
    let tls_on = tls.is_some();
    let limit = node.config.max_peer_message_bytes;
    let limits = node.config.peer_listener_limits();
    let incoming = bounded_incoming(
        listener,
        limits.clone(),
        "peer",
        node.metrics.listener("peer"),
    );
    let service = PeerServer::new(PeerService::new(node))
        .max_decoding_message_size(limit)
        .max_encoding_message_size(limit);
    let service = InterceptedService::new(service, move |req: tonic::Request<()>| {
        if tls_on && peer_node_id(&req).is_none() {
            return Err(tonic::Status::unauthenticated(
                "the peer API needs a node certificate (DNS name node-N.raftlock) \
                 from the cluster CA",
            ));
        }
        Ok(req)
    });
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        // openraft drops a leadership check's slower RPC once a quorum has
        // answered, which resets its stream; h2's default budget of 20 such
        // resets would make this server close the leader's connection.
        .http2_max_pending_accept_reset_streams(Some(65_536))
        .add_service(service);
    let stopped = async move {
        let _ = stop.changed().await;
    };
    let result = match tls {
        Some(tls) => {
            let incoming = tls_incoming(incoming, tls, "peer");
            router.serve_with_incoming_shutdown(incoming, stopped).await
        }
        None => router.serve_with_incoming_shutdown(incoming, stopped).await,
    };
    if let Err(e) = result {
        tracing::error!("peer listener failed: {e}");
    }
}

/// Feeds `raftlock_raft_log_append_seconds` with each append's time from
/// its start until it is durable.
fn append_timer(metrics: Arc<NodeMetrics>) -> AppendTimer {
    AppendTimer(Arc::new(move |entries, took| {
        metrics.on_log_append(entries, took)
    }))
}

/// Stops serving once the node learns it was removed; runs until `stop`.
pub(crate) async fn stop_when_removed(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    tokio::select! {
        why = node.removal.wait() => {
            tracing::warn!(node = node.id, "removed from the cluster: {why}; this node stops serving");
            node.mark_stopping();
        }
        _ = stop.changed() => {}
    }
}
