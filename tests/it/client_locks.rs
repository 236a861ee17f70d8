//! The lock guard API against a real 3-node cluster: release on drop,
//! `lost()` on revoke, on partition of the client's node and on
//! force-release, abort-on-loss, re-entry, a fresh session after loss.

use std::time::Duration;

use raftlock_client::{Client, Error};

use crate::cluster::TestCluster;

/// Session TTL for these tests: short, so loss shows up fast.
pub const TTL: Duration = Duration::from_secs(3);

/// A client over every node with a short session.
pub async fn short_client(cluster: &TestCluster) -> Client {
    let eps: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    Client::builder(eps)
        .session_ttl(TTL)
        .connect()
        .await
        .expect("client")
}

/// A client of node `id` only, with a short session and a short retry budget.
async fn short_client_of(cluster: &TestCluster, id: u64) -> Client {
    Client::builder([cluster.addrs[&id].0.to_string()])
        .session_ttl(TTL)
        .retry_for(Duration::from_secs(3))
        .connect()
        .await
        .expect("client")
}

/// Polls `describe(name)` until nobody holds or waits, for up to 10 s.
pub async fn wait_free(client: &Client, name: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while client.describe(name).await.unwrap().is_some() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} still held: {:?}",
            client.describe(name).await
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn guard_drop_releases() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let guard = client.lock("drop-me").acquire().await.unwrap();
    assert!(client.check("drop-me", guard.fence()).await.unwrap());
    let other = cluster.client().await;
    assert!(other.lock("drop-me").try_acquire().await.unwrap().is_none());
    drop(guard);
    wait_free(&client, "drop-me").await;
    let next = other.lock("drop-me").try_acquire().await.unwrap();
    assert!(next.is_some(), "a dropped guard must free the lock");
    cluster.shutdown().await;
}

#[tokio::test]
async fn lost_fires_when_the_session_lease_is_revoked_and_a_new_session_follows() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let guard = client.lock("revoked").acquire().await.unwrap();
    let lease = client.session_lease().await.unwrap();
    assert_eq!(guard.lease(), lease);
    assert!(!guard.is_lost());

    cluster.client().await.revoke(lease).await.unwrap();
    let err = tokio::time::timeout(TTL, guard.lost())
        .await
        .expect("lost() must fire within the TTL after a revoke");
    assert!(matches!(err, Error::LockLost(_)), "{err:?}");
    assert!(guard.is_lost());
    let err = guard.release().await.unwrap_err();
    assert!(matches!(err, Error::LockLost(_)), "{err:?}");

    // The next lock gets a fresh session lease.
    let again = client.lock("revoked").acquire().await.unwrap();
    assert_ne!(again.lease(), lease);
    assert!(!again.is_lost());
    again.release().await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test]
async fn lost_fires_when_the_clients_node_is_isolated() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let client = short_client_of(&cluster, leader).await;
    let guard = client.lock("partitioned").acquire().await.unwrap();
    // Let a keep-alive round or two succeed first.
    tokio::time::sleep(TTL / 2).await;
    assert!(!guard.is_lost());

    let isolated_at = tokio::time::Instant::now();
    cluster.isolate(leader);
    let err = tokio::time::timeout(TTL + Duration::from_millis(200), guard.lost())
        .await
        .expect("lost() must fire within the TTL once keep-alives cannot reach a leader");
    assert!(matches!(err, Error::LockLost(_)), "{err:?}");
    let fired_after = isolated_at.elapsed();

    // The majority side expires the lease and hands the lock on, with a
    // higher fence, only after the holder was told.
    let others: Vec<String> = cluster
        .addrs
        .iter()
        .filter(|(id, _)| **id != leader)
        .map(|(_, (c, _))| c.to_string())
        .collect();
    let majority = Client::connect(others).await.unwrap();
    let next = majority
        .lock("partitioned")
        .timeout(Duration::from_secs(8))
        .acquire()
        .await
        .unwrap();
    assert!(next.fence() > guard.fence());
    assert!(
        isolated_at.elapsed() > fired_after,
        "the lock moved on before the old holder learned it was lost"
    );
    cluster.heal();
    cluster.shutdown().await;
}

#[tokio::test]
async fn lost_fires_on_force_release_and_aborts_the_task() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let work = tokio::spawn(std::future::pending::<()>());
    let guard = client
        .lock("forced")
        .abort_on_loss(work.abort_handle())
        .acquire()
        .await
        .unwrap();
    assert_eq!(
        cluster
            .admin_client()
            .await
            .force_release("forced")
            .await
            .unwrap(),
        1
    );
    let err = tokio::time::timeout(TTL, guard.lost())
        .await
        .expect("lost() must fire within a keep-alive round of a force-release");
    assert!(format!("{err}").contains("no longer holds"), "{err}");
    let joined = tokio::time::timeout(Duration::from_secs(1), work)
        .await
        .expect("the task must be aborted on loss");
    assert!(joined.unwrap_err().is_cancelled());
    // The session itself is fine: another lock on it is not lost.
    let other = client.lock("forced-2").acquire().await.unwrap();
    assert_eq!(other.lease(), guard.lease());
    assert!(!other.is_lost());
    cluster.shutdown().await;
}

