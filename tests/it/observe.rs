//! The admin listener from outside: `/metrics` counters move as the
//! operations say, `/readyz` follows a node's cut from the quorum, the
//! status page's data names holders and waiters, and the gRPC health
//! service answers on the client port.
//!
//! Waits are generous and poll (the machine may be slow and busy); no
//! assertion depends on how fast anything happens.

use std::time::Duration;

use raftlock_client::Acquire;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::cluster::{test_config, TestCluster};

/// Long enough for anything on a starved machine.
const PATIENCE: Duration = Duration::from_secs(60);

/// A cluster whose nodes serve the admin endpoints on port 0 and take a
/// snapshot every 40 entries.
pub(crate) async fn cluster_with_admin(n: u64) -> TestCluster {
    let mut base = test_config();
    base.serving.admin_addr = Some("127.0.0.1:0".into());
    base.replication.snapshot_after_entries = 40;
    TestCluster::with_config(n, base).await
}

/// `GET path` on node `id`'s admin listener: (status code, body).
pub(crate) async fn get(cluster: &TestCluster, id: u64, path: &str) -> (u16, String) {
    let addr = cluster.node(id).admin_addr().expect("admin listener");
    get_as(cluster, id, path, &addr.to_string()).await
}

/// `GET path` on node `id`'s admin listener with `Host: host`.
async fn get_as(cluster: &TestCluster, id: u64, path: &str, host: &str) -> (u16, String) {
    let addr = cluster.node(id).admin_addr().expect("admin listener");
    let mut stream = TcpStream::connect(addr).await.expect("connect admin");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (code, body.to_string())
}

/// The value of the series `series` (name and labels as written) in a
/// scrape, 0 if absent.
fn value(scrape: &str, series: &str) -> f64 {
    scrape
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            (name == series).then(|| v.parse().ok())?
        })
        .unwrap_or(0.0)
}

/// Polls until `series` on node `id` reaches `at_least`.
async fn wait_for(cluster: &TestCluster, id: u64, series: &str, at_least: f64) -> f64 {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (code, scrape) = get(cluster, id, "/metrics").await;
        assert_eq!(code, 200);
        let v = value(&scrape, series);
        if v >= at_least {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} on node {id} stayed at {v} (wanted {at_least})"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn metrics_count_grants_expiries_and_leader_changes() {
    let mut cluster = cluster_with_admin(3).await;
    let leader = cluster.wait_for_leader().await;
    let client = cluster.client_of(leader).await;

    let (code, scrape) = get(&cluster, leader, "/metrics").await;
    assert_eq!(code, 200);
    assert_eq!(value(&scrape, "raftlock_raft_is_leader"), 1.0);
    assert_eq!(value(&scrape, "raftlock_raft_leader_id"), leader as f64);
    assert!(scrape.contains("# TYPE raftlock_lock_grants counter"));

    // Two grants and one release on a long lease; one grant on a short
    // lease that is left to expire.
    let lease = client.grant_lease(Duration::from_secs(30)).await.unwrap();
    for owner in ["a", "b"] {
        let spec = Acquire::exclusive(format!("obs/{owner}"), owner, lease);
        client.acquire(&spec).await.unwrap().expect("granted");
    }
    client.release("obs/a", "a").await.unwrap();
    let short = client
        .grant_lease(Duration::from_millis(300))
        .await
        .unwrap();
    let spec = Acquire::exclusive("obs/short", "s", short);
    client.acquire(&spec).await.unwrap().expect("granted");

    for id in cluster.running() {
        // Every node applies every entry, so every node counts them.
        wait_for(&cluster, id, "raftlock_lock_grants_total", 3.0).await;
        wait_for(
            &cluster,
            id,
            "raftlock_lock_releases_total{reason=\"released\"}",
            1.0,
        )
        .await;
        wait_for(
            &cluster,
            id,
            "raftlock_lease_ends_total{reason=\"expired\"}",
            1.0,
        )
        .await;
        wait_for(
            &cluster,
            id,
            "raftlock_lock_releases_total{reason=\"lease_expired\"}",
            1.0,
        )
        .await;
    }
    let acquires = "raftlock_grpc_requests_total{rpc=\"raftlock.v1.Lock/Acquire\",code=\"Ok\"}";
    wait_for(&cluster, leader, acquires, 3.0).await;
    // Enough entries for a snapshot.
    for _ in 0..50 {
        client.grant_lease(Duration::from_secs(30)).await.unwrap();
    }
    wait_for(&cluster, leader, "raftlock_raft_snapshots_built_total", 1.0).await;
    wait_for(&cluster, leader, "raftlock_raft_snapshot_size_bytes", 1.0).await;
    let (_, scrape) = get(&cluster, leader, "/metrics").await;
    assert!(value(&scrape, "raftlock_raft_proposals_total") >= 5.0);
    assert!(value(&scrape, "raftlock_raft_log_append_seconds_count") >= 1.0);
    // Where a write's time goes: the leader times proposals and each
    // follower's AppendEntries round trip; a follower times serving them.
    assert!(value(&scrape, "raftlock_raft_proposal_seconds_count") >= 50.0);
    let follower = cluster.others(leader)[0];
    let rtt = format!("raftlock_peer_append_seconds_count{{peer=\"{follower}\"}}");
    assert!(value(&scrape, &rtt) >= 1.0, "{rtt} in\n{scrape}");
    let (_, followers) = get(&cluster, follower, "/metrics").await;
    assert!(value(&followers, "raftlock_peer_append_served_seconds_count") >= 1.0);
    assert!(value(&scrape, "raftlock_lock_held") >= 1.0);

    // Kill the leader: a survivor sees the leader change.
    let survivor = cluster.others(leader)[0];
    let (_, before) = get(&cluster, survivor, "/metrics").await;
    let changes = value(&before, "raftlock_raft_leader_changes_total");
    cluster.kill(leader).await;
    let new_leader = cluster.wait_for_leader().await;
    assert_ne!(new_leader, leader);
    wait_for(
        &cluster,
        survivor,
        "raftlock_raft_leader_changes_total",
        changes + 1.0,
    )
    .await;
    wait_for(
        &cluster,
        survivor,
        "raftlock_raft_leader_id",
        new_leader as f64,
    )
    .await;
    wait_for(&cluster, new_leader, "raftlock_raft_is_leader", 1.0).await;
    let (_, scrape) = get(&cluster, new_leader, "/metrics").await;
    assert!(value(&scrape, "raftlock_raft_elections_total") >= 1.0);
    cluster.shutdown().await;
}

