//! Starting a 3-node cluster of either system on loopback: the ports, each
//! node's directory and log, and the wait until the cluster is healthy.
//! What differs between the systems (the node process: its flags, which
//! environment variables it may see) comes from `etcd.rs` and
//! `raftlock.rs`; the ports and node processes are the shared test kit's
//! (`raftlock-testkit`), which the chaos suite and the integration tests
//! use too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use raftlock_testkit::ports;

use super::{Cluster, NodeProcess, System};
use crate::Error;

/// How to start the three nodes of one system.
#[derive(Debug, Clone, Copy)]
pub(super) struct Launch<'a> {
    pub system: System,
    /// Node `i` (1..=3) keeps its data dir and log under
    /// `dir/<node_dir><i>`.
    pub dir: &'a Path,
    pub node_dir: &'a str,
    /// Node `i` serves clients on `base_port + 10*i + 1` and peers on
    /// `base_port + 10*i + 2`.
    pub base_port: u16,
}

/// One node's place in the cluster, for building its process.
#[derive(Debug)]
pub(super) struct Slot<'a> {
    /// 1-based.
    pub index: usize,
    pub client_addr: &'a str,
    pub peer_addr: &'a str,
    pub data_dir: PathBuf,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

impl Launch<'_> {
    /// Every node's (client, peer) `host:port`, in node order.
    pub fn addrs(&self) -> Vec<(String, String)> {
        (1..=3u16)
            .map(|i| ports::base_layout(self.base_port, i))
            .collect()
    }

    /// Starts the nodes one by one, each the process `node` makes for its
    /// slot (after checking its ports are free and creating its
    /// directory), then waits up to 30 s for the cluster to be healthy.
    pub async fn start(&self, node: impl Fn(&Slot) -> NodeProcess) -> Result<Cluster, Error> {
        let mut nodes = Vec::new();
        for (i, (client_addr, peer_addr)) in self.addrs().into_iter().enumerate() {
            check_port_free(&client_addr)?;
            check_port_free(&peer_addr)?;
            let node_dir = self.dir.join(format!("{}{}", self.node_dir, i + 1));
            std::fs::create_dir_all(&node_dir)
                .map_err(|e| Error::io(format!("cannot create {}", node_dir.display()), e))?;
            let slot = Slot {
                index: i + 1,
                client_addr: &client_addr,
                peer_addr: &peer_addr,
                data_dir: node_dir.join("data"),
                log: node_dir.join("log"),
            };
            let mut process = node(&slot);
            process.start()?;
            nodes.push(process);
        }
        let mut cluster = Cluster {
            system: self.system,
            nodes,
        };
        cluster.wait_healthy(Duration::from_secs(30)).await?;
        Ok(cluster)
    }
}

/// Fails clearly if a TCP port on loopback is taken.
fn check_port_free(addr: &str) -> Result<(), Error> {
    ports::check_free(addr).map_err(|e| Error::Cluster(format!("{e}; pick another --base-port")))
}
