//! Peer authentication by the cluster secret, attacked: a forged message
//! without the secret's tag, an `Identify` from a stranger, and a cluster
//! of several nodes started without any peer authentication.

use openraft::vote::RaftLeaderId;
use raftlock::Node;
use raftlock_raft::pb::Blob;
use raftlock_raft::peer::auth::Direction;
use raftlock_raft::peer::payload::encode;
use raftlock_storage::{CommittedLeaderId, LogId};
use tonic::Code;

use crate::cluster::{test_config, TestCluster};
use crate::peer_attacks::{
    force_release_append, from_a_stranger, hold, now_ms, peer_client, signed, still_serves, term_of,
};

/// The attack that erased every lock on a plain-text cluster: a message
/// claiming to come from the *other* follower, as a new leader (term + 1,
/// a boot count above any seen), carrying a `ForceRelease` and committing
/// it. Without the cluster's secret its tag is missing or wrong, and it is
/// refused before any of it is read. Without the tag check (`authenticate`
/// returning `Ok` at once) the follower takes this append and answers it
/// (the `expect_err` fails).
#[tokio::test]
async fn a_forged_append_without_the_secret_is_refused_and_changes_nothing() {
    let cluster = TestCluster::new(3).await;
    assert!(cluster.key().is_some(), "the default cluster has a secret");
    let leader = cluster.wait_for_leader().await;
    let (target, posing_as) = (cluster.others(leader)[0], cluster.others(leader)[1]);
    let (client, lease, held) = hold(&cluster, "res").await;
    let status = cluster.node(leader).status();
    cluster.wait_applied(target, status.last_log_index).await;
    let status = cluster.node(target).status();

    let term = status.term + 1;
    let prev = LogId::new(
        CommittedLeaderId::new(status.term, leader),
        status.last_log_index,
    );
    let rpc = force_release_append(term, posing_as, prev);
    let data = encode(&rpc).unwrap();
    let cluster_id = cluster.node(target).cluster_id().unwrap().to_string();
    let unsigned = Blob {
        data: data.clone(),
        cluster_id,
        from: posing_as,
        to: target,
        boot: 1_000,
        incarnation: uuid::Uuid::new_v4().as_bytes().to_vec(),
        mac: Vec::new(),
        sent_at_ms: now_ms(),
    };
    let other_key = raftlock::ClusterKey::generate();
    let wrong_key = Blob {
        mac: other_key.tag("append_entries", Direction::Request, &unsigned, &[]),
        ..unsigned.clone()
    };
    for (what, blob) in [
        ("untagged", unsigned),
        ("tagged with another key", wrong_key),
    ] {
        let refused = peer_client(&cluster, target)
            .await
            .append_entries(blob)
            .await
            .expect_err(what);
        assert_eq!(refused.code(), Code::Unauthenticated, "{what}: {refused:?}");
    }
    assert_eq!(term_of(&cluster, target), status.term, "the term moved");
    let info = client.describe("res").await.unwrap().expect("still held");
    assert_eq!(info.holders[0].fence, held.fence);
    client
        .keep_alive(lease)
        .await
        .expect("the holder's lease lives");
    still_serves(&cluster, "after-forged-append").await;
    cluster.shutdown().await;
}

/// `Identify` answered anyone with the cluster id and each node's boot
/// count, which is what a forger needed. Without the secret's tag the
/// caller now learns nothing but that it is not authenticated.
#[tokio::test]
async fn identify_tells_a_caller_without_the_secret_nothing() {
    let cluster = TestCluster::new(1).await;
    let cluster_id = cluster.node(1).cluster_id().unwrap().to_string();
    let ask = from_a_stranger(0, Vec::new());
    let refused = peer_client(&cluster, 1)
        .await
        .identify(ask.clone())
        .await
        .expect_err("an untagged identify");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    assert!(!refused.message().contains(&cluster_id), "{refused:?}");
    // With the secret, a member learns who answers.
    let answer = peer_client(&cluster, 1)
        .await
        .identify(signed(&cluster, "identify", ask))
        .await
        .expect("a tagged identify")
        .into_inner();
    assert_eq!((answer.from, answer.cluster_id), (1, cluster_id));
    cluster.shutdown().await;
}

/// A cluster of several nodes without TLS does not start without a join
/// token, unless told `insecure`; then it says so.
#[tokio::test]
async fn a_multi_node_cluster_without_peer_authentication_does_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let members: Vec<raftlock::InitialMember> =
        ["1=127.0.0.1:1/127.0.0.1:2", "2=127.0.0.1:3/127.0.0.1:4"]
            .iter()
            .map(|m| m.parse().unwrap())
            .collect();
    let mut config = test_config();
    config.replication.data_dir = dir.path().join("n1");
    config.replication.client_addr = "127.0.0.1:2".into();
    config.replication.peer_addr = "127.0.0.1:1".into();
    config.replication.initial_cluster = members;
    let err = Node::builder()
        .config(config.clone())
        .start()
        .await
        .err()
        .expect("refused");
    let err = err.to_string();
    assert!(err.contains("authenticates its peers"), "{err}");
    assert!(err.contains("--insecure"), "{err}");
    assert!(
        !dir.path().join("n1").exists(),
        "the refused node wrote its dir"
    );
    let err = Node::builder()
        .config({
            let mut config = config;
            config.replication.join_token = Some("rlj1-nothex".into());
            config
        })
        .start()
        .await
        .err()
        .expect("a malformed token is refused");
    assert!(err.to_string().contains("64 hex digits"), "{err}");
}
