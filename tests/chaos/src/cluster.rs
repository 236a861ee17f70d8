//! The cluster under test: N `raftlock serve` processes on loopback, each
//! with its own data dir and log, and the proxies in front of them.
//!
//! Nodes are started from a given binary (the release `raftlock`, or this
//! binary, which runs the same node code under `raftlock-chaos serve`)
//! through the shared test kit (`raftlock-testkit`: ports, flags, node
//! processes), as the benchmark's are. The harness can kill -9, SIGSTOP,
//! SIGCONT and restart any of them; a restart uses the same flags and data
//! dir.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use raftlock_testkit::ports::Reserved;
use raftlock_testkit::{NodeProcess, ServeFlags};

use crate::proxy::Network;
use crate::secure::Secure;
use crate::Error;

/// Raft timing the nodes run with: raftlock's defaults, passed explicitly
/// so a change of defaults is a visible change here.
pub const HEARTBEAT_MS: u64 = 50;
/// Election timeout (randomized up to twice this by openraft).
pub const ELECTION_TIMEOUT_MS: u64 = 300;

/// One node's fixed facts.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub id: u64,
    /// The node's own listeners.
    pub client_addr: SocketAddr,
    pub peer_addr: SocketAddr,
    /// The proxies in front of them (what membership and clients use).
    pub client_proxy: SocketAddr,
    pub peer_proxy: SocketAddr,
    pub data_dir: PathBuf,
    pub log: PathBuf,
}

/// A running (or stopped) node.
struct NodeProc {
    spec: NodeSpec,
    /// The process of its last start; `None` while killed.
    process: Option<NodeProcess>,
}

impl NodeProc {
    /// Whether it runs (paused counts as running).
    fn is_up(&self) -> bool {
        self.process.as_ref().is_some_and(|p| p.pid().is_some())
    }

    fn is_paused(&self) -> bool {
        self.process.as_ref().is_some_and(NodeProcess::is_paused)
    }
}

/// The node processes and their network.
pub struct Cluster {
    binary: PathBuf,
    /// Extra flags for every node's `serve`, after the harness's own (so
    /// they may override them); see [`Cluster::set_node_args`].
    node_args: Vec<String>,
    /// Heartbeat and election timeout in ms (see [`Cluster::set_timing`]).
    timing: (u64, u64),
    /// Entries between snapshots.
    snapshot_after: u64,
    initial_cluster: String,
    /// The peers' shared secret (plain-text runs; `--secure` runs use TLS).
    join_token: String,
    nodes: BTreeMap<u64, NodeProc>,
    pub net: Network,
    /// TLS and auth files, in `--secure` runs.
    secure: Option<Secure>,
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: libc::c_int) -> Result<(), Error> {
    Ok(raftlock_testkit::signal(pid, signal)?)
}

impl Cluster {
    /// Lays out `n` nodes under `dir` (ports chosen now, proxies serving),
    /// without starting them.
    pub async fn new(binary: &Path, dir: &Path, n: u64) -> Result<Cluster, Error> {
        Self::layout(binary, dir, n, true).await
    }

    /// Like [`Cluster::new`], but without proxies: nodes and clients talk
    /// to the nodes' own ports (`client_proxy`/`peer_proxy` name them), so
    /// no link can be cut. For tests that fault disks, not networks.
    pub async fn new_direct(binary: &Path, dir: &Path, n: u64) -> Result<Cluster, Error> {
        Self::layout(binary, dir, n, false).await
    }

