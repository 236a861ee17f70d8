//! Attacks on the peer port of a real cluster: a vote with a huge term, a
//! forged append that would release a held lock, a message for another
//! cluster, an oversized message, and a copy of a node's data dir started
//! as a second member. Each must be refused without a panic, without any
//! node's state diverging, and while the honest client keeps being served.

use raftlock_storage::command::ForceRelease;
use std::time::Duration;

use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::vote::RaftLeaderId;
use raftlock::Node;
use raftlock_client::{Acquire, Acquired, Client};
use raftlock_raft::pb::peer_client::PeerClient;
use raftlock_raft::pb::Blob;
use raftlock_raft::peer::auth::Direction;
use raftlock_raft::peer::checks::MAX_SNAPSHOT_BYTES;
use raftlock_raft::peer::payload::encode;
use raftlock_raft::peer::snapshot_transfer::SnapshotChunk;
use raftlock_storage::{Command, Proposal, Request, TypeConfig};
use raftlock_storage::{CommittedLeaderId, Entry, EntryPayload, LogId, Vote};
use tonic::Code;

use crate::cluster::{test_config, TestCluster};

pub(crate) const TTL: Duration = Duration::from_secs(30);

/// A blob as a forger who knows the cluster id (and, in a cluster with a
/// secret, the secret: a member gone rogue) would seal it for `rpc`:
/// claiming to be `from`, with an incarnation of its own.
pub(crate) fn forged(cluster: &TestCluster, rpc: &str, from: u64, to: u64, data: Vec<u8>) -> Blob {
    let cluster_id = cluster
        .node(to)
        .cluster_id()
        .map(|c| c.to_string())
        .unwrap_or_default();
    signed(
        cluster,
        rpc,
        Blob {
            data,
            cluster_id,
            from,
            to,
            boot: 1_000,
            incarnation: uuid::Uuid::new_v4().as_bytes().to_vec(),
            mac: Vec::new(),
            sent_at_ms: now_ms(),
        },
    )
}

/// `blob` tagged for `rpc` with the cluster's secret, if it has one.
pub fn signed(cluster: &TestCluster, rpc: &str, mut blob: Blob) -> Blob {
    if let Some(key) = cluster.key() {
        blob.mac = key.tag(rpc, Direction::Request, &blob, &[]);
    }
    blob
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_millis() as u64
}

pub(crate) async fn peer_client(
    cluster: &TestCluster,
    id: u64,
) -> PeerClient<tonic::transport::Channel> {
    let addr = cluster.addrs[&id].1;
    PeerClient::connect(format!("http://{addr}"))
        .await
        .expect("connect to the peer port")
        .max_decoding_message_size(64 << 20)
        .max_encoding_message_size(64 << 20)
}

/// A blob from a stranger who knows neither the cluster id nor its
/// secret: node 7, boot 1, untagged.
pub(crate) fn from_a_stranger(to: u64, data: Vec<u8>) -> Blob {
    Blob {
        data,
        cluster_id: String::new(),
        from: 7,
        to,
        boot: 1,
        incarnation: uuid::Uuid::new_v4().as_bytes().to_vec(),
        mac: Vec::new(),
        sent_at_ms: now_ms(),
    }
}

/// A new client of `cluster` holding `name` as `first` on a lease of its
/// own: the client, the lease and the grant.
pub(crate) async fn hold(cluster: &TestCluster, name: &str) -> (Client, u64, Acquired) {
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.expect("grant");
    let held = client
        .acquire(&Acquire::exclusive(name, "first", lease))
        .await
        .expect("acquire")
        .expect("granted");
    (client, lease, held)
}

/// An append from the leader of `term`, node `from`, of one entry after
/// `prev` that force-releases `res`, and commits it.
pub(crate) fn force_release_append(
    term: u64,
    from: u64,
    prev: LogId,
) -> AppendEntriesRequest<TypeConfig> {
    let release = Request {
        origin: None,
        caller: Default::default(),
        time_ms: 0,
        command: Command::ForceRelease(ForceRelease { name: "res".into() }),
    };
    let entry = LogId::new(CommittedLeaderId::new(term, from), prev.index + 1);
    AppendEntriesRequest::<TypeConfig> {
        vote: Vote::new_committed(term, from),
        prev_log_id: Some(prev),
        entries: vec![Entry {
            log_id: entry,
            payload: EntryPayload::Normal(Proposal::from(release)),
        }],
        leader_commit: Some(entry),
    }
}

pub(crate) fn term_of(cluster: &TestCluster, id: u64) -> u64 {
    cluster.node(id).status().term
}

