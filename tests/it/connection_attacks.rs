//! Attacks on the listeners of a real cluster: floods of half-open
//! connections on the client and the peer port, floods of leases, client
//! ids and open watches from one source address, and messages that do not
//! decode. Each must leave the honest client served, close or refuse what
//! the attacker opened, and answer a malformed message as the caller's
//! mistake.
//!
//! The flood comes from other loopback addresses (127.0.0.2 and up) than
//! the honest client and the peers (127.0.0.1), as it would from other
//! machines.

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use prost::Message;
use raftlock::pb;
use raftlock_client::Acquire;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::Code;
use tonic_prost::ProstCodec;

use crate::cluster::{test_config, TestCluster};

/// A channel to `addr` whose connections come from 127.0.0.`host`.
pub(crate) async fn channel_from(host: u8, addr: SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .local_address(Some(std::net::IpAddr::from([127, 0, 0, host])))
        .connect()
        .await
        .expect("connect")
}

/// Asserts `status` is a quota refusal naming `words`.
fn assert_quota(status: &tonic::Status, words: &[&str]) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    for word in words {
        assert!(
            status.message().contains(word),
            "{word:?} not in {status:?}"
        );
    }
}

const TTL: Duration = Duration::from_secs(30);

/// Connects to `addr` from 127.0.0.`host`, and sends nothing.
async fn half_open(host: u8, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from(([127, 0, 0, host], 0)))
        .expect("bind a loopback source address");
    socket.connect(addr).await.expect("connect")
}

/// Whether the node closed `conn` within `wait`.
async fn closed_within(conn: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 64];
    loop {
        match tokio::time::timeout(wait, conn.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A TLS-less HTTP/2 server may write its SETTINGS; keep reading.
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Grants a lease and takes and releases an exclusive lock through
/// `client`, as an honest user would.
async fn lock_and_unlock(client: &raftlock_client::Client, name: &str) {
    let lease = client.grant_lease(TTL).await.expect("grant");
    let grant = client
        .acquire(&Acquire {
            wait: false,
            ..Acquire::exclusive(name, "honest", lease)
        })
        .await
        .expect("acquire");
    assert!(grant.is_some(), "{name} should be free");
    client.release(name, "honest").await.expect("release");
}

/// 400 connections from three addresses to the leader's client port, none
/// of which ever sends a byte, against a listener of 64 with 16 per
/// address: 48 are held, the rest closed at once, and a client from
/// another address is served at once. Without the per-address cap the 400
/// fill all 64 places for the whole handshake timeout (a minute here) and
/// the honest calls fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_a_few_addresses_cannot_fill_the_client_port() {
    let mut base = test_config();
    base.serving.max_client_connections = 64;
    base.serving.max_connections_per_ip = 16;
    base.replication.handshake_timeout = Duration::from_secs(60);
    let cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let client_port = cluster.addrs[&leader].0;
    let mut flood = Vec::new();
    for i in 0..400u32 {
        flood.push(half_open(2 + (i % 3) as u8, client_port).await);
    }
    let mut shed = 0;
    for conn in &mut flood {
        if closed_within(conn, Duration::from_millis(200)).await {
            shed += 1;
        }
    }
    assert!(shed >= 400 - 48, "only {shed} of 400 were closed at accept");
    let honest = cluster.client_of(leader).await;
    tokio::time::timeout(Duration::from_secs(20), lock_and_unlock(&honest, "flood/a"))
        .await
        .expect("the honest client is served while the flood is held");
    let metrics = cluster.node(leader).metrics_text();
    assert!(
        metrics
            .contains("raftlock_connections_refused_total{listener=\"client\",reason=\"per_ip\"}"),
        "{metrics}"
    );
}

/// 200 silent connections each to the leader's client and peer ports are
/// all closed once the handshake timeout (1 s) passes, and meanwhile writes
/// through a follower, which cross the leader's peer port, keep being
/// served. Without the handshake deadline the connections stay open for
/// good (this test then fails on its 60 s bound).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_closed_and_the_cluster_keeps_serving() {
    let mut base = test_config();
    base.replication.handshake_timeout = Duration::from_secs(1);
    let cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let (client_port, peer_port) = cluster.addrs[&leader];
    let mut flood = Vec::new();
    for i in 0..200u32 {
        flood.push(half_open(2 + (i % 4) as u8, client_port).await);
        flood.push(half_open(2 + (i % 4) as u8, peer_port).await);
    }
    let follower = cluster.others(leader)[0];
    let via_follower = cluster.client_of(follower).await;
    lock_and_unlock(&via_follower, "flood/b").await;
    for conn in &mut flood {
        assert!(
            closed_within(conn, Duration::from_secs(60)).await,
            "a half-open connection was never closed"
        );
    }
    lock_and_unlock(&cluster.client().await, "flood/c").await;
    let metrics = cluster.node(leader).metrics_text();
    for listener in ["client", "peer"] {
        let series = format!("raftlock_connections_timed_out_total{{listener=\"{listener}\"}} ");
        let count: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&series))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in\n{metrics}"));
        assert!(count >= 200, "{listener}: {count} timed out");
    }
}

