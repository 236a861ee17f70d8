//! `raftlock lease ...`: grant, keep alive, read, list and revoke a lease,
//! in JSON and as a table.

use serde_json::Value;

use super::{describe, json, run, stderr_of};
use crate::cluster::TestCluster;

#[tokio::test]
async fn cli_lease_grant_keepalive_ttl_list_revoke() {
    let cluster = TestCluster::new(3).await;
    let granted = json(&cluster, &["lease", "grant", "10s", "--output", "json"]).await;
    assert_eq!(granted["ttl_ms"], 10_000);
    let id = granted["id"].as_u64().expect("lease id");
    let id_arg = id.to_string();

    // etcdctl's spellings: bare seconds for a TTL, `keep-alive`, `timetolive`.
    let bare = json(&cluster, &["lease", "grant", "7", "--output", "json"]).await;
    assert_eq!(bare["ttl_ms"], 7_000);
    let bare_id = bare["id"].as_u64().expect("lease id").to_string();
    let alias = json(
        &cluster,
        &["lease", "timetolive", &bare_id, "--output", "json"],
    )
    .await;
    assert_eq!(alias["granted_ttl_ms"], 7_000);
    json(&cluster, &["lease", "revoke", &bare_id, "--output", "json"]).await;

    let kept = json(
        &cluster,
        &["lease", "keep-alive", &id_arg, "--once", "--output", "json"],
    )
    .await;
    assert_eq!(kept["id"], id);
    assert!(kept["ttl_ms"].as_u64().expect("ttl") >= 9_000, "{kept}");

    let ttl = json(&cluster, &["lease", "ttl", &id_arg, "--output", "json"]).await;
    assert_eq!(ttl["granted_ttl_ms"], 10_000);

    // A new TTL from now, replicated: shorter here, then back.
    let set = json(
        &cluster,
        &["lease", "set-ttl", &id_arg, "2s", "--output", "json"],
    )
    .await;
    assert_eq!(set["ttl_ms"], 2_000);
    let ttl = json(&cluster, &["lease", "ttl", &id_arg, "--output", "json"]).await;
    assert_eq!(ttl["granted_ttl_ms"], 2_000);
    assert!(
        ttl["remaining_ms"].as_u64().expect("remaining") <= 2_000,
        "{ttl}"
    );
    json(
        &cluster,
        &["lease", "set-ttl", &id_arg, "10", "--output", "json"],
    )
    .await;
    let ttl = json(&cluster, &["lease", "ttl", &id_arg, "--output", "json"]).await;
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