    async fn layout(binary: &Path, dir: &Path, n: u64, proxied: bool) -> Result<Cluster, Error> {
        let mut net = Network::new();
        let mut specs = Vec::new();
        // The nodes' ports are chosen by binding port 0, and released only
        // once every port is chosen: a port released at once could be
        // handed out again for the next node (seen in CI: two nodes given
        // the same client port, and no leader). The proxies keep theirs.
        let mut reserved = Reserved::new();
        for id in 1..=n {
            let client_addr = reserved.take()?;
            let peer_addr = reserved.take()?;
            let (client_proxy, peer_proxy) = if proxied {
                let (cp, client_proxy) = Network::bind().await?;
                let (pp, peer_proxy) = Network::bind().await?;
                net.serve_client(cp, id, client_addr);
                net.serve_peer(pp, id, peer_addr);
                (client_proxy, peer_proxy)
            } else {
                (client_addr, peer_addr)
            };
            let node_dir = dir.join(format!("n{id}"));
            std::fs::create_dir_all(&node_dir).map_err(Error::io("create node dir"))?;
            specs.push(NodeSpec {
                id,
                client_addr,
                peer_addr,
                client_proxy,
                peer_proxy,
                data_dir: node_dir.join("data"),
                log: node_dir.join("node.log"),
            });
        }
        reserved.release();
        let advertised: Vec<(u64, String, String)> = specs
            .iter()
            .map(|s| (s.id, s.peer_proxy.to_string(), s.client_proxy.to_string()))
            .collect();
        let initial_cluster = raftlock_testkit::initial_cluster(
            advertised
                .iter()
                .map(|(id, p, c)| (*id, p.as_str(), c.as_str())),
        );
        let nodes = specs
            .into_iter()
            .map(|spec| {
                (
                    spec.id,
                    NodeProc {
                        spec,
                        process: None,
                    },
                )
            })
            .collect();
        Ok(Cluster {
            binary: binary.to_path_buf(),
            node_args: Vec::new(),
            timing: (HEARTBEAT_MS, ELECTION_TIMEOUT_MS),
            snapshot_after: 2000,
            initial_cluster,
            join_token: raftlock::ClusterKey::generate().to_token(),
            nodes,
            net,
            secure: None,
        })
    }

    /// Runs the nodes with TLS and client authentication from their next
    /// start on.
    pub fn set_secure(&mut self, secure: Secure) {
        self.secure = Some(secure);
    }

    /// Passes `args` to every node's `serve` from its next start on.
    pub fn set_node_args(&mut self, args: Vec<String>) {
        self.node_args = args;
    }

    /// Runs the nodes with this heartbeat and election timeout (ms) from
    /// their next start on, instead of [`HEARTBEAT_MS`] and
    /// [`ELECTION_TIMEOUT_MS`].
    pub fn set_timing(&mut self, heartbeat_ms: u64, election_timeout_ms: u64) {
        self.timing = (heartbeat_ms, election_timeout_ms);
    }

    /// Makes the nodes snapshot every `entries` entries (default 2000)
    /// from their next start on.
    pub fn set_snapshot_after(&mut self, entries: u64) {
        self.snapshot_after = entries;
    }

    /// Moves node `id`'s data dir to `dir` (before it first starts, e.g.
    /// onto a filesystem that can lose power).
    pub fn set_data_dir(&mut self, id: u64, dir: PathBuf) -> Result<(), Error> {
        let node = self
            .nodes
            .get_mut(&id)
            .ok_or_else(|| Error::Setup(format!("no node {id}")))?;
        node.spec.data_dir = dir;
        Ok(())
    }

    /// Node `id`'s fixed facts.
    pub fn spec(&self, id: u64) -> Option<&NodeSpec> {
        self.nodes.get(&id).map(|n| &n.spec)
    }

    /// Whether node `id` was started and has exited on its own since;
    /// answers how it ended. The process is reaped and counts as down.
    pub fn exited(&mut self, id: u64) -> Option<std::process::ExitStatus> {
        let node = self.nodes.get_mut(&id)?;
        let status = node.process.as_mut()?.exit_status()?;
        node.process = None;
        self.net.set_pid(id, None);
        Some(status)
    }

    /// Node ids.
    pub fn ids(&self) -> Vec<u64> {
        self.nodes.keys().copied().collect()
    }

    /// The client proxies, which is what clients connect to.
    pub fn client_endpoints(&self) -> Vec<String> {
        self.nodes
            .values()
            .map(|n| n.spec.client_proxy.to_string())
            .collect()
    }

    /// The node whose endpoint comes first in
    /// [`client_endpoints`](Self::client_endpoints): every client tries it
    /// first.
    pub fn first_listed(&self) -> Option<u64> {
        self.nodes.keys().next().copied()
    }

