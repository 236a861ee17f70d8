//! TCP proxies between a client and a node for the client's dial tests:
//! one that freezes (a node paused with SIGSTOP) and one that holds the
//! node's answers back for a while (an overloaded node or link).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A proxy to `target` that can be frozen: from then on it passes
/// nothing either way and keeps its connections open, as a node paused
/// with SIGSTOP does.
pub(crate) async fn freezable_proxy(target: String) -> (String, Arc<AtomicBool>) {
    let frozen = Arc::new(AtomicBool::new(false));
    let flag = frozen.clone();
    let addr = proxy(target, move |(in_read, in_write), (out_read, out_write)| {
        tokio::spawn(pipe(in_read, out_write, flag.clone()));
        tokio::spawn(pipe(out_read, in_write, flag.clone()));
    })
    .await;
    (addr, frozen)
}

/// The two halves of one side of a proxied connection.
type Halves = (
    tokio::net::tcp::OwnedReadHalf,
    tokio::net::tcp::OwnedWriteHalf,
);

/// A proxy to `target`, returning its address: for each connection it
/// accepts, `wire` gets the client's side and the node's side to copy.
async fn proxy(target: String, wire: impl Fn(Halves, Halves) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        while let Ok((inbound, _)) = listener.accept().await {
            let Ok(outbound) = TcpStream::connect(&target).await else {
                continue;
            };
            wire(inbound.into_split(), outbound.into_split());
        }
    });
    addr
}

/// Copies `from` to `to` until frozen; then holds both open, silent.
async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = [0u8; 16384];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if frozen.load(Ordering::Relaxed) {
            std::future::pending::<()>().await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

/// A proxy to `target` whose answers can be held back: while `lagging`
/// is set it passes what the client sends at once and keeps what the node
/// answers until it is cleared (then passes it on, in order), as an
/// overloaded node or link does.
pub(crate) async fn lagging_proxy(target: String) -> (String, Arc<AtomicBool>) {
    let lagging = Arc::new(AtomicBool::new(false));
    let flag = lagging.clone();
    let addr = proxy(target, move |(in_read, in_write), (out_read, out_write)| {
        tokio::spawn(pipe(in_read, out_write, Arc::new(AtomicBool::new(false))));
        tokio::spawn(held_back(out_read, in_write, flag.clone()));
    })
    .await;
    (addr, lagging)
}

/// Copies `from` to `to`, holding each read back while `lagging` is set.
async fn held_back(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    lagging: Arc<AtomicBool>,
) {
    let mut buf = [0u8; 16384];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while lagging.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
