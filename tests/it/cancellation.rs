//! A cancelled or dropped acquire never leaves a hold, and never costs the
//! client its exactly-once session: randomized trials drop acquires at
//! every point of the call (before the request leaves, while it is in
//! flight, while it waits in the queue, while the grant is on its way
//! back), on free and on busy locks, directly and through a proxy that
//! delays every byte. Then a fresh client finds no hold left, and later
//! calls on the cancelled client succeed.
//!
//! `RAFTLOCK_CANCEL_TRIALS` sets the trials per run (default 150 each
//! way); `RAFTLOCK_CANCEL_SEED` replays a run (the seed is printed).

use std::time::Duration;

use raftlock_client::{Acquire, Client, Error};
use raftlock_testkit::DelayProxy;
use tokio::time::Instant;

use crate::cluster::TestCluster;

/// A small deterministic generator (xorshift64*), so a failing run can be
/// replayed from its seed.
struct Rng(u64);

impl Rng {
    fn from_env() -> Rng {
        let seed = std::env::var("RAFTLOCK_CANCEL_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64);
                nanos | 1
            });
        eprintln!("RAFTLOCK_CANCEL_SEED={seed}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn trials() -> usize {
    std::env::var("RAFTLOCK_CANCEL_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150)
}

/// How the trials went: how many acquires were dropped, granted, busy or
/// timed out, and the unexpected errors.
#[derive(Debug, Default)]
struct Tally {
    dropped: usize,
    granted: usize,
    not_granted: usize,
    errors: Vec<String>,
}

/// Twice the median time an acquire takes on `client` (in µs): cancel
/// points drawn below it fall before, during and after every step of the
/// call on this machine, however loaded.
async fn cancel_window_us(client: &Client, prefix: &str) -> u64 {
    let mut took = Vec::new();
    for i in 0..9 {
        let started = Instant::now();
        let guard = client
            .lock(format!("{prefix}/calibrate-{i}"))
            .acquire()
            .await
            .expect("calibrating acquire");
        took.push(started.elapsed());
        guard.release().await.expect("calibrating release");
    }
    took.sort();
    2 * took[took.len() / 2].as_micros() as u64
}

/// Runs `n` trials on `client`, each on its own lock under `prefix`; a
/// second client (`holder`) makes some of the locks busy and frees them
/// at a random moment, so grants land while the cancelled call is in any
/// state. Cancel points are drawn below twice an acquire's usual time.
async fn cancel_trials(
    client: &Client,
    holder: &Client,
    prefix: &str,
    n: usize,
    rng: &mut Rng,
) -> Tally {
    let mut tally = Tally::default();
    let mut frees = Vec::new();
    // Most trials find the session granted already (its grant is part of
    // the first acquire, which a short cancel point would always cut).
    let max_us = cancel_window_us(client, prefix).await.max(100);
    eprintln!("{prefix}: cancel points in 0..{max_us} µs");
    for i in 0..n {
        let name = format!("{prefix}/{i}");
        let after = Duration::from_micros(rng.below(max_us));
        let kind = rng.below(7);
        if kind == 4 {
            // Busy: the holder lets go at a random moment, maybe after
            // the acquire below gave up, maybe while its request travels.
            let guard = holder.lock(name.clone()).acquire().await.expect("holder");
            let hold_for = Duration::from_micros(rng.below(max_us));
            frees.push(tokio::spawn(async move {
                tokio::time::sleep(hold_for).await;
                guard.release().await
            }));
        }
        let attempt = async {
            match kind {
                // The guard API, waiting (free or busy lock).
                0 | 4 => client.lock(name.clone()).acquire().await.map(Some),
                // A try-lock.
                1 => client.lock(name.clone()).try_acquire().await,
                // A wait with its own timeout as well.
                2 => client
                    .lock(name.clone())
                    .timeout(Duration::from_millis(50))
                    .acquire()
                    .await
                    .map(Some),
                // A lease grant (revoked here when it completes).
                5 => {
                    let lease = client.grant_lease(Duration::from_secs(60)).await?;
                    client.revoke(lease).await.map(|_| None)
                }
                // Acquire and release, the cancel point anywhere in both
                // (a release cut short still completes).
                6 => {
                    let guard = client.lock(name.clone()).acquire().await?;
                    guard.release().await.map(|_| None)
                }
                // The low-level call on the session lease.
                _ => {
                    let lease = client.session_lease().await?;
                    let spec = Acquire::exclusive(name.clone(), "low-level", lease);
                    match client.acquire(&spec).await? {
                        Some(_) => client.release(&name, "low-level").await.map(|_| None),
                        None => Ok(None),
                    }
                }
            }
        };
        let dropped = if rng.below(2) == 0 {
            tokio::time::timeout(after, attempt).await.ok()
        } else {
            tokio::select! {
                r = attempt => Some(r),
                _ = tokio::time::sleep(after) => None,
            }
        };
        match dropped {
            None => tally.dropped += 1,
            Some(Ok(Some(guard))) => {
                tally.granted += 1;
                if let Err(e) = guard.release().await {
                    tally.errors.push(format!("{name}: release: {e}"));
                }
            }
            Some(Ok(None) | Err(Error::Timeout(_))) => tally.not_granted += 1,
            Some(Err(e)) => tally.errors.push(format!("{name}: {e}")),
        }
    }
    for free in frees {
        free.await.expect("holder task").expect("holder release");
    }
    tally
}

/// Waits (up to 30 s, for cleanups still on their way) until no lock under
/// `prefix` is held or waited for, as a fresh client sees it; answers what
/// is left.
async fn holds_left(cluster: &TestCluster, prefix: &str) -> Vec<String> {
    let fresh = cluster.client().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left: Vec<String> = fresh
            .list(prefix, 0)
            .await
            .expect("list")
            .into_iter()
            .map(|l| format!("{} {:?}", l.name, l.holders))
            .collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Later calls on a client whose acquires were cancelled: they must all
/// work (no `OutcomeUnknown` from a session the cluster never knew or
/// was told to forget).
async fn later_calls_work(client: &Client, prefix: &str) {
    for i in 0..3 {
        let name = format!("{prefix}/later-{i}");
        let guard = client
            .lock(name.clone())
            .acquire()
            .await
            .expect("later acquire");
        guard.release().await.expect("later release");
        let lease = client
            .grant_lease(Duration::from_secs(5))
            .await
            .expect("later grant");
        client.revoke(lease).await.expect("later revoke");
    }
}

/// Dropped acquires (and lease grants) on a 3-node cluster, with clients
/// connected directly and through a proxy delaying every byte by 1–3 ms
/// each way: no hold or lease is left, nothing else fails, and the client
/// keeps working.
///
/// Without the client's cleanup of abandoned acquires, grants that arrive
/// after the caller gave up stay held on the session lease (dozens per
/// run: "holds left under cancel/…"); without the request-id bookkeeping
/// that keeps an abandoned request outstanding, a client whose first
/// requests were all dropped is refused as "not known but has had
/// replies" (`OutcomeUnknown`); without the cleanup of a dropped grant,
/// its lease stays until its TTL ("leases left").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_leave_no_hold() {
    let cluster = TestCluster::new(3).await;
    let mut rng = Rng::from_env();
    let n = trials();
    let holder = cluster.client().await;

    let direct = cluster.client().await;
    let tally = cancel_trials(&direct, &holder, "cancel/direct", n, &mut rng).await;
    eprintln!("direct: {tally:?}");
    assert!(
        tally.errors.is_empty(),
        "unexpected errors: {:#?}",
        tally.errors
    );
    later_calls_work(&direct, "cancel/direct").await;

    // Through proxies that delay every byte.
    let latency = Duration::from_micros(1_000 + rng.below(2_000));
    let mut proxies = Vec::new();
    for (client_addr, _) in cluster.addrs.values() {
        proxies.push(
            DelayProxy::start(*client_addr, latency)
                .await
                .expect("proxy"),
        );
    }
    let slow = Client::connect_with(
        proxies.iter().map(|p| p.addr.to_string()),
        cluster.client_options(),
    )
    .await
    .expect("client");
    let tally = cancel_trials(&slow, &holder, "cancel/delayed", n, &mut rng).await;
    eprintln!("delayed by {latency:?}: {tally:?}");
    assert!(
        tally.errors.is_empty(),
        "unexpected errors: {:#?}",
        tally.errors
    );
    later_calls_work(&slow, "cancel/delayed").await;

    let left = holds_left(&cluster, "cancel/").await;
    assert!(left.is_empty(), "holds left under cancel/: {left:#?}");
    // No lease either, but the sessions' (the 60 s grants were all
    // revoked: by the trial, or by the cleanup of a dropped grant).
    let mut sessions = Vec::new();
    for c in [&holder, &direct, &slow] {
        sessions.push(c.session_lease().await.expect("session"));
    }
    let checker = cluster.client().await;
    sessions.push(checker.session_lease().await.expect("session"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let stray: Vec<_> = checker
            .leases()
            .await
            .expect("leases")
            .into_iter()
            .filter(|(l, _)| !sessions.contains(l))
            .collect();
        if stray.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "leases left: {stray:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A client whose very first calls are all dropped before any node could
/// answer them (the only node is down) still works once the node is back.
///
/// Without the bookkeeping that keeps a dropped request outstanding (and
/// `acked_below` at 1 until the cluster first answered), the next request
/// says it had replies below its number, and the cluster, which never saw
/// this client id, refuses it: `OutcomeUnknown` ("is not known but has had
/// replies").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_first_calls_were_dropped_still_works() {
    let mut cluster = TestCluster::new(1).await;
    let client = cluster.client().await;
    cluster.kill(1).await;
    for i in 0..5 {
        let call = client.lock(format!("first/{i}")).acquire();
        assert!(tokio::time::timeout(Duration::from_millis(50), call)
            .await
            .is_err());
    }
    cluster.restart(1).await;
    cluster.wait_for_leader().await;
    later_calls_work(&client, "first").await;
    let left = holds_left(&cluster, "first/").await;
    assert!(left.is_empty(), "holds left: {left:#?}");
}

/// `close()` waits for the cleanups of calls dropped just before: right
/// after it returns, no lease granted by a dropped call is left. Through a
/// proxy delaying every byte by 20 ms, so each grant was sent and is
/// dropped before its answer could come back.
///
/// Without the wait, `close()` returns after revoking the session while the
/// cleanups are still learning their grants' outcomes: "leases left".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_waits_for_the_cleanups_of_dropped_calls() {
    let cluster = TestCluster::new(1).await;
    let checker = cluster.client().await;
    let checker_lease = checker.session_lease().await.expect("session");
    let proxy = DelayProxy::start(cluster.addrs[&1].0, Duration::from_millis(20))
        .await
        .expect("proxy");
    let client = Client::connect_with([proxy.addr.to_string()], cluster.client_options())
        .await
        .expect("client");
    client
        .session_lease()
        .await
        .expect("connected, with a session");
    let grants: Vec<_> = (0..10)
        .map(|_| client.grant_lease(Duration::from_secs(60)))
        .collect();
    let all = futures::future::join_all(grants);
    assert!(tokio::time::timeout(Duration::from_millis(30), all)
        .await
        .is_err());
    client.close().await.expect("close");
    let left: Vec<_> = checker
        .leases()
        .await
        .expect("leases")
        .into_iter()
        .filter(|(l, _)| *l != checker_lease)
        .collect();
    assert!(left.is_empty(), "leases left: {left:?}");
}