#[tokio::test]
async fn readyz_turns_503_when_cut_off_and_200_after() {
    let cluster = cluster_with_admin(3).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    assert_eq!(get(&cluster, follower, "/healthz").await.0, 200);
    wait_ready(&cluster, follower, 200).await;

    cluster.isolate(follower);
    let body = wait_ready(&cluster, follower, 503).await;
    assert!(body.contains("\"reason\""), "{body}");
    // Cut off, it is still alive.
    assert_eq!(get(&cluster, follower, "/healthz").await.0, 200);

    cluster.heal();
    wait_ready(&cluster, follower, 200).await;
    cluster.shutdown().await;
}

/// A one-node cluster (`raftlock serve` without flags) stays ready while
/// idle. Its leader is its own quorum, and nothing acknowledges it; judged
/// by the last acknowledgement, as a leader with followers is, it answered
/// 503 from four election timeouts after its last write ("leader has not
/// heard from a quorum for 2422 ms" here).
#[tokio::test]
async fn readyz_of_an_idle_one_node_cluster_stays_200() {
    let cluster = cluster_with_admin(1).await;
    let leader = cluster.wait_for_leader().await;
    wait_ready(&cluster, leader, 200).await;
    let idle = test_config().replication.election_timeout * 8;
    tokio::time::sleep(idle).await;
    let (code, body) = get(&cluster, leader, "/readyz").await;
    assert_eq!(code, 200, "after {} ms idle: {body}", idle.as_millis());
    cluster.shutdown().await;
}

