//! Node failures: leader kill, a holder vanishing until its lease expires,
//! a lagging node catching up by snapshot, full-cluster restart.

use std::time::Duration;

use raftlock_client::{Acquire, Acquired, Client, LeaseId};
use tokio::task::JoinHandle;

use crate::cluster::{test_config, TestCluster};

const TTL: Duration = Duration::from_secs(30);

/// A three-node cluster where owner `a` holds a lock and owner `b` waits
/// behind it, both on one lease.
struct Contended {
    cluster: TestCluster,
    /// The client `a` acquired through.
    client: Client,
    lease: LeaseId,
    /// `a`'s grant.
    held: Acquired,
    /// `b`'s acquire, queued (through a client of its own) when this is
    /// returned.
    waiter: JoinHandle<Result<Option<Acquired>, raftlock_client::Error>>,
}

/// Starts the cluster, lets `a` take `name` and queues `b` behind it.
async fn held_with_a_waiter(name: &'static str) -> Contended {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.unwrap();
    let held = client
        .acquire(&Acquire::exclusive(name, "a", lease))
        .await
        .unwrap()
        .unwrap();
    let waiter_client = cluster.client().await;
    let waiter = tokio::spawn(async move {
        waiter_client
            .acquire(&Acquire::exclusive(name, "b", lease))
            .await
    });
    while client
        .describe(name)
        .await
        .unwrap()
        .unwrap()
        .waiters
        .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Contended {
        cluster,
        client,
        lease,
        held,
        waiter,
    }
}

#[tokio::test]
async fn leader_kill_keeps_locks_waiters_and_fences() {
    let Contended {
        mut cluster,
        client,
        lease,
        held,
        waiter,
    } = held_with_a_waiter("k").await;

    let old = cluster.wait_for_leader().await;
    cluster.kill(old).await;
    let new = cluster.wait_for_leader().await;
    assert_ne!(old, new);

    // The hold, the waiter and the lease survived.
    let info = client.describe("k").await.unwrap().unwrap();
    assert_eq!(info.holders[0].owner, "a");
    assert_eq!(info.holders[0].fence, held.fence);
    assert_eq!(info.waiters.len(), 1);
    assert_eq!(info.waiters[0].owner, "b");
    assert!(client.keep_alive(lease).await.is_ok());

    // The new leader serves: releasing grants the waiter, with a bigger fence.
    client.release("k", "a").await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(got.fence > held.fence);

    cluster.restart(old).await;
    cluster.wait_for_leader().await;
    cluster.shutdown().await;
}

