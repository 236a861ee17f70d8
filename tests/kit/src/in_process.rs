//! [`TestCluster`]: N nodes in this process, every listener bound to port 0
//! first, each node in its own temp dir; nodes can be killed, restarted,
//! isolated (with the product's test-only `LinkFilter`) and added. [`TestCluster::with_tls`] makes a CA and node and
//! client certificates in the temp dir (as `raftlock certs` does) and
//! starts every node with TLS; its clients trust that CA.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use raftlock::{
    AdminCredential, ClusterKey, Config, InitialMember, LinkFilter, Node, ReplicationConfig,
};
use raftlock_client::{Client, ClientOptions, ClientTls};
use raftlock_storage::NodeAddr;
use tempfile::TempDir;
use tokio::net::TcpListener;

/// A cluster of in-process nodes.
pub struct TestCluster {
    /// Holds every node's data dir; removed on drop.
    pub dir: TempDir,
    /// Running nodes; `None` while killed.
    pub nodes: BTreeMap<u64, Option<Node>>,
    /// Each node's (client, peer) address, stable across restarts.
    pub addrs: BTreeMap<u64, (SocketAddr, SocketAddr)>,
    /// Shared by every node; cuts links.
    pub filter: LinkFilter,
    /// Settings every node starts from.
    pub base: Config,
    /// The certificates dir (`ca.crt`, `node-N.*`, `client-test.*`) of a
    /// TLS cluster; `None`: plain text.
    pub certs: Option<PathBuf>,
}

/// The client certificate a TLS cluster's clients present.
pub const TEST_CLIENT: &str = "test";

/// Fast timings for tests: elections in well under a second.
pub fn test_config() -> Config {
    Config {
        replication: ReplicationConfig {
            heartbeat: Duration::from_millis(50),
            election_timeout: Duration::from_millis(300),
            leader_wait: Duration::from_secs(5),
            ..ReplicationConfig::default()
        },
        ..Config::default()
    }
}

async fn bind() -> (TcpListener, SocketAddr) {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind port 0");
    let a = l.local_addr().expect("local addr");
    (l, a)
}

impl TestCluster {
    /// Starts `n` nodes (ids 1..=n) as one cluster and waits for a leader.
    pub async fn new(n: u64) -> TestCluster {
        Self::with_config(n, test_config()).await
    }

    /// Like [`new`](Self::new) with custom base settings.
    pub async fn with_config(n: u64, base: Config) -> TestCluster {
        Self::start(n, base, false, None).await
    }

    /// Starts `n` nodes as a new cluster whose data dirs were first seeded
    /// from `backup` (the bytes of a backup file), as `raftlock snapshot
    /// restore` seeds them, with the log continuing `bump` entries past
    /// the backup's index.
    pub async fn restored(n: u64, backup: &[u8], bump: u64) -> TestCluster {
        Self::start(n, test_config(), false, Some((backup, bump))).await
    }

    /// Starts `n` nodes with TLS on both listeners (and client
    /// certificates required with `client_cert_auth`), from certificates
    /// made for the cluster in its temp dir.
    pub async fn with_tls(n: u64, client_cert_auth: bool) -> TestCluster {
        let mut base = test_config();
        base.serving.client_cert_auth = client_cert_auth;
        Self::start(n, base, true, None).await
    }

    /// Like [`with_tls`](Self::with_tls) with custom base settings.
    pub async fn with_tls_config(n: u64, base: Config) -> TestCluster {
        Self::start(n, base, true, None).await
    }

    async fn start(n: u64, base: Config, tls: bool, backup: Option<(&[u8], u64)>) -> TestCluster {
        // Node logs, captured with the test's output: `RUST_LOG=info`.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().expect("temp dir");
        let certs = tls.then(|| make_certs(&dir.path().join("certs"), n));
        // Peers authenticate as in production: with certificates, or with
        // a join token every member shares.
        let mut base = base;
        let replication = &mut base.replication;
        if !tls && !replication.insecure && replication.join_token.is_none() {
            replication.join_token = Some(ClusterKey::generate().to_token());
        }
        let mut listeners = BTreeMap::new();
        let mut addrs = BTreeMap::new();
        for id in 1..=n {
            let (cl, ca) = bind().await;
            let (pl, pa) = bind().await;
            listeners.insert(id, (cl, pl));
            addrs.insert(id, (ca, pa));
        }
        let mut cluster = TestCluster {
            dir,
            nodes: BTreeMap::new(),
            addrs,
            filter: LinkFilter::default(),
            base,
            certs,
        };
        let members = cluster.members(1..=n);
        for (id, (cl, pl)) in listeners {
            let mut config = cluster.config(id);
            config.replication.initial_cluster = members.clone();
            if let Some((bytes, bump)) = backup {
                let seed = raftlock_storage::backup::Seed {
                    node_id: id,
                    members: members.iter().map(|m| (m.id, m.addr.clone())).collect(),
                    bootstrap: config.replication.bootstrap(),
                    bump,
                    token: String::new(),
                    now_ms: raftlock_raft::clock::wall_clock_ms(),
                };
                raftlock_storage::backup::restore(&config.replication.data_dir, bytes, &seed)
                    .expect("restore the backup");
            }
            let node = cluster
                .builder(config)
                .client_listener(cl)
                .peer_listener(pl)
                .start()
                .await
                .expect("start node");
            cluster.nodes.insert(id, Some(node));
        }
        cluster.wait_for_leader().await;
        cluster
    }