/// Polls `/readyz` on `id` until it answers `code`; returns the body.
async fn wait_ready(cluster: &TestCluster, id: u64, code: u16) -> String {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (got, body) = get(cluster, id, "/readyz").await;
        if got == code {
            return body;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "/readyz on node {id} stayed {got} (wanted {code}): {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn status_data_names_holder_waiter_and_leader() {
    let cluster = cluster_with_admin(3).await;
    let leader = cluster.wait_for_leader().await;
    let client = cluster.client().await;
    let lease = client.grant_lease(Duration::from_secs(30)).await.unwrap();
    let spec = Acquire::exclusive("jobs/nightly", "holder-1", lease);
    client.acquire(&spec).await.unwrap().expect("granted");
    let waiting = {
        let client = client.clone();
        let spec = Acquire::exclusive("jobs/nightly", "waiter-2", lease);
        tokio::spawn(async move { client.acquire(&spec).await })
    };
    let follower = cluster.others(leader)[0];
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let status = loop {
        let (code, body) = get(&cluster, follower, "/api/status").await;
        assert_eq!(code, 200);
        let status: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        if body.contains("waiter-2") {
            break status;
        }
        assert!(tokio::time::Instant::now() < deadline, "no waiter: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status["leader"], leader);
    let lock = &status["locks"][0];
    assert_eq!(lock["name"], "jobs/nightly");
    assert_eq!(lock["holders"][0]["owner"], "holder-1");
    assert_eq!(lock["waiters"][0]["owner"], "waiter-2");
    let members = status["members"].as_array().expect("members");
    assert_eq!(members.len(), 3);
    let roles: Vec<&str> = members.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(
        roles.iter().filter(|r| **r == "leader").count(),
        1,
        "{roles:?}"
    );
    let (code, page) = get(&cluster, follower, "/").await;
    assert_eq!(code, 200);
    assert!(page.contains("/api/status"));
    waiting.abort();
    cluster.shutdown().await;
}

/// With TLS (and client certificates required), the status page still
/// shows every member's own figures: the node asks each one over a
/// channel that presents its node certificate and checks the member's
/// name. Without the TLS settings on that channel (plain text, or no
/// certificate presented) every other member shows as "unreachable" and
/// the test fails.
#[tokio::test]
async fn status_data_of_a_tls_cluster_reaches_every_member() {
    let mut base = test_config();
    base.serving.admin_addr = Some("127.0.0.1:0".into());
    base.serving.client_cert_auth = true;
    let cluster = TestCluster::with_tls_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (code, body) = get(&cluster, follower, "/api/status").await;
        assert_eq!(code, 200);
        let status: serde_json::Value = serde_json::from_str(&body).expect("JSON");
        let members = status["members"].as_array().expect("members");
        assert_eq!(members.len(), 3, "{body}");
        let answered = members
            .iter()
            .filter(|m| m["role"] != "unreachable" && m["term"].is_u64())
            .count();
        if answered == 3 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not every member answered: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn grpc_health_service_answers_on_the_client_port() {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;

    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let addr = format!("http://{}", cluster.addrs[&leader].0);
    let channel = tonic::transport::Endpoint::from_shared(addr)
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut health = HealthClient::new(channel);
    for service in ["", "raftlock.v1.Lock"] {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let request = HealthCheckRequest {
                service: service.into(),
            };
            let status = health.check(request).await.expect("check").into_inner();
            if status.status == ServingStatus::Serving as i32 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "not serving");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let unknown = HealthCheckRequest {
        service: "no.such.Service".into(),
    };
    let err = health.check(unknown).await.expect_err("unknown service");
    assert_eq!(err.code(), tonic::Code::NotFound);
    cluster.shutdown().await;
}

/// DNS rebinding: a web page whose name resolves to 127.0.0.1 makes the
/// visitor's browser ask the admin listener with its own name in `Host`
/// (`evil.example:PORT`), and could read every lock name and owner. Each
/// such request is refused with 421 and a body that says what to do, on
/// every path; the listener's own address, `localhost:PORT` and a name
/// given in `admin_hosts` are answered. Without the `check_host` layer in
/// `serve_admin` the first request gets 200 and the status page (seen).
#[tokio::test]
async fn the_admin_listener_answers_only_to_its_own_host_names() {
    let mut base = test_config();
    base.serving.admin_addr = Some("127.0.0.1:0".into());
    base.serving.admin_hosts = vec!["raftlock.internal".into()];
    let cluster = TestCluster::with_config(1, base).await;
    cluster.wait_for_leader().await;
    let addr = cluster.node(1).admin_addr().expect("admin listener");
    let port = addr.port();
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_string(),
        format!("127.0.0.1.evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
    ] {
        for path in ["/", "/api/status", "/metrics", "/healthz", "/readyz"] {
            let (code, body) = get_as(&cluster, 1, path, &host).await;
            assert_eq!(code, 421, "Host {host} {path}: {body}");
            assert!(body.contains("--admin-hosts"), "{body}");
            assert!(!body.contains("raftlock_"), "{body}");
        }
    }
    for host in [
        addr.to_string(),
        format!("localhost:{port}"),
        format!("raftlock.internal:{port}"),
    ] {
        for path in ["/", "/api/status", "/metrics", "/healthz"] {
            let (code, body) = get_as(&cluster, 1, path, &host).await;
            assert_eq!(code, 200, "Host {host} {path}: {body}");
        }
    }
    cluster.shutdown().await;
}
