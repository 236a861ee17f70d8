//! Lock semantics through the gRPC API: grants, FIFO waiters pushed by the
//! server, try-lock, timeouts, re-entry, read-write, semaphores, fencing,
//! exactly-once retries.

use std::time::Duration;

use raftlock::pb;
use raftlock_client::{Acquire, Error, LockMode};

use crate::cluster::TestCluster;

const TTL: Duration = Duration::from_secs(10);

#[tokio::test]
async fn waiters_are_granted_in_fifo_order_by_push() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let first = client
        .acquire(&Acquire::exclusive("fifo", "a", lease))
        .await
        .unwrap()
        .unwrap();

    // Queue b, c, d in that order, each through a different node.
    let mut waiting = Vec::new();
    for (i, owner) in ["b", "c", "d"].into_iter().enumerate() {
        let c = cluster.client_of(i as u64 + 1).await;
        let task =
            tokio::spawn(async move { c.acquire(&Acquire::exclusive("fifo", owner, lease)).await });
        // Wait until the waiter is queued before starting the next one.
        loop {
            let info = client.describe("fifo").await.unwrap().unwrap();
            if info.waiters.len() == i + 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        waiting.push((owner, task));
    }
    let info = client.describe("fifo").await.unwrap().unwrap();
    let order: Vec<&str> = info.waiters.iter().map(|w| w.owner.as_str()).collect();
    assert_eq!(order, ["b", "c", "d"]);

    let mut last_fence = first.fence;
    let mut holder = "a";
    for (owner, task) in waiting {
        assert_eq!(client.release("fifo", holder).await.unwrap(), 0);
        let got = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(
            got.fence > last_fence,
            "fence {} must exceed {last_fence}",
            got.fence
        );
        let info = client.describe("fifo").await.unwrap().unwrap();
        assert_eq!(info.holders[0].owner, owner);
        last_fence = got.fence;
        holder = owner;
    }
    client.release("fifo", holder).await.unwrap();
    assert!(client.describe("fifo").await.unwrap().is_none());
    cluster.shutdown().await;
}

#[tokio::test]
async fn try_lock_reentry_check_and_release_by_non_owner() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let a = client
        .acquire(&Acquire::exclusive("job", "a", lease))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(a.count, 1);
    let again = client
        .acquire(&Acquire::exclusive("job", "a", lease))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((again.fence, again.count), (a.fence, 2));

    let busy = client
        .acquire(&Acquire {
            wait: false,
            ..Acquire::exclusive("job", "b", lease)
        })
        .await
        .unwrap();
    assert_eq!(busy, None);
    assert!(
        client
            .describe("job")
            .await
            .unwrap()
            .unwrap()
            .waiters
            .is_empty(),
        "try-lock must not queue"
    );

    assert!(client.check("job", a.fence).await.unwrap());
    assert!(!client.check("job", a.fence + 1).await.unwrap());
    let err = client.release("job", "b").await.unwrap_err();
    assert!(matches!(err, Error::NotHeld(_)), "{err:?}");

    assert_eq!(client.release("job", "a").await.unwrap(), 1);
    assert!(
        client.check("job", a.fence).await.unwrap(),
        "still held once"
    );
    assert_eq!(client.release("job", "a").await.unwrap(), 0);
    assert!(!client.check("job", a.fence).await.unwrap());
    cluster.shutdown().await;
}

#[tokio::test]
async fn wait_timeout_cancels_the_waiter() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("t", "a", lease))
        .await
        .unwrap()
        .unwrap();
    let spec = Acquire {
        timeout: Some(Duration::from_millis(300)),
        ..Acquire::exclusive("t", "b", lease)
    };
    let err = client.acquire(&spec).await.unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    let info = client.describe("t").await.unwrap().unwrap();
    assert!(
        info.waiters.is_empty(),
        "timed-out waiter must be dequeued: {info:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn caller_going_away_cancels_its_wait() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("gone", "a", lease))
        .await
        .unwrap()
        .unwrap();

    // b waits through node 2, then its caller gives up (the call is dropped).
    let b = cluster.client_of(2).await;
    let wait =
        tokio::spawn(async move { b.acquire(&Acquire::exclusive("gone", "b", lease)).await });
    loop {
        if client
            .describe("gone")
            .await
            .unwrap()
            .unwrap()
            .waiters
            .len()
            == 1
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    wait.abort();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let info = client.describe("gone").await.unwrap().unwrap();
        if info.waiters.is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "abandoned waiter still queued: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Releasing now leaves the lock free: no grant went to the vanished caller.
    client.release("gone", "a").await.unwrap();
    assert!(client.describe("gone").await.unwrap().is_none());
    cluster.shutdown().await;
}

#[tokio::test]
async fn read_write_lock_and_semaphore() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let shared = |owner: &str| Acquire {
        mode: LockMode::Shared,
        wait: false,
        ..Acquire::exclusive("rw", owner, lease)
    };
    assert!(client.acquire(&shared("r1")).await.unwrap().is_some());
    assert!(client.acquire(&shared("r2")).await.unwrap().is_some());
    let writer = Acquire {
        wait: false,
        ..Acquire::exclusive("rw", "w", lease)
    };
    assert!(client.acquire(&writer).await.unwrap().is_none());

    let permits = |owner: &str, k: u32| Acquire {
        mode: LockMode::Permits,
        permits: k,
        limit: 3,
        wait: false,
        ..Acquire::exclusive("sem", owner, lease)
    };
    assert!(client.acquire(&permits("x", 2)).await.unwrap().is_some());
    assert!(client.acquire(&permits("y", 2)).await.unwrap().is_none());
    assert!(client.acquire(&permits("z", 1)).await.unwrap().is_some());
    let mismatch = Acquire {
        limit: 4,
        ..permits("q", 1)
    };
    assert!(matches!(
        client.acquire(&mismatch).await.unwrap_err(),
        Error::NotHeld(_)
    ));
    cluster.shutdown().await;
}

