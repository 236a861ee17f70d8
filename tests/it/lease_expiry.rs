//! Lease expiry at the edge: what a keep-alive is told while the entry that
//! expires its lease is proposed but not yet committed.

use std::time::Duration;

use raftlock_client::Error;

use crate::cluster::{test_config, TestCluster};

/// Regression (chaos run, seed 20261123): the leader answered "lease not
/// found" to a keep-alive while its Expire entry was still in flight; that
/// entry then failed to commit, the lease lived on, and the client had been
/// told a lie. A keep-alive must be answered only once the outcome is known.
#[tokio::test]
async fn keep_alive_during_uncommitted_expiry_is_not_told_the_lease_is_gone() {
    let mut base = test_config();
    base.replication.leader_wait = Duration::from_millis(1500);
    let mut cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let followers = cluster.others(leader);
    // One endpoint, a short retry budget: the answer comes from this leader.
    let at_leader = raftlock_client::Client::builder([cluster.addrs[&leader].0.to_string()])
        .retry_for(Duration::from_secs(2))
        .connect()
        .await
        .unwrap();
    let lease = at_leader
        .grant_lease(Duration::from_millis(500))
        .await
        .unwrap();

    // The leader keeps proving it leads (heartbeats pass) but can commit
    // nothing: its Expire entry for `lease` stays in flight.
    for f in &followers {
        cluster.filter.hold_entries(leader, *f);
    }
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(
        cluster.node(leader).status().role == "leader",
        "the leader must still lead for this test to mean anything"
    );
    // The leader cannot know yet whether the lease lives. It answers once
    // the outcome is known, and until then only "retry": either a
    // retryable error, or (if it waited until it lost leadership and the
    // expiry with it, since the first read of a term waits for the log the
    // leader had then) a renewal by the next leader. Never "gone".
    match at_leader.keep_alive(lease).await {
        Err(Error::Unavailable(_)) | Ok(_) => {}
        other => panic!("a keep-alive during an uncommitted expiry was told {other:?}"),
    }

    // The expiry never commits: the leader is cut off, a follower takes
    // over and restarts the lease's deadline. The lease is alive, so the
    // "not found" the old code answered above would have been false.
    cluster.filter.heal();
    cluster.isolate(leader);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let new_leader = loop {
        assert!(tokio::time::Instant::now() < deadline, "no new leader");
        let l = cluster.node(followers[0]).status().leader;
        if let Some(l) = l.filter(|l| *l != leader) {
            if cluster.node(l).status().role == "leader" {
                break l;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let at_new = cluster.client_of(new_leader).await;
    let ttl = at_new.keep_alive(lease).await.unwrap();
    assert_eq!(ttl, Duration::from_millis(500));

    cluster.filter.heal();
    cluster.kill(leader).await;
    cluster.shutdown().await;
}

/// The leader lease lets a leader renew without a quorum round only while a
/// recent round vouches for it (one election timeout): once cut off for
/// longer, it renews nothing, while the majority side elects a new leader.
#[tokio::test]
async fn a_cut_off_leader_stops_renewing_once_its_lease_runs_out() {
    let mut base = test_config();
    base.replication.leader_wait = Duration::from_millis(500);
    let cluster = TestCluster::with_config(3, base.clone()).await;
    let leader = cluster.wait_for_leader().await;
    let at_leader = raftlock_client::Client::builder([cluster.addrs[&leader].0.to_string()])
        .retry_for(Duration::from_secs(1))
        .connect()
        .await
        .unwrap();
    let lease = at_leader.grant_lease(Duration::from_secs(5)).await.unwrap();
    // Renewals succeed while the leader is connected (and take its lease);
    // on a starved machine one quorum round may miss the 500 ms.
    let mut renewed = at_leader.keep_alive(lease).await;
    for _ in 0..5 {
        if renewed.is_ok() {
            break;
        }
        renewed = at_leader.keep_alive(lease).await;
    }
    renewed.expect("a connected leader renews");

    cluster.isolate(leader);
    tokio::time::sleep(base.replication.election_timeout + Duration::from_millis(100)).await;
    assert_eq!(cluster.node(leader).status().role, "leader");
    match at_leader.keep_alive(lease).await {
        Err(Error::Unavailable(_)) => {}
        other => panic!("a cut-off leader past its lease renewed: {other:?}"),
    }
    cluster.filter.heal();
    cluster.shutdown().await;
}