/// Every running node still has a leader, and a new client is served.
pub(crate) async fn still_serves(cluster: &TestCluster, name: &str) {
    let client = cluster.client().await;
    let lease = client
        .grant_lease(TTL)
        .await
        .expect("grant after the attack");
    let grant = client
        .acquire(&Acquire {
            wait: false,
            ..Acquire::exclusive(name, "honest", lease)
        })
        .await
        .expect("acquire after the attack");
    assert!(grant.is_some(), "{name} should be free");
    client.release(name, "honest").await.expect("release");
}

#[tokio::test]
async fn a_vote_with_a_huge_term_is_refused_and_the_leader_stays() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let term = term_of(&cluster, leader);

    let rpc = VoteRequest::<TypeConfig>::new(Vote::new(u64::MAX, follower), None);
    let blob = forged(&cluster, "vote", follower, leader, encode(&rpc).unwrap());
    // Later messages come from the same forging process.
    let incarnation = blob.incarnation.clone();
    let as_forger = |rpc: &str, data: Vec<u8>| {
        let blob = Blob {
            incarnation: incarnation.clone(),
            ..forged(&cluster, rpc, follower, leader, data)
        };
        signed(&cluster, rpc, blob)
    };
    let refused = peer_client(&cluster, leader)
        .await
        .vote(blob)
        .await
        .expect_err("a term of u64::MAX must be refused");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("implausibly"), "{refused:?}");
    // The same as a PreVote.
    let blob = as_forger("pre_vote", encode(&rpc).unwrap());
    let refused = peer_client(&cluster, leader)
        .await
        .pre_vote(blob)
        .await
        .expect_err("a pre-vote with a term of u64::MAX must be refused");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("implausibly"), "{refused:?}");
    // A snapshot piece that would make the receiver hold 1 GiB or more.
    let piece = SnapshotChunk {
        vote: Vote::new_committed(term, follower),
        meta: Default::default(),
        offset: MAX_SNAPSHOT_BYTES,
        data: vec![0; 16],
        done: false,
    };
    let blob = as_forger("install_snapshot", encode(&piece).unwrap());
    let refused = peer_client(&cluster, leader)
        .await
        .install_snapshot(blob)
        .await
        .expect_err("a snapshot piece past the size limit must be refused");
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    assert!(refused.message().contains("limit"), "{refused:?}");

    // From a node that is not a member at all.
    let rpc = VoteRequest::<TypeConfig>::new(Vote::new(term + 1, 99), None);
    let blob = forged(&cluster, "vote", 99, leader, encode(&rpc).unwrap());
    let refused = peer_client(&cluster, leader)
        .await
        .vote(blob)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    for id in cluster.running() {
        assert!(
            term_of(&cluster, id) < term + 100,
            "node {id}'s term jumped"
        );
    }
    still_serves(&cluster, "after-vote").await;
    assert_eq!(
        cluster.wait_for_leader().await,
        leader,
        "the leader was deposed"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_forged_append_cannot_release_a_held_lock_on_a_follower() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let (_client, _lease, held) = hold(&cluster, "res").await;
    let status = cluster.node(follower).status();
    cluster.wait_applied(follower, status.last_log_index).await;
    let status = cluster.node(follower).status();

    // The leader's term and id, the follower's next index, a ForceRelease.
    let prev = LogId::new(
        CommittedLeaderId::new(status.term, leader),
        status.last_log_index,
    );
    let rpc = force_release_append(status.term, leader, prev);
    let blob = forged(
        &cluster,
        "append_entries",
        leader,
        follower,
        encode(&rpc).unwrap(),
    );
    let refused = peer_client(&cluster, follower)
        .await
        .append_entries(blob)
        .await
        .expect_err("a second process speaking as the leader must be refused");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("two processes"), "{refused:?}");

    // Fail over to the follower: the lock is still held by its holder.
    let mut cluster = cluster;
    cluster.kill(leader).await;
    let new_leader = cluster.wait_for_leader().await;
    assert_ne!(new_leader, leader);
    let client = cluster.client().await;
    let info = client.describe("res").await.unwrap().expect("still held");
    assert_eq!(info.holders.len(), 1);
    assert_eq!(info.holders[0].owner, "first");
    assert_eq!(info.holders[0].fence, held.fence);
    let other = client.grant_lease(TTL).await.unwrap();
    let second = client
        .acquire(&Acquire {
            wait: false,
            ..Acquire::exclusive("res", "second", other)
        })
        .await
        .unwrap();
    assert!(second.is_none(), "a second holder was granted");
    cluster.shutdown().await;
}

