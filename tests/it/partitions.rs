//! Partitions: a node cut off from the leader, a leader cut off from its
//! quorum, and what each must (not) answer or do when the link comes back.

use std::time::Duration;

use raftlock_client::{Acquire, Acquired, Client};

use crate::cluster::{test_config, TestCluster};

const TTL: Duration = Duration::from_secs(30);

/// A wait whose node is cut off from the leader when its time runs out
/// cannot be cancelled, and may still be granted: the call must not answer
/// a definite Timeout. (The chaos suite caught exactly that: a "timed out"
/// waiter was later found holding the lock.) The client re-sends the
/// request to the next node with a higher attempt and learns the real
/// outcome, here the grant; the cut-off node's cancel, committed once it is
/// back, leaves that grant alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_cannot_be_cancelled_is_not_reported_as_timed_out() {
    let mut config = test_config();
    config.replication.leader_wait = Duration::from_secs(2);
    let cluster = TestCluster::with_config(3, config).await;
    let leader = cluster.wait_for_leader().await;
    let cut_off = cluster.others(leader)[0];
    let holder = cluster.client_of(leader).await;
    let lease = holder.grant_lease(TTL).await.unwrap();
    holder
        .acquire(&Acquire::exclusive("x", "h", lease))
        .await
        .unwrap()
        .unwrap();

    // The waiter's client tries the soon cut-off node first.
    let waiter = Client::connect([
        cluster.addrs[&cut_off].0.to_string(),
        cluster.addrs[&leader].0.to_string(),
    ])
    .await
    .unwrap();
    let spec = Acquire {
        timeout: Some(Duration::from_secs(1)),
        ..Acquire::exclusive("x", "w", lease)
    };
    let call = tokio::spawn(async move { waiter.acquire(&spec).await });
    wait_until_queued(&holder, "x", "w").await;
    cluster.isolate(cut_off);
    // Granted on the majority side; the cut-off node cannot learn it.
    assert_eq!(holder.release("x", "h").await.unwrap(), 0);

    let answer = call.await.unwrap();
    let Ok(Some(Acquired { fence, .. })) = answer else {
        panic!("the wait was granted, but the caller was told {answer:?}");
    };

    cluster.heal();
    // The cut-off node proposes its cancel until it commits (backing off up
    // to 2 s); the grant must outlive it.
    let until = tokio::time::Instant::now() + Duration::from_secs(8);
    while tokio::time::Instant::now() < until {
        let info = holder.describe("x").await.unwrap();
        let holders: Vec<String> = info
            .map(|l| l.holders.into_iter().map(|h| h.owner).collect())
            .unwrap_or_default();
        assert_eq!(holders, ["w"], "the grant the caller was told of ended");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(holder.check("x", fence).await.unwrap());
    cluster.shutdown().await;
}

async fn wait_until_queued(client: &Client, name: &str, owner: &str) {
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = client.describe(name).await.unwrap();
        if info.is_some_and(|l| l.waiters.iter().any(|w| w.owner == owner)) {
            return;
        }
        assert!(tokio::time::Instant::now() < until, "{owner} never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A leader cut off from its quorum answers a write with UNAVAILABLE "no
/// quorum within 5s" instead of holding the caller for ever. Without the deadline
/// on the leader's own writes (`serve_here`) the call never returns and
/// this test fails at its 60 s bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_leader_without_quorum_answers_instead_of_hanging() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let options = raftlock_client::ClientOptions {
        retry_for: Duration::from_millis(500),
        ..cluster.client_options()
    };
    let endpoint = cluster.addrs[&leader].0.to_string();
    let client = Client::connect_with([endpoint], options).await.unwrap();
    cluster.isolate(leader);
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        client.grant_lease(Duration::from_secs(10)),
    )
    .await
    .expect("the write returned within 60 s");
    match answer {
        Err(raftlock_client::Error::Unavailable(why)) => {
            assert!(why.contains("no quorum") || why.contains("leader"), "{why}")
        }
        other => panic!("expected UNAVAILABLE, got {other:?}"),
    }
    cluster.heal();
    cluster.shutdown().await;
}

/// PreVote: a follower cut off from the others asks whether it could win an
/// election before it starts one, and nobody would vote for it, so it keeps
/// its term; when it comes back the leader keeps leading in the same term.
/// (With PreVote off, the cut-off follower raised its term once per
/// election timeout and, back, deposed the leader.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_back_from_a_partition_does_not_depose_the_leader() {
    let mut config = test_config();
    config.replication.heartbeat = Duration::from_millis(100);
    config.replication.election_timeout = Duration::from_millis(1000);
    let cluster = TestCluster::with_config(3, config).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let term = cluster.node(leader).status().term;

    cluster.isolate(follower);
    // Several election timeouts (up to 2 s each) alone.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert_eq!(
        cluster.node(follower).status().term,
        term,
        "the cut-off follower raised its term"
    );

    cluster.heal();
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    while cluster.node(follower).status().leader != Some(leader) {
        assert!(
            tokio::time::Instant::now() < until,
            "the follower did not rejoin"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let status = cluster.node(leader).status();
    assert_eq!((status.role, status.term), ("leader", term), "{status:?}");
    cluster.shutdown().await;
}
