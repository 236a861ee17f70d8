//! The envelope checks, each shown refusing what it is meant to refuse.

use super::*;

const ALIVE: Duration = Duration::from_millis(200);

fn guard(id: NodeId) -> PeerGuard {
    PeerGuard::new(id, 1, None, ALIVE)
}

fn addr(port: u16) -> Option<SocketAddr> {
    Some(SocketAddr::from(([127, 0, 0, 1], port)))
}

#[tokio::test]
async fn seals_and_admits_between_members_of_one_cluster() {
    let a = guard(1);
    let b = guard(2);
    let cluster = a.create_cluster_id().await.unwrap();
    let blob = a.seal("vote", 2, b"x".to_vec());
    let sender = b.admit(&blob, addr(1), Some(true)).await.unwrap();
    assert_eq!(
        b.cluster_id(),
        Some(cluster),
        "learnt from the first message"
    );
    assert_eq!(sender.id, 1);
    let reply = b.seal_reply("vote", 1, Vec::new(), &blob);
    a.check_reply("vote", &reply, &blob, 2).unwrap();
    assert!(
        a.check_reply("vote", &reply, &blob, 3).is_err(),
        "reply from the wrong node"
    );
}

#[tokio::test]
async fn refuses_another_cluster_another_node_and_non_members() {
    let a = guard(1);
    let b = guard(2);
    a.create_cluster_id().await.unwrap();
    b.create_cluster_id().await.unwrap();
    let blob = a.seal("vote", 2, Vec::new());
    assert!(matches!(
        b.admit(&blob, addr(1), Some(true)).await,
        Err(Refusal::ForeignCluster { .. })
    ));
    let to_three = a.seal("vote", 3, Vec::new());
    assert!(matches!(
        b.admit(&to_three, addr(1), Some(true)).await,
        Err(Refusal::WrongNode { .. })
    ));
    let c = guard(3);
    let from_c = c.seal("vote", 2, Vec::new());
    let b_without_cluster = guard(2);
    assert!(matches!(
        b_without_cluster.admit(&from_c, addr(1), Some(false)).await,
        Err(Refusal::NotMember { from: 3 })
    ));
    let mut bad = blob.clone();
    bad.incarnation = vec![1, 2, 3];
    assert!(matches!(
        b.admit(&bad, addr(1), Some(true)).await,
        Err(Refusal::Malformed(_))
    ));
}

#[tokio::test]
async fn refuses_a_second_live_process_with_the_same_id() {
    let b = guard(2);
    let original = PeerGuard::new(1, 4, None, ALIVE);
    let copy = PeerGuard::new(1, 4, None, ALIVE);
    b.admit(&original.seal("vote", 2, Vec::new()), addr(1), Some(true))
        .await
        .unwrap();
    let refused = b
        .admit(&copy.seal("vote", 2, Vec::new()), addr(9), Some(true))
        .await;
    let Err(Refusal::Duplicate { active, other, .. }) = refused else {
        panic!("copy admitted: {refused:?}");
    };
    assert!(active.contains("127.0.0.1:1") && other.contains("127.0.0.1:9"));
    // The original keeps being served.
    b.admit(&original.seal("vote", 2, Vec::new()), addr(1), Some(true))
        .await
        .unwrap();
    // One boot count, two processes: a copy, however long the other
    // has been quiet.
    tokio::time::sleep(ALIVE * 2).await;
    let refused = b
        .admit(&copy.seal("vote", 2, Vec::new()), addr(9), Some(true))
        .await;
    assert!(matches!(refused, Err(Refusal::Duplicate { .. })));
}

#[tokio::test]
async fn accepts_a_restart_once_the_old_process_went_quiet() {
    let b = guard(2);
    let before = PeerGuard::new(1, 4, None, ALIVE);
    let after = PeerGuard::new(1, 5, None, ALIVE);
    b.admit(&before.seal("vote", 2, Vec::new()), addr(1), Some(true))
        .await
        .unwrap();
    tokio::time::sleep(ALIVE * 2).await;
    b.admit(&after.seal("vote", 2, Vec::new()), addr(1), Some(true))
        .await
        .unwrap();
    // The old process, or a copy of the dir as it was, may not return.
    tokio::time::sleep(ALIVE * 2).await;
    let refused = b
        .admit(&before.seal("vote", 2, Vec::new()), addr(1), Some(true))
        .await;
    assert!(matches!(
        refused,
        Err(Refusal::Rollback {
            boot: 4,
            seen: 5,
            ..
        })
    ));
}

#[tokio::test]
async fn refuses_a_message_claiming_to_come_from_this_node() {
    let b = guard(2);
    let impostor = guard(2);
    let blob = impostor.seal("vote", 2, Vec::new());
    assert!(matches!(
        b.admit(&blob, addr(1), Some(true)).await,
        Err(Refusal::Duplicate { .. })
    ));
}

fn keyed(id: u64, key: &ClusterKey) -> PeerGuard {
    PeerGuard::with_key(id, 1, None, Duration::from_secs(1), Some(key.clone()))
}

/// Without the secret's tag, a message is refused before anything of it
/// is read or kept: a forger who knows the cluster id, the member ids and
/// the boot counts (what a peer port told anyone before) gets nowhere.
#[tokio::test]
async fn a_message_without_the_clusters_tag_is_refused() {
    let key = ClusterKey::generate();
    let (a, b) = (keyed(1, &key), keyed(2, &key));
    let good = a.seal("vote", 2, b"x".to_vec());
    b.authenticate("vote", &good).unwrap();
    assert!(
        b.authenticate("append_entries", &good).is_err(),
        "another rpc"
    );
    let forger = keyed(1, &ClusterKey::generate());
    let wrong_key = forger.seal("vote", 2, b"x".to_vec());
    assert!(matches!(
        b.authenticate("vote", &wrong_key),
        Err(Refusal::Unauthenticated(_))
    ));
    let untagged = guard(1).seal("vote", 2, b"x".to_vec());
    let refused = b.authenticate("vote", &untagged).unwrap_err();
    assert!(refused.to_string().contains("--insecure"), "{refused}");
    let mut stale = good.clone();
    stale.sent_at_ms -= 10 * 60 * 1000;
    let stale = Blob {
        mac: key.tag("vote", Direction::Request, &stale, &[]),
        ..stale
    };
    let refused = b.authenticate("vote", &stale).unwrap_err();
    assert!(refused.to_string().contains("replayed"), "{refused}");
    // A reply is bound to its request.
    let reply = b.seal_reply("vote", 1, Vec::new(), &good);
    a.check_reply("vote", &reply, &good, 2).unwrap();
    let other = a.seal("vote", 2, b"y".to_vec());
    assert!(a.check_reply("vote", &reply, &other, 2).is_err());
}
