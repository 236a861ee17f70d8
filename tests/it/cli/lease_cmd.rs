//! `raftlock lease ...`: grant, keep alive, read, list and revoke a lease,
//! in JSON and as a table; revoke every lease of an identity or source.

use std::time::Duration;

use raftlock_client::{Acquire, Client, ClientOptions};
use serde_json::Value;

use super::{describe, json, node_dir, raftlock, run, stderr_of, TTL};
use crate::auth::{self, BILLING_TOKEN, OPS_TOKEN};
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

/// Runs the CLI with `token` (RAFTLOCK_TOKEN) to completion.
pub(super) async fn run_as(
    cluster: &TestCluster,
    token: &str,
    args: &[&str],
) -> std::process::Output {
    let run = raftlock(cluster, args)
        .env("RAFTLOCK_TOKEN", token)
        .output();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("raftlock {args:?} did not finish in 60 s"))
        .expect("run raftlock")
}

/// `raftlock lease revoke --identity billing`, as an admin, revokes every
/// lease `billing` holds and prints how many (and the holds released),
/// as JSON and as a table; as `billing` itself it is refused for want of
/// the admin role and revokes nothing. Before it existed the CLI refused
/// `--identity` as an unexpected argument.
#[tokio::test]
async fn cli_lease_revoke_identity_revokes_every_lease_of_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = auth::cluster(&dir).await;
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let options = ClientOptions {
        token: Some(BILLING_TOKEN.to_string()),
        ..ClientOptions::default()
    };
    let billing = Client::connect_with(endpoints, options)
        .await
        .expect("client");
    let mut leases = Vec::new();
    for _ in 0..3 {
        leases.push(billing.grant_lease(TTL).await.expect("grant"));
    }
    let take = Acquire {
        wait: false,
        ..Acquire::exclusive("billing/invoices", "task", leases[0])
    };
    assert!(billing.acquire(&take).await.expect("acquire").is_some());

    let args = [
        "lease",
        "revoke",
        "--identity",
        "billing",
        "--output",
        "json",
    ];
    let denied = run_as(&cluster, BILLING_TOKEN, &args).await;
    assert!(!denied.status.success(), "{}", describe(&denied));
    let err = stderr_of(&denied);
    assert!(err.contains("admin role"), "{err}");
    assert_eq!(billing.leases().await.expect("list").len(), 3);

    let out = run_as(&cluster, OPS_TOKEN, &args).await;
    assert!(out.status.success(), "{}", describe(&out));
    let done: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(done["whose"], "identity billing");
    assert_eq!(done["revoked"], 3);
    assert_eq!(done["released"], 1);
    assert!(billing.leases().await.expect("list").is_empty());

    let again = run_as(
        &cluster,
        OPS_TOKEN,
        &["lease", "revoke", "--identity", "billing"],
    )
    .await;
    assert!(again.status.success(), "{}", describe(&again));
    let table = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        table.trim(),
        "0 lease(s) of identity billing revoked; 0 hold(s) released"
    );
    cluster.shutdown().await;
}

/// Without authentication, `raftlock lease revoke --source 127.0.0.1`
/// revokes the leases granted from that address (here, by the CLI itself)
/// and `--source` of another address revokes none.
#[tokio::test]
async fn cli_lease_revoke_source_revokes_that_addresss_leases() {
    let cluster = TestCluster::new(1).await;
    let node_dir = node_dir(&cluster);
    for _ in 0..2 {
        json(&cluster, &["lease", "grant", "30s", "--output", "json"]).await;
    }
    let none = json(
        &cluster,
        &[
            "lease",
            "revoke",
            "--source",
            "127.0.0.9",
            "--data-dir",
            &node_dir,
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(none["revoked"], 0);
    let done = json(
        &cluster,
        &[
            "lease",
            "revoke",
            "--source",
            "127.0.0.1",
            "--data-dir",
            &node_dir,
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(done["whose"], "source 127.0.0.1");
    assert_eq!(done["revoked"], 2);
    let list = json(&cluster, &["lease", "list", "--output", "json"]).await;
    assert_eq!(list, Value::Array(Vec::new()));
    // An id and --identity together are refused before anything is sent.
    let both = run(&cluster, &["lease", "revoke", "7", "--identity", "x"]).await;
    assert!(!both.status.success(), "{}", describe(&both));
    cluster.shutdown().await;
}
