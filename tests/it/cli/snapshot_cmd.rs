//! `raftlock snapshot save|status|restore`, then `raftlock serve` on the
//! restored dir: the lock is held there by the same owner with the same
//! fence, and a damaged file or a used dir is refused with nothing written.
//! On a cluster with an auth file, `save` needs the admin role.

use std::time::{Duration, Instant};

use raftlock_client::Acquire;
use tokio::process::Command;

use super::lease_cmd::run_as;
use super::{
    describe, hold_jobs_a, json, node_dir, run, stderr_of, terminate, wait_exit, BIN, TTL,
};
use crate::auth::{self, BILLING_TOKEN, OPS_TOKEN};
use crate::cluster::TestCluster;

/// A port free now, for a node this test starts.
fn free_port() -> u16 {
    raftlock_testkit::ports::free_addr()
        .expect("a free port")
        .port()
}

#[tokio::test]
async fn cli_snapshot_save_status_restore_serve() {
    let cluster = TestCluster::new(3).await;
    let (_client, _lease, fence) = hold_jobs_a(&cluster).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cluster.backup");
    let file_arg = file.display().to_string();

    let node_dir = node_dir(&cluster);
    let saved = json(
        &cluster,
        &[
            "snapshot",
            "save",
            &file_arg,
            "--data-dir",
            &node_dir,
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(saved["locks"], 1, "{saved}");
    assert_eq!(saved["highest_fence"], fence, "{saved}");
    let status = json(
        &cluster,
        &["snapshot", "status", &file_arg, "--output", "json"],
    )
    .await;
    assert_eq!(status["index"], saved["index"]);

    // A flipped byte is refused and restores nothing.
    let damaged = dir.path().join("damaged.backup");
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&damaged, &bytes).unwrap();
    let data_dir = dir.path().join("restored");
    let data_arg = data_dir.display().to_string();
    let (client_port, peer_port) = (free_port(), free_port());
    let client_addr = format!("127.0.0.1:{client_port}");
    let peer_addr = format!("127.0.0.1:{peer_port}");
    let restore = |from: String| {
        vec![
            "snapshot".to_string(),
            "restore".into(),
            from,
            "--data-dir".into(),
            data_arg.clone(),
            "--client-addr".into(),
            client_addr.clone(),
            "--peer-addr".into(),
            peer_addr.clone(),
        ]
    };
    let args = restore(damaged.display().to_string());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&cluster, &args).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr_of(&out).contains("checksum"), "{}", describe(&out));
    assert!(!data_dir.exists(), "a refused restore wrote nothing");

    let args = restore(file_arg.clone());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&cluster, &args).await;
    assert!(out.status.success(), "{}", describe(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("raftlock serve --id 1"), "{said}");
    // A second restore into the same dir is refused.
    let out = run(&cluster, &args).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr_of(&out).contains("not empty"), "{}", describe(&out));

    let mut serve = Command::new(BIN)
        .args(["serve", "--data-dir", &data_arg, "--admin-addr", "off"])
        .args(["--client-addr", &client_addr, "--peer-addr", &peer_addr])
        .env_remove("RAFTLOCK_LOG")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    let lock = loop {
        let out = Command::new(BIN)
            .args(["locks", "describe", "jobs/a", "--output", "json"])
            .args(["--endpoints", &client_addr])
            .output()
            .await
            .unwrap();
        if out.status.success() {
            break serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap();
        }
        assert!(Instant::now() < deadline, "no answer: {}", describe(&out));
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(lock["holders"][0]["owner"], "owner-a", "{lock}");
    assert_eq!(lock["holders"][0]["fence"], fence, "{lock}");
    terminate(&serve);
    let exit = wait_exit(&mut serve, Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{exit}");
    cluster.shutdown().await;
}

/// `raftlock snapshot save FILE` as typed, on a cluster with an auth file:
/// as `billing` (no admin role) it exits 1, refused for want of the admin
/// role, and writes no file; as `ops` (an admin) it saves a backup holding
/// billing's lock. Seen failing with the admin check of `Cluster.Backup`
/// (`check_admin` in `cluster_service.rs`) removed: billing's save
/// succeeded and the test stopped at "refused".
#[tokio::test]
async fn cli_snapshot_save_needs_the_admin_role() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = auth::cluster(&dir).await;
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let options = raftlock_client::ClientOptions {
        token: Some(BILLING_TOKEN.into()),
        ..cluster.client_options()
    };
    let billing = raftlock_client::Client::connect_with(endpoints, options)
        .await
        .expect("billing connects");
    let lease = billing.grant_lease(TTL).await.expect("billing's lease");
    billing
        .acquire(&Acquire::exclusive("billing/run", "billing-1", lease))
        .await
        .expect("acquire")
        .expect("granted");
    let file = dir.path().join("cluster.backup");
    let file_arg = file.to_str().expect("utf-8 path");

    let refused = run_as(&cluster, BILLING_TOKEN, &["snapshot", "save", file_arg]).await;
    assert_eq!(
        refused.status.code(),
        Some(1),
        "refused: {}",
        describe(&refused)
    );
    let err = stderr_of(&refused);
    assert!(err.contains("admin role"), "{err}");
    assert!(err.contains("billing"), "{err}");
    assert!(!file.exists(), "a refused save wrote {}", file.display());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("backup"))
        .collect();
    assert!(leftovers.is_empty(), "a refused save left {leftovers:?}");

    let saved = run_as(
        &cluster,
        OPS_TOKEN,
        &["snapshot", "save", file_arg, "--output", "json"],
    )
    .await;
    assert!(saved.status.success(), "{}", describe(&saved));
    let saved: serde_json::Value = serde_json::from_slice(&saved.stdout).expect("json");
    assert_eq!(saved["locks"], 1, "{saved}");
    assert!(file.is_file(), "the admin's save wrote no file");
    cluster.shutdown().await;
}
