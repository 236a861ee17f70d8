//! A node restarted on an older copy of its own data dir is refused before
//! its Raft starts (raft/src/rollback.rs): the other members tell it what
//! they saw of it, and its dir must not be older. Each test starts the node
//! on the copy with the check removed from `refuse_if_rolled_back` to see
//! it fail: the node then starts and catches up without a word.

use std::path::{Path, PathBuf};
use std::time::Duration;

use raftlock_raft::peer::payload::{decode, encode};
use raftlock_raft::peer::witness::Seen;
use raftlock_storage::Identity;
use tonic::Code;

use crate::cluster::TestCluster;
use crate::peer_attacks::{
    copy_dir, from_a_stranger, hold, peer_client, signed, still_serves, TTL,
};

/// A 3-node cluster holding one lock, and a follower of it.
async fn cluster_and_follower() -> (TestCluster, u64) {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    hold(&cluster, "held").await;
    (cluster, follower)
}

/// Writes `n` entries and waits until `id` applied them (it acknowledged
/// them to the leader before it could apply them).
async fn write_and_wait(cluster: &TestCluster, id: u64, n: usize) {
    let client = cluster.client().await;
    for _ in 0..n {
        client.grant_lease(TTL).await.expect("grant");
    }
    let leader = cluster.wait_for_leader().await;
    let index = cluster.node(leader).status().last_log_index;
    cluster.wait_applied(id, index).await;
    // The leader hears the acknowledgement before it commits what `id`
    // applies; leave its metrics a moment to record it.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// The dirs of one rollback: `follower`'s live data dir, a copy of it
/// (`live` with the extension `copy`) taken while the node was stopped,
/// and where the newer dir is moved aside to. The node has run on from
/// the live dir since (20 entries) and is stopped.
async fn copy_then_run_on(
    cluster: &mut TestCluster,
    follower: u64,
    copy: &str,
) -> (PathBuf, PathBuf, PathBuf) {
    let live = cluster.config(follower).replication.data_dir;
    let copy = live.with_extension(copy);
    let newer = live.with_extension("newer");

    cluster.kill(follower).await;
    copy_dir(&live, &copy);
    cluster.restart(follower).await;
    write_and_wait(cluster, follower, 20).await;
    cluster.kill(follower).await;
    (live, copy, newer)
}

/// Starts `follower` on `copy` in place of its live dir (moved aside to
/// `newer`); the refusal, which must say the dir is older than what the
/// cluster saw.
async fn start_on_copy(
    cluster: &mut TestCluster,
    follower: u64,
    (live, copy, newer): (&Path, &Path, &Path),
    what: &str,
) -> String {
    std::fs::rename(live, newer).expect("move the newer dir aside");
    copy_dir(copy, live);
    let refused = cluster.try_restart(follower).await;
    let Err(message) = refused else {
        panic!("node {follower} started on {what}");
    };
    assert!(
        message.contains("is older than what the cluster saw"),
        "{message}"
    );
    message
}

/// Puts the newer dir back in place of the refused one and starts
/// `follower` on it.
async fn restart_on_newer(cluster: &mut TestCluster, follower: u64, live: &Path, newer: &Path) {
    std::fs::remove_dir_all(live).unwrap();
    std::fs::rename(newer, live).unwrap();
    cluster
        .try_restart(follower)
        .await
        .expect("the newest dir starts");
}

/// Put back a dir taken while the node was stopped, after the node ran on
/// from it (a restored backup): its boot count is one the members saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_on_an_older_copy_of_its_dir_is_refused() {
    let (mut cluster, follower) = cluster_and_follower().await;
    let (live, copy, newer) = copy_then_run_on(&mut cluster, follower, "backup").await;

    let dirs = (live.as_path(), copy.as_path(), newer.as_path());
    let what = "an older copy of its data dir";
    let message = start_on_copy(&mut cluster, follower, dirs, what).await;
    assert!(message.contains("start number"), "{message}");
    assert!(
        message.contains(&format!("raftlock cluster remove {follower}")),
        "{message}"
    );

    // The refused start changed nothing: the newer dir put back starts.
    restart_on_newer(&mut cluster, follower, &live, &newer).await;
    write_and_wait(&cluster, follower, 1).await;
    still_serves(&cluster, "after-rollback").await;
    cluster.shutdown().await;
}

/// A dir rolled back to a snapshot of its running node (a VM or disk
/// snapshot): its boot count is not behind, but its log lacks entries the
/// node acknowledged to the leader since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dir_rolled_back_to_a_snapshot_of_its_running_node_is_refused() {
    let (mut cluster, follower) = cluster_and_follower().await;
    let (live, copy, newer) = copy_then_run_on(&mut cluster, follower, "snapshot").await;

    // A snapshot of the running process: its start is on record.
    let mut identity = Identity::read(&copy).unwrap().expect("identity file");
    identity.boots += 1;
    identity.write(&copy).unwrap();

    let dirs = (live.as_path(), copy.as_path(), newer.as_path());
    let message = start_on_copy(&mut cluster, follower, dirs, "a rolled-back data dir").await;
    assert!(message.contains("acknowledged"), "{message}");

    restart_on_newer(&mut cluster, follower, &live, &newer).await;
    still_serves(&cluster, "after-rollback").await;
    cluster.shutdown().await;
}

/// The members' record of a node is their memory: after the whole cluster
/// restarts there is nobody to ask, and a node's own restart on its own
/// dir (the everyday case) is never refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_on_its_own_dir_starts() {
    let (mut cluster, follower) = cluster_and_follower().await;
    for round in 0..3 {
        cluster.kill(follower).await;
        cluster
            .try_restart(follower)
            .await
            .unwrap_or_else(|e| panic!("restart {round} refused: {e}"));
        write_and_wait(&cluster, follower, 3).await;
    }
    still_serves(&cluster, "after-restarts").await;
    cluster.shutdown().await;
}

/// `Recall` is a peer call like the others: without the cluster secret's
/// tag the caller learns nothing, not even the boot counts a node saw.
#[tokio::test]
async fn recall_tells_a_caller_without_the_secret_nothing() {
    let cluster = TestCluster::new(1).await;
    let ask = from_a_stranger(1, encode(&()).unwrap());
    let refused = peer_client(&cluster, 1)
        .await
        .recall(ask.clone())
        .await
        .expect_err("an untagged recall");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    let answer = peer_client(&cluster, 1)
        .await
        .recall(signed(&cluster, "recall", ask))
        .await
        .expect("a tagged recall")
        .into_inner();
    let seen: Seen = decode(&answer.data).expect("a record");
    assert_eq!(seen, Seen::default(), "node 1 never saw node 7");
    cluster.shutdown().await;
}
