//! The `raftlock` binary as a user runs it: each test runs the real CLI as a
//! subprocess against an in-process [`TestCluster`] and parses what it
//! prints (`--output json` where there is something to parse).
//!
//! This file is the harness (run, spawn, read, signal the CLI); the tests
//! are grouped by command, one file each, like `clients/cli/src`.

mod certs;
mod cli_promises;
mod client_cert;
mod cluster_health;
mod elect_cmd;
mod failover;
mod failure;
mod flood_recovery;
mod lease_cmd;
mod lock_cmd;
mod lock_exit_codes;
mod lock_signals;
mod locks_cmd;
mod private_state;
mod process_cluster;
mod secrets;
mod serve;
mod serve_peer_secret;
mod serve_refusals;
mod serve_stop;
mod snapshot_cmd;
mod starved_leader;
mod systemd_recipe;

use std::process::{ExitStatus, Output, Stdio};
use std::time::Duration;

use raftlock_client::Acquire;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::cluster::TestCluster;

const BIN: &str = env!("CARGO_BIN_EXE_raftlock");
const TTL: Duration = Duration::from_secs(10);

/// The CLI with `RAFTLOCK_ENDPOINTS` pointing at every node of `cluster`
/// (and, for a TLS cluster, `RAFTLOCK_CACERT`, `_CERT` and `_KEY` naming
/// its CA and the `test` client certificate).
fn raftlock(cluster: &TestCluster, args: &[&str]) -> Command {
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("RAFTLOCK_ENDPOINTS", endpoints.join(","))
        .env_remove("RAFTLOCK_LOG")
        .env_remove("RAFTLOCK_DATA_DIR")
        .env_remove("RAFTLOCK_JOIN_TOKEN")
        .env_remove("RAFTLOCK_JOIN_TOKEN_FILE")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    match &cluster.certs {
        Some(certs) => {
            let (cert, key) = raftlock_cli::certs::client_files(certs, crate::cluster::TEST_CLIENT);
            cmd.env("RAFTLOCK_CACERT", certs.join(raftlock_cli::certs::CA_CERT))
                .env("RAFTLOCK_CERT", cert)
                .env("RAFTLOCK_KEY", key);
        }
        None => {
            for name in ["RAFTLOCK_CACERT", "RAFTLOCK_CERT", "RAFTLOCK_KEY"] {
                cmd.env_remove(name);
            }
        }
    }
    cmd
}

/// `raftlock serve` with nothing of the caller's log filter, no stdin and
/// its output dropped (a test pipes what it reads), killed when dropped.
fn serve_command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .env_remove("RAFTLOCK_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// A free loopback address for a node this test starts, drawn below the
/// ephemeral range so that no other test's port-0 bind takes it before the
/// node listens (`raftlock_testkit::ports`).
pub(crate) fn free_addr() -> String {
    raftlock_testkit::ports::free_addr()
        .expect("a free port")
        .to_string()
}

/// Node 1's data dir: an operator command on its host reads the cluster's
/// admin credential from there (`--data-dir`, docs/security.md).
pub(crate) fn node_dir(cluster: &TestCluster) -> String {
    cluster.config(1).replication.data_dir.display().to_string()
}

/// Runs the CLI to completion.
pub(crate) async fn run(cluster: &TestCluster, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(60), raftlock(cluster, args).output())
        .await
        .unwrap_or_else(|_| panic!("raftlock {args:?} did not finish in 60 s"))
        .expect("run raftlock")
}

/// A client of `cluster` that holds `jobs/a` as `owner-a` on a lease of
/// its own: the client, the lease and the fencing token.
async fn hold_jobs_a(cluster: &TestCluster) -> (raftlock_client::Client, u64, u64) {
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let fence = client
        .acquire(&Acquire::exclusive("jobs/a", "owner-a", lease))
        .await
        .unwrap()
        .unwrap()
        .fence;
    (client, lease, fence)
}

/// `raftlock locks force-release name` as an operator on node 1's host
/// (`--data-dir`); what it prints as JSON.
async fn force_release(cluster: &TestCluster, name: &str) -> Value {
    let node_dir = node_dir(cluster);
    let args = [
        "locks",
        "force-release",
        name,
        "--data-dir",
        &node_dir,
        "--output",
        "json",
    ];
    json(cluster, &args).await
}

/// Runs the CLI, expects success, and parses its stdout as JSON.
async fn json(cluster: &TestCluster, args: &[&str]) -> Value {
    let out = run(cluster, args).await;
    assert!(
        out.status.success(),
        "raftlock {args:?}: {}",
        describe(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "raftlock {args:?} printed no JSON ({e}): {}",
            describe(&out)
        )
    })
}

pub(crate) fn describe(out: &Output) -> String {
    format!(
        "{} / stdout: {} / stderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Starts the CLI in the background with stdout piped.
fn spawn(cluster: &TestCluster, args: &[&str]) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = raftlock(cluster, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn raftlock");
    let stdout = child.stdout.take().expect("piped stdout");
    (child, BufReader::new(stdout).lines())
}

/// The next line a background CLI prints, within 15 s.
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(15), lines.next_line())
        .await
        .expect("a line within 15 s")
        .expect("read stdout")
        .expect("stdout still open")
}

/// Sends SIGTERM the way a user would, with `kill`.
fn terminate(child: &Child) {
    let pid = child.id().expect("child still running");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM {pid} failed");
}

async fn wait_exit(child: &mut Child, within: Duration) -> ExitStatus {
    tokio::time::timeout(within, child.wait())
        .await
        .unwrap_or_else(|_| panic!("raftlock did not exit within {within:?}"))
        .expect("wait for raftlock")
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}
