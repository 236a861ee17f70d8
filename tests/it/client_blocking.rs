//! `raftlock_client::blocking::Client` from plain threads: locks released on drop
//! before `drop` returns, try-lock, semaphores, elections.

use std::time::Duration;

use raftlock_client::{blocking, ClientOptions};

use crate::cluster::TestCluster;

#[test]
fn blocking_client_locks_and_elects() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = rt.block_on(TestCluster::new(3));
    let eps: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let options = ClientOptions {
        session_ttl: Duration::from_secs(1),
        ..ClientOptions::default()
    };
    let a = blocking::Client::connect_with(eps.clone(), options.clone()).unwrap();
    let b = blocking::Client::connect_with(eps, options).unwrap();

    let guard = a.lock("sync").acquire().unwrap();
    assert!(b.check("sync", guard.fence()).unwrap());
    assert!(b.lock("sync").try_acquire().unwrap().is_none());
    assert!(guard.wait_lost(Some(Duration::from_millis(1500))).is_none());
    let fence = guard.fence();
    drop(guard);
    // Released before drop returned.
    assert!(a.describe("sync").unwrap().is_none());
    let next = b.lock("sync").try_acquire().unwrap().unwrap();
    assert!(next.fence() > fence);
    next.release().unwrap();

    let permits = a.semaphore("slots", 2).acquire(2).unwrap();
    assert!(b.semaphore("slots", 2).try_acquire(1).unwrap().is_none());
    drop(permits);

    let election = a.election("sync-e");
    let mut observe = b.election("sync-e").observe();
    assert!(observe.next().unwrap().unwrap().is_none());
    let lead = election.campaign("me").unwrap();
    let seen = observe
        .next_timeout(Duration::from_secs(3))
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        (seen.value.as_slice(), seen.fence),
        (&b"me"[..], lead.fence())
    );
    drop(lead);
    assert!(election.leader().unwrap().is_none());

    let ran = a
        .task_lock("sync-task", Duration::ZERO, Duration::from_secs(2))
        .run(|| 7)
        .unwrap();
    assert_eq!(ran, Some(7));

    a.close().unwrap();
    drop((a, b, observe));
    rt.block_on(cluster.shutdown());
}
