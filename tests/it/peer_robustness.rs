//! Peer messages that must neither stop, wedge nor roll back a node, even
//! when they pass the envelope (plain-text peers: a forger claims a member
//! that has not spoken to the target lately): a garbage snapshot, a
//! snapshot whose meta claims more than its data holds, and votes refused
//! for their contents that once left a forged boot count on record.

use std::time::Duration;

use openraft::raft::VoteRequest;
use openraft::vote::RaftLeaderId;
use raftlock_raft::pb::Blob;
use raftlock_raft::peer::payload::encode;
use raftlock_raft::peer::snapshot_transfer::SnapshotChunk;
use raftlock_storage::{encode_snapshot, CommittedLeaderId, LogId, SnapshotMeta, TypeConfig, Vote};
use tonic::Code;

use crate::cluster::TestCluster;
use crate::peer_attacks::{forged, now_ms, peer_client, signed, still_serves, term_of, TTL};

/// How long after its last request a member's process counts as alive
/// (four election timeouts of the test config), and a bit more: after this,
/// a message with a new incarnation passes as the member's restart.
const QUIET: Duration = Duration::from_millis(1_500);

/// What a follower holds, to compare before and after an attack.
fn snapshot_of(cluster: &TestCluster, id: u64) -> (u64, u64, usize, bool) {
    let node = cluster.node(id);
    let status = node.status();
    let (leases, held) = node.read_state(|s| (s.leases().count(), s.locks().count() == 1));
    (status.term, status.applied_index, leases, held)
}

/// A 3-node cluster holding one lock, its leader, the follower attacked,
/// and the other follower the forger claims to be.
async fn cluster_with_a_lock() -> (TestCluster, u64, u64, u64) {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let others = cluster.others(leader);
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.expect("grant");
    client
        .acquire(&raftlock_client::Acquire::exclusive("held", "first", lease))
        .await
        .expect("acquire")
        .expect("granted");
    let index = cluster.node(leader).status().last_log_index;
    for id in cluster.running() {
        cluster.wait_applied(id, index).await;
    }
    tokio::time::sleep(QUIET).await;
    (cluster, leader, others[0], others[1])
}

/// One piece that is the whole snapshot, sent as `from` with a vote one
/// term ahead (which openraft accepts, so it goes on to install).
async fn send_snapshot(
    cluster: &TestCluster,
    from: u64,
    to: u64,
    meta: SnapshotMeta,
    data: Vec<u8>,
) -> tonic::Status {
    let piece = SnapshotChunk {
        vote: Vote::new_committed(term_of(cluster, to) + 1, from),
        meta,
        offset: 0,
        data,
        done: true,
    };
    let blob = forged(
        cluster,
        "install_snapshot",
        from,
        to,
        encode(&piece).expect("encode"),
    );
    peer_client(cluster, to)
        .await
        .install_snapshot(blob)
        .await
        .expect_err("a bad snapshot must be refused")
}

/// The attacked follower did not stop and still serves: it forwards a
/// write, and its state and term are as before.
async fn keeps_serving(cluster: &TestCluster, id: u64, before: (u64, u64, usize, bool)) {
    let stopped = tokio::time::timeout(Duration::from_millis(500), cluster.node(id).failed());
    if let Ok(reason) = stopped.await {
        panic!("node {id} stopped: {reason}");
    }
    let (term, applied, leases, held) = snapshot_of(cluster, id);
    assert_eq!(term, before.0, "node {id}'s term moved");
    assert!(applied >= before.1, "node {id} rolled back");
    assert_eq!(
        (leases, held),
        (before.2, before.3),
        "node {id}'s state changed"
    );
    let client = cluster.client_of(id).await;
    tokio::time::timeout(Duration::from_secs(10), client.grant_lease(TTL))
        .await
        .expect("node {id} answers in time")
        .expect("node {id} serves a write");
}

/// Garbage in an InstallSnapshot (bytes that are no snapshot format, a
/// real snapshot cut short, one built in another cluster) is refused to
/// the sender and the follower keeps serving, unchanged. Without the check
/// before the hand-off to openraft the state machine's install fails on
/// the first one, the Raft core stops ("corrupt store: snapshot: neither
/// postcard nor JSON") and the node with it: this test then fails in
/// `keeps_serving` ("node N stopped").
#[tokio::test]
async fn a_garbage_snapshot_is_refused_and_the_follower_keeps_serving() {
    let (cluster, leader, target, claimed) = cluster_with_a_lock().await;
    let before = snapshot_of(&cluster, target);
    let status = cluster.node(target).status();
    let meta = SnapshotMeta {
        last_log_id: Some(LogId::new(
            CommittedLeaderId::new(status.term, leader),
            status.last_log_index + 10,
        )),
        last_membership: Default::default(),
    };
    let state = cluster.node(target).read_state(|s| s.to_parts());
    let ours = cluster.node(target).cluster_id();
    let real = encode_snapshot(&meta, &state, ours).expect("encode");
    let theirs = encode_snapshot(&meta, &state, Some(uuid::Uuid::new_v4())).expect("encode");
    let garbage: [(&str, Vec<u8>); 3] = [
        ("garbage", b"not a snapshot at all".to_vec()),
        ("cut short", real[..real.len() / 2].to_vec()),
        ("another cluster's", theirs),
    ];
    for (what, data) in garbage {
        let refused = send_snapshot(&cluster, claimed, target, meta.clone(), data).await;
        assert_eq!(refused.code(), Code::InvalidArgument, "{what}: {refused:?}");
        assert!(
            refused.message().contains("snapshot"),
            "{what}: {refused:?}"
        );
    }
    keeps_serving(&cluster, target, before).await;
    assert_eq!(cluster.wait_for_leader().await, leader);
    still_serves(&cluster, "after-garbage-snapshot").await;
    cluster.shutdown().await;
}

