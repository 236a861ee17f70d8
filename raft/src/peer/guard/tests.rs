//! The envelope checks, each shown refusing what it is meant to refuse.

use std::net::SocketAddr;

use super::*;
use crate::pb::Blob;
use crate::peer::auth::Direction;

const ALIVE: Duration = Duration::from_millis(200);

fn guard(id: NodeId) -> PeerGuard {
    PeerGuard::new(id, 1, None, ALIVE)
}

fn addr(port: u16) -> Option<SocketAddr> {
    Some(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// Delivers `blob` as the peer service does a message whose contents pass
/// their checks: admitted, then recorded.
async fn deliver(to: &PeerGuard, blob: &Blob, from: Option<SocketAddr>) -> Result<Sender, Refusal> {
    to.admit(blob, from, Some(true)).await?;
    to.record(blob, from).await
}

#[tokio::test]
async fn seals_and_admits_between_members_of_one_cluster() {
    let a = guard(1);
    let b = guard(2);
    let cluster = a.create_cluster_id().await.unwrap();
    let blob = a.seal("vote", 2, b"x".to_vec());
    let sender = deliver(&b, &blob, addr(1)).await.unwrap();
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
        deliver(&b, &blob, addr(1)).await,
        Err(Refusal::ForeignCluster { .. })
    ));
    let to_three = a.seal("vote", 3, Vec::new());
    assert!(matches!(
        deliver(&b, &to_three, addr(1)).await,
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
        deliver(&b, &bad, addr(1)).await,
        Err(Refusal::Malformed(_))
    ));
}

#[tokio::test]
async fn refuses_a_second_live_process_with_the_same_id() {
    let b = guard(2);
    let original = PeerGuard::new(1, 4, None, ALIVE);
    let copy = PeerGuard::new(1, 4, None, ALIVE);
    deliver(&b, &original.seal("vote", 2, Vec::new()), addr(1))
        .await
        .unwrap();
    let refused = deliver(&b, &copy.seal("vote", 2, Vec::new()), addr(9)).await;
    let Err(Refusal::Duplicate { active, other, .. }) = refused else {
        panic!("copy admitted: {refused:?}");
    };
    let (active, other) = (active.to_string(), other.to_string());
    assert!(active.contains("127.0.0.1:1") && other.contains("127.0.0.1:9"));
    // The original keeps being served.
    deliver(&b, &original.seal("vote", 2, Vec::new()), addr(1))
        .await
        .unwrap();
    // One boot count, two processes: a copy, however long the other
    // has been quiet.
    tokio::time::sleep(ALIVE * 2).await;
    let refused = deliver(&b, &copy.seal("vote", 2, Vec::new()), addr(9)).await;
    assert!(matches!(refused, Err(Refusal::Duplicate { .. })));
}

#[tokio::test]
async fn accepts_a_restart_once_the_old_process_went_quiet() {
    let b = guard(2);
    let before = PeerGuard::new(1, 4, None, ALIVE);
    let after = PeerGuard::new(1, 5, None, ALIVE);
    deliver(&b, &before.seal("vote", 2, Vec::new()), addr(1))
        .await
        .unwrap();
    tokio::time::sleep(ALIVE * 2).await;
    deliver(&b, &after.seal("vote", 2, Vec::new()), addr(1))
        .await
        .unwrap();
    // The old process, or a copy of the dir as it was, may not return.
    tokio::time::sleep(ALIVE * 2).await;
    let refused = deliver(&b, &before.seal("vote", 2, Vec::new()), addr(1)).await;
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
        deliver(&b, &blob, addr(1)).await,
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

/// A message admitted but then refused for its contents (the peer service
/// never calls `record` for it) leaves no trace: without the split between
/// `admit` and `record`, its boot count was kept and the real process was
/// refused as "an older data dir" from then on.
#[tokio::test]
async fn a_message_refused_after_admission_records_nothing() {
    let b = guard(2);
    let real = PeerGuard::new(1, 4, None, ALIVE);
    let cluster = real.create_cluster_id().await.unwrap();
    deliver(&b, &real.seal("vote", 2, Vec::new()), addr(1))
        .await
        .unwrap();
    tokio::time::sleep(ALIVE * 2).await;
    let forged = PeerGuard::new(1, 5, None, ALIVE);
    let mut blob = forged.seal("vote", 2, Vec::new());
    blob.cluster_id = cluster.to_string();
    b.admit(&blob, addr(9), Some(true)).await.unwrap();
    deliver(&b, &real.seal("vote", 2, Vec::new()), addr(1))
        .await
        .expect("the real process is still the one on record");

    // Nor is a cluster id learnt from a message that goes no further.
    let fresh = guard(3);
    let to_fresh = real.seal("vote", 3, Vec::new());
    fresh.admit(&to_fresh, addr(1), None).await.unwrap();
    assert_eq!(fresh.cluster_id(), None);
    fresh.record(&to_fresh, addr(1)).await.unwrap();
    assert_eq!(fresh.cluster_id(), Some(cluster));
}

/// A boot count no data dir reaches, or one far above the last seen, is
/// refused; one start later is a restart.
#[tokio::test]
async fn an_implausible_boot_count_is_refused() {
    let b = guard(2);
    let huge = PeerGuard::new(1, u64::MAX, None, ALIVE);
    let refused = deliver(&b, &huge.seal("vote", 2, Vec::new()), addr(1)).await;
    assert!(
        matches!(refused, Err(Refusal::ImplausibleBoot { seen: None, .. })),
        "{refused:?}"
    );
    let real = PeerGuard::new(1, 4, None, ALIVE);
    deliver(&b, &real.seal("vote", 2, Vec::new()), addr(1))
        .await
        .expect("the refused boot was not recorded");
    tokio::time::sleep(ALIVE * 2).await;
    let leap = PeerGuard::new(1, 4 + MAX_BOOT_STEP + 1, None, ALIVE);
    let refused = deliver(&b, &leap.seal("vote", 2, Vec::new()), addr(1)).await;
    assert!(
        matches!(refused, Err(Refusal::ImplausibleBoot { seen: Some(4), .. })),
        "{refused:?}"
    );
    let restarted = PeerGuard::new(1, 5, None, ALIVE);
    deliver(&b, &restarted.seal("vote", 2, Vec::new()), addr(1))
        .await
        .expect("a restart is accepted");
}
