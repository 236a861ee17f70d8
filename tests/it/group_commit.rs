//! Group commit on the leader (raft/src/proposer.rs): a write that finds
//! the pipeline free is proposed at once as an entry of its own; writes
//! that arrive while entries are in flight share the next entry.

use std::time::Duration;

use crate::cluster::TestCluster;

const TTL: Duration = Duration::from_secs(30);

/// The leader's count of proposed writes and of the entries carrying them.
fn proposed(cluster: &TestCluster, leader: u64) -> (u64, u64) {
    let text = cluster.node(leader).metrics_text();
    let value = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no {name} in\n{text}")) as u64
    };
    (
        value("raftlock_raft_proposals_total"),
        value("raftlock_raft_proposed_entries_total"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_write_is_an_entry_and_concurrent_writes_share_entries() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let client = cluster.client_of(leader).await;
    client.grant_lease(TTL).await.unwrap();

    // One at a time: each write is an entry of its own.
    let (writes, entries) = proposed(&cluster, leader);
    for _ in 0..20 {
        client.grant_lease(TTL).await.unwrap();
    }
    let (writes_after, entries_after) = proposed(&cluster, leader);
    assert_eq!(writes_after - writes, 20);
    assert_eq!(
        entries_after - entries,
        20,
        "sequential writes were held back"
    );

    // 400 at once, over 4 connections: at most two entries are in flight,
    // so the rest queue and travel together.
    let mut calls = Vec::new();
    for _ in 0..4 {
        let client = cluster.client_of(leader).await;
        for _ in 0..100 {
            let client = client.clone();
            calls.push(tokio::spawn(async move { client.grant_lease(TTL).await }));
        }
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let (writes_end, entries_end) = proposed(&cluster, leader);
    let (writes, entries) = (writes_end - writes_after, entries_end - entries_after);
    // More than 400 when a starved machine made clients retry (a retry is
    // proposed again and applied once).
    assert!(writes >= 400, "{writes} writes proposed for 400 calls");
    assert!(
        entries * 2 <= writes,
        "400 concurrent writes took {entries} entries: not batched"
    );
    cluster.shutdown().await;
}
