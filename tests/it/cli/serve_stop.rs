//! SIGTERM to every `raftlock serve` of a cluster at once, as `systemctl
//! stop` on every host or `docker compose down` sends it: each process
//! ends within a moment, though the last ones to go have no quorum left.

use std::time::{Duration, Instant};

use raftlock_testkit::process::signal;

use super::process_cluster::ProcessCluster;

/// What the test asserts of each exit; the promise (docs/operations.md,
/// "Stopping") is 2 s, and this leaves room for a starved test machine.
const STOP_BOUND: Duration = Duration::from_secs(5);

/// Three nodes, with a held lock, a waiting acquire and short leases in
/// flight, all get SIGTERM in the same moment; each must exit 0 within
/// [`STOP_BOUND`] (the measured times are printed). The lease timer of a
/// node that loses its quorum while stopping must not fill the log.
///
/// Without the stop-aware waits (a stopping node keeps forwarding and
/// retrying "no leader" for `leader_wait`, and a held-open call keeps the
/// client listener up for 5 s) the last node takes 5 s or more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_serve_every_node_stops_fast_when_all_get_sigterm_at_once() {
    let mut cluster = ProcessCluster::start().await;
    let holder = cluster.client_of(&[1, 2, 3], Duration::from_secs(30)).await;
    let held = holder
        .lock("stop/held")
        .ttl(Duration::from_secs(30))
        .acquire()
        .await
        .expect("take the lock");
    // A waiting acquire: a call the client listener holds open.
    let waiter = cluster.client_of(&[1, 2, 3], Duration::from_secs(30)).await;
    let waiting = tokio::spawn(async move {
        let _ = waiter
            .lock("stop/held")
            .ttl(Duration::from_secs(30))
            .acquire()
            .await;
    });
    // Leases that expire while the nodes stop: the leader proposes their
    // expiry, which cannot commit once a quorum is gone.
    let leases = cluster.client_of(&[1, 2, 3], Duration::from_secs(5)).await;
    for _ in 0..5 {
        leases
            .grant_lease(Duration::from_millis(300))
            .await
            .expect("grant a lease");
    }
    // Writes that never stop, one client per node: while the nodes stop,
    // some are being forwarded to a leader that is gone.
    let mut writers = Vec::new();
    for id in 1..=3 {
        let client = cluster.client_of(&[id], Duration::from_secs(30)).await;
        writers.push(tokio::spawn(async move {
            loop {
                let _ = client.grant_lease(Duration::from_secs(30)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let pids: Vec<u32> = cluster
        .nodes
        .iter()
        .map(|n| n.pid().expect("running"))
        .collect();
    let sent = Instant::now();
    for pid in &pids {
        signal(*pid, libc::SIGTERM).expect("SIGTERM");
    }
    let mut exits = vec![None; pids.len()];
    while exits.iter().any(Option::is_none) && sent.elapsed() < Duration::from_secs(60) {
        for (node, exit) in cluster.nodes.iter_mut().zip(exits.iter_mut()) {
            if exit.is_none() {
                if let Some(status) = node.exit_status() {
                    *exit = Some((sent.elapsed(), status));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let times: Vec<String> = exits
        .iter()
        .map(|e| match e {
            Some((t, _)) => format!("{:.2}s", t.as_secs_f64()),
            None => "still running".into(),
        })
        .collect();
    println!("exit after SIGTERM to all three at once: {times:?}");
    for (i, exit) in exits.iter().enumerate() {
        let (took, status) = exit
            .as_ref()
            .unwrap_or_else(|| panic!("node {} did not exit; logs:\n{}", i + 1, cluster.logs()));
        assert!(
            status.success(),
            "node {} exited {status}; logs:\n{}",
            i + 1,
            cluster.logs()
        );
        assert!(
            *took < STOP_BOUND,
            "node {} took {took:?} to stop (all: {times:?}); logs:\n{}",
            i + 1,
            cluster.logs()
        );
    }
    for (i, node) in cluster.nodes.iter().enumerate() {
        let log = std::fs::read_to_string(node.log()).unwrap_or_default();
        let warnings = log.matches("cannot propose lease expiry").count();
        assert!(
            warnings <= 2,
            "node {} logged {warnings} lease-expiry warnings while stopping:\n{}",
            i + 1,
            node.log_tail(20)
        );
    }
    waiting.abort();
    writers.iter().for_each(|w| w.abort());
    drop(held);
}
