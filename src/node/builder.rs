//! Starting a node: [`NodeBuilder`] takes the settings and what only a
//! program can hand over (listeners it bound, a link filter), checks the
//! settings and the auth file before anything binds or opens, binds the
//! listeners, starts the replica, the lock-serving layer and the client and
//! admin listeners, and hands back the running [`Node`]. Apart from the
//! node's handle, which serves and stops what this put together.

#[cfg(feature = "test-util")]
use raftlock_raft::LinkFilter;
use raftlock_raft::RaftNode;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::client_listener::serve_clients;
use super::{Node, NodeError};
use crate::auth::policy::Policy;
use crate::auth::{AdminGate, Auth};
use crate::observe::{bind_admin, serve_admin};
use crate::serving::Serving;
use crate::Config;

/// Builds a [`Node`] from a [`Config`] — the settings `raftlock serve`
/// reads from its flags, `RAFTLOCK_*` variables and TOML file (see
/// [`ConfigLayers`](crate::ConfigLayers)) — and what only a program can
/// hand over: listeners it bound itself, a link filter.
///
/// ```no_run
/// # async fn demo() -> Result<(), raftlock::NodeError> {
/// use raftlock::{Config, Node};
/// let mut config = Config::default();
/// config.replication.data_dir = "app-data/raftlock".into();
/// config.serving.auth_file = Some("app-data/auth.toml".into());
/// let node = Node::builder().config(config).start().await?;
/// # let _ = node;
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct NodeBuilder {
    config: Config,
    client_listener: Option<TcpListener>,
    peer_listener: Option<TcpListener>,
    #[cfg(feature = "test-util")]
    filter: LinkFilter,
    admin_listener: Option<TcpListener>,
}

impl NodeBuilder {
    /// Starts from a complete config.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }
    /// Serve the client API on an already bound listener (e.g. port 0).
    pub fn client_listener(mut self, listener: TcpListener) -> Self {
        self.client_listener = Some(listener);
        self
    }
    /// Serve the peer API on an already bound listener (e.g. port 0).
    pub fn peer_listener(mut self, listener: TcpListener) -> Self {
        self.peer_listener = Some(listener);
        self
    }
    /// Serve the admin endpoints (metrics, health, status page) on an
    /// already bound listener (e.g. port 0), whatever `admin_addr` says.
    pub fn admin_listener(mut self, listener: TcpListener) -> Self {
        self.admin_listener = Some(listener);
        self
    }
    /// Share a link filter (tests cut links with it; feature `test-util`).
    #[cfg(feature = "test-util")]
    pub fn link_filter(mut self, filter: LinkFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Binds the listeners, opens the data dir and starts serving.
    pub async fn start(self) -> Result<Node, NodeError> {
        let Config {
            replication: mut config,
            serving: serving_config,
        } = self.config.clone();
        self.config.validate()?;
        if let Some(warning) = self.config.exposure_warning() {
            tracing::warn!(target: super::LOG_TARGET, "{warning}");
        }
        let client_limits = self.config.client_listener_limits();
        // Read the auth file before anything binds or opens: a mistake in
        // it must stop the node, never leave it serving without checks.
        let policy = match &serving_config.auth_file {
            Some(path) => Some(Policy::load(path).map_err(|source| NodeError::AuthFile {
                path: path.display().to_string(),
                source,
            })?),
            None => None,
        };
        let client_listener = match self.client_listener {
            Some(l) => l,
            None => TcpListener::bind(&config.client_addr)
                .await
                .map_err(|source| NodeError::Listen {
                    which: "client",
                    addr: config.client_addr.clone(),
                    source,
                })?,
        };
        let client_addr = client_listener
            .local_addr()
            .map_err(|source| NodeError::Listen {
                which: "client",
                addr: config.client_addr.clone(),
                source,
            })?;
        config.client_addr = client_addr.to_string();
        if let Some(peer) = &self.peer_listener {
            config.peer_addr = peer
                .local_addr()
                .map_err(|source| NodeError::Listen {
                    which: "peer",
                    addr: config.peer_addr.clone(),
                    source,
                })?
                .to_string();
        }
        let admin_listener = match (self.admin_listener, &serving_config.admin_addr) {
            (Some(l), _) => Some(l),
            (None, Some(addr)) => {
                Some(bind_admin(addr).await.map_err(|source| NodeError::Listen {
                    which: "admin",
                    addr: addr.clone(),
                    source,
                })?)
            }
            (None, None) => None,
        };
        let insecure = config.insecure;
        let quotas = serving_config.quotas();
        #[cfg(feature = "test-util")]
        let raft =
            RaftNode::start_with_link_filter(config, quotas, self.peer_listener, self.filter);
        #[cfg(not(feature = "test-util"))]
        let raft = RaftNode::start(config, quotas, self.peer_listener);
        let raft = raft.await?;
        // Operator calls need the cluster's admin credential or a node
        // certificate, except under --insecure (docs/security.md).
        let admin_gate = match insecure && raft.tls().is_none() {
            true => AdminGate::Open,
            false => AdminGate::Credential(raft.admin_credential().cloned()),
        };
        let auth = Auth::new(policy, admin_gate);
        let client_tls = raft
            .tls()
            .map(|tls| tls.client_server_config(serving_config.client_cert_auth));
        let quota_streams = serving_config.quota_streams;
        let admin_hosts = serving_config.admin_hosts.clone();
        let (serving, serving_tasks) =
            Serving::start(raft.inner().clone(), serving_config).map_err(NodeError::Serving)?;
        let (stop, stop_rx) = watch::channel(false);
        let (admin_stop, admin_stop_rx) = watch::channel(false);
        let auth_on = auth.enabled();
        let server = tokio::spawn(serve_clients(
            serving.clone(),
            auth,
            client_listener,
            client_limits,
            quota_streams,
            client_tls,
            stop_rx,
        ));
        let admin = match admin_listener {
            Some(l) => Some(
                serve_admin(
                    serving.clone(),
                    raft.tls().cloned(),
                    l,
                    &admin_hosts,
                    admin_stop_rx,
                )
                .map_err(|source| NodeError::Listen {
                    which: "admin",
                    addr: "(the admin listener handed over)".to_owned(),
                    source,
                })?,
            ),
            None => None,
        };
        tracing::info!(
            target: super::LOG_TARGET,
            id = raft.inner().id(),
            %client_addr,
            peer_addr = %raft.peer_addr(),
            tls = raft.tls().is_some(),
            auth = auth_on,
            admin_addr = %admin.as_ref().map_or("off".to_string(), |(a, _)| a.to_string()),
            "node started"
        );
        Ok(Node {
            raft,
            serving,
            serving_tasks,
            client_addr,
            stop,
            server: Some(server),
            admin_stop,
            admin,
        })
    }
}
