//! Bad input gets a clear error and changes nothing.

use std::time::Duration;

use raftlock::pb;
use raftlock_client::{Acquire, Error, LockMode};
use raftlock_storage::limits::{MAX_NAME_LEN, MAX_WAITERS_PER_LOCK};

use crate::cluster::TestCluster;

/// Every lock, without the hold durations that change as time passes.
async fn locks(client: &raftlock_client::Client) -> Vec<pb::LockInfo> {
    let mut locks = client.list("", 0).await.unwrap();
    for l in &mut locks {
        l.holders.iter_mut().for_each(|h| h.held_ms = 0);
        l.waiters.iter_mut().for_each(|w| w.waited_ms = 0);
    }
    locks
}

async fn applied(cluster: &TestCluster) -> u64 {
    cluster.node(1).status().applied_index
}

#[tokio::test]
async fn bad_requests_are_refused_and_change_nothing() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(Duration::from_secs(10)).await.unwrap();
    client
        .acquire(&Acquire::exclusive("held", "a", lease))
        .await
        .unwrap()
        .unwrap();
    let before = applied(&cluster).await;
    let locks_before = locks(&client).await;

    let invalid = |e: Error| assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    invalid(client.grant_lease(Duration::ZERO).await.unwrap_err());
    invalid(
        client
            .grant_lease(Duration::from_secs(365 * 86_400))
            .await
            .unwrap_err(),
    );
    invalid(
        client
            .acquire(&Acquire::exclusive("", "a", lease))
            .await
            .unwrap_err(),
    );
    invalid(
        client
            .acquire(&Acquire::exclusive(
                "x".repeat(MAX_NAME_LEN + 1),
                "a",
                lease,
            ))
            .await
            .unwrap_err(),
    );
    invalid(
        client
            .acquire(&Acquire::exclusive("n", "", lease))
            .await
            .unwrap_err(),
    );
    invalid(
        client
            .acquire(&Acquire::exclusive("n", "a", 0))
            .await
            .unwrap_err(),
    );
    let sem = Acquire {
        mode: LockMode::Permits,
        permits: 5,
        limit: 2,
        ..Acquire::exclusive("s", "a", lease)
    };
    invalid(client.acquire(&sem).await.unwrap_err());
    invalid(
        client
            .acquire_with_ttl("n", "a", Duration::ZERO)
            .await
            .unwrap_err(),
    );
    // A lock with its own TTL takes no lease and does not wait.
    let mut raw_lock =
        pb::lock_client::LockClient::connect(format!("http://{}", cluster.addrs[&1].0))
            .await
            .unwrap();
    for (lease, wait) in [(lease, false), (0, true)] {
        let status = raw_lock
            .acquire(pb::AcquireRequest {
                name: "n".into(),
                owner: "a".into(),
                lease,
                wait,
                ttl_ms: Some(1000),
                ..pb::AcquireRequest::default()
            })
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    }
    assert_eq!(
        applied(&cluster).await,
        before,
        "refused at the edge: nothing proposed"
    );

    // Refused by the state machine: proposed, but nothing changes.
    let gone = |e: Error| assert!(matches!(e, Error::LeaseExpired(_)), "{e:?}");
    gone(
        client
            .acquire(&Acquire::exclusive("n", "a", 999_999))
            .await
            .unwrap_err(),
    );
    gone(client.revoke(999_999).await.unwrap_err());
    gone(client.keep_alive(999_999).await.unwrap_err());
    let not_held = |e: Error| assert!(matches!(e, Error::NotHeld(_)), "{e:?}");
    not_held(client.release("held", "b").await.unwrap_err());
    not_held(client.release("nothing", "b").await.unwrap_err());
    assert_eq!(locks(&client).await, locks_before);

    // A raw request with a malformed request id.
    let addr = format!("http://{}", cluster.addrs[&1].0);
    let mut raw = pb::lease_client::LeaseClient::connect(addr).await.unwrap();
    let bad_id = pb::RequestId {
        client_id: vec![1, 2, 3],
        seq: 1,
        acked_below: 0,
        attempt: 0,
    };
    let status = raw
        .grant(pb::LeaseGrantRequest {
            request_id: Some(bad_id),
            ttl_ms: 1000,
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    cluster.shutdown().await;
}

/// The queue of one lock holds at most `MAX_WAITERS_PER_LOCK` waiters;
/// one more is refused. The node and the waiters' clients get two runtime
/// threads, and the waiters' lease outlives a slow fill: one CI run on a
/// starved machine took 60 s to queue the 1 000, and their 60 s lease
/// expired before the last acquire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_queue_is_bounded() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(Duration::from_secs(600)).await.unwrap();
    client
        .acquire(&Acquire::exclusive("busy", "holder", lease))
        .await
        .unwrap()
        .unwrap();
    // Fill the queue with long waits, spread over several connections as
    // many client processes would.
    let mut clients = Vec::new();
    for _ in 0..20 {
        clients.push(cluster.client().await);
    }
    let mut tasks = Vec::new();
    for i in 0..MAX_WAITERS_PER_LOCK {
        let c = clients[i % clients.len()].clone();
        tasks.push(tokio::spawn(async move {
            c.acquire(&Acquire::exclusive("busy", format!("w{i}"), lease))
                .await
        }));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let n = client
            .describe("busy")
            .await
            .unwrap()
            .unwrap()
            .waiters
            .len();
        if n == MAX_WAITERS_PER_LOCK {
            break;
        }
        // A waiter that ended instead of queueing says why at once, not
        // as a count short of the bound after a minute.
        if let Some(i) = tasks.iter().position(|t| t.is_finished()) {
            let ended = tasks.swap_remove(i).await.expect("waiter task");
            panic!("waiter {i} ended instead of waiting, {n} queued: {ended:?}");
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {n} waiters queued"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let err = client
        .acquire(&Acquire::exclusive("busy", "one-too-many", lease))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::LimitReached(_)), "{err:?}");
    for t in tasks {
        t.abort();
    }
    cluster.shutdown().await;
}
