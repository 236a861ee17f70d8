//! The admin listener only reads, and says when its node is dead: no
//! method but GET is served on any path, whatever the body, and nothing
//! sent there changes a lock or a lease; `/healthz` turns 503 once the
//! node's Raft core has stopped.

use std::time::Duration;

use raftlock_client::Acquire;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::observe::{cluster_with_admin, get};

/// Every path the admin listener serves, and a few an attacker would try.
const PATHS: [&str; 9] = [
    "/metrics",
    "/healthz",
    "/readyz",
    "/",
    "/api/status",
    "/api/locks/jobs/a",
    "/api/leases",
    "/locks/jobs/a/force-release",
    "/api/status?release=jobs/a",
];

/// `method path` with a JSON body on `addr`, the way curl sends it
/// (its own `Host`): the answer's status code.
async fn send(addr: std::net::SocketAddr, method: &str, path: &str) -> u16 {
    let body = r#"{"name":"jobs/a","owner":"owner-a","force":true}"#;
    let mut stream = TcpStream::connect(addr).await.expect("connect admin");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw);
    text.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no HTTP answer: {text}"))
}

/// POST, PUT, DELETE and PATCH to every admin path, on the leader and on
/// a follower, are refused (405 on a served path, 404 elsewhere) and the
/// locks and leases stay as they were; the holder's fence still checks.
/// Seen failing with `/healthz` routed with `any(..)` instead of
/// `get(..)`: a POST was answered 200 and the test stopped there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_listener_refuses_every_method_that_could_write() {
    let cluster = cluster_with_admin(3).await;
    let client = cluster.client().await;
    let lease = client
        .grant_lease(Duration::from_secs(60))
        .await
        .expect("lease");
    let fence = client
        .acquire(&Acquire::exclusive("jobs/a", "owner-a", lease))
        .await
        .expect("acquire")
        .expect("granted")
        .fence;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let before = cluster.node(leader).read_state(|s| s.to_parts());

    for id in [leader, follower] {
        let addr = cluster.node(id).admin_addr().expect("admin listener");
        for path in PATHS {
            let (get_code, _) = get(&cluster, id, path).await;
            for method in ["POST", "PUT", "DELETE", "PATCH"] {
                let code = send(addr, method, path).await;
                let refused = if get_code == 404 { 404 } else { 405 };
                assert_eq!(code, refused, "{method} {path} on node {id}");
            }
        }
    }

    let after = cluster.node(leader).read_state(|s| s.to_parts());
    assert_eq!(after.locks, before.locks);
    let ids = |parts: &raftlock_storage::state::StateParts| -> Vec<u64> {
        parts.leases.iter().map(|l| l.id).collect()
    };
    assert_eq!(ids(&after), ids(&before));
    assert!(client.check("jobs/a", fence).await.expect("check"));
    cluster.shutdown().await;
}

/// A node whose Raft core stopped behind its back (as a storage failure
/// ends it) answers `/healthz` 503 naming the stopped core, where it
/// answered 200 before; a live member still answers 200. Seen failing with
/// the `fatal` and "not running" arms of `Replica::liveness` removed:
/// `/healthz` answered 503 only because the failure also marks the node
/// stopping ("the node is shutting down"), and the test stopped at the
/// reason, which must name the stopped core.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_answers_503_once_the_raft_core_stopped() {
    let cluster = cluster_with_admin(3).await;
    let leader = cluster.wait_for_leader().await;
    let victim = cluster.others(leader)[0];
    let (code, body) = get(&cluster, victim, "/healthz").await;
    assert_eq!(code, 200, "{body}");

    cluster.node(victim).stop_raft_core().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let body = loop {
        let (code, body) = get(&cluster, victim, "/healthz").await;
        if code == 503 {
            break body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/healthz still answers {code} 30 s after the Raft core stopped: {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let health: serde_json::Value = serde_json::from_str(&body).expect("JSON body");
    assert_eq!(health["ok"], false, "{body}");
    let reason = health["reason"].as_str().expect("a reason");
    assert!(reason.contains("Raft core"), "{body}");
    let live = cluster.others(victim)[0];
    let (code, body) = get(&cluster, live, "/healthz").await;
    assert_eq!(code, 200, "{body}");
    cluster.shutdown().await;
}
