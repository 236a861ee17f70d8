//! The client's dial timeout (`ClientOptions::dial_timeout`): an endpoint
//! that accepts connections and never answers is passed over and the
//! client stays where it went; one that stops answering mid-life costs a
//! call about two dial timeouts; a call that waits on purpose longer than
//! the dial timeout, on a node that answers, is not cut off; an endpoint
//! slower than the dial timeout is given longer on each try; and the
//! caller's timeout ends connecting even before the dial timeout.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use raftlock_client::{Acquire, Client, ClientOptions, Error, LeaseId};
use raftlock_testkit::DelayProxy;
use tokio::io::AsyncReadExt;
use tokio::net::TcpListener;

use crate::cluster::TestCluster;
use crate::proxies::{freezable_proxy, lagging_proxy};

const TTL: Duration = Duration::from_secs(30);

/// The dial timeout and the retry budget of a client that must pass over
/// an endpoint that does not answer: the budget is ten dial timeouts.
const DIAL: Duration = Duration::from_millis(300);
const RETRY_FOR: Duration = Duration::from_secs(3);

/// A listener that accepts every connection and never answers, counting
/// the bytes it was sent.
async fn silent_listener() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = conn.read(&mut buf).await {
                    counter.fetch_add(n as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (addr, received)
}

/// A client of `endpoints` with this dial timeout and retry budget.
async fn client(
    cluster: &TestCluster,
    endpoints: Vec<String>,
    dial: Duration,
    retry_for: Duration,
) -> Client {
    let options = ClientOptions {
        dial_timeout: dial,
        retry_for,
        ..cluster.client_options()
    };
    Client::connect_with(endpoints, options)
        .await
        .expect("client")
}

/// A silent endpoint listed first is passed over, and later calls go
/// straight to where the first one went: the silent endpoint is sent
/// nothing more. Without the dial timeout the first call waited on it
/// until HTTP/2 keep-alive gave up (5 s), past this client's 3 s budget,
/// and failed "unavailable".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_first_endpoint_is_passed_over_and_the_choice_kept() {
    let cluster = TestCluster::new(3).await;
    let (silent, received) = silent_listener().await;
    let mut endpoints = vec![silent];
    endpoints.extend(cluster.endpoints());
    let c = client(&cluster, endpoints, DIAL, RETRY_FOR).await;
    let lease = c
        .grant_lease(TTL)
        .await
        .expect("served past the silent one");
    // What the first call sent it (its question) has arrived.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = received.load(Ordering::Relaxed);
    assert!(before > 0, "the silent endpoint was never tried");
    for i in 0..20 {
        let owner = format!("o{i}");
        c.acquire(&Acquire::exclusive("dial", &owner, lease))
            .await
            .expect("acquire")
            .expect("free lock");
        c.release("dial", &owner).await.expect("release");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        received.load(Ordering::Relaxed),
        before,
        "a later call went to the silent endpoint again"
    );
    cluster.shutdown().await;
}

/// The caller's timeout bounds connecting too: an acquire with a 300 ms
/// timeout whose only endpoint never answers, through a client whose dial
/// timeout is 10 s, ends "unavailable" long before the dial timeout,
/// naming the endpoint and how long it waited. Without the question
/// bounded by the caller's deadline (`call_bounded`: `dial.min(left)`) it
/// waited until HTTP/2 keep-alive broke the connection and failed after
/// 5.0 s with "http2 error" (seen).
#[tokio::test]
async fn the_callers_timeout_bounds_the_dial_timeout() {
    let (silent, _) = silent_listener().await;
    let options = ClientOptions {
        dial_timeout: Duration::from_secs(10),
        ..ClientOptions::default()
    };
    let c = Client::connect_with([silent.clone()], options)
        .await
        .expect("client");
    let started = std::time::Instant::now();
    let e = c
        .lock("bounded")
        .timeout(Duration::from_millis(300))
        .acquire()
        .await
        .expect_err("nothing answers");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}: {e}");
    assert!(matches!(e, raftlock_client::Error::Unavailable(_)), "{e}");
    let said = e.to_string();
    assert!(
        said.contains(&silent) && said.contains("connected, but no answer within"),
        "{said}"
    );
    assert!(!said.contains("10s"), "{said}");
}

