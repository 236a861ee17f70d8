//! Semaphores, read-write locks, task locks and `Fenced` through the client
//! library against a real 3-node cluster.

use std::sync::Arc;
use std::time::Duration;

use raftlock_client::{Error, Fenced};
use tokio::time::Instant;

use crate::client_locks::{short_client, wait_free};
use crate::cluster::TestCluster;

#[tokio::test]
async fn semaphore_counts_permits_fifo() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let pool = client.semaphore("pool", 3);
    let two = pool.acquire(2).await.unwrap();
    assert!(pool.try_acquire(2).await.unwrap().is_none());
    let one = pool.try_acquire(1).await.unwrap().expect("1 of 3 is free");

    let waiter = {
        let pool = pool.clone();
        tokio::spawn(async move { pool.acquire(2).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "only 0 permits are free");
    two.release().await.unwrap();
    let granted = tokio::time::timeout(Duration::from_secs(3), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(granted.fence() > one.fence());
    let err = client
        .semaphore("pool", 5)
        .try_acquire(1)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::NotHeld(_)),
        "limits must agree: {err:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn rwlock_shares_reads_and_excludes_writes() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let rw = client.rwlock("cfg");
    let r1 = rw.read().await.unwrap();
    let r2 = rw.read().await.unwrap();
    assert!(rw.try_write().await.unwrap().is_none());
    let writer = {
        let rw = rw.clone();
        tokio::spawn(async move { rw.write().await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!writer.is_finished());
    drop(r1);
    r2.release().await.unwrap();
    let w = tokio::time::timeout(Duration::from_secs(3), writer)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(rw.try_read().await.unwrap().is_none());
    w.release().await.unwrap();
    assert!(rw.try_read().await.unwrap().is_some());
    cluster.shutdown().await;
}

#[tokio::test]
async fn task_lock_holds_at_least_min_hold() {
    let cluster = TestCluster::new(3).await;
    let a = short_client(&cluster).await;
    let b = short_client(&cluster).await;
    let min_hold = Duration::from_millis(1500);
    let max_hold = Duration::from_secs(5);
    let job_a = a.task_lock("hourly", min_hold, max_hold);
    let job_b = b.task_lock("hourly", min_hold, max_hold);

    let started = Instant::now();
    let first = tokio::spawn(async move { job_a.run(|| async { "ran on a" }).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The job on a finished long ago, but the interval is not over.
    assert_eq!(job_b.run(|| async { "ran on b" }).await.unwrap(), None);
    assert_eq!(first.await.unwrap().unwrap(), Some("ran on a"));
    assert!(
        started.elapsed() >= min_hold,
        "released after {:?}",
        started.elapsed()
    );
    wait_free(&b, "hourly").await;
    assert_eq!(
        job_b.run(|| async { "ran on b" }).await.unwrap(),
        Some("ran on b")
    );
    cluster.shutdown().await;
}

#[tokio::test]
async fn task_lock_is_freed_by_max_hold() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let max_hold = Duration::from_secs(1);
    let task = client.task_lock("stuck", Duration::ZERO, max_hold);
    let guard = task.try_acquire().await.unwrap().unwrap();
    // The worker hangs: the lease is not kept alive, so the lock runs out.
    let err = tokio::time::timeout(max_hold, guard.lost())
        .await
        .expect("lost() fires before max_hold passes");
    assert!(matches!(err, Error::LockLost(_)), "{err:?}");
    wait_free(&client, "stuck").await;
    assert!(task.try_acquire().await.unwrap().is_some());
    drop(guard);
    cluster.shutdown().await;
}

#[tokio::test]
async fn fenced_resource_rejects_a_stale_holder() {
    let cluster = TestCluster::new(3).await;
    let client = short_client(&cluster).await;
    let store = Arc::new(Fenced::new(Vec::<&str>::new()));

    let old = client.lock("store").acquire().await.unwrap();
    store.write(old.fence(), |rows| rows.push("old")).unwrap();
    // An operator takes the lock away; a new holder writes.
    cluster
        .admin_client()
        .await
        .force_release("store")
        .await
        .unwrap();
    let new = client.lock("store").acquire().await.unwrap();
    assert!(new.fence() > old.fence());
    assert!(!client.check("store", old.fence()).await.unwrap());
    store.write(new.fence(), |rows| rows.push("new")).unwrap();

    // The old holder wakes up and tries to write: refused, nothing changes.
    let err = store.write(old.fence(), |rows| rows.clear()).unwrap_err();
    assert_eq!(
        err,
        Error::StaleFence {
            presented: old.fence(),
            highest: new.fence()
        }
    );
    assert_eq!(store.read(|rows| rows.clone()), ["old", "new"]);
    cluster.shutdown().await;
}