#[tokio::test]
async fn reentry_by_guard_and_by_owner_token() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let outer = client.lock("re").acquire().await.unwrap();
    let inner = outer.reenter().await.unwrap();
    assert_eq!((inner.fence(), inner.count()), (outer.fence(), 2));
    inner.release().await.unwrap();
    assert!(client.check("re", outer.fence()).await.unwrap());
    outer.release().await.unwrap();
    assert!(client.describe("re").await.unwrap().is_none());

    let a = client.lock("tok").owner("job-7").acquire().await.unwrap();
    let b = client.lock("tok").owner("job-7").acquire().await.unwrap();
    assert_eq!((b.fence(), b.count()), (a.fence(), 2));
    let busy = client.lock("tok").try_acquire().await.unwrap();
    assert!(busy.is_none(), "a different owner must not get in");
    drop(a);
    drop(b);
    wait_free(&client, "tok").await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn dedicated_ttl_lease_is_kept_alive_and_revoked_on_release() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let guard = client.lock("own-lease").ttl(TTL).acquire().await.unwrap();
    let session = client.session_lease().await.unwrap();
    assert_ne!(guard.lease(), session);
    // Survives several TTLs thanks to keep-alives.
    tokio::time::sleep(TTL * 2).await;
    assert!(!guard.is_lost());
    assert!(client.check("own-lease", guard.fence()).await.unwrap());
    let lease = guard.lease();
    guard.release().await.unwrap();
    let err = client.time_to_live(lease).await.unwrap_err();
    assert!(matches!(err, Error::LeaseExpired(_)), "{err:?}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn try_acquire_and_timeout() {
    let cluster = TestCluster::new(3).await;
    let a = short_client(&cluster).await;
    let b = short_client(&cluster).await;
    let held = a.lock("busy").acquire().await.unwrap();
    assert!(b.lock("busy").try_acquire().await.unwrap().is_none());
    let err = b
        .lock("busy")
        .timeout(Duration::from_millis(300))
        .acquire()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Timeout(_)), "{err:?}");
    let waiting = tokio::spawn(async move { b.lock("busy").acquire().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fence = held.fence();
    held.release().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(3), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(next.fence() > fence);
    cluster.shutdown().await;
}

#[tokio::test]
async fn close_revokes_the_session_and_frees_its_locks() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let guard = client.lock("closing").acquire().await.unwrap();
    client.close().await.unwrap();
    tokio::time::timeout(Duration::from_millis(100), guard.lost())
        .await
        .expect("closing the session marks its guards lost at once");
    assert!(client.describe("closing").await.unwrap().is_none());
    let err = client.time_to_live(guard.lease()).await.unwrap_err();
    assert!(matches!(err, Error::LeaseExpired(_)), "{err:?}");
    cluster.shutdown().await;
}

#[tokio::test]
async fn explicit_lease_is_used_and_not_replaced() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let on_lease = client.with_lease(lease);
    let guard = on_lease.lock("explicit").acquire().await.unwrap();
    assert_eq!(guard.lease(), lease);
    // Kept alive by the client beyond its TTL.
    tokio::time::sleep(TTL * 2).await;
    assert!(!guard.is_lost());
    client.revoke(lease).await.unwrap();
    tokio::time::timeout(TTL, guard.lost()).await.unwrap();
    let err = on_lease.lock("explicit").acquire().await.unwrap_err();
    assert!(matches!(err, Error::LeaseExpired(_)), "{err:?}");
    cluster.shutdown().await;
}

/// A client keeps its background work on the runtime it was made on, so a
/// call may be polled on another runtime, one driven only while someone
/// blocks on it (as a thread's own runtime is between blocking calls): a
/// hold dropped there is released, and a session first granted from there
/// keeps its lease alive. Spawned on the runtime the call was polled on,
/// as before `Client::home`, both sat in a runtime nobody drove: the
/// dropped hold stayed held while its session lived (`wait_free` fails),
/// and the other session's lease lapsed after its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_work_runs_on_the_clients_own_runtime() {
    let cluster = TestCluster::new(3).await;
    let releasing = short_client(&cluster).await;
    releasing.session_lease().await.unwrap(); // kept alive from here
    let keeping = short_client(&cluster).await; // its session starts elsewhere
    let (r, k) = (releasing.clone(), keeping.clone());
    let (other_runtime, kept) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let kept = runtime
            .block_on(k.lock("elsewhere/kept").acquire())
            .expect("acquire");
        let dropped = runtime
            .block_on(r.lock("elsewhere/dropped").acquire())
            .expect("acquire");
        drop(dropped); // outside `block_on`, which is never entered again
        (runtime, kept)
    })
    .join()
    .expect("thread");
    wait_free(&releasing, "elsewhere/dropped").await;
    tokio::time::sleep(TTL * 2).await;
    assert!(
        keeping.check("elsewhere/kept", kept.fence()).await.unwrap(),
        "the session's lease lapsed: its keep-alives did not run"
    );
    drop(kept);
    wait_free(&keeping, "elsewhere/kept").await;
    // A runtime may not be dropped in async code.
    std::thread::spawn(move || drop(other_runtime))
        .join()
        .expect("thread");
}