/// A client whose first endpoint is the leader behind a [`freezable_proxy`]
/// (so the client stays on it), then the other nodes; its lease, granted
/// through the proxy; and the proxy's switch.
async fn client_behind_freezable_leader(
    cluster: &TestCluster,
) -> (Client, LeaseId, Arc<AtomicBool>) {
    let leader = cluster.wait_for_leader().await;
    let (proxy, frozen) = freezable_proxy(cluster.addrs[&leader].0.to_string()).await;
    let mut endpoints = vec![proxy];
    endpoints.extend(
        cluster
            .others(leader)
            .iter()
            .map(|id| cluster.addrs[id].0.to_string()),
    );
    let c = client(cluster, endpoints, DIAL, RETRY_FOR).await;
    let lease = c.grant_lease(TTL).await.expect("through the proxy");
    (c, lease, frozen)
}

/// The endpoint a client used stops answering (frozen, as by SIGSTOP):
/// the next call moves on after about two dial timeouts, well within its
/// 3 s budget. Without the check of a call that has no answer within the
/// dial timeout (`dial::watch`) the call waited until HTTP/2 keep-alive
/// broke the connection (5 s) and failed "unavailable".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_stops_answering_is_left_for_the_next() {
    let cluster = TestCluster::new(3).await;
    let (c, lease, frozen) = client_behind_freezable_leader(&cluster).await;
    frozen.store(true, Ordering::Relaxed);
    c.acquire(&Acquire::exclusive("frozen", "a", lease))
        .await
        .expect("served past the frozen endpoint")
        .expect("free lock");
    c.release("frozen", "a").await.expect("release");
    cluster.shutdown().await;
}

/// An acquire that waits 2 s for a lock, through a client whose dial
/// timeout is 200 ms and whose retry budget is 1 s, on one node that
/// answers: it is granted, not cut off at the dial timeout. With a dial
/// timeout that bounded the whole call (`dial::watch` giving up on a node
/// that answered its question), the first attempt was dropped at about
/// 400 ms, the node cancelled the wait as its caller went away, and the
/// acquire ended "wait for long ended without a grant".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_longer_than_the_dial_timeout_is_not_cut_off() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let holder = cluster.client().await;
    let lease = holder.grant_lease(TTL).await.expect("lease");
    holder
        .acquire(&Acquire::exclusive("long", "holder", lease))
        .await
        .expect("acquire")
        .expect("free lock");
    let waiter = client(
        &cluster,
        vec![cluster.addrs[&leader].0.to_string()],
        Duration::from_millis(200),
        Duration::from_secs(1),
    )
    .await;
    let wait = tokio::spawn(async move {
        waiter
            .acquire(&Acquire::exclusive("long", "waiter", lease))
            .await
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    holder.release("long", "holder").await.expect("release");
    let granted = tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("the waiter returns")
        .expect("waiter task");
    assert!(
        matches!(granted, Ok(Some(_))),
        "the waiting acquire ended with {granted:?}"
    );
    cluster.shutdown().await;
}

/// What waits behind a holder in [`a_lagged_wait_asks_again`]: an acquire
/// of a lock, or a campaign in an election.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Acquire,
    Campaign,
}

impl Wait {
    /// `client` takes `name` for `owner`, waiting if need be.
    async fn take(self, client: &Client, name: &str, owner: &str, lease: u64) -> Result<(), Error> {
        match self {
            Wait::Acquire => client
                .acquire(&Acquire::exclusive(name, owner, lease))
                .await?
                .map(drop)
                .ok_or_else(|| Error::Internal("a waiting acquire was answered busy".into())),
            Wait::Campaign => client
                .campaign(name, owner, lease, b"v", None)
                .await
                .map(drop),
        }
    }

