//! `raftlock lock` stopped at a random moment — while connecting, while
//! its lease is granted, while its acquire is on the way or queued, just
//! as the grant arrives, or while holding: SIGTERM and SIGINT leave no
//! hold and no lease behind at once (the lease is revoked before exit);
//! SIGKILL leaves nothing behind once the lease's TTL has run out (nobody
//! renews it), and a queued wait goes as soon as its call's connection
//! does (the server cancels a wait whose caller went away).
//!
//! `RAFTLOCK_CANCEL_TRIALS` (divided by 10; default 8 per signal) sets
//! the trials.

use std::time::Duration;

use tokio::time::Instant;

use super::spawn;
use crate::cluster::TestCluster;

/// SIGINT, SIGTERM and SIGKILL (Linux numbers: the test kit's `signal`
/// takes them as they are).
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

fn trials() -> usize {
    std::env::var("RAFTLOCK_CANCEL_TRIALS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .map_or(8, |n| (n / 10).max(1))
}

/// A cheap source of random moments (the trials need no replay: each one
/// reports its own moment when it fails).
fn random_below(n: u64) -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.subsec_nanos() as u64);
    nanos.wrapping_mul(0x9E37_79B9_7F4A_7C15) % n.max(1)
}

/// How long `raftlock lock` takes from start to printing its grant here.
async fn time_to_grant(cluster: &TestCluster) -> Duration {
    let started = Instant::now();
    let (mut child, mut lines) = spawn(cluster, &["lock", "cli-signals/calibrate", "--ttl", "10s"]);
    let line = super::next_line(&mut lines).await;
    assert!(line.contains("acquired"), "{line}");
    let took = started.elapsed();
    raftlock_testkit::signal(child.id().expect("running"), SIGTERM).expect("SIGTERM");
    super::wait_exit(&mut child, Duration::from_secs(15)).await;
    took
}

/// Starts `raftlock lock` on a fresh name (busy half the time, freed by
/// `holder` at a random moment), sends `signal` at a random moment within
/// twice the time a grant takes, and answers the name once it exited.
async fn signalled_lock(
    cluster: &TestCluster,
    holder: &raftlock_client::Client,
    window: Duration,
    i: usize,
    signal: i32,
) -> (String, Duration) {
    let name = format!("cli-signals/{signal}/{i}");
    let window_us = window.as_micros() as u64;
    if random_below(2) == 0 {
        let guard = holder.lock(name.clone()).acquire().await.expect("holder");
        let after = Duration::from_micros(random_below(window_us));
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            guard.release().await.expect("holder release");
        });
    }
    let (mut child, _lines) = spawn(cluster, &["lock", &name, "--ttl", "2s"]);
    let after = Duration::from_micros(random_below(window_us));
    tokio::time::sleep(after).await;
    if let Some(pid) = child.id() {
        raftlock_testkit::signal(pid, signal).expect("signal");
    }
    super::wait_exit(&mut child, Duration::from_secs(30)).await;
    (name, after)
}

/// SIGTERM and SIGINT at random moments: nothing is left, checked right
/// after the process exited (well inside the 2 s TTL, so it was the
/// process's own cleanup, not expiry).
///
/// Without the client's cleanup of a dropped lease grant, a signal that
/// lands while the lease is being granted leaves the lease (with nothing
/// on it) until its TTL; a hold is never left, since the CLI revokes its
/// lease on the way out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_stopped_by_sigterm_or_sigint_leaves_nothing() {
    let cluster = TestCluster::new(3).await;
    let holder = cluster.client().await;
    let checker = cluster.client().await;
    let holder_lease = holder.session_lease().await.expect("holder session");
    let checker_lease = checker.session_lease().await.expect("checker session");
    let window = 2 * time_to_grant(&cluster).await;
    for i in 0..trials() {
        for signal in [SIGTERM, SIGINT] {
            let (name, after) = signalled_lock(&cluster, &holder, window, i, signal).await;
            let held_by_cli = |info: Option<raftlock_client::LockInfo>| {
                info.is_some_and(|l| {
                    l.holders.iter().any(|h| h.lease != holder_lease)
                        || l.waiters.iter().any(|w| w.lease != holder_lease)
                })
            };
            let info = checker.describe(&name).await.expect("describe");
            assert!(
                !held_by_cli(info.clone()),
                "signal {signal} after {after:?} left {info:?}"
            );
            let leases = checker.leases().await.expect("leases");
            let stray: Vec<_> = leases
                .iter()
                .filter(|(l, _)| *l != holder_lease && *l != checker_lease)
                .collect();
            assert!(
                stray.is_empty(),
                "signal {signal} after {after:?} left leases {stray:?}"
            );
        }
    }
}

/// SIGKILL at random moments: the process cannot clean up, so its lease
/// runs out (2 s TTL, nobody renews it) and takes every hold and wait
/// with it; nothing is left after that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_killed_leaves_nothing_once_its_lease_ran_out() {
    let cluster = TestCluster::new(3).await;
    let holder = cluster.client().await;
    let checker = cluster.client().await;
    let window = 2 * time_to_grant(&cluster).await;
    for i in 0..trials() {
        signalled_lock(&cluster, &holder, window, i, SIGKILL).await;
    }
    let holder_lease = holder.session_lease().await.expect("holder session");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<_> = checker
            .list("cli-signals/", 0)
            .await
            .expect("list")
            .into_iter()
            .filter(|l| {
                l.holders.iter().any(|h| h.lease != holder_lease)
                    || l.waiters.iter().any(|w| w.lease != holder_lease)
            })
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left after the TTL: {left:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SIGKILL while queued: the wait leaves the queue as soon as the killed
/// process's connection closes (the server cancels a wait whose call went
/// away), long before the lease's 60 s TTL could end it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_lock_killed_while_queued_leaves_the_queue_at_once() {
    let cluster = TestCluster::new(3).await;
    let holder = cluster.client().await;
    let guard = holder
        .lock("cli-signals/queued")
        .acquire()
        .await
        .expect("holder");
    let (mut child, _lines) = spawn(&cluster, &["lock", "cli-signals/queued", "--ttl", "60s"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let waiters =
        |info: &Option<raftlock_client::LockInfo>| info.as_ref().map_or(0, |l| l.waiters.len());
    while waiters(
        &holder
            .describe("cli-signals/queued")
            .await
            .expect("describe"),
    ) == 0
    {
        assert!(Instant::now() < deadline, "the CLI never queued");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    raftlock_testkit::signal(child.id().expect("running"), SIGKILL).expect("SIGKILL");
    super::wait_exit(&mut child, Duration::from_secs(15)).await;
    let killed = Instant::now();
    loop {
        let info = holder
            .describe("cli-signals/queued")
            .await
            .expect("describe");
        if waiters(&info) == 0 {
            break;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "still queued 20 s after the kill: {info:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    guard.release().await.expect("holder release");
}
