//! The raftlock cluster: three `raftlock serve` processes of the release
//! binary on loopback, with default timings, started with the test kit's
//! `ServeFlags`.

use std::path::Path;
use std::time::Duration;

use raftlock_testkit::{initial_cluster, ServeFlags};

use super::launch::Launch;
use super::{Cluster, NodeView, System};
use crate::Error;

/// Starts a 3-node raftlock cluster. Node `i` (1..=3) serves clients on
/// `base_port + 10*i + 1` and peers on `base_port + 10*i + 2`, with its
/// data dir under `dir/node<i>`. `extra` is appended to every node's
/// `serve` flags (empty for the defaults the targets are stated for).
pub async fn start(
    bin: &Path,
    dir: &Path,
    base_port: u16,
    extra: &[String],
) -> Result<Cluster, Error> {
    if !bin.is_file() {
        return Err(Error::Cluster(format!(
            "raftlock binary {} not found; run `cargo build --release` first or pass --raftlock-bin",
            bin.display()
        )));
    }
    let launch = Launch {
        system: System::Raftlock,
        dir,
        node_dir: "node",
        base_port,
    };
    let addrs = launch.addrs();
    let initial = initial_cluster(
        addrs
            .iter()
            .zip(1..)
            .map(|((client, peer), id)| (id, peer.as_str(), client.as_str())),
    );
    // Peers authenticate as in production: a join token every node shares.
    let token = raftlock::ClusterKey::generate().to_token();
    launch
        .start(|node| {
            let mut flags = ServeFlags::new(
                node.index as u64,
                node.data_dir.clone(),
                node.client_addr.to_string(),
                node.peer_addr.to_string(),
                initial.clone(),
            );
            flags.join_token = Some(token.clone());
            // Asked for explicitly (client port + 2, free in this layout):
            // the stage breakdown reads /metrics.
            flags.admin_addr =
                crate::breakdown::admin_addr(node.client_addr).unwrap_or_else(|| "off".into());
            // Every workload runs from this one loopback address, which the
            // per-source lease quota (10 000) counts as one caller; W7 alone
            // holds 100 000 leases. This is the cluster's own bound
            // (`MAX_LEASES`), which stays.
            flags.extra = ["--quota-leases", "1000000"]
                .into_iter()
                .map(String::from)
                .chain(extra.iter().cloned())
                .collect();
            // Flags alone configure a node; RAFTLOCK_LOG only sets the log
            // filter.
            flags.process(bin, node.log.clone())
        })
        .await
}

/// What node `addr` says, or `None` if it does not answer.
pub async fn view(addr: &str) -> Option<NodeView> {
    let client =
        raftlock_client::Client::connect_with_retry([addr.to_string()], Duration::from_millis(500))
            .await
            .ok()?;
    let status = client.status().await.ok()?;
    Some(NodeView {
        id: status.node_id,
        leader: status.leader_id,
        term: status.term,
        applied: status.applied_index,
    })
}
