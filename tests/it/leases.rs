//! Lease calls over the keep-alive stream.

use std::time::Duration;

use raftlock_client::Error;

use crate::cluster::TestCluster;

#[tokio::test]
async fn keep_alive_stream_renews_reports_gone_leases_and_ends_on_bad_input() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let live = client.grant_lease(Duration::from_secs(5)).await.unwrap();
    let gone = client.grant_lease(Duration::from_secs(5)).await.unwrap();
    client.revoke(gone).await.unwrap();

    let mut stream = client.keep_alive_stream().await.unwrap();
    assert_eq!(
        stream.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    // A gone lease is an answer, not the end of the stream.
    assert!(matches!(
        stream.keep_alive(gone).await,
        Err(Error::LeaseExpired(_))
    ));
    assert_eq!(
        stream.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    // Bad input ends the stream with a clear error and changes nothing.
    assert!(matches!(
        stream.keep_alive(0).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(stream.keep_alive(live).await.is_err());
    // The lease is still there, and a new stream works.
    let mut again = client.keep_alive_stream().await.unwrap();
    assert_eq!(
        again.keep_alive(live).await.unwrap(),
        Duration::from_secs(5)
    );
    cluster.shutdown().await;
}

/// A lock on a lease that is never kept alive has a TTL of its own, which
/// `set_lease_ttl` extends or shortens (Redis' `PEXPIRE`), down to 1 ms.
/// Tried against it: the old TTL running out after an extension (the lock
/// is still held at twice its first TTL), a shortened TTL (the next client
/// gets the lock soon after), an extension racing the lease's expiry (it
/// either fails or the lease lives on: never "extended" then gone at once),
/// and a failover (the new leader restarts the lease with the new TTL, not
/// the granted one).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lease_ttl_change_extends_and_shortens_a_lock_and_survives_failover() {
    let mut cluster = TestCluster::new(3).await;
    let client = cluster.client().await;

    // 1 ms is a valid TTL now, as Redis PX 1 is.
    let brief = client.grant_lease(Duration::from_millis(1)).await.unwrap();
    let gone = tokio::time::timeout(Duration::from_secs(10), async {
        while client.time_to_live(brief).await.is_ok() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(gone.is_ok(), "a 1 ms lease expires");

    // Extend: the lock outlives its first TTL.
    let first = Duration::from_millis(400);
    let lease = client.grant_lease(first).await.unwrap();
    let spec = raftlock_client::Acquire::exclusive("own-ttl", "a", lease);
    assert!(client.acquire(&spec).await.unwrap().is_some());
    assert_eq!(
        client
            .set_lease_ttl(lease, Duration::from_secs(30))
            .await
            .unwrap(),
        Duration::from_secs(30)
    );
    tokio::time::sleep(first * 2).await;
    let ttl = client.time_to_live(lease).await.unwrap();
    assert_eq!(ttl.granted_ttl, Duration::from_secs(30));
    assert!(ttl.remaining.unwrap() > Duration::from_secs(20), "{ttl:?}");

    // Failover: the new leader restarts the lease with its new TTL.
    let leader = cluster.wait_for_leader().await;
    cluster.kill(leader).await;
    let survivor = cluster.client().await;
    cluster.wait_for_leader().await;
    tokio::time::sleep(first * 2).await;
    let ttl = survivor.time_to_live(lease).await.unwrap();
    assert_eq!(ttl.granted_ttl, Duration::from_secs(30), "{ttl:?}");

    // Shorten: the lock frees and the next client is granted it.
    survivor
        .set_lease_ttl(lease, Duration::from_millis(50))
        .await
        .unwrap();
    let next = survivor.grant_lease(Duration::from_secs(30)).await.unwrap();
    let waiter = raftlock_client::Acquire {
        timeout: Some(Duration::from_secs(10)),
        ..raftlock_client::Acquire::exclusive("own-ttl", "b", next)
    };
    assert!(survivor.acquire(&waiter).await.unwrap().is_some());
    assert!(matches!(
        survivor.set_lease_ttl(lease, Duration::from_secs(1)).await,
        Err(Error::LeaseExpired(_))
    ));

    // Racing expiry: each change either fails or leaves a live lease.
    for _ in 0..20 {
        let lease = survivor
            .grant_lease(Duration::from_millis(30))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(25)).await;
        if survivor
            .set_lease_ttl(lease, Duration::from_secs(5))
            .await
            .is_ok()
        {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let ttl = survivor.time_to_live(lease).await;
            assert!(ttl.is_ok(), "extended, then gone: {ttl:?}");
        }
    }

    // Bad input changes nothing.
    assert!(matches!(
        survivor.set_lease_ttl(next, Duration::ZERO).await,
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        survivor
            .set_lease_ttl(next, Duration::from_secs(2 * 24 * 3600))
            .await,
        Err(Error::InvalidArgument(_))
    ));
    let ttl = survivor.time_to_live(next).await.unwrap();
    assert_eq!(ttl.granted_ttl, Duration::from_secs(30));
    cluster.shutdown().await;
}

/// `acquire_with_ttl`: the lock and its lease in one entry. Busy makes no
/// lease; the lock ends its TTL after the grant unless extended; revoking
/// the lease releases it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_with_its_own_ttl_is_taken_in_one_entry() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let other = cluster.client().await;
    // Long enough for a starved machine to make the calls below within it.
    let ttl = Duration::from_secs(2);
    let (lease, held) = client
        .acquire_with_ttl("own", "a", ttl)
        .await
        .unwrap()
        .expect("free");
    assert!(held.fence > 0);
    let leases = client.leases().await.unwrap().len();
    assert!(other
        .acquire_with_ttl("own", "b", ttl)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        client.leases().await.unwrap().len(),
        leases,
        "a busy take leaves no lease"
    );
    // Extended past its TTL, then left to run out: the next one gets it.
    client
        .set_lease_ttl(lease, Duration::from_secs(6))
        .await
        .unwrap();
    tokio::time::sleep(ttl * 2).await;
    assert!(client.check("own", held.fence).await.unwrap());
    let taken = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(hold) = other.acquire_with_ttl("own", "b", ttl).await.unwrap() {
                return hold;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("granted once the extended TTL ran out");
    assert!(taken.1.fence > held.fence);
    // Revoking its lease releases it at once.
    assert_eq!(other.revoke(taken.0).await.unwrap(), 1);
    assert!(client
        .acquire_with_ttl("own", "c", ttl)
        .await
        .unwrap()
        .is_some());
    cluster.shutdown().await;
}
