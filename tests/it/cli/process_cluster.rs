//! Three `raftlock serve` processes on loopback, started as an operator
//! starts them (a join token, no admin listener), for the tests that
//! signal whole processes: SIGTERM to all at once, SIGSTOP duty cycles.

use std::path::Path;
use std::time::{Duration, Instant};

use raftlock::ClusterKey;
use raftlock_client::{Client, ClientOptions};
use raftlock_testkit::ports::Reserved;
use raftlock_testkit::{initial_cluster, NodeProcess, ServeFlags};

use super::BIN;

/// A running three-node cluster of processes; killed when dropped.
pub(crate) struct ProcessCluster {
    /// Holds the data dirs and logs until the cluster is dropped.
    _dir: tempfile::TempDir,
    /// Node `id` is `nodes[id - 1]`.
    pub(crate) nodes: Vec<NodeProcess>,
    /// Client addresses, by node.
    pub(crate) clients: Vec<String>,
}

impl ProcessCluster {
    /// Starts three nodes with the default timing and waits until one of
    /// them leads.
    pub(crate) async fn start() -> ProcessCluster {
        ProcessCluster::start_with(|_| None).await
    }

    /// [`start`](Self::start) with `--heartbeat-ms` and
    /// `--election-timeout-ms` of each node (`timing(id)`; `None`: the
    /// defaults).
    pub(crate) async fn start_with(timing: fn(u64) -> Option<(u64, u64)>) -> ProcessCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ports = Reserved::new();
        let mut addrs = Vec::new();
        for _ in 0..3 {
            let take = |p: &mut Reserved| p.take().expect("free port").to_string();
            addrs.push((take(&mut ports), take(&mut ports)));
        }
        let members = initial_cluster(
            addrs
                .iter()
                .zip(1..)
                .map(|((client, peer), id)| (id, peer.as_str(), client.as_str())),
        );
        let token = ClusterKey::generate().to_token();
        let mut nodes = Vec::new();
        for ((client, peer), id) in addrs.iter().zip(1u64..) {
            let mut flags = ServeFlags::new(
                id,
                dir.path().join(format!("node{id}")),
                client.clone(),
                peer.clone(),
                members.clone(),
            );
            flags.join_token = Some(token.clone());
            flags.timing = timing(id);
            flags.log_filter = Some("info,openraft=warn,sled=warn".into());
            nodes.push(flags.process(Path::new(BIN), dir.path().join(format!("node{id}.log"))));
        }
        ports.release();
        for node in &mut nodes {
            node.start().expect("start raftlock serve");
        }
        let cluster = ProcessCluster {
            clients: addrs.into_iter().map(|a| a.0).collect(),
            _dir: dir,
            nodes,
        };
        cluster.wait_for_leader(Duration::from_secs(60)).await;
        cluster
    }

    /// A client of the nodes `ids` only, whose calls give up after
    /// `retry_for`.
    pub(crate) async fn client_of(&self, ids: &[u64], retry_for: Duration) -> Client {
        let endpoints: Vec<String> = ids
            .iter()
            .map(|id| self.clients[(*id - 1) as usize].clone())
            .collect();
        let options = ClientOptions {
            retry_for,
            ..ClientOptions::default()
        };
        Client::connect_with(endpoints, options)
            .await
            .expect("connect to the cluster")
    }

    /// The leader, once one is known (asked of every node in turn).
    pub(crate) async fn wait_for_leader(&self, within: Duration) -> u64 {
        let deadline = Instant::now() + within;
        let client = self.client_of(&[1, 2, 3], Duration::from_secs(2)).await;
        loop {
            if let Ok(status) = client.status().await {
                if status.leader_id != 0 {
                    return status.leader_id;
                }
            }
            assert!(
                Instant::now() < deadline,
                "no leader within {within:?}; logs:\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last lines of every node's log.
    pub(crate) fn logs(&self) -> String {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| format!("--- node {}:\n{}", i + 1, n.log_tail(30)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
        }
    }
}