#[tokio::test]
async fn expired_holder_hands_over_to_waiters_in_fifo_order() {
    let cluster = TestCluster::new(3).await;
    let client = cluster.client().await;
    // The holder's lease is short and nobody keeps it alive: its owner is gone.
    let gone = client
        .grant_lease(Duration::from_millis(400))
        .await
        .unwrap();
    let held = client
        .acquire(&Acquire::exclusive("exp", "gone", gone))
        .await
        .unwrap()
        .unwrap();

    let live = client.grant_lease(TTL).await.unwrap();
    let mut tasks = Vec::new();
    for owner in ["w1", "w2"] {
        let c = client.clone();
        tasks.push(tokio::spawn(async move {
            c.acquire(&Acquire::exclusive("exp", owner, live)).await
        }));
        // Queue the next waiter only once this one is in line (or, on a
        // slow machine, already granted because the lease ran out).
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let info = client.describe("exp").await.unwrap();
            let present = info.is_some_and(|i| {
                i.holders.iter().any(|h| h.owner == owner)
                    || i.waiters.iter().any(|w| w.owner == owner)
            });
            if present {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{owner} never queued"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let w1 = tokio::time::timeout(Duration::from_secs(5), tasks.remove(0))
        .await
        .unwrap()
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(w1.fence > held.fence);
    let info = client.describe("exp").await.unwrap().unwrap();
    assert_eq!(
        info.holders[0].owner, "w1",
        "first waiter must get the lock"
    );
    assert_eq!(info.waiters[0].owner, "w2");
    assert!(
        client.keep_alive(gone).await.is_err(),
        "the expired lease must stay expired"
    );
    assert!(!client.check("exp", held.fence).await.unwrap());
    cluster.shutdown().await;
}

#[tokio::test]
async fn lagging_node_catches_up_by_snapshot() {
    let mut config = test_config();
    config.replication.snapshot_after_entries = 50;
    config.replication.keep_entries_after_snapshot = 10;
    let cluster = TestCluster::with_config(3, config).await;
    let leader = cluster.wait_for_leader().await;
    let lagging = cluster
        .running()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap();
    cluster.isolate(lagging);

    let client = cluster.client_of(leader).await;
    // Long enough for 200 acquires on a starved machine (30 s was not).
    let lease = client.grant_lease(Duration::from_secs(600)).await.unwrap();
    for i in 0..200 {
        let name = format!("snap/{i}");
        client
            .acquire(&Acquire::exclusive(&name, "o", lease))
            .await
            .unwrap()
            .unwrap();
    }
    let status = cluster.node(leader).status();
    assert!(status.snapshot_index > 0, "leader took no snapshot");
    cluster.heal();
    cluster.wait_applied(lagging, status.applied_index).await;
    let lagging_client = cluster.client_of(lagging).await;
    let locks = lagging_client.list("snap/", 0).await.unwrap();
    assert_eq!(locks.len(), 200);
    assert!(
        cluster.node(lagging).status().snapshot_index > 0,
        "the follower should have installed a snapshot"
    );
    cluster.shutdown().await;
}

/// A snapshot larger than one piece (raftlock_raft::peer::snapshot_transfer::
/// SNAPSHOT_CHUNK_BYTES) crosses in pieces and is installed whole: 40
/// elections with 48 KiB values make a snapshot of several MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_of_many_pieces_reaches_a_lagging_node() {
    let mut config = test_config();
    config.replication.snapshot_after_entries = 20;
    config.replication.keep_entries_after_snapshot = 5;
    let cluster = TestCluster::with_config(3, config).await;
    let leader = cluster.wait_for_leader().await;
    let lagging = cluster.others(leader)[0];
    cluster.isolate(lagging);

    let client = cluster.client_of(leader).await;
    let lease = client.grant_lease(TTL).await.unwrap();
    for i in 0..40u8 {
        let value = vec![i; 48 << 10];
        client
            .campaign(&format!("big/{i}"), "o", lease, &value, None)
            .await
            .unwrap();
    }
    let status = cluster.node(leader).status();
    assert!(status.snapshot_index > 0, "leader took no snapshot");
    cluster.heal();
    cluster.wait_applied(lagging, status.applied_index).await;
    assert!(
        cluster.node(lagging).status().snapshot_index > 0,
        "the follower should have installed a snapshot"
    );
    let lagging_client = cluster.client_of(lagging).await;
    for i in [0u8, 17, 39] {
        let leader = lagging_client.leader(&format!("big/{i}")).await.unwrap();
        assert!(leader.has_leader, "big/{i} has no leader");
        assert_eq!(leader.value, vec![i; 48 << 10], "value of big/{i}");
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn full_cluster_restart_loses_nothing() {
    let Contended {
        mut cluster,
        client,
        lease,
        held: a,
        waiter,
    } = held_with_a_waiter("r").await;
    let before = client.describe("r").await.unwrap().unwrap();

    for id in cluster.running() {
        cluster.kill(id).await;
    }
    // The waiting call goes on (retrying under its request id): aborting
    // it would give the wait up, and the client would withdraw it.
    drop(waiter);
    for id in [1, 2, 3] {
        cluster.restart(id).await;
    }
    cluster.wait_for_leader().await;
    let client = cluster.client().await;
    let after = client.describe("r").await.unwrap().unwrap();
    assert_eq!(after.holders[0].fence, before.holders[0].fence);
    assert_eq!(after.holders[0].owner, "a");
    assert_eq!(
        after.waiters.iter().map(|w| &w.owner).collect::<Vec<_>>(),
        ["b"]
    );
    assert!(client.keep_alive(lease).await.is_ok());

    // Fences keep increasing after the restart.
    client.release("r", "a").await.unwrap();
    let info = client.describe("r").await.unwrap().unwrap();
    assert_eq!(info.holders[0].owner, "b");
    assert!(info.holders[0].fence > a.fence);
    cluster.shutdown().await;
}

/// A leader restarted with its vote for itself was restored as leader in the
/// same term (openraft 0.9, and 0.10 by default; raftlock turns that off,
/// and this test fails with it on: the old leader leads in its old term),
/// and the committed index it reloads is only a
/// hint that may lag: the last `save_committed` before a kill -9 was not
/// flushed yet. openraft's read index is then that stale hint, and a read
/// could miss a write acknowledged before the crash (found by the chaos
/// suite after a full restart). Here the hint is set back by hand, as a
/// kill -9 leaves it, and the restored leader cannot re-commit its log
/// (entries to its followers are held while heartbeats pass), so a read
/// that does not wait for the leader's whole log answers stale at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_leader_does_not_read_behind_an_acknowledged_write() {
    use openraft::storage::RaftLogStorage;
    use openraft::vote::RaftLeaderId;
    use raftlock_storage::{CommittedLeaderId, LogId};

    let mut cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let followers = cluster.others(leader);
    let client = cluster.client_of(leader).await;
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("before", "o", lease))
        .await
        .unwrap()
        .unwrap();
    let status = cluster.node(leader).status();
    let (term, hint) = (status.term, status.applied_index);
    client
        .acquire(&Acquire::exclusive("after", "o", lease))
        .await
        .unwrap()
        .unwrap();
    drop(client);

    // The leader last, so nobody else campaigns meanwhile.
    for id in &followers {
        cluster.kill(*id).await;
    }
    cluster.kill(leader).await;
    {
        let dir = cluster.dir.path().join(format!("node{leader}"));
        // The killed node's tasks may hold the database a moment longer.
        let until = tokio::time::Instant::now() + Duration::from_secs(10);
        let (mut log, _sm) = loop {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            // `SingleNode` makes no claim about the cluster's formation.
            let options =
                raftlock_storage::OpenOptions::new(leader, raftlock_storage::Bootstrap::SingleNode);
            match raftlock_storage::open(&dir, &options, tx) {
                Ok(stores) => break stores,
                Err(e) if tokio::time::Instant::now() < until => {
                    tracing::debug!("data dir still in use: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("cannot open node {leader}'s data dir: {e}"),
            }
        };
        let stale = LogId::new(CommittedLeaderId::new(term, leader), hint);
        log.save_committed(Some(stale)).await.unwrap();
        log.flush().await.unwrap();
    }
    for id in &followers {
        cluster.filter.hold_entries(leader, *id);
    }
    cluster.restart(leader).await;
    for id in &followers {
        cluster.restart(*id).await;
    }
    // Leader restore is off: whoever leads now was elected, in a later
    // term, and its first entry of that term comes after every entry
    // acknowledged before the restart.
    let new_leader = cluster.wait_for_leader().await;
    let now = cluster.node(new_leader).status().term;
    assert!(
        now > term,
        "node {new_leader} leads in term {now}, not after the term {term} before the restart"
    );

    let client = cluster.client_of(new_leader).await;
    let read = tokio::spawn(async move { client.describe("after").await });
    tokio::time::sleep(Duration::from_secs(1)).await;
    cluster.heal();
    let after = read.await.unwrap().unwrap();
    assert!(
        after.is_some_and(|l| l.holders.iter().any(|h| h.owner == "o")),
        "a read after the restart missed the acknowledged grant of `after`"
    );
    cluster.shutdown().await;
}

/// Followers that answer an append carrying entries later than a heartbeat
/// interval (50 ms here) after it was sent, as on a slow disk or, with TLS,
/// on a starved machine, still let the leader commit. openraft bounds such
/// an append by the heartbeat interval; with only that, every append timed
/// out before its answer came, was sent again with whatever was proposed
/// meanwhile, and nothing committed for as long as the followers stayed
/// that slow: a write forwarded to the leader waited out all of
/// `leader_wait` (30 s, in the TLS cluster test on a loaded CI machine).
/// Heartbeats are answered at once here, so the leader keeps its lease.
#[tokio::test]
async fn followers_slower_than_a_heartbeat_still_commit() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let heartbeat = cluster.base.replication.heartbeat;
    for follower in cluster.others(leader) {
        cluster.filter.slow_entries(leader, follower, heartbeat * 3);
    }
    let client = cluster.client_of(leader).await;
    for i in 0..3 {
        client
            .grant_lease(TTL)
            .await
            .unwrap_or_else(|e| panic!("write {i} with followers slower than a heartbeat: {e}"));
    }
    cluster.shutdown().await;
}
