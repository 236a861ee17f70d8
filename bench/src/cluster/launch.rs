//! Starting a 3-node cluster of either system on loopback: the ports, each
//! node's directory and log, and the wait until the cluster is healthy.
//! What differs between the systems (their flags, which environment
//! variables a node may see) comes from `etcd.rs` and `raftlock.rs`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{check_port_free, Cluster, NodeProcess, NodeSpec, System};
use crate::Error;

/// How to start the three nodes of one system.
#[derive(Debug, Clone, Copy)]
pub(super) struct Launch<'a> {
    pub system: System,
    pub program: &'a Path,
    /// Node `i` (1..=3) keeps its data dir and log under
    /// `dir/<node_dir><i>`.
    pub dir: &'a Path,
    pub node_dir: &'a str,
    /// Node `i` serves clients on `base_port + 10*i + 1` and peers on
    /// `base_port + 10*i + 2`.
    pub base_port: u16,
    /// Variables removed from a node's environment, as
    /// [`NodeProcess::new`] takes them.
    pub scrub_prefixes: &'a [&'a str],
    pub keep: &'a [&'a str],
}

/// One node's place in the cluster, for building its flags.
#[derive(Debug)]
pub(super) struct Slot<'a> {
    /// 1-based.
    pub index: usize,
    pub client_addr: &'a str,
    pub peer_addr: &'a str,
    pub data_dir: PathBuf,
}

impl Launch<'_> {
    /// Every node's (client, peer) `host:port`, in node order.
    pub fn addrs(&self) -> Vec<(String, String)> {
        (1..=3u16)
            .map(|i| {
                (
                    format!("127.0.0.1:{}", self.base_port + 10 * i + 1),
                    format!("127.0.0.1:{}", self.base_port + 10 * i + 2),
                )
            })
            .collect()
    }

    /// Starts the nodes one by one, each with the flags `args` gives its
    /// slot (after checking its ports are free and creating its directory),
    /// then waits up to 30 s for the cluster to be healthy.
    pub async fn start(&self, args: impl Fn(&Slot) -> Vec<String>) -> Result<Cluster, Error> {
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
            };
            let args: Vec<OsString> = args(&slot).into_iter().map(OsString::from).collect();
            let spec = NodeSpec {
                index: i + 1,
                client_addr,
                peer_addr,
                program: self.program.to_path_buf(),
                args,
                log: node_dir.join("log"),
            };
            let mut node = NodeProcess::new(spec, self.scrub_prefixes, self.keep);
            node.start()?;
            nodes.push(node);
        }
        let mut cluster = Cluster {
            system: self.system,
            nodes,
        };
        cluster.wait_healthy(Duration::from_secs(30)).await?;
        Ok(cluster)
    }
}
