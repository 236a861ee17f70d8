//! The etcd 3.4 cluster: installing Debian's `etcd-server` when it is
//! missing, starting three members on loopback, and asking a member who
//! leads.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use tonic::transport::{Channel, Endpoint};

use super::launch::Launch;
use super::{Cluster, NodeProcess, NodeSpec, NodeView, System};
use crate::etcd_rpc::etcdserverpb::maintenance_client::MaintenanceClient;
use crate::etcd_rpc::etcdserverpb::StatusRequest;
use crate::Error;

/// The `etcd` binary, installing Debian's `etcd-server` and `etcd-client`
/// first if none is on the PATH. Answers the binary and its version line.
pub fn ensure_installed() -> Result<(PathBuf, String), Error> {
    if let Some(found) = find_etcd() {
        return Ok(found);
    }
    eprintln!("etcd not found; installing Debian's etcd-server and etcd-client ...");
    let status = Command::new("sh")
        .arg("-c")
        .arg("apt-get update && apt-get install -y etcd-server etcd-client")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map_err(|e| Error::Install(format!("cannot run apt-get: {e}")))?;
    if !status.success() {
        return Err(Error::Install(format!(
            "`apt-get update && apt-get install -y etcd-server etcd-client` failed ({status}); \
             install etcd 3.4 by hand (it must be on the PATH as `etcd`) and run again"
        )));
    }
    find_etcd().ok_or_else(|| {
        Error::Install("etcd-server was installed but `etcd` is not on the PATH".into())
    })
}

fn find_etcd() -> Option<(PathBuf, String)> {
    let bin = ["etcd", "/usr/bin/etcd"]
        .into_iter()
        .map(PathBuf::from)
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })?;
    let out = Command::new(&bin).arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("etcd (unknown version)")
        .trim()
        .to_string();
    Some((bin, version))
}

/// Starts a 3-member etcd cluster with default timings. Member `i`
/// (1..=3) serves clients on `base_port + 10*i + 1` and peers on
/// `base_port + 10*i + 2`, with its data dir under `dir/member<i>`.
pub async fn start(bin: &Path, dir: &Path, base_port: u16) -> Result<Cluster, Error> {
    let launch = Launch {
        system: System::Etcd,
        dir,
        node_dir: "member",
        base_port,
    };
    let url = |addr: &str| format!("http://{addr}");
    let initial: Vec<String> = launch
        .addrs()
        .iter()
        .enumerate()
        .map(|(i, (_, peer))| format!("m{}={}", i + 1, url(peer)))
        .collect();
    launch
        .start(|node| {
            let args = [
                "--name".to_string(),
                format!("m{}", node.index),
                "--data-dir".to_string(),
                node.data_dir.display().to_string(),
                "--listen-client-urls".to_string(),
                url(node.client_addr),
                "--advertise-client-urls".to_string(),
                url(node.client_addr),
                "--listen-peer-urls".to_string(),
                url(node.peer_addr),
                "--initial-advertise-peer-urls".to_string(),
                url(node.peer_addr),
                "--initial-cluster".to_string(),
                initial.join(","),
                "--initial-cluster-token".to_string(),
                "raftlock-bench".to_string(),
                "--initial-cluster-state".to_string(),
                "new".to_string(),
                "--logger".to_string(),
                "zap".to_string(),
                "--log-outputs".to_string(),
                "stderr".to_string(),
            ];
            let spec = NodeSpec {
                index: node.index,
                client_addr: node.client_addr.to_string(),
                peer_addr: node.peer_addr.to_string(),
                program: bin.to_path_buf(),
                args: args.into_iter().map(OsString::from).collect(),
                env: Vec::new(),
                log: node.log.clone(),
            };
            // Members are configured by their flags alone.
            NodeProcess::new(spec, &["ETCD"], &[])
        })
        .await
}

/// A channel to one member.
pub fn channel(addr: &str) -> Result<Channel, Error> {
    Ok(endpoint(addr)?.connect_lazy())
}

/// The endpoint settings every etcd connection of the benchmark uses.
pub fn endpoint(addr: &str) -> Result<Endpoint, Error> {
    Endpoint::from_shared(format!("http://{addr}"))
        .map(|e| e.connect_timeout(Duration::from_secs(1)).tcp_nodelay(true))
        .map_err(|e| Error::Cluster(format!("bad etcd endpoint {addr}: {e}")))
}

/// What member `addr` says, or `None` if it does not answer.
pub async fn view(addr: &str) -> Option<NodeView> {
    let mut client = MaintenanceClient::new(channel(addr).ok()?);
    let status = client.status(StatusRequest {}).await.ok()?.into_inner();
    let header = status.header?;
    Some(NodeView {
        id: header.member_id,
        leader: status.leader,
        term: status.raft_term,
        applied: status.raft_applied_index,
    })
}