/// Field 1 as a varint: in `AcquireRequest` it is a message, in the peer
/// `Blob` bytes, so neither decodes.
#[derive(Clone, PartialEq, Message)]
struct Forged {
    #[prost(uint64, tag = "1")]
    junk: u64,
}

/// Sends `Forged` to `path` on `addr` and returns the status.
async fn call_forged(addr: SocketAddr, path: &'static str) -> tonic::Status {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    grpc.unary(
        tonic::Request::new(Forged { junk: u64::MAX }),
        PathAndQuery::from_static(path),
        ProstCodec::<Forged, pb::AcquireResponse>::default(),
    )
    .await
    .expect_err("a malformed request is refused")
}

/// A request that does not decode, on the client and on the peer port, is
/// INVALID_ARGUMENT (the caller's mistake, nothing done), and the node
/// keeps serving. With tonic-prost's own codec both are INTERNAL.
#[tokio::test]
async fn a_malformed_message_is_invalid_argument() {
    let cluster = TestCluster::new(3).await;
    let leader = cluster.wait_for_leader().await;
    let (client_port, peer_port) = cluster.addrs[&leader];
    let status = call_forged(client_port, "/raftlock.v1.Lock/Acquire").await;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("malformed"), "{status:?}");
    let status = call_forged(peer_port, "/raftlock.peer.v1.Peer/Vote").await;
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    lock_and_unlock(&cluster.client().await, "malformed/a").await;
    assert_eq!(cluster.wait_for_leader().await, leader);
}

/// The flood from one unauthenticated address, scaled down: 60
/// lease grants from fresh client ids with a 24 h TTL, then 20 more from
/// one of those ids, through a follower, against quotas of 30 client ids
/// and 40 leases per source. The flood is refused past each quota with
/// RESOURCE_EXHAUSTED naming the quota, the source and the limit, and a
/// client at another address still gets a lease and a lock. Without the
/// quotas every grant of the flood succeeds (and at full scale one address
/// could take every lease the cluster may hold, for a day).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_leases_from_one_source_leaves_room_for_others() {
    let mut base = test_config();
    base.serving.quota_clients = 30;
    base.serving.quota_leases = 40;
    let cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let mut flood =
        pb::lease_client::LeaseClient::new(channel_from(2, cluster.addrs[&follower].0).await);
    let day_ms = 24 * 3600 * 1000;
    let (mut granted, mut refused) = (0, Vec::new());
    for client in 1..=60u128 {
        let grant = pb::LeaseGrantRequest {
            request_id: Some(pb::RequestId {
                client_id: client.to_be_bytes().to_vec(),
                seq: 1,
                acked_below: 1,
                attempt: 0,
            }),
            ttl_ms: day_ms,
        };
        match flood.grant(grant).await {
            Ok(_) => granted += 1,
            Err(status) => refused.push(status),
        }
    }
    assert_eq!((granted, refused.len()), (30, 30), "{refused:?}");
    assert_quota(
        &refused[0],
        &[
            "source 127.0.0.2",
            "30 client ids with a live lease",
            "limit 30",
        ],
    );
    // More leases from a client id it already has: the lease quota.
    let (mut more, mut refused) = (0, Vec::new());
    for seq in 2..=21 {
        let grant = pb::LeaseGrantRequest {
            request_id: Some(pb::RequestId {
                client_id: 1u128.to_be_bytes().to_vec(),
                seq,
                acked_below: seq,
                attempt: 0,
            }),
            ttl_ms: day_ms,
        };
        match flood.grant(grant).await {
            Ok(_) => more += 1,
            Err(status) => refused.push(status),
        }
    }
    assert_eq!(more, 10, "{refused:?}");
    assert_quota(
        &refused[0],
        &["source 127.0.0.2 holds 40 leases", "limit 40"],
    );

    let honest = cluster.client_of(follower).await;
    tokio::time::timeout(Duration::from_secs(20), lock_and_unlock(&honest, "quota/a"))
        .await
        .expect("the honest client is served after the flood");
    cluster.shutdown().await;
}