    /// `client` gives `name` up for `owner`.
    async fn give_up(self, client: &Client, name: &str, owner: &str) {
        match self {
            Wait::Acquire => drop(client.release(name, owner).await.expect("release")),
            Wait::Campaign => client.resign(name, owner).await.expect("resign"),
        }
    }
}

/// Waits until `check` holds of `name`'s waiters, or fails saying `what`.
async fn until_waiters(client: &Client, name: &str, what: &str, check: impl Fn(usize) -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = client.describe(name).await.expect("describe");
        if check(info.map_or(0, |l| l.waiters.len())) {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A queued acquire or campaign whose node stops answering for a while
/// (its answers held back until the node has cancelled the wait) is given
/// up on that attempt, and the node cancels the abandoned wait; the
/// client's next attempt of the same request finds no wait left. The call
/// must go on waiting (it asks again, under a new request id) and be
/// granted when the holder lets go. Without that it ended "wait for lagged
/// ended without a grant" as soon as the answers flowed again (seen;
/// `bad_input::waiter_queue_is_bounded` failed so on a loaded machine).
async fn a_lagged_wait_asks_again(wait: Wait) {
    let cluster = TestCluster::new(1).await;
    let leader = cluster.wait_for_leader().await;
    let holder = cluster.client().await;
    let lease = holder.grant_lease(TTL).await.expect("lease");
    wait.take(&holder, "lagged", "holder", lease)
        .await
        .expect("the holder takes it");
    let (proxy, lagging) = lagging_proxy(cluster.addrs[&leader].0.to_string()).await;
    let waiter = client(
        &cluster,
        vec![proxy],
        Duration::from_millis(200),
        Duration::from_secs(10),
    )
    .await;
    let waiting = tokio::spawn(async move { wait.take(&waiter, "lagged", "waiter", lease).await });
    until_waiters(&holder, "lagged", "the waiter never queued", |n| n > 0).await;
    lagging.store(true, Ordering::Relaxed);
    // The first attempt is given up after its question goes unanswered
    // (about 400 ms) and the node cancels its wait.
    until_waiters(
        &holder,
        "lagged",
        "the abandoned attempt's wait was never cancelled",
        |n| n == 0,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    lagging.store(false, Ordering::Relaxed);
    // The client's next attempts find the node answering again.
    let requeued = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let info = holder.describe("lagged").await.expect("describe");
        if info.is_some_and(|l| !l.waiters.is_empty()) {
            break;
        }
        if waiting.is_finished() {
            let ended = waiting.await.expect("waiter task");
            panic!("the {wait:?} ended instead of waiting: {ended:?}");
        }
        assert!(
            tokio::time::Instant::now() < requeued,
            "the waiter never queued again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    wait.give_up(&holder, "lagged", "holder").await;
    let granted = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiter returns")
        .expect("waiter task");
    assert!(
        granted.is_ok(),
        "the waiting {wait:?} ended with {granted:?}"
    );
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_whose_attempt_was_cancelled_asks_again() {
    a_lagged_wait_asks_again(Wait::Acquire).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_whose_attempt_was_cancelled_asks_again() {
    a_lagged_wait_asks_again(Wait::Campaign).await;
}

/// The one endpoint a client has answers 2.5 s late, and its dial timeout
/// is 1 s: the call is served, because each try that had no answer in
/// time gives that endpoint longer on the next (2 s, then 3 s, up to 4).
/// With the same dial timeout on every try, each gave up at 1 s and the
/// call failed when its 30 s budget ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_endpoint_is_given_longer_on_the_next_try() {
    const SLOW_DIAL: Duration = Duration::from_secs(1);
    const LATE: Duration = Duration::from_millis(2500);
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    // Each way half the lateness: the answer comes `LATE` after the call.
    let proxy = DelayProxy::start(cluster.addrs[&leader].0, LATE / 2)
        .await
        .expect("delay proxy");
    let endpoints = vec![proxy.addr.to_string()];
    let c = client(&cluster, endpoints, SLOW_DIAL, Duration::from_secs(30)).await;
    let started = std::time::Instant::now();
    let served = c.grant_lease(TTL).await;
    let took = started.elapsed();
    assert!(
        served.is_ok(),
        "a node answering {LATE:?} late was not waited out: {served:?} after {took:?}"
    );
    // At least the late answer itself; the first tries gave up on it.
    assert!(took >= LATE, "served in {took:?}");
    cluster.shutdown().await;
}

/// How many `Status` calls node `id` has served (its `/metrics`).
async fn status_calls(cluster: &TestCluster, id: u64) -> u64 {
    let (_, metrics) = crate::observe::get(cluster, id, "/metrics").await;
    metrics
        .lines()
        .filter(|l| l.starts_with("raftlock_grpc_requests_total") && l.contains("Cluster/Status"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// Calls waiting on one node through one client share their questions
/// to it: 200 acquires queued behind a holder, each past its dial timeout
/// five times over, cost the node a few `Status` calls between them. When
/// each call asked for itself, the node answered 400 (one first question
/// and one "are you alive" per call) where this asserts at most 20.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_calls_share_their_questions_to_the_node() {
    const WAITERS: usize = 200;
    let mut base = crate::cluster::test_config();
    base.serving.admin_addr = Some("127.0.0.1:0".into());
    let cluster = TestCluster::with_config(1, base).await;
    let holder = cluster.client().await;
    let lease = holder.grant_lease(TTL).await.expect("lease");
    holder
        .acquire(&Acquire::exclusive("crowd", "holder", lease))
        .await
        .expect("acquire")
        .expect("free lock");
    let waiter = client(&cluster, cluster.endpoints(), DIAL, RETRY_FOR).await;
    let before = status_calls(&cluster, 1).await;
    let mut tasks = Vec::new();
    for i in 0..WAITERS {
        let c = waiter.clone();
        tasks.push(tokio::spawn(async move {
            c.acquire(&Acquire::exclusive("crowd", format!("w{i}"), lease))
                .await
        }));
    }
    until_waiters(&holder, "crowd", "the waiters never queued", |n| {
        n == WAITERS
    })
    .await;
    tokio::time::sleep(DIAL * 5).await;
    let asked = status_calls(&cluster, 1).await - before;
    println!("{asked} status calls for {WAITERS} waiting acquires");
    if let Some(ended) = tasks.iter().position(|t| t.is_finished()) {
        let ended = tasks.swap_remove(ended).await.expect("waiter task");
        panic!("a waiter ended instead of waiting: {ended:?}");
    }
    assert!(
        asked <= 20,
        "{asked} status calls for {WAITERS} waiting acquires"
    );
    holder.release("crowd", "holder").await.expect("release");
    for t in tasks {
        t.abort();
    }
    cluster.shutdown().await;
}

/// Fifty acquires at once (calls that may wait, so only the dial timeout
/// moves them on) on an endpoint that stops answering (frozen) all move
/// on to the next and are granted, though they share their questions to
/// it: a question that went unanswered is the answer for every call that
/// waited for it, and a call whose turn to ask does not come within its
/// dial timeout counts the question in flight as unanswered. Each call
/// asking in turn instead took the crowd one dial timeout after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_leaves_an_endpoint_that_stops_answering_together() {
    let cluster = TestCluster::new(3).await;
    let (c, lease, frozen) = client_behind_freezable_leader(&cluster).await;
    frozen.store(true, Ordering::Relaxed);
    let started = std::time::Instant::now();
    let calls: Vec<_> = (0..50)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                c.acquire(&Acquire::exclusive(format!("crowd{i}"), "a", lease))
                    .await
            })
        })
        .collect();
    for call in calls {
        let served = call.await.expect("call task");
        assert!(
            matches!(served, Ok(Some(_))),
            "not granted past the frozen endpoint: {served:?} after {:?}",
            started.elapsed()
        );
    }
    println!("50 acquires moved on in {:?}", started.elapsed());
    cluster.shutdown().await;
}