    /// Starts node `id` if it is not running.
    pub fn start(&mut self, id: u64) -> Result<(), Error> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Err(Error::Setup(format!("no node {id}")));
        };
        if node.is_up() {
            return Ok(());
        }
        let s = &node.spec;
        let mut flags = ServeFlags::new(
            s.id,
            s.data_dir.clone(),
            s.client_addr.to_string(),
            s.peer_addr.to_string(),
            self.initial_cluster.clone(),
        );
        flags.advertise = Some((s.client_proxy.to_string(), s.peer_proxy.to_string()));
        flags.join_token = Some(self.join_token.clone());
        flags.timing = Some(self.timing);
        flags.snapshot_after = Some(self.snapshot_after);
        flags.log_filter = Some("info,openraft=warn,sled=warn".into());
        flags.extra = self
            .secure
            .as_ref()
            .map(|s| s.node_args(id))
            .unwrap_or_default();
        flags.extra.extend(self.node_args.iter().cloned());
        let mut process = flags.process(&self.binary, s.log.clone());
        process.start()?;
        self.net.set_pid(id, process.pid());
        node.process = Some(process);
        Ok(())
    }

    /// Starts every node that is down.
    pub fn start_all(&mut self) -> Result<(), Error> {
        for id in self.ids() {
            self.start(id)?;
        }
        Ok(())
    }

    /// kill -9 node `id` and reaps it.
    pub async fn kill(&mut self, id: u64) -> Result<(), Error> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Ok(());
        };
        self.net.set_pid(id, None);
        if let Some(mut process) = node.process.take() {
            process.kill_within(Duration::from_secs(10)).await;
        }
        Ok(())
    }

    /// kill -9 the nodes `ids` at once (every signal is sent before any
    /// is reaped, as a power cut would stop them), then reaps them.
    pub async fn kill_many(&mut self, ids: &[u64]) -> Result<(), Error> {
        for id in ids {
            if let Some(process) = self.nodes.get_mut(id).and_then(|n| n.process.as_mut()) {
                process.start_kill()?;
            }
        }
        for id in ids {
            self.kill(*id).await?;
        }
        Ok(())
    }

    /// SIGSTOP (`pause = true`) or SIGCONT node `id`.
    pub fn pause(&mut self, id: u64, pause: bool) -> Result<(), Error> {
        let Some(node) = self.nodes.get_mut(&id) else {
            return Ok(());
        };
        if let Some(process) = node.process.as_mut() {
            process.pause(pause)?;
        }
        Ok(())
    }

    /// Resumes every paused node.
    pub fn resume_all(&mut self) -> Result<(), Error> {
        for id in self.ids() {
            if self.nodes.get(&id).is_some_and(NodeProc::is_paused) {
                self.pause(id, false)?;
            }
        }
        Ok(())
    }

    /// Whether node `id` runs (paused counts as running).
    pub fn is_up(&self, id: u64) -> bool {
        self.nodes.get(&id).is_some_and(NodeProc::is_up)
    }

    /// The leader as a majority of reachable nodes report it, asked on
    /// their real client ports (around the proxies).
    pub async fn leader(&self) -> Option<u64> {
        let mut votes: BTreeMap<u64, usize> = BTreeMap::new();
        for node in self.nodes.values() {
            if !node.is_up() || node.is_paused() {
                continue;
            }
            let addr = node.spec.client_addr.to_string();
            let Ok(options) = crate::secure::client_options(Duration::from_millis(300)) else {
                continue;
            };
            let Ok(client) = raftlock_client::Client::connect_with([addr], options).await else {
                continue;
            };
            if let Ok(Ok(status)) =
                tokio::time::timeout(Duration::from_millis(800), client.status()).await
            {
                if status.leader_id != 0 {
                    *votes.entry(status.leader_id).or_default() += 1;
                }
            }
        }
        votes.into_iter().max_by_key(|(_, v)| *v).map(|(id, _)| id)
    }

    /// Waits until some node is leader.
    pub async fn wait_for_leader(&self, within: Duration) -> Result<u64, Error> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(id) = self.leader().await {
                return Ok(id);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Setup(format!(
                    "no leader within {within:?}; see the node logs"
                )));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// SIGTERM every node, SIGKILL after a grace period.
    pub async fn stop_all(&mut self) {
        for node in self.nodes.values_mut() {
            if let Some(mut process) = node.process.take() {
                process.terminate(Duration::from_secs(5)).await;
            }
        }
    }
}
