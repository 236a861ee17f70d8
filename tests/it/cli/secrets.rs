//! No secret leaves a node, tried as an operator and an attacker would on
//! the default cluster of several nodes: `raftlock serve` processes with a
//! join token and no auth file, driven by the `raftlock` CLI through
//! membership changes and refusals. Nothing a client gets back, no log
//! line, status page or metric carries the join token (its hex, or
//! `rlj1-`) or the admin credential derived from it.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use raftlock::{AdminCredential, ClusterKey};
use raftlock_testkit::ports::Reserved;
use raftlock_testkit::{initial_cluster, NodeProcess, ServeFlags};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Command;

use super::{describe, BIN};

/// Three `raftlock serve` processes with a join token and admin listeners.
struct ProcessCluster {
    dir: tempfile::TempDir,
    nodes: Vec<NodeProcess>,
    clients: Vec<String>,
    admins: Vec<String>,
    token: String,
}

impl ProcessCluster {
    async fn start() -> ProcessCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut ports = Reserved::new();
        let mut addrs = Vec::new();
        for _ in 0..3 {
            let take = |p: &mut Reserved| p.take().expect("free port").to_string();
            addrs.push((take(&mut ports), take(&mut ports), take(&mut ports)));
        }
        let members = initial_cluster(
            addrs
                .iter()
                .zip(1..)
                .map(|((client, peer, _), id)| (id, peer.as_str(), client.as_str())),
        );
        let token = ClusterKey::generate().to_token();
        let mut nodes = Vec::new();
        for ((client, peer, admin), id) in addrs.iter().zip(1u64..) {
            let mut flags = ServeFlags::new(
                id,
                dir.path().join(format!("node{id}")),
                client.clone(),
                peer.clone(),
                members.clone(),
            );
            flags.join_token = Some(token.clone());
            flags.admin_addr = admin.clone();
            flags.log_filter = Some("debug,openraft=info,sled=info,h2=info,tower=info".into());
            nodes.push(flags.process(Path::new(BIN), dir.path().join(format!("node{id}.log"))));
        }
        ports.release();
        for node in &mut nodes {
            node.start().expect("start raftlock serve");
        }
        let cluster = ProcessCluster {
            clients: addrs.iter().map(|a| a.0.clone()).collect(),
            admins: addrs.iter().map(|a| a.2.clone()).collect(),
            dir,
            nodes,
            token,
        };
        cluster.wait_for_leader().await;
        cluster
    }

    fn node_dir(&self, id: u64) -> String {
        self.dir
            .path()
            .join(format!("node{id}"))
            .display()
            .to_string()
    }

    /// Runs the CLI against the cluster from an empty working directory,
    /// with nothing of the caller's `RAFTLOCK_*` settings.
    async fn cli(&self, args: &[&str]) -> Output {
        let cwd = self.dir.path().join("cwd");
        std::fs::create_dir_all(&cwd).expect("cwd");
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(&cwd)
            .env("RAFTLOCK_ENDPOINTS", self.clients.join(","))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("RAFTLOCK_") && name != "RAFTLOCK_ENDPOINTS" {
                cmd.env_remove(name);
            }
        }
        tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("raftlock {args:?} did not finish in 60 s"))
            .expect("run raftlock")
    }

    async fn wait_for_leader(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.cli(&["cluster", "status", "--output", "json"]).await;
            if out.status.success() {
                let status: Value = serde_json::from_slice(&out.stdout).expect("status json");
                if !status["leader"].is_null() {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "no leader: {}", describe(&out));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Everything a secret must not be found in, as text.
    fn secrets(&self) -> Vec<String> {
        let key = ClusterKey::from_token(&self.token).expect("token");
        let hex = self.token.trim_start_matches("rlj1-").to_string();
        let credential = AdminCredential::derive(&key).to_bearer();
        vec![
            "rlj1-".into(),
            hex[..32].to_string(),
            hex[32..].to_string(),
            credential.trim_start_matches("rla1-")[..32].to_string(),
        ]
    }

    fn assert_no_secret(&self, what: &str, text: &str) {
        for secret in self.secrets() {
            assert!(
                !text.contains(&secret),
                "{what} carries a secret ({secret:?}):\n{text}"
            );
        }
    }
}

/// The raw answer to `GET path` at `addr`, with `Host: addr`.
async fn http_get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("no admin listener on {addr}: {e}"));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    String::from_utf8_lossy(&raw).into_owned()
}

/// A loopback address nothing listens on.
fn unused_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}

