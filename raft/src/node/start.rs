//! Starting a replica: the checks that come before the data dir is
//! touched (settings, certificates, the peer secret), opening the stores,
//! wiring the peer network and openraft, spawning the node's tasks, and
//! initializing a new cluster. Apart from the running node's handle
//! (`mod.rs`), which only serves and stops what this put together.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use raftlock_storage::{AppendTimer, NodeAddr, NodeId, Quotas};

use super::peer_listener::serve_peers;
use super::raft_watch::watch_raft;
use super::start_error::{StartError, StartIo};
use super::{start_checks, step_down, stop_when_removed, RaftNode};
use crate::config::Config;
use crate::membership::removal::Removal;
use crate::metrics::NodeMetrics;
use crate::peer::admin_credential::AdminCredential;
use crate::peer::auth::{key_path, plan_key, KeyPlan};
use crate::peer::guard::PeerGuard;
use crate::peer::network::{LinkFilter, PeerNetwork};
use crate::replica::proposer::Proposer;
use crate::replica::read_index::ReadIndexRounds;
use crate::replica::Replica;
use crate::transport::tls::NodeTls;
use crate::Raft;

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
}

/// Feeds `raftlock_raft_log_append_seconds` with each append's time from
/// its start until it is durable.
fn append_timer(metrics: Arc<NodeMetrics>) -> AppendTimer {
    AppendTimer(Arc::new(move |entries, took| {
        metrics.on_log_append(entries, took)
    }))
}
