//! The `raftlock` binary as a user runs it: each test runs the real CLI as a
//! subprocess against an in-process [`TestCluster`] and parses what it
//! prints (`--output json` where there is something to parse).

use std::process::{ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use raftlock::client::Acquire;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::cluster::TestCluster;

const BIN: &str = env!("CARGO_BIN_EXE_raftlock");
const TTL: Duration = Duration::from_secs(10);

/// The CLI with `RAFTLOCK_ENDPOINTS` pointing at every node of `cluster`.
fn raftlock(cluster: &TestCluster, args: &[&str]) -> Command {
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("RAFTLOCK_ENDPOINTS", endpoints.join(","))
        .env_remove("RAFTLOCK_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Runs the CLI to completion.
async fn run(cluster: &TestCluster, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(60), raftlock(cluster, args).output())
        .await
        .unwrap_or_else(|_| panic!("raftlock {args:?} did not finish in 60 s"))
        .expect("run raftlock")
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

fn describe(out: &Output) -> String {
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

#[tokio::test]
async fn cli_lease_grant_keepalive_ttl_list_revoke() {
    let cluster = TestCluster::new(3).await;
    let granted = json(&cluster, &["lease", "grant", "10s", "--output", "json"]).await;
    assert_eq!(granted["ttl_ms"], 10_000);
    let id = granted["id"].as_u64().expect("lease id");
    let id_arg = id.to_string();

    let kept = json(
        &cluster,
        &["lease", "keepalive", &id_arg, "--once", "--output", "json"],
    )
    .await;
    assert_eq!(kept["id"], id);
    assert!(kept["ttl_ms"].as_u64().expect("ttl") >= 9_000, "{kept}");

    let ttl = json(&cluster, &["lease", "ttl", &id_arg, "--output", "json"]).await;
    assert_eq!(ttl["granted_ttl_ms"], 10_000);
    assert_eq!(ttl["attachments"], Value::Array(Vec::new()));

    let list = json(&cluster, &["lease", "list", "--output", "json"]).await;
    let ids: Vec<u64> = list
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|l| l["id"].as_u64())
        .collect();
    assert_eq!(ids, vec![id]);

    // Table output too: the id appears in the human-readable list.
    let table = run(&cluster, &["lease", "list"]).await;
    assert!(String::from_utf8_lossy(&table.stdout).contains(&id_arg));

    let revoked = json(&cluster, &["lease", "revoke", &id_arg, "--output", "json"]).await;
    assert_eq!(revoked["id"], id);
    let list = json(&cluster, &["lease", "list", "--output", "json"]).await;
    assert_eq!(list, Value::Array(Vec::new()));

    // A gone lease: one line saying so and what to do, non-zero exit.
    let out = run(&cluster, &["lease", "ttl", &id_arg]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("lease grant"), "{err}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_locks_list_describe_check_force_release() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let fence = client
        .acquire(&Acquire::exclusive("jobs/a", "owner-a", lease))
        .await
        .unwrap()
        .unwrap()
        .fence;
    client
        .acquire(&Acquire::exclusive("other", "owner-b", lease))
        .await
        .unwrap()
        .unwrap();

    let list = json(&cluster, &["locks", "list", "jobs/", "--output", "json"]).await;
    let locks = list.as_array().expect("array");
    assert_eq!(locks.len(), 1, "{list}");
    assert_eq!(locks[0]["name"], "jobs/a");
    assert_eq!(locks[0]["holders"][0]["fence"], fence);
    let all = json(&cluster, &["locks", "list", "--output", "json"]).await;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");

    let lock = json(
        &cluster,
        &["locks", "describe", "jobs/a", "--output", "json"],
    )
    .await;
    assert_eq!(lock["holders"][0]["owner"], "owner-a");
    assert_eq!(lock["holders"][0]["lease"], lease);
    assert_eq!(lock["holders"][0]["mode"], "exclusive");
    assert_eq!(lock["waiters"], Value::Array(Vec::new()));

    let fence_arg = fence.to_string();
    let valid = run(&cluster, &["locks", "check", "jobs/a", &fence_arg]).await;
    assert_eq!(valid.status.code(), Some(0), "{}", describe(&valid));
    let stale = (fence + 1000).to_string();
    let invalid = run(&cluster, &["locks", "check", "jobs/a", &stale]).await;
    assert_eq!(invalid.status.code(), Some(1), "{}", describe(&invalid));

    let released = json(
        &cluster,
        &["locks", "force-release", "jobs/a", "--output", "json"],
    )
    .await;
    assert_eq!(released["holders"], 1);
    let after = run(&cluster, &["locks", "check", "jobs/a", &fence_arg]).await;
    assert_eq!(after.status.code(), Some(1), "{}", describe(&after));
    let free = json(
        &cluster,
        &["locks", "describe", "jobs/a", "--output", "json"],
    )
    .await;
    assert_eq!(free["holders"], Value::Array(Vec::new()));
    let table = run(&cluster, &["locks", "describe", "jobs/a"]).await;
    assert!(String::from_utf8_lossy(&table.stdout).contains("free"));
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_lock_runs_command_with_fence_and_leaves_nothing_behind() {
    let cluster = TestCluster::new(3).await;
    let out = run(
        &cluster,
        &[
            "lock",
            "deploy",
            "--ttl",
            "5s",
            "--",
            "sh",
            "-c",
            "echo $RAFTLOCK_FENCE; echo $RAFTLOCK_LOCK; exit 3",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    let fence: u64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("no fence printed: {}", describe(&out)));
    assert!(fence > 0);
    assert_eq!(lines.next(), Some("deploy"));

    let client = cluster.client().await;
    assert_eq!(client.describe("deploy").await.unwrap(), None);
    assert_eq!(client.leases().await.unwrap(), Vec::new());
    assert!(!client.check("deploy", fence).await.unwrap());
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_lock_gives_up_after_timeout_when_held() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("busy", "someone", lease))
        .await
        .unwrap()
        .unwrap();

    let started = Instant::now();
    let out = run(
        &cluster,
        &["lock", "busy", "--timeout", "300ms", "--", "true"],
    )
    .await;
    assert_ne!(out.status.code(), Some(0), "{}", describe(&out));
    assert!(started.elapsed() < Duration::from_secs(10));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("still held") && err.contains("--timeout"),
        "{err}"
    );

    // Try-only: `--timeout 0s`.
    let out = run(&cluster, &["lock", "busy", "--timeout", "0s"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr_of(&out).contains("held by someone else"));

    // It gave up cleanly: only the holder's lease remains, nobody waits.
    let info = client.describe("busy").await.unwrap().unwrap();
    assert!(info.waiters.is_empty(), "{info:?}");
    assert_eq!(client.leases().await.unwrap().len(), 1);
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_lock_stops_command_when_lease_is_revoked() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let (mut child, _stdout) = spawn(
        &cluster,
        &[
            "lock", "victim", "--ttl", "3s", "--grace", "2s", "--", "sleep", "30",
        ],
    );
    let lease = loop {
        if let Some(info) = client.describe("victim").await.unwrap() {
            if let Some(holder) = info.holders.first() {
                break holder.lease;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    client.revoke(lease).await.unwrap();
    let revoked = Instant::now();
    let status = wait_exit(&mut child, Duration::from_secs(10)).await;
    let took = revoked.elapsed();
    assert!(!status.success(), "{status}");
    // Noticed within a keep-alive round (a third of the TTL); `sleep` dies
    // on SIGTERM at once.
    assert!(took < Duration::from_secs(4), "took {took:?}");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        use tokio::io::AsyncReadExt;
        err.read_to_string(&mut stderr).await.unwrap();
    }
    assert!(stderr.contains("lost lock victim"), "{stderr}");
    assert_eq!(client.describe("victim").await.unwrap(), None);

    // Force-release is noticed too (by the guard's periodic check).
    let (mut child, _stdout) = spawn(
        &cluster,
        &["lock", "victim", "--ttl", "3s", "--", "sleep", "30"],
    );
    while client.describe("victim").await.unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client.force_release("victim").await.unwrap();
    let released = Instant::now();
    let status = wait_exit(&mut child, Duration::from_secs(10)).await;
    assert!(!status.success(), "{status}");
    assert!(
        released.elapsed() < Duration::from_secs(4),
        "took {:?}",
        released.elapsed()
    );
    assert_eq!(client.leases().await.unwrap(), Vec::new());
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_lock_without_command_holds_until_terminated() {
    let cluster = TestCluster::new(3).await;
    let (mut child, mut stdout) = spawn(
        &cluster,
        &["lock", "manual", "--ttl", "3s", "--output", "json"],
    );
    let mut text = String::new();
    // Pretty JSON: read up to the closing brace.
    while !text.trim_end().ends_with('}') {
        text.push_str(&next_line(&mut stdout).await);
        text.push('\n');
    }
    let held: Value = serde_json::from_str(&text).expect("json");
    let fence = held["fence"].as_u64().expect("fence");
    let client = cluster.client().await;
    assert!(client.check("manual", fence).await.unwrap());

    // Still held after more than one TTL: it is kept alive.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(client.check("manual", fence).await.unwrap());

    terminate(&child);
    let status = wait_exit(&mut child, Duration::from_secs(10)).await;
    assert!(status.success(), "{status}");
    assert!(!client.check("manual", fence).await.unwrap());
    assert_eq!(client.leases().await.unwrap(), Vec::new());
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_elect_and_observe() {
    let cluster = TestCluster::new(3).await;
    let (mut observer, mut changes) = spawn(
        &cluster,
        &["elect", "--observe", "scheduler", "--output", "json"],
    );
    let change = |line: String| -> Value { serde_json::from_str(&line).expect("json line") };
    assert_eq!(change(next_line(&mut changes).await)["has_leader"], false);

    let args = |value| {
        [
            "elect",
            "scheduler",
            value,
            "--ttl",
            "3s",
            "--output",
            "json",
        ]
    };
    let (mut alpha, mut alpha_out) = spawn(&cluster, &args("alpha"));
    let elected = change(next_line(&mut alpha_out).await);
    assert_eq!(elected["value"], "alpha");
    let seen = change(next_line(&mut changes).await);
    assert_eq!(seen["value"], "alpha");
    assert_eq!(seen["fence"], elected["fence"]);

    // A second candidate waits until the first resigns.
    let (mut beta, mut beta_out) = spawn(&cluster, &args("beta"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    terminate(&alpha);
    assert!(wait_exit(&mut alpha, Duration::from_secs(10))
        .await
        .success());
    let elected = change(next_line(&mut beta_out).await);
    assert_eq!(elected["value"], "beta");
    let mut seen = change(next_line(&mut changes).await);
    if seen["has_leader"] == false {
        // The gap between resign and the next grant may show as its own
        // change.
        seen = change(next_line(&mut changes).await);
    }
    assert_eq!(seen["value"], "beta");

    terminate(&beta);
    assert!(wait_exit(&mut beta, Duration::from_secs(10))
        .await
        .success());
    assert_eq!(change(next_line(&mut changes).await)["has_leader"], false);

    terminate(&observer);
    assert!(wait_exit(&mut observer, Duration::from_secs(10))
        .await
        .success());
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_rejects_bad_durations_and_unreachable_clusters() {
    let cluster = TestCluster::new(1).await;
    for args in [
        &["lease", "grant", "10x"][..],
        &["lock", "x", "--ttl", "5"],
        &["lock", "x", "--timeout", "1.5s"],
        &["elect", "x", "v", "--ttl", "soon"],
    ] {
        let out = run(&cluster, args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let err = stderr_of(&out);
        assert!(
            err.contains("500ms, 10s, 2m") || err.contains("no unit"),
            "{err}"
        );
    }

    let out = run(&cluster, &["lease", "list", "--endpoints", "127.0.0.1:1"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach") && err.contains("--endpoints"),
        "{err}"
    );

    // `locks check` keeps 1 for "not valid": "cannot tell" is 2.
    let out = run(
        &cluster,
        &["locks", "check", "x", "1", "--endpoints", "127.0.0.1:1"],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    cluster.shutdown().await;
}

#[tokio::test]
async fn cli_serve_without_flags_is_a_ready_one_node_cluster() {
    let cwd = tempfile::tempdir().expect("temp dir");
    if std::net::TcpListener::bind("127.0.0.1:7379").is_err() {
        panic!("port 127.0.0.1:7379 is taken; `raftlock serve` without flags needs it");
    }
    let mut serve = Command::new(BIN)
        .arg("serve")
        .current_dir(cwd.path())
        .env_remove("RAFTLOCK_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn raftlock serve");

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let out = Command::new(BIN)
            .args(["cluster", "status", "--output", "json"])
            .env_remove("RAFTLOCK_ENDPOINTS")
            .output()
            .await
            .expect("run cluster status");
        if out.status.success() {
            let status: Value = serde_json::from_slice(&out.stdout).expect("status json");
            // The listener answers a moment before the cluster is formed.
            if !status["leader"].is_null() {
                break status;
            }
        }
        assert!(Instant::now() < deadline, "no answer: {}", describe(&out));
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status["leader"], 1, "{status}");
    assert_eq!(status["nodes"][0]["client_addr"], "127.0.0.1:7379");
    assert_eq!(status["nodes"][0]["role"], "leader");
    assert!(cwd.path().join("raftlock-data").is_dir());

    terminate(&serve);
    let exit = wait_exit(&mut serve, Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{exit}");
}