/// The first row, replayed: `raftlock cluster add-learner` for a
/// node that is not up answered the whole `serve` command with
/// `--join-token rlj1-…`, the cluster's peer secret, to whoever reached
/// the client port. Now, asked by an operator (with the admin credential
/// from a member's data dir), the answer names `--join-token-file FILE`;
/// asked without a credential, or with another cluster's, the call is
/// refused before anything is probed. Then node 4 joins, is promoted and
/// removed; and no answer, log line, status page or metric of any node
/// carries the token or the admin credential. Without the fix in
/// `raft/src/membership/checks.rs` the first assertion fails with
/// `--join-token rlj1-…` in the message (seen).
#[tokio::test]
async fn no_answer_log_status_page_or_metric_carries_the_join_token() {
    let mut cluster = ProcessCluster::start().await;
    let node1 = cluster.node_dir(1);
    let (peer9, client9) = (unused_addr(), unused_addr());
    let mut outputs: Vec<(String, Output)> = Vec::new();

    // As an operator: the error says how to start node 9, without the token.
    let add = |extra: &[&str]| {
        let mut args = vec!["cluster", "add-learner", "9", &peer9, &client9];
        args.extend_from_slice(extra);
        args.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let args = add(&["--data-dir", &node1]);
    let out = cluster
        .cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{}", describe(&out));
    cluster.assert_no_secret("add-learner's error", &err);
    assert!(err.contains("--join-token-file FILE"), "{err}");
    assert!(err.contains("start node 9 first"), "{err}");
    outputs.push(("add-learner as admin".into(), out));

    // Without a credential: refused, naming what is needed.
    let args = add(&[]);
    let out = cluster
        .cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("permission denied"), "{err}");
    assert!(err.contains("--data-dir"), "{err}");
    outputs.push(("add-learner without a credential".into(), out));

    // With another cluster's secret: refused.
    let wrong = cluster.dir.path().join("wrong.token");
    std::fs::write(&wrong, ClusterKey::generate().to_token()).expect("write");
    let wrong_arg = wrong.display().to_string();
    let args = add(&["--join-token-file", &wrong_arg]);
    let out = cluster
        .cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("unauthenticated"), "{err}");
    outputs.push(("add-learner with a wrong credential".into(), out));
    let out = cluster.cli(&["locks", "force-release", "x"]).await;
    assert!(!out.status.success(), "{}", describe(&out));
    outputs.push(("force-release without a credential".into(), out));

    // Node 4 joins with the token in a file, is promoted, then removed.
    let token_file = cluster.dir.path().join("join.token");
    std::fs::write(&token_file, &cluster.token).expect("write token file");
    let (peer4, client4) = (unused_addr(), unused_addr());
    let log4 = cluster.dir.path().join("node4.log");
    let node4 = join_node(&cluster, &peer4, &client4, &token_file, &log4);
    // Asked again until node 4 listens (a slow machine starts it late).
    let deadline = Instant::now() + Duration::from_secs(60);
    let add4 = [
        "cluster",
        "add-learner",
        "4",
        &peer4,
        &client4,
        "--data-dir",
        &node1,
    ];
    loop {
        let out = cluster.cli(&add4).await;
        let done = out.status.success();
        assert!(
            done || Instant::now() < deadline,
            "node 4 was never added: {}",
            describe(&out)
        );
        outputs.push(("add-learner 4".into(), out));
        if done {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    loop {
        let out = cluster
            .cli(&["cluster", "promote", "4", "--data-dir", &node1])
            .await;
        let done = out.status.success();
        outputs.push(("promote 4".into(), out));
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "learner 4 was never promoted");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let out = cluster
        .cli(&["cluster", "remove", "4", "--data-dir", &node1])
        .await;
    assert!(out.status.success(), "{}", describe(&out));
    outputs.push(("remove 4".into(), out));
    let out = cluster.cli(&["cluster", "status"]).await;
    outputs.push(("cluster status".into(), out));

    for (what, out) in &outputs {
        cluster.assert_no_secret(what, &String::from_utf8_lossy(&out.stdout));
        cluster.assert_no_secret(what, &String::from_utf8_lossy(&out.stderr));
    }
    for admin in cluster.admins.clone() {
        for path in ["/", "/metrics", "/healthz", "/readyz"] {
            let page = http_get(&admin, path).await;
            assert!(page.starts_with("HTTP/1.1 200"), "{path}: {page}");
            cluster.assert_no_secret(&format!("{admin}{path}"), &page);
        }
    }
    drop(node4);
    for node in &mut cluster.nodes {
        node.kill();
    }
    let mut logs: Vec<PathBuf> = (1..=3)
        .map(|id| cluster.dir.path().join(format!("node{id}.log")))
        .collect();
    logs.push(log4);
    for log in logs {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(!text.is_empty(), "{} is empty", log.display());
        cluster.assert_no_secret(&log.display().to_string(), &text);
    }
}

/// `raftlock serve --join` for node 4, its token in a file.
fn join_node(
    cluster: &ProcessCluster,
    peer: &str,
    client: &str,
    token_file: &Path,
    log: &Path,
) -> tokio::process::Child {
    let log_file = std::fs::File::create(log).expect("log file");
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--id", "4", "--join", "--admin-addr", "off"])
        .arg("--data-dir")
        .arg(cluster.dir.path().join("node4"))
        .args(["--peer-addr", peer, "--client-addr", client])
        .arg("--join-token-file")
        .arg(token_file)
        .env(
            "RAFTLOCK_LOG",
            "debug,openraft=info,sled=info,h2=info,tower=info",
        )
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().expect("log"))
        .stderr(log_file)
        .kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("RAFTLOCK_") {
            cmd.env_remove(name);
        }
    }
    cmd.env(
        "RAFTLOCK_LOG",
        "debug,openraft=info,sled=info,h2=info,tower=info",
    );
    cmd.spawn().expect("spawn node 4")
}