#[tokio::test]
async fn messages_for_another_cluster_or_node_are_refused() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let rpc =
        VoteRequest::<TypeConfig>::new(Vote::new(term_of(&cluster, leader) + 1, follower), None);
    let data = encode(&rpc).unwrap();

    let mut foreign = forged(&cluster, "vote", follower, leader, data.clone());
    foreign.cluster_id = uuid::Uuid::new_v4().to_string();
    let foreign = signed(&cluster, "vote", foreign);
    let refused = peer_client(&cluster, leader)
        .await
        .vote(foreign)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("cluster"), "{refused:?}");

    let misaddressed = Blob {
        to: leader + 10,
        ..forged(&cluster, "vote", follower, leader, data.clone())
    };
    let misaddressed = signed(&cluster, "vote", misaddressed);
    let refused = peer_client(&cluster, leader)
        .await
        .vote(misaddressed)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");

    let mut no_envelope = forged(&cluster, "vote", follower, leader, data);
    no_envelope.incarnation.clear();
    let no_envelope = signed(&cluster, "vote", no_envelope);
    let refused = peer_client(&cluster, leader)
        .await
        .vote(no_envelope)
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");

    still_serves(&cluster, "after-foreign").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn an_oversized_peer_message_is_refused_before_it_is_read() {
    let cluster = TestCluster::new(1).await;
    let blob = forged(&cluster, "append_entries", 1, 1, vec![b'x'; 32 << 20]);
    let refused = peer_client(&cluster, 1)
        .await
        .append_entries(blob)
        .await
        .unwrap_err();
    assert!(
        matches!(refused.code(), Code::OutOfRange | Code::ResourceExhausted),
        "{refused:?}"
    );
    still_serves(&cluster, "after-oversized").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn a_copy_of_a_nodes_data_dir_cannot_start_as_a_second_member() {
    let mut cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("res", "first", lease))
        .await
        .unwrap()
        .expect("granted");

    // Copy node 1's dir as of a clean stop, then bring node 1 back.
    let original = cluster.dir.path().join("node1");
    let copy = cluster.dir.path().join("node1-copy");
    let node = cluster.nodes.get_mut(&1).and_then(Option::take).unwrap();
    node.shutdown().await;
    copy_dir(&original, &copy);
    cluster.restart(1).await;
    cluster.wait_for_leader().await;

    let started = Node::builder()
        .config({
            let mut config = test_config();
            config.replication.id = 1;
            config.replication.data_dir = copy;
            config.replication.client_addr = "127.0.0.1:0".into();
            config.replication.peer_addr = "127.0.0.1:0".into();
            config
        })
        .start()
        .await;
    let Err(e) = started else {
        panic!("a second node 1 started on a copy of its data dir");
    };
    let message = e.to_string();
    assert!(message.contains("already running"), "{message}");
    assert!(
        message.contains(&cluster.addrs[&1].1.to_string()),
        "{message}"
    );

    let info = client.describe("res").await.unwrap().expect("still held");
    assert_eq!(info.holders[0].owner, "first");
    still_serves(&cluster, "after-copy").await;
    cluster.shutdown().await;
}

pub(crate) fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A Raft core that stops on its own (here: shut down behind the node's
/// back, as a storage failure or an openraft assertion would end it) makes
/// the node report the failure, which `raftlock serve` turns into a
/// non-zero exit, and stop serving clients; the other two keep the cluster
/// going. Without the watch on the core (`report_fatal`) the node stays up
/// as a zombie and `failed()` never resolves (this test then fails at its
/// 30 s bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_raft_core_stops_reports_it_and_stops_serving() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let victim = cluster.others(leader)[0];
    let node = cluster.node(victim);
    node.stop_raft_core().await;
    let reason = tokio::time::timeout(Duration::from_secs(30), node.failed())
        .await
        .expect("the node reports its stopped core");
    assert!(reason.contains("Raft core"), "{reason}");
    let options = raftlock_client::ClientOptions {
        retry_for: Duration::from_millis(300),
        ..cluster.client_options()
    };
    let endpoint = cluster.addrs[&victim].0.to_string();
    let client = raftlock_client::Client::connect_with([endpoint], options)
        .await
        .expect("client");
    // The listener closes just after the failure is reported: give it a
    // moment, but a zombie that keeps answering fails here.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = client.grant_lease(TTL).await;
        if matches!(answer, Err(raftlock_client::Error::Unavailable(_))) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the stopped node still answers: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let survivors = cluster.others(victim);
    let client = raftlock_client::Client::connect_with(
        survivors.iter().map(|id| cluster.addrs[id].0.to_string()),
        cluster.client_options(),
    )
    .await
    .expect("client");
    client
        .grant_lease(TTL)
        .await
        .expect("the others still serve");
}
