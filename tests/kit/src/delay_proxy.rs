//! A TCP proxy that delays every byte by a fixed latency each way: put
//! between a client and a node, it makes requests and replies cross each
//! other in flight, the way a slow network does, while keeping each
//! direction's order (and throughput: bytes are queued, not slept on).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::Error;

/// A running proxy; stops accepting (its connections end) when dropped.
#[derive(Debug)]
pub struct DelayProxy {
    /// Where clients connect.
    pub addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards every connection to
    /// `target`, each byte `latency` late in both directions.
    pub async fn start(target: SocketAddr, latency: Duration) -> Result<DelayProxy, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::io("bind the delay proxy"))?;
        let addr = listener
            .local_addr()
            .map_err(Error::io("the delay proxy's address"))?;
        let accept = tokio::spawn(async move {
            let mut links = tokio::task::JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                links.spawn(link(inbound, target, latency));
            }
        });
        Ok(DelayProxy { addr, accept })
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        // The JoinSet inside goes with the task: every link is aborted.
        self.accept.abort();
    }
}

/// One proxied connection: two delayed pipes until either side closes.
async fn link(inbound: TcpStream, target: SocketAddr, latency: Duration) {
    let Ok(outbound) = TcpStream::connect(target).await else {
        return;
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    tokio::select! {
        _ = pipe(in_read, out_write, latency) => {}
        _ = pipe(out_read, in_write, latency) => {}
    }
}

/// Copies `from` to `to`, each chunk written `latency` after it was read.
async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, latency: Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            if to.write_all(&bytes).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx
                        .send((Instant::now() + latency, buf[..n].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    };
    // The writer drains what was read before the reader saw the end.
    let _ = tokio::join!(reader, writer);
}
