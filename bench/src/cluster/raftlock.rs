//! The raftlock cluster: three `raftlock serve` processes of the release
//! binary on loopback, with default timings.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use super::{check_port_free, Cluster, NodeProcess, NodeSpec, NodeView, System};
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
    let addrs: Vec<(String, String)> = (1..=3u16)
        .map(|i| {
            (
                format!("127.0.0.1:{}", base_port + 10 * i + 1),
                format!("127.0.0.1:{}", base_port + 10 * i + 2),
            )
        })
        .collect();
    let initial: Vec<String> = addrs
        .iter()
        .enumerate()
        .map(|(i, (client, peer))| format!("{}={peer}/{client}", i + 1))
        .collect();
    let mut nodes = Vec::new();
    for (i, (client_addr, peer_addr)) in addrs.into_iter().enumerate() {
        check_port_free(&client_addr)?;
        check_port_free(&peer_addr)?;
        let node_dir = dir.join(format!("node{}", i + 1));
        std::fs::create_dir_all(&node_dir)
            .map_err(|e| Error::io(format!("cannot create {}", node_dir.display()), e))?;
        let args: Vec<OsString> = [
            "serve".to_string(),
            "--id".to_string(),
            (i + 1).to_string(),
            "--data-dir".to_string(),
            node_dir.join("data").display().to_string(),
            "--client-addr".to_string(),
            client_addr.clone(),
            "--peer-addr".to_string(),
            peer_addr.clone(),
            "--initial-cluster".to_string(),
            initial.join(","),
        ]
        .into_iter()
        .chain(extra.iter().cloned())
        .map(OsString::from)
        .collect();
        let spec = NodeSpec {
            index: i + 1,
            client_addr,
            peer_addr,
            program: bin.to_path_buf(),
            args,
            log: node_dir.join("log"),
        };
        // Flags alone configure a node; RAFTLOCK_LOG only sets the log filter.
        let mut node = NodeProcess::new(spec, &["RAFTLOCK_"], &["RAFTLOCK_LOG"]);
        node.start()?;
        nodes.push(node);
    }
    let mut cluster = Cluster {
        system: System::Raftlock,
        nodes,
    };
    cluster.wait_healthy(Duration::from_secs(30)).await?;
    Ok(cluster)
}

/// What node `addr` says, or `None` if it does not answer.
pub async fn view(addr: &str) -> Option<NodeView> {
    let client =
        raftlock::Client::connect_with_retry([addr.to_string()], Duration::from_millis(500))
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
