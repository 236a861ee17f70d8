//! SIGTERM to every `raftlock serve` of a cluster at once, as `systemctl
//! stop` on every host or `docker compose down` sends it: each process
//! ends within a moment, though the last ones to go have no quorum left;
//! until it ends, its health checks answer 503.

use std::process::ExitStatus;
use std::time::{Duration, Instant};

use raftlock::pb;
use raftlock_testkit::process::signal;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tonic::codegen::http::uri::PathAndQuery;

use super::process_cluster::{Launch, ProcessCluster};

/// What the test asserts of each exit; the promise (docs/operations.md,
/// "Stopping") is 2 s, and this leaves room for a starved test machine.
const STOP_BOUND: Duration = Duration::from_secs(5);

/// Three nodes, with a held lock, a waiting acquire and short leases in
/// flight, all get SIGTERM in the same moment; each must exit 0 within
/// [`STOP_BOUND`] (the measured times are printed). The lease timer of a
/// node that loses its quorum while stopping must not fill the log.
///
/// Without the end of held-open calls when a node stops (the `stopped()`
/// arm of `src/serving/grant_wait.rs`), the node serving the waiting
/// acquire kept its client listener up for 5 s: it exited after 5.02 s.
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

/// A node whose quorum is gone (two of three killed with SIGKILL), with a
/// write waiting for a leader, gets SIGTERM: it exits at once, the write
/// answering "node N is stopping; try another node". Without the stop
/// check in `Replica::call_leader` the write kept retrying "no leader
/// elected" for `leader_wait` (5 s), and the node waited for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_serve_a_node_waiting_for_a_leader_stops_at_once() {
    let mut cluster = ProcessCluster::start().await;
    cluster.nodes[1].kill();
    cluster.nodes[2].kill();
    let client = cluster.client_of(&[1], Duration::from_secs(30)).await;
    let write = tokio::spawn(async move { client.grant_lease(Duration::from_secs(30)).await });
    // The write is in the node's wait for a leader by then.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pid = cluster.nodes[0].pid().expect("running");
    let sent = Instant::now();
    signal(pid, libc::SIGTERM).expect("SIGTERM");
    let status = node_1_exit(&mut cluster, sent).await;
    let took = sent.elapsed();
    println!("a node waiting for a leader exited {took:?} after SIGTERM");
    assert!(status.success(), "node 1 exited {status}");
    // The wait it cut short is at most `leader_wait` (5 s); a clean stop
    // takes well under a second even on a starved machine.
    assert!(
        took < Duration::from_secs(3),
        "node 1 took {took:?} to stop"
    );
    write.abort();
}

/// How node 1 exited, waited for up to 60 s after `sent` (its SIGTERM).
async fn node_1_exit(cluster: &mut ProcessCluster, sent: Instant) -> ExitStatus {
    loop {
        if let Some(status) = cluster.nodes[0].exit_status() {
            return status;
        }
        assert!(
            sent.elapsed() < Duration::from_secs(60),
            "node 1 did not exit; logs:\n{}",
            cluster.logs()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `GET path` of the admin listener at `addr`: the whole HTTP answer, or
/// why there was none (a refused connection once the listener closed).
async fn try_http_get(addr: &str, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    Ok(String::from_utf8_lossy(&raw).into_owned())
}

/// A node told to stop (SIGTERM) while a client call is still in flight
/// keeps its admin listener up until it exits, `/healthz` and `/readyz`
/// answering 503 "the node is shutting down" in the meantime, so a probe
/// sees a stopping node, not a refused connection. The call in flight is a
/// status question whose message never comes, which holds the node's
/// drain of client calls (up to 5 s) open for as long as the test likes.
/// When the admin listener closed as soon as the stop began, the first
/// probe after SIGTERM was refused ("Connection refused").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_serve_answers_health_checks_503_while_it_stops() {
    let mut cluster = ProcessCluster::launch(Launch {
        admin: true,
        ..Launch::default()
    })
    .await;
    let admin = cluster.admins[0].clone();
    let before = try_http_get(&admin, "/healthz").await.expect("healthz");
    assert!(before.starts_with("HTTP/1.1 200"), "{before}");

    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", cluster.clients[0]))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let in_flight = tokio::spawn(async move {
        grpc.client_streaming(
            tonic::Request::new(tokio_stream::pending::<pb::StatusRequest>()),
            PathAndQuery::from_static("/raftlock.v1.Cluster/Status"),
            tonic_prost::ProstCodec::<pb::StatusRequest, pb::StatusResponse>::default(),
        )
        .await
    });
    // The call's headers are at the node by then.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pid = cluster.nodes[0].pid().expect("running");
    signal(pid, libc::SIGTERM).expect("SIGTERM");
    let sent = Instant::now();
    // Until the node sees the signal it still answers 200.
    let answer = loop {
        match try_http_get(&admin, "/healthz").await {
            Ok(answer) if answer.starts_with("HTTP/1.1 200") => {
                assert!(
                    sent.elapsed() < Duration::from_secs(30),
                    "still healthy 30 s after SIGTERM: {answer}"
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Ok(answer) => break answer,
            Err(e) => panic!(
                "the admin listener closed before the node stopped ({:?} after SIGTERM): {e}; logs:\n{}",
                sent.elapsed(),
                cluster.logs()
            ),
        }
    };
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("the node is shutting down"), "{answer}");
    let ready = try_http_get(&admin, "/readyz")
        .await
        .expect("readyz while stopping");
    assert!(ready.starts_with("HTTP/1.1 503"), "{ready}");
    assert!(ready.contains("the node is shutting down"), "{ready}");
    assert!(
        cluster.nodes[0].exit_status().is_none(),
        "the node exited while a call was in flight"
    );

    // The call goes; the node finishes its stop and exits cleanly.
    in_flight.abort();
    let _ = in_flight.await;
    let status = node_1_exit(&mut cluster, sent).await;
    assert!(status.success(), "node 1 exited {status}");
    assert!(
        try_http_get(&admin, "/healthz").await.is_err(),
        "the admin listener outlived its node"
    );
}
