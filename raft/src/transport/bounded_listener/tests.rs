//! The budget and the deadlines, on real loopback sockets. Deadlines are
//! short, and every wait for a close is bounded generously, so a starved
//! machine slows these tests down without failing them; what is asserted is
//! *which* connections close and *why*, never how fast.

use std::time::Duration;

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc;

use super::*;

/// Long enough that no test waits for it by accident.
const NEVER: Duration = Duration::from_secs(3600);

fn limits(total: usize, per_ip: usize) -> ListenerLimits {
    ListenerLimits {
        max_connections: total,
        max_connections_per_ip: per_ip,
        handshake_timeout: NEVER,
        idle_timeout: NEVER,
        ..ListenerLimits::client_default()
    }
}

/// A bounded listener on 127.0.0.1 whose accepted connections are read by
/// one task each; each task reports how its connection ended.
async fn serve(
    limits: ListenerLimits,
) -> (
    SocketAddr,
    ListenerMetrics,
    mpsc::UnboundedReceiver<io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = ListenerMetrics::default();
    let mut incoming = Box::pin(bounded_incoming(listener, limits, "test", metrics.clone()));
    let (ended_tx, ended) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Ok(mut conn)) = incoming.next().await {
            let ended_tx = ended_tx.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 256];
                let end = loop {
                    match conn.read(&mut buf).await {
                        Ok(0) => break Ok(()),
                        Ok(_) => continue,
                        Err(e) => break Err(e),
                    }
                };
                let _ = ended_tx.send(end);
            });
        }
    });
    (addr, metrics, ended)
}

/// Connects to `addr` from source address `from`.
async fn connect_from(from: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Whether the server closed `conn` within `wait`.
async fn closed_within(conn: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 16];
    match tokio::time::timeout(wait, conn.read(&mut buf)).await {
        Ok(Ok(0)) | Ok(Err(_)) => true,
        Ok(Ok(_)) => panic!("the test server never writes"),
        Err(_) => false,
    }
}

/// Without the per-address cap, all 8 connections from 127.0.0.2 are held
/// and the listener (total 8) has no place left for 127.0.0.1.
#[tokio::test]
async fn one_address_gets_its_cap_and_no_more() {
    let (addr, metrics, _ended) = serve(limits(8, 3)).await;
    let mut flood = Vec::new();
    for _ in 0..8 {
        flood.push(connect_from("127.0.0.2", addr).await);
    }
    let mut closed = 0;
    for conn in &mut flood {
        if closed_within(conn, Duration::from_millis(500)).await {
            closed += 1;
        }
    }
    assert_eq!(closed, 5, "3 of 8 from one address are held");
    assert_eq!(metrics.refused_per_ip.get(), 5);
    assert_eq!(metrics.open.get(), 3);
    // Another address still gets in.
    let mut honest = connect_from("127.0.0.1", addr).await;
    assert!(!closed_within(&mut honest, Duration::from_millis(300)).await);
    assert_eq!(metrics.open.get(), 4);
}

/// A full listener refuses, and takes again once a connection closes.
/// Without the total cap the fourth connection is held.
#[tokio::test]
async fn a_full_listener_refuses_until_a_place_frees() {
    let (addr, metrics, mut ended) = serve(limits(3, 3)).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from("127.0.0.1", addr).await);
    }
    let mut fourth = connect_from("127.0.0.3", addr).await;
    assert!(closed_within(&mut fourth, Duration::from_secs(5)).await);
    assert_eq!(metrics.refused_full.get(), 1);
    drop(held.pop());
    // The server sees the close and gives the place back.
    ended
        .recv()
        .await
        .expect("a connection ended")
        .expect("a clean close");
    let mut fifth = connect_from("127.0.0.3", addr).await;
    assert!(!closed_within(&mut fifth, Duration::from_millis(300)).await);
    assert_eq!(metrics.open.get(), 3);
}

/// A connection that sends nothing, or less than the HTTP/2 preface, is
/// closed at the handshake timeout; without the deadline it stays open
/// (this test then fails on its 30 s bound).
#[tokio::test]
async fn a_silent_or_dribbling_connection_is_closed_at_the_handshake_timeout() {
    let (addr, metrics, mut ended) = serve(ListenerLimits {
        handshake_timeout: Duration::from_millis(200),
        ..limits(10, 10)
    })
    .await;
    let mut silent = connect_from("127.0.0.1", addr).await;
    let mut dribbling = connect_from("127.0.0.1", addr).await;
    dribbling.write_all(b"PRI * HTTP/2.0").await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(30)).await);
    assert!(closed_within(&mut dribbling, Duration::from_secs(30)).await);
    for _ in 0..2 {
        let err = ended
            .recv()
            .await
            .unwrap()
            .expect_err("closed by the deadline");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("handshake"), "{err}");
    }
    assert_eq!(metrics.timed_out.get(), 2);
    assert_eq!(metrics.open.get(), 0);
}

/// Past its handshake, a connection is closed only by the idle timeout,
/// and only while it sends nothing.
#[tokio::test]
async fn a_connection_past_its_handshake_is_closed_only_when_idle() {
    let (addr, _metrics, mut ended) = serve(ListenerLimits {
        handshake_timeout: Duration::from_millis(100),
        idle_timeout: Duration::from_secs(3),
        ..limits(10, 10)
    })
    .await;
    let mut conn = connect_from("127.0.0.1", addr).await;
    conn.write_all(&[0u8; HANDSHAKE_BYTES as usize])
        .await
        .unwrap();
    // Talking keeps it open well past the handshake timeout.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        conn.write_all(b"x").await.unwrap();
    }
    assert!(ended.try_recv().is_err(), "closed while it was talking");
    assert!(closed_within(&mut conn, Duration::from_secs(30)).await);
    let err = ended
        .recv()
        .await
        .unwrap()
        .expect_err("closed by the deadline");
    assert!(err.to_string().contains("idle"), "{err}");
}

/// The addresses of one IPv6 /64 share one per-address cap (one host may
/// take any address of its network); the next /64 has its own, and so
/// does an IPv4 address. Without the mask each address gets the whole cap.
#[test]
fn an_ipv6_network_shares_one_cap() {
    let budget = Arc::new(Budget {
        limits: limits(100, 2),
        name: "test",
        metrics: ListenerMetrics::default(),
        held: Mutex::default(),
    });
    let at = |s: &str| s.parse::<IpAddr>().unwrap();
    let first = budget
        .admit(at("2001:db8:1:2::1"))
        .expect("first of the /64");
    let _b = budget
        .admit(at("2001:db8:1:2::ffff"))
        .expect("second of the /64");
    assert!(matches!(
        budget.admit(at("2001:db8:1:2:abcd::9")),
        Err(Refusal::PerIp)
    ));
    let _c = budget.admit(at("2001:db8:1:3::1")).expect("another /64");
    let _d = budget.admit(at("10.0.0.1")).expect("an IPv4 address");
    drop(first);
    let _e = budget.admit(at("2001:db8:1:2::7")).expect("a place freed");
}
