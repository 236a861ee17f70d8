//! Elections through the client library: campaign, proclaim, resign,
//! `leader()`, and `observe()` including "no leader" and reconnection.

use std::pin::pin;
use std::time::Duration;

use futures::StreamExt;
use raftlock_client::{Client, Error, LeaderInfo};

use crate::client_locks::{short_client, TTL};
use crate::cluster::TestCluster;

/// The next observed item, within 3 s.
async fn next<S>(stream: &mut S) -> Option<LeaderInfo>
where
    S: futures::Stream<Item = Result<Option<LeaderInfo>, Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(3), stream.next())
        .await
        .expect("an observed change within 3 s")
        .expect("the stream goes on")
        .expect("no error")
}

#[tokio::test]
async fn campaign_proclaim_resign_and_observe() {
    let cluster = TestCluster::new(3).await;
    let a = short_client(&cluster).await;
    let b = short_client(&cluster).await;
    let election = a.election("sched");
    let mut seen = pin!(election.observe());
    assert!(next(&mut seen).await.is_none(), "first: no leader");
    assert!(election.leader().await.unwrap().is_none());

    let lead_a = election.campaign("a:1").await.unwrap();
    let info = next(&mut seen).await.unwrap();
    assert_eq!(
        (info.value.as_slice(), info.fence),
        (&b"a:1"[..], lead_a.fence())
    );

    let b_election = b.election("sched");
    let candidate = tokio::spawn(async move { b_election.campaign("b:1").await });
    lead_a.proclaim("a:2").await.unwrap();
    assert_eq!(next(&mut seen).await.unwrap().value, b"a:2");
    let leader = election.leader().await.unwrap().unwrap();
    assert_eq!(leader.owner, lead_a.owner());

    let fence_a = lead_a.fence();
    lead_a.resign().await.unwrap();
    let lead_b = tokio::time::timeout(Duration::from_secs(3), candidate)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(lead_b.fence() > fence_a);
    // Between a's resignation and b's election the stream may or may not
    // show "no leader"; it ends at b.
    let mut info = next(&mut seen).await;
    if info.is_none() {
        info = next(&mut seen).await;
    }
    assert_eq!(info.unwrap().value, b"b:1");

    drop(lead_b); // resigns in the background
    assert!(next(&mut seen).await.is_none(), "no leader after b resigns");
    cluster.shutdown().await;
}

#[tokio::test]
async fn leadership_is_lost_with_its_session() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let leadership = client.election("lost").campaign("x").await.unwrap();
    client.revoke(leadership.lease()).await.unwrap();
    tokio::time::timeout(TTL, leadership.lost())
        .await
        .expect("lost() within the TTL");
    let err = leadership.proclaim("y").await.unwrap_err();
    assert!(matches!(err, Error::LockLost(_)), "{err:?}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn observe_reconnects_without_repeating_an_item() {
    let mut cluster = TestCluster::new(3).await;
    // The observer reads from node 1 first, then whatever answers.
    let eps: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let observer = Client::connect(eps).await.unwrap();
    let mut seen = pin!(observer.election("e").observe());
    assert!(next(&mut seen).await.is_none());
    let campaigner = {
        let others: Vec<String> = [2u64, 3]
            .iter()
            .map(|id| cluster.addrs[id].0.to_string())
            .collect();
        Client::builder(others)
            .session_ttl(TTL)
            .connect()
            .await
            .unwrap()
    };
    let lead = campaigner.election("e").campaign("v1").await.unwrap();
    assert_eq!(next(&mut seen).await.unwrap().value, b"v1");

    cluster.kill(1).await;
    cluster.wait_for_leader().await;
    // After reconnecting, the unchanged leader is not reported again: the
    // next item is the proclaimed value.
    lead.proclaim("v2").await.unwrap();
    assert_eq!(next(&mut seen).await.unwrap().value, b"v2");
    cluster.shutdown().await;
}

/// `try_campaign` is one try: it leads a free election, and on a led one it
/// answers `None` at once and keeps no place in the queue, so when the
/// leader resigns nobody leads. With the server reading every campaign as
/// a waiting one, the second try queued behind the leader and the test's
/// 30 s limit ran out.
#[tokio::test]
async fn try_campaign_is_one_try_and_keeps_no_place() {
    let cluster = TestCluster::new(3).await;
    let a = short_client(&cluster).await;
    let b = short_client(&cluster).await;
    let lead_a = a
        .election("once")
        .try_campaign("a")
        .await
        .unwrap()
        .expect("a free election is led by the first try");
    let tried = tokio::time::timeout(
        Duration::from_secs(30),
        b.election("once").try_campaign("b"),
    )
    .await
    .expect("one try answers without waiting for the leader")
    .unwrap();
    assert!(tried.is_none(), "a led election answers None");

    let fence_a = lead_a.fence();
    lead_a.resign().await.unwrap();
    assert!(
        a.election("once").leader().await.unwrap().is_none(),
        "the try kept no place: nobody leads after the resignation"
    );
    let lead_b = b.election("once").try_campaign("b").await.unwrap().unwrap();
    assert!(lead_b.fence() > fence_a);
    let leader = a.election("once").leader().await.unwrap().unwrap();
    assert_eq!(leader.value, b"b");
}