/// A well-formed snapshot of this cluster whose meta claims a position
/// 1000 entries past the state its data holds is refused. Without the
/// check before the hand-off openraft accepts the meta, the state machine
/// refuses the data ("snapshot holds the state at ... but its meta says
/// ...") and the node stops: the test then fails in `keeps_serving`.
#[tokio::test]
async fn a_snapshot_claiming_more_than_its_data_holds_is_refused() {
    let (cluster, leader, target, claimed) = cluster_with_a_lock().await;
    let before = snapshot_of(&cluster, target);
    let status = cluster.node(target).status();
    let at = |index| {
        Some(LogId::new(
            CommittedLeaderId::new(status.term, leader),
            index,
        ))
    };
    let holds = SnapshotMeta {
        last_log_id: at(status.applied_index),
        last_membership: Default::default(),
    };
    let claims = SnapshotMeta {
        last_log_id: at(status.applied_index + 1_000),
        ..holds.clone()
    };
    let state = cluster.node(target).read_state(|s| s.to_parts());
    let data = encode_snapshot(&holds, &state, cluster.node(target).cluster_id()).unwrap();
    let refused = send_snapshot(&cluster, claimed, target, claims, data).await;
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("meta says"), "{refused:?}");
    keeps_serving(&cluster, target, before).await;
    still_serves(&cluster, "after-overclaiming-snapshot").await;
    cluster.shutdown().await;
}

/// The boot count `id` reports.
async fn boot_of(cluster: &TestCluster, id: u64) -> u64 {
    let probe = Blob {
        incarnation: uuid::Uuid::nil().as_bytes().to_vec(),
        sent_at_ms: now_ms(),
        ..Blob::default()
    };
    let probe = signed(cluster, "identify", probe);
    let reply = peer_client(cluster, id).await.identify(probe).await;
    reply.expect("identify").into_inner().boot
}

/// Votes refused for their contents (a term of `u64::MAX`), claiming each
/// follower towards the leader and the other follower, with a boot count of
/// `u64::MAX` and with the next real one, record nothing: the followers
/// still forward writes, and once the leader is killed they elect one of
/// themselves. Without recording after the content checks (and the bound on
/// boot counts) each vote left its forged boot on record: the leader then
/// refused the real follower's forwards and the followers each other's
/// votes ("came back with an older data dir"); this test then fails at the
/// forwarded write, or with "no agreed leader within 15 s".
#[tokio::test]
async fn refused_votes_record_no_boot_and_the_cluster_still_fails_over() {
    let (mut cluster, leader, a, b) = cluster_with_a_lock().await;
    for (claimed, to) in [(a, leader), (a, b), (b, a), (b, leader)] {
        let next = boot_of(&cluster, claimed).await + 1;
        for boot in [u64::MAX, next] {
            let rpc = VoteRequest::<TypeConfig>::new(Vote::new(u64::MAX, claimed), None);
            let blob = Blob {
                boot,
                ..forged(&cluster, "vote", claimed, to, encode(&rpc).unwrap())
            };
            let blob = signed(&cluster, "vote", blob);
            let refused = peer_client(&cluster, to)
                .await
                .vote(blob)
                .await
                .expect_err("the vote must be refused");
            assert!(
                matches!(
                    refused.code(),
                    Code::InvalidArgument | Code::PermissionDenied
                ),
                "{refused:?}"
            );
        }
    }
    for id in [a, b] {
        let client = cluster.client_of(id).await;
        tokio::time::timeout(Duration::from_secs(10), client.grant_lease(TTL))
            .await
            .unwrap_or_else(|_| panic!("node {id} forwards in time"))
            .unwrap_or_else(|e| panic!("node {id} forwards a write: {e}"));
    }
    cluster.kill(leader).await;
    let new_leader = cluster.wait_for_leader().await;
    assert!([a, b].contains(&new_leader));
    still_serves(&cluster, "after-refused-votes").await;
    cluster.shutdown().await;
}