#[tokio::test]
async fn retried_release_is_applied_once() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("once", "a", lease))
        .await
        .unwrap()
        .unwrap();
    client
        .acquire(&Acquire::exclusive("once", "a", lease))
        .await
        .unwrap()
        .unwrap();

    // The same request id sent twice, to two different nodes, as a client
    // would after a lost reply.
    let id = pb::RequestId {
        client_id: uuid::Uuid::new_v4().as_bytes().to_vec(),
        seq: 1,
        acked_below: 1,
        attempt: 0,
    };
    let req = pb::ReleaseRequest {
        request_id: Some(id),
        name: "once".into(),
        owner: "a".into(),
    };
    let mut answers = Vec::new();
    for node in [1, 2] {
        let addr = format!("http://{}", cluster.addrs[&node].0);
        let mut raw = pb::lock_client::LockClient::connect(addr).await.unwrap();
        answers.push(
            raw.release(req.clone())
                .await
                .unwrap()
                .into_inner()
                .remaining,
        );
    }
    assert_eq!(answers, [1, 1], "the retry must return the original answer");
    let info = client.describe("once").await.unwrap().unwrap();
    assert_eq!(
        info.holders[0].count, 1,
        "a retried release must not decrement twice"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn elections_campaign_observe_proclaim_resign() {
    use futures::StreamExt;
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let mut observed = client.observe("leader").await.unwrap();
    let first = observed.next().await.unwrap().unwrap();
    assert!(!first.has_leader);

    let term1 = client
        .campaign("leader", "n1", lease, b"v1", None)
        .await
        .unwrap();
    let seen = observed.next().await.unwrap().unwrap();
    assert_eq!(
        (seen.owner.as_str(), seen.value.as_slice(), seen.fence),
        ("n1", &b"v1"[..], term1)
    );

    let c2 = client.clone();
    let second = tokio::spawn(async move { c2.campaign("leader", "n2", lease, b"v2", None).await });
    client.proclaim("leader", "n1", b"v1b").await.unwrap();
    let seen = observed.next().await.unwrap().unwrap();
    assert_eq!(seen.value, b"v1b");
    let err = client.proclaim("leader", "n2", b"x").await.unwrap_err();
    assert!(matches!(err, Error::NotHeld(_)), "{err:?}");

    client.resign("leader", "n1").await.unwrap();
    let term2 = second.await.unwrap().unwrap();
    assert!(term2 > term1);
    let seen = observed.next().await.unwrap().unwrap();
    assert_eq!((seen.owner.as_str(), seen.fence), ("n2", term2));
    let leader = client.leader("leader").await.unwrap();
    assert_eq!(leader.owner, "n2");
    cluster.shutdown().await;
}

/// Group commit: concurrent writes reaching the leader share Raft entries,
/// and grants that share an entry still get distinct, ordered fences.
#[tokio::test]
async fn concurrent_writes_share_entries_with_distinct_fences() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let leader = cluster.wait_for_leader().await;
    let before = cluster.node(leader).status().last_log_index;

    const N: u64 = 64;
    let mut calls = Vec::new();
    for i in 0..N {
        let c = client.clone();
        calls.push(tokio::spawn(async move {
            let spec = Acquire::exclusive(format!("gc/{i}"), format!("owner-{i}"), lease);
            c.acquire(&spec).await
        }));
    }
    let mut fences = Vec::new();
    for call in calls {
        fences.push(call.await.unwrap().unwrap().expect("granted").fence);
    }
    let after = cluster.node(leader).status().last_log_index;
    assert!(
        after - before < N,
        "{N} concurrent acquires took {} entries",
        after - before
    );
    fences.sort_unstable();
    fences.dedup();
    assert_eq!(fences.len() as u64, N, "fences must be distinct");
    // Some entry carried more than one grant: fences share the index part.
    let entries: std::collections::BTreeSet<u64> = fences
        .iter()
        .map(|f| raftlock_storage::slot_index(*f))
        .collect();
    assert!(entries.len() < fences.len());
    cluster.shutdown().await;
}

/// A lock or campaign that names no lock-delay carries the node's default
/// (`lock_delay_ms` in the node's config), put in the command where the
/// call is checked: on a lease, with its own TTL, and a campaign alike;
/// one that names a delay (0 too) keeps its own. Seen failing: with the
/// campaign's delay left at the 0 its check put in, its holder showed 0.
#[tokio::test]
async fn a_call_that_names_no_lock_delay_carries_the_nodes_default() {
    let mut config = crate::cluster::test_config();
    config.serving.lock_delay = Duration::from_secs(7);
    let cluster = TestCluster::with_config(1, config).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let delay_of = |name: &'static str| {
        let client = client.clone();
        async move {
            let info = client.describe(name).await.unwrap().unwrap();
            info.holders[0].lock_delay_ms
        }
    };
    client
        .acquire(&Acquire::exclusive("delay/default", "a", lease))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delay_of("delay/default").await, 7_000);
    client
        .acquire(&Acquire {
            lock_delay: Some(Duration::ZERO),
            ..Acquire::exclusive("delay/named", "a", lease)
        })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delay_of("delay/named").await, 0);
    client
        .acquire_with_ttl("delay/own-ttl", "a", TTL)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(delay_of("delay/own-ttl").await, 7_000);
    client
        .campaign("delay/election", "n1", lease, b"v", None)
        .await
        .unwrap();
    assert_eq!(delay_of("delay/election").await, 7_000);
    cluster.shutdown().await;
}