/// 30 Observe streams from one address against a quota of 20 open calls
/// per source: 20 are served, the rest refused RESOURCE_EXHAUSTED naming
/// the quota and the source, a waiting Acquire from that address too; a
/// client at another address still observes and waits. Once the flood
/// closes its streams, the address is served again. Without the quota all
/// 30 (and any number more) are held open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_watches_from_one_source_is_bounded() {
    let mut base = test_config();
    base.serving.quota_streams = 20;
    let cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let addr = cluster.addrs[&leader].0;
    let channel = channel_from(2, addr).await;
    let mut elections = pb::election_client::ElectionClient::new(channel.clone());
    let observe = pb::ObserveRequest {
        name: "quota/e".into(),
    };
    let (mut open, mut refused) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        match elections.observe(observe.clone()).await {
            Ok(stream) => open.push(stream.into_inner()),
            Err(status) => refused.push(status),
        }
    }
    assert_eq!((open.len(), refused.len()), (20, 10), "{refused:?}");
    assert_quota(
        &refused[0],
        &[
            "source 127.0.0.2 has 20 watch or wait calls open",
            "limit 20",
        ],
    );
    // A wait is an open call too.
    let honest = cluster.client_of(leader).await;
    let lease = honest.grant_lease(TTL).await.expect("grant");
    let holder = Acquire {
        wait: false,
        ..Acquire::exclusive("quota/m", "holder", lease)
    };
    assert!(honest.acquire(&holder).await.expect("acquire").is_some());
    let mut locks = pb::lock_client::LockClient::new(channel);
    let wait = pb::AcquireRequest {
        name: "quota/m".into(),
        owner: "flood".into(),
        lease,
        wait: true,
        wait_timeout_ms: 100,
        ..Default::default()
    };
    let status = locks
        .acquire(wait.clone())
        .await
        .expect_err("over the quota");
    assert_quota(&status, &["source 127.0.0.2", "quota_streams"]);

    // The honest address observes and waits meanwhile.
    let watch = honest
        .observe("quota/e")
        .await
        .expect("the honest client observes");
    let mut watch = std::pin::pin!(watch);
    tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the first leader event")
        .expect("stream open")
        .expect("no error");
    let waiter = Acquire {
        wait: true,
        timeout: Some(Duration::from_millis(200)),
        ..Acquire::exclusive("quota/m", "honest-waiter", lease)
    };
    let waited = honest.acquire(&waiter).await;
    assert!(
        matches!(waited, Err(raftlock_client::Error::Timeout(_)) | Ok(None)),
        "the honest wait runs its course: {waited:?}"
    );

    // Closed streams give their places back.
    drop(open);
    let mut served = false;
    for _ in 0..50 {
        match locks.acquire(wait.clone()).await {
            Err(status) if status.code() == Code::ResourceExhausted => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            _ => {
                served = true;
                break;
            }
        }
    }
    assert!(
        served,
        "the address is served again once its streams closed"
    );
    cluster.shutdown().await;
}
