//! Backup and restore: a backup taken from a live cluster under load
//! restores into a new cluster that holds every lock the backup held, with
//! the same holders, fences and queue, whose leases restart with their full
//! TTL, and whose fences are above every fence the old cluster granted,
//! before the backup and after it, with no `--bump-index`.
//! With the restored log starting at index 0 instead of after the backup's
//! index, the new cluster handed out ids and fences the old one had used:
//! the test failed at its first new lease, "lease 131072 already exists"
//! (seen). With the restored slots at log positions (no slot shift), the
//! first fresh fence fell below the fences the load was granted after the
//! backup ("10092544 > 10289152" failed, seen).

use std::time::Duration;

use raftlock_client::Acquire;
use raftlock_storage::backup::Backup;

use crate::cluster::TestCluster;

/// Long enough that no lease of the backup expires during the test, even
/// on a starved machine.
const TTL: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_load_restores_every_lock_with_fences_above_it() {
    let old = TestCluster::new(3).await;
    let client = old.client().await;

    // Load: a writer acquiring and releasing while the backup is taken.
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    let load = {
        let client = client.clone();
        tokio::spawn(async move {
            let lease = client.grant_lease(TTL).await.expect("load lease");
            let mut fences = Vec::new();
            for i in 0u64.. {
                if *stop_rx.borrow_and_update() {
                    break;
                }
                let name = format!("load/{}", i % 8);
                let spec = Acquire::exclusive(name.clone(), "loader", lease);
                if let Ok(Some(a)) = client.acquire(&spec).await {
                    fences.push(a.fence);
                    let _ = client.release(&name, "loader").await;
                }
            }
            fences
        })
    };

    // Held locks, one with a waiter.
    let mut held = Vec::new();
    for i in 0..10 {
        let lease = client.grant_lease(TTL).await.unwrap();
        let name = format!("held/{i}");
        let owner = format!("owner-{i}");
        let spec = Acquire::exclusive(name.clone(), owner.clone(), lease);
        let fence = client.acquire(&spec).await.unwrap().unwrap().fence;
        held.push((name, owner, lease, fence));
    }
    let waiter_lease = client.grant_lease(TTL).await.unwrap();
    let waiting = Acquire {
        wait: false,
        ..Acquire::exclusive("held/0", "waiter", waiter_lease)
    };
    assert!(client.acquire(&waiting).await.unwrap().is_none(), "busy");
    let queued = {
        let client = client.clone();
        tokio::spawn(async move {
            let spec = Acquire::exclusive("held/0", "waiter", waiter_lease);
            client.acquire(&spec).await
        })
    };
    loop {
        let info = client.describe("held/0").await.unwrap().unwrap();
        if info.waiters.len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let bytes = old
        .admin_client()
        .await
        .backup(false)
        .await
        .expect("backup");
    // The old cluster goes on granting after the backup, as a cluster that
    // is later lost does until it is.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    stop_tx.send(true).unwrap();
    let load_fences = load.await.unwrap();
    let backup = Backup::decode(&bytes).unwrap();
    assert!(
        load_fences.iter().any(|f| slot_index_of(*f) > backup.index),
        "the load was granted fences after the backup"
    );
    // Every fence granted before the backup was taken is in its past.
    let before: Vec<u64> = held.iter().map(|h| h.3).collect();
    assert!(before.iter().all(|f| slot_index_of(*f) <= backup.index));
    queued.abort();
    old.shutdown().await;

    // A new cluster on new ports from the backup.
    let new = TestCluster::restored(3, &bytes, 0).await;
    let client = new.client().await;
    for (name, owner, lease, fence) in &held {
        let info = client.describe(name).await.unwrap().expect("still held");
        assert_eq!(info.holders.len(), 1, "{name}");
        assert_eq!(&info.holders[0].owner, owner, "{name}");
        assert_eq!(info.holders[0].fence, *fence, "{name}");
        assert_eq!(info.holders[0].lease, *lease, "{name}");
        assert!(client.check(name, *fence).await.unwrap(), "{name}");
        // The lease restarted with its full TTL under the new leader.
        let ttl = client.time_to_live(*lease).await.unwrap();
        let remaining = ttl.remaining.expect("the lease lives");
        assert!(remaining > TTL / 2, "{name}: {remaining:?} left");
    }
    let info = client.describe("held/0").await.unwrap().unwrap();
    assert_eq!(info.waiters.len(), 1, "the queue survived");
    assert_eq!(info.waiters[0].owner, "waiter");

    // Fences from the new cluster are above every fence the old one
    // granted, before the backup and after it, on every name.
    let highest_old = before.iter().chain(&load_fences).copied().max().unwrap();
    let lease = client.grant_lease(TTL).await.unwrap();
    let fresh = client
        .acquire(&Acquire::exclusive("fresh", "me", lease))
        .await
        .unwrap()
        .unwrap();
    assert!(fresh.fence > highest_old, "{} > {highest_old}", fresh.fence);
    let admin = new.admin_client().await;
    for i in 0..8 {
        // The backup may hold one of them for the loader, mid-cycle.
        let name = format!("load/{i}");
        admin.force_release(&name).await.unwrap();
        let granted = client
            .acquire(&Acquire::exclusive(name.clone(), "me", lease))
            .await
            .unwrap()
            .unwrap();
        assert!(granted.fence > highest_old, "{name}: {}", granted.fence);
    }
    // The waiter inherits held/0 with a fence above its old holder's.
    assert_eq!(admin.force_release("held/0").await.unwrap(), 1);
    let info = client.describe("held/0").await.unwrap().unwrap();
    assert_eq!(info.holders[0].owner, "waiter");
    assert!(info.holders[0].fence > fresh.fence);
    assert!(info.holders[0].fence > held[0].3);
    new.shutdown().await;
}

fn slot_index_of(fence: u64) -> u64 {
    raftlock_storage::slot_index(fence)
}
