//! Three `raftlock serve` processes on loopback, started as an operator
//! starts them (a join token, an admin listener if asked), for the tests that
//! signal whole processes (SIGTERM to all at once, SIGSTOP duty cycles)
//! and run the CLI against them.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use raftlock::ClusterKey;
use raftlock_client::{Client, ClientOptions};
use raftlock_testkit::ports::Reserved;
use raftlock_testkit::{initial_cluster, NodeProcess, ServeFlags};
use tokio::process::Command;

use super::BIN;

/// How the nodes of a [`ProcessCluster`] run.
pub(crate) struct Launch {
    /// `--heartbeat-ms` and `--election-timeout-ms` of node `id`
    /// (`None`: the defaults).
    pub(crate) timing: fn(u64) -> Option<(u64, u64)>,
    /// Whether each node serves an admin listener, on a port of its own.
    pub(crate) admin: bool,
    /// The nodes' log filter (`RAFTLOCK_LOG`).
    pub(crate) log_filter: &'static str,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            timing: |_| None,
            admin: false,
            log_filter: "info,openraft=warn,sled=warn",
        }
    }
}

/// A running three-node cluster of processes; killed when dropped.
pub(crate) struct ProcessCluster {
    /// The data dirs (`node{id}`) and logs (`node{id}.log`); removed when
    /// the cluster is dropped.
    pub(crate) dir: tempfile::TempDir,
    /// Node `id` is `nodes[id - 1]`.
    pub(crate) nodes: Vec<NodeProcess>,
    /// Client addresses, by node.
    pub(crate) clients: Vec<String>,
    /// Admin listener addresses, by node (none without `Launch::admin`).
    pub(crate) admins: Vec<String>,
    /// The join token the nodes share.
    pub(crate) token: String,
}

impl ProcessCluster {
    /// Starts three nodes with the default timing and waits until one of
    /// them leads.
    pub(crate) async fn start() -> ProcessCluster {
        ProcessCluster::launch(Launch::default()).await
    }

    /// [`start`](Self::start) with `--heartbeat-ms` and
    /// `--election-timeout-ms` of each node (`timing(id)`; `None`: the
    /// defaults).
    pub(crate) async fn start_with(timing: fn(u64) -> Option<(u64, u64)>) -> ProcessCluster {
        ProcessCluster::launch(Launch {
            timing,
            ..Launch::default()
        })
        .await
    }

    /// Starts three nodes as `launch` says, with a join token, and waits
    /// until one of them leads.
    pub(crate) async fn launch(launch: Launch) -> ProcessCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ports = Reserved::new();
        let mut addrs = Vec::new();
        let mut admins = Vec::new();
        for _ in 0..3 {
            let take = |p: &mut Reserved| p.take().expect("free port").to_string();
            addrs.push((take(&mut ports), take(&mut ports)));
            if launch.admin {
                admins.push(take(&mut ports));
            }
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
            flags.timing = (launch.timing)(id);
            if let Some(admin) = admins.get(id as usize - 1) {
                flags.admin_addr = admin.clone();
            }
            flags.log_filter = Some(launch.log_filter.into());
            nodes.push(flags.process(Path::new(BIN), dir.path().join(format!("node{id}.log"))));
        }
        ports.release();
        for node in &mut nodes {
            node.start().expect("start raftlock serve");
        }
        let cluster = ProcessCluster {
            clients: addrs.into_iter().map(|a| a.0).collect(),
            admins,
            dir,
            nodes,
            token,
        };
        cluster.wait_for_leader(Duration::from_secs(60)).await;
        cluster
    }

    /// Node `id`'s data dir.
    pub(crate) fn node_dir(&self, id: u64) -> String {
        self.dir
            .path()
            .join(format!("node{id}"))
            .display()
            .to_string()
    }

    /// Runs the CLI with `RAFTLOCK_ENDPOINTS` set to `endpoints` and the
    /// settings in `env`, from an empty working directory and with nothing
    /// else of the caller's `RAFTLOCK_*` settings; within 60 s.
    pub(crate) async fn cli_at(
        &self,
        endpoints: &[&str],
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Output {
        let cwd = self.dir.path().join("cwd");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("RAFTLOCK_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("RAFTLOCK_ENDPOINTS", endpoints.join(","));
        cmd.envs(env.iter().copied());
        tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("raftlock {args:?} did not finish in 60 s"))
            .expect("run raftlock")
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