    fn members(&self, ids: impl IntoIterator<Item = u64>) -> Vec<InitialMember> {
        ids.into_iter()
            .map(|id| InitialMember {
                id,
                addr: self.node_addr(id),
            })
            .collect()
    }

    /// The cluster's peer secret; `None` with TLS or `insecure`.
    pub fn key(&self) -> Option<ClusterKey> {
        self.base
            .replication
            .join_token
            .as_deref()
            .map(|t| ClusterKey::from_token(t).expect("the cluster's join token"))
    }

    /// The address record of node `id`.
    pub fn node_addr(&self, id: u64) -> NodeAddr {
        let (c, p) = self.addrs[&id];
        NodeAddr {
            peer_addr: p.to_string(),
            client_addr: c.to_string(),
        }
    }

    /// The settings node `id` starts with (its own certificate in a TLS
    /// cluster).
    pub fn config(&self, id: u64) -> Config {
        let (c, p) = self.addrs[&id];
        let mut config = self.base.clone();
        let replication = &mut config.replication;
        replication.id = id;
        replication.data_dir = self.dir.path().join(format!("node{id}"));
        replication.client_addr = c.to_string();
        replication.peer_addr = p.to_string();
        if let Some(certs) = &self.certs {
            let (cert, key) = raftlock_cli::certs::node_files(certs, id);
            replication.tls_cert = Some(cert);
            replication.tls_key = Some(key);
            replication.tls_ca = Some(certs.join(raftlock_cli::certs::CA_CERT));
        }
        config
    }

    /// Client settings for this cluster: in a TLS cluster, its CA and the
    /// `test` client certificate.
    pub fn client_options(&self) -> ClientOptions {
        let tls = self.certs.as_ref().map(|certs| {
            let (cert, key) = raftlock_cli::certs::client_files(certs, TEST_CLIENT);
            ClientTls::from_files(
                Some(&certs.join(raftlock_cli::certs::CA_CERT)),
                Some(&cert),
                Some(&key),
            )
            .expect("read the test client's certificates")
        });
        ClientOptions {
            tls,
            ..ClientOptions::default()
        }
    }

    /// Client settings for operator calls (membership, force-release,
    /// bulk revoke, backups), as docs/security.md says an operator makes
    /// them: the admin credential derived from the cluster's join token,
    /// or in a TLS cluster node 1's certificate; under `insecure`, none.
    pub fn admin_options(&self) -> ClientOptions {
        if let Some(certs) = &self.certs {
            let (cert, key) = raftlock_cli::certs::node_files(certs, 1);
            let tls = ClientTls::from_files(
                Some(&certs.join(raftlock_cli::certs::CA_CERT)),
                Some(&cert),
                Some(&key),
            )
            .expect("read node 1's certificates");
            return ClientOptions {
                tls: Some(tls),
                ..ClientOptions::default()
            };
        }
        ClientOptions {
            token: self
                .key()
                .map(|key| AdminCredential::derive(&key).to_bearer()),
            ..self.client_options()
        }
    }

    /// An operator's client over every running node's endpoint.
    pub async fn admin_client(&self) -> Client {
        Client::connect_with(self.endpoints(), self.admin_options())
            .await
            .expect("admin client")
    }

    /// Every running node's client endpoint.
    pub fn endpoints(&self) -> Vec<String> {
        self.running()
            .iter()
            .map(|id| self.addrs[id].0.to_string())
            .collect()
    }

    fn builder(&self, config: Config) -> raftlock::NodeBuilder {
        Node::builder()
            .config(config)
            .link_filter(self.filter.clone())
    }

    /// A running node.
    pub fn node(&self, id: u64) -> &Node {
        self.nodes[&id]
            .as_ref()
            .unwrap_or_else(|| panic!("node {id} is not running"))
    }

    /// Ids of running nodes.
    pub fn running(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.is_some())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Ids of running nodes other than `id`.
    pub fn others(&self, id: u64) -> Vec<u64> {
        self.running().into_iter().filter(|o| *o != id).collect()
    }

