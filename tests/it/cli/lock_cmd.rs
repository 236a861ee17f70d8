//! `raftlock lock NAME [-- CMD]`: the fence in the command's environment,
//! giving up after a timeout, stopping the command when the lock is lost,
//! and holding until terminated.

use std::time::{Duration, Instant};

use raftlock::client::Acquire;
use serde_json::Value;

use super::{describe, next_line, run, spawn, stderr_of, terminate, wait_exit, TTL};
use crate::cluster::TestCluster;

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
