//! A hold taken away by the cluster — `raftlock locks force-release`, as an
//! operator types it, or a lease that expires between two keep-alives — is
//! seen by the very next `ensure_owned` (one linearizable `Check`), and a
//! task lock's `run` reports a job whose lock was lost before it ended.
//!
//! The clients here keep their sessions for a minute, so the background
//! keep-alive round (a third of the TTL) that also notices such a loss is
//! 20 s away: only the proof asked for can see it in time.

use std::time::Duration;

use raftlock_client::{blocking, Client, ClientOptions, Error};

use crate::cluster::TestCluster;

/// Session TTL: long, so the background round does not notice first.
const TTL: Duration = Duration::from_secs(60);

fn endpoints(cluster: &TestCluster) -> Vec<String> {
    cluster.addrs.values().map(|(c, _)| c.to_string()).collect()
}

async fn long_session_client(cluster: &TestCluster) -> Client {
    Client::builder(endpoints(cluster))
        .session_ttl(TTL)
        .connect()
        .await
        .expect("client")
}

/// `raftlock locks force-release NAME`, the CLI as an operator runs it.
async fn force_release_cli(cluster: &TestCluster, name: &str) {
    let node_dir = crate::cli::node_dir(cluster);
    let out = crate::cli::run(
        cluster,
        &["locks", "force-release", name, "--data-dir", &node_dir],
    )
    .await;
    assert!(
        out.status.success(),
        "force-release {name}: {}",
        crate::cli::describe(&out)
    );
}

/// Cuts `lease` to 50 ms from another client and waits until the cluster
/// has expired it and the hold of `name` with `fence` is gone (a wait, not
/// a timed assertion: the deadline only stops a wedged test).
async fn expire_on_the_cluster(other: &Client, lease: u64, name: &str, fence: u64) {
    other
        .set_lease_ttl(lease, Duration::from_millis(50))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while other.check(name, fence).await.unwrap() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "lease {lease} not expired"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn is_lost(result: &Result<(), Error>) -> bool {
    matches!(result, Err(Error::LockLost(_)))
}

/// Without the `Check` in `ensure_owned` (the local `ensure_valid` alone)
/// the lock, its leadership twin and the task guard all passed the check
/// right after the force-release, and `is_lost` stayed false.
#[tokio::test]
async fn force_release_is_seen_by_the_next_ensure_owned() {
    let cluster = TestCluster::new(3).await;
    let client = long_session_client(&cluster).await;

    let guard = client.lock("owned/L").acquire().await.unwrap();
    guard.ensure_owned().await.unwrap();
    force_release_cli(&cluster, "owned/L").await;
    let proof = guard.ensure_owned().await;
    assert!(is_lost(&proof), "{proof:?}");
    assert!(guard.is_lost(), "the loss is kept for lost() and release()");
    assert!(matches!(guard.release().await, Err(Error::LockLost(_))));

    let leadership = client.election("owned/E").campaign("me").await.unwrap();
    leadership.ensure_owned().await.unwrap();
    force_release_cli(&cluster, "owned/E").await;
    let proof = leadership.ensure_owned().await;
    assert!(is_lost(&proof), "{proof:?}");

    let task = client.task_lock("owned/T", Duration::ZERO, TTL);
    let guard = task.try_acquire().await.unwrap().expect("free");
    guard.ensure_owned().await.unwrap();
    force_release_cli(&cluster, "owned/T").await;
    let proof = guard.ensure_owned().await;
    assert!(is_lost(&proof), "{proof:?}");
    assert!(is_lost(&guard.finish().await));
    cluster.shutdown().await;
}

/// A lease that the cluster expires between two keep-alives (its TTL cut
/// by another client) is seen by the next `ensure_owned`. Without the
/// `Check` the guard passed: its last keep-alive was a second old.
#[tokio::test]
async fn lease_expiry_is_seen_by_the_next_ensure_owned() {
    let cluster = TestCluster::new(3).await;
    let client = long_session_client(&cluster).await;
    let other = long_session_client(&cluster).await;

    let guard = client.lock("owned/X").ttl(TTL).acquire().await.unwrap();
    expire_on_the_cluster(&other, guard.lease(), "owned/X", guard.fence()).await;
    let proof = guard.ensure_owned().await;
    assert!(is_lost(&proof), "{proof:?}");
    cluster.shutdown().await;
}

/// `TaskLock::run` answers `LockLost` for a job whose lock was
/// force-released (by the CLI) or expired while it ran. Without the check
/// at the job's end, `run` answered `Ok(Some(_))` for both and only logged
/// a warning.
#[tokio::test]
async fn task_lock_run_reports_a_job_whose_lock_was_lost() {
    let cluster = TestCluster::new(3).await;
    let client = long_session_client(&cluster).await;
    let other = long_session_client(&cluster).await;

    let released = client.task_lock("owned/run-f", Duration::ZERO, TTL);
    let ran = released
        .run(|| async {
            force_release_cli(&cluster, "owned/run-f").await;
            "ran"
        })
        .await;
    assert!(matches!(ran, Err(Error::LockLost(_))), "{ran:?}");

    let expired = client.task_lock("owned/run-x", Duration::ZERO, TTL);
    let ran = expired
        .run(|| async {
            let info = other.describe("owned/run-x").await.unwrap().expect("held");
            let holder = &info.holders[0];
            expire_on_the_cluster(&other, holder.lease, "owned/run-x", holder.fence).await;
            "ran"
        })
        .await;
    assert!(matches!(ran, Err(Error::LockLost(_))), "{ran:?}");

    // A job whose lock held throughout still answers its output.
    let kept = client.task_lock("owned/run-ok", Duration::ZERO, TTL);
    assert_eq!(kept.run(|| async { 7 }).await.unwrap(), Some(7));
    cluster.shutdown().await;
}

/// The blocking API keeps the same promises: `ensure_owned` after a
/// force-release, and `TaskLock::run`. Without the fix the blocking
/// `run` answered `Ok(Some(_))` and logged a warning.
#[test]
fn blocking_api_sees_a_force_release() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let cluster = rt.block_on(TestCluster::new(3));
    let options = ClientOptions {
        session_ttl: TTL,
        ..ClientOptions::default()
    };
    let client = blocking::Client::connect_with(endpoints(&cluster), options).unwrap();

    let guard = client.lock("owned/B").acquire().unwrap();
    guard.ensure_owned().unwrap();
    rt.block_on(force_release_cli(&cluster, "owned/B"));
    let proof = guard.ensure_owned();
    assert!(is_lost(&proof), "{proof:?}");

    let task = client.task_lock("owned/BT", Duration::ZERO, TTL);
    let ran = task.run(|| rt.block_on(force_release_cli(&cluster, "owned/BT")));
    assert!(matches!(ran, Err(Error::LockLost(_))), "{ran:?}");

    client.close().unwrap();
    drop((guard, client));
    rt.block_on(cluster.shutdown());
}