    /// A client over every running node's endpoint.
    pub async fn client(&self) -> Client {
        Client::connect_with(self.endpoints(), self.client_options())
            .await
            .expect("client")
    }

    /// A client of node `id` only.
    pub async fn client_of(&self, id: u64) -> Client {
        Client::connect_with([self.addrs[&id].0.to_string()], self.client_options())
            .await
            .expect("client")
    }

    /// Waits until the running nodes agree on a running leader; returns it.
    pub async fn wait_for_leader(&self) -> u64 {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let running = self.running();
            let views: Vec<Option<u64>> = running
                .iter()
                .map(|id| self.node(*id).status().leader)
                .collect();
            if let Some(Some(leader)) = views.first() {
                if running.contains(leader)
                    && views.iter().all(|v| *v == Some(*leader))
                    && self.node(*leader).status().role == "leader"
                {
                    return *leader;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no agreed leader within 15 s: {views:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops node `id` abruptly: its listeners and Raft stop at once, no
    /// drain. Its data dir stays.
    pub async fn kill(&mut self, id: u64) {
        let node = self
            .nodes
            .get_mut(&id)
            .and_then(Option::take)
            .expect("node running");
        node.kill().await;
    }

    /// Restarts node `id` from its data dir on its old addresses.
    pub async fn restart(&mut self, id: u64) {
        assert!(self.nodes[&id].is_none(), "node {id} is running");
        let config = self.config(id);
        let node = self.start_on_old_ports(config).await;
        self.nodes.insert(id, Some(node));
    }

    /// Restarts node `id` from its data dir on its old addresses, or
    /// returns why it did not start (a refusal comes before the listeners
    /// bind, so only a port still held is retried).
    pub async fn try_restart(&mut self, id: u64) -> Result<(), String> {
        assert!(self.nodes[&id].is_none(), "node {id} is running");
        let config = self.config(id);
        for _ in 0..50 {
            match self.builder(config.clone()).start().await {
                Ok(node) => {
                    self.nodes.insert(id, Some(node));
                    return Ok(());
                }
                Err(e) if e.to_string().contains("cannot listen") => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Err(format!("node {id}'s ports stayed taken"))
    }

    async fn start_on_old_ports(&self, config: Config) -> Node {
        // The old sockets may take a moment to be released.
        let mut tries = 0;
        loop {
            match self.builder(config.clone()).start().await {
                Ok(node) => return node,
                Err(e) if tries < 50 => {
                    tries += 1;
                    tracing::debug!("restart attempt failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("cannot restart node {}: {e}", config.replication.id),
            }
        }
    }

    /// Starts a new, empty node `id` that waits to be added (`--join`).
    pub async fn start_joining(&mut self, id: u64) {
        let (cl, ca) = bind().await;
        let (pl, pa) = bind().await;
        self.addrs.insert(id, (ca, pa));
        let mut config = self.config(id);
        config.replication.join = true;
        let node = self
            .builder(config)
            .client_listener(cl)
            .peer_listener(pl)
            .start()
            .await
            .expect("start joining node");
        self.nodes.insert(id, Some(node));
    }

    /// Cuts every link between `id` and the other nodes.
    pub fn isolate(&self, id: u64) {
        let others: Vec<u64> = self.addrs.keys().copied().filter(|o| *o != id).collect();
        self.filter.isolate(id, others);
    }

    /// Restores every link.
    pub fn heal(&self) {
        self.filter.heal();
    }

    /// Stops every node in order.
    pub async fn shutdown(mut self) {
        for (_, node) in std::mem::take(&mut self.nodes) {
            if let Some(node) = node {
                node.shutdown().await;
            }
        }
    }

    /// Waits until node `id` applied at least `index`.
    pub async fn wait_applied(&self, id: u64, index: u64) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while self.node(id).status().applied_index < index {
            assert!(
                tokio::time::Instant::now() < deadline,
                "node {id} did not apply {index}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A CA, node certificates 1..=n (and 1..=n+2 for nodes added later) for
/// 127.0.0.1 and localhost, and the `test` client certificate, in `dir`.
fn make_certs(dir: &std::path::Path, n: u64) -> PathBuf {
    use raftlock_cli::certs;
    certs::create_ca(dir, false).expect("create CA");
    let hosts = ["127.0.0.1".to_string(), "localhost".to_string()];
    for id in 1..=n + 2 {
        certs::create_node(dir, None, id, &hosts, false).expect("create node certificate");
    }
    certs::create_client(dir, None, TEST_CLIENT, false).expect("create client certificate");
    dir.to_path_buf()
}
