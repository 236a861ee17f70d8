//! `raftlock certs ...` as a user runs it, and the client flags
//! `--cacert`, `--cert`, `--key` (`RAFTLOCK_CACERT`, ...) against a TLS
//! cluster.

use std::path::Path;

use tokio::process::Command;

use super::{describe, json, stderr_of, BIN};
use crate::cluster::TestCluster;

async fn certs(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .arg("certs")
        .args(args)
        .arg("--certs-dir")
        .arg(dir)
        .env_remove("RAFTLOCK_CERTS_DIR")
        .output()
        .await
        .expect("run raftlock certs")
}

#[tokio::test]
async fn cli_certs_writes_a_ca_node_and_client_and_never_overwrites_by_accident() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().join("certs");
    let out = certs(&dir, &["create-node", "--id", "1", "--host", "localhost"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr_of(&out).contains("create-ca"), "{}", describe(&out));

    for args in [
        &["create-ca"][..],
        &[
            "create-node",
            "--id",
            "1",
            "--host",
            "127.0.0.1",
            "--host",
            "localhost",
        ],
        &["create-client", "--name", "ops"],
    ] {
        let out = certs(&dir, args).await;
        assert!(out.status.success(), "{args:?}: {}", describe(&out));
    }
    for file in [
        "ca.crt",
        "ca.key",
        "node-1.crt",
        "node-1.key",
        "client-ops.crt",
        "client-ops.key",
    ] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }

    let before = std::fs::read(dir.join("ca.key")).expect("read");
    let out = certs(&dir, &["create-ca"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        stderr_of(&out).contains("--overwrite"),
        "{}",
        describe(&out)
    );
    assert_eq!(std::fs::read(dir.join("ca.key")).expect("read"), before);
    let out = certs(&dir, &["create-client", "--name", "a/b"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let out = certs(&dir, &["create-node", "--id", "2"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "--host is required: {}",
        describe(&out)
    );
}

#[tokio::test]
async fn cli_talks_to_a_tls_cluster_with_cacert_cert_and_key() {
    let cluster = TestCluster::with_tls(3, true).await;
    let granted = json(&cluster, &["lease", "grant", "10s", "--output", "json"]).await;
    assert_eq!(granted["ttl_ms"], 10_000);
    let status = json(&cluster, &["cluster", "status", "--output", "json"]).await;
    let roles: Vec<&str> = status["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["role"].as_str())
        .collect();
    assert!(!roles.contains(&"unreachable"), "{status}");

    // Plain text against the TLS cluster: one line saying to pass --cacert.
    let mut plain = super::raftlock(&cluster, &["lease", "list"]);
    plain
        .env_remove("RAFTLOCK_CACERT")
        .env_remove("RAFTLOCK_CERT")
        .env_remove("RAFTLOCK_KEY");
    let out = plain.output().await.expect("run raftlock");
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(stderr_of(&out).contains("--cacert"), "{}", describe(&out));
    cluster.shutdown().await;
}
