//! A listener with a connection budget: how many connections it holds at
//! once (in all and from one source IP), and how long a connection may stay
//! silent before it is closed. Both the client and the peer listener accept
//! through it, each with its own budget, so a flood on one never takes the
//! other's connections or file descriptors.
//!
//! What closes a connection that does not behave:
//! - over the budget: accepted and closed at once (the client sees the
//!   connection reset and tries another node);
//! - fewer than [`HANDSHAKE_BYTES`] received within the handshake timeout
//!   (a half-open connection, or one that dribbles its first bytes);
//! - nothing received for the idle timeout. A live peer always has
//!   something to send: the server pings every connection (HTTP/2
//!   keep-alive, [`ListenerLimits::keepalive_interval`]) and drops one that
//!   does not answer within [`ListenerLimits::keepalive_timeout`].
//!
//! Accept errors (a full file table, say) are logged and retried after a
//! pause instead of ending the listener or spinning on the error.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future as _;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

pub use crate::config::ListenerLimits;
use futures::Stream;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use raftlock_storage::account::{source_network, Account};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo};

/// Bytes a connection must send within the handshake timeout: the length of
/// the HTTP/2 client preface. A TLS ClientHello is longer.
pub const HANDSHAKE_BYTES: u64 = 24;

/// How long the accept loop waits after an accept error before it tries
/// again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// At most one "refused a connection" warning per listener in this time.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// What the listener reports to the node's metrics.
#[derive(Clone, Default)]
pub struct ListenerMetrics {
    /// Connections open now.
    pub open: Gauge,
    /// Connections closed at accept because the listener was full.
    pub refused_full: Counter,
    /// Connections closed at accept because their source IP was at its cap.
    pub refused_per_ip: Counter,
    /// Connections closed for sending too little, too late.
    pub timed_out: Counter,
}

/// The connections a listener holds now, in all and per source IP.
struct Budget {
    limits: ListenerLimits,
    name: &'static str,
    metrics: ListenerMetrics,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
    last_warning: Option<Instant>,
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Full,
    PerIp,
}

impl Budget {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for a connection from `ip`, or why there is none. An IPv6
    /// address counts by its /64, as its account does: one host may take
    /// any address of its network.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Refusal> {
        let ip = source_network(ip);
        let mut held = self.held();
        if held.total >= self.limits.max_connections {
            return Err(Refusal::Full);
        }
        let from_ip = held.per_ip.entry(ip).or_insert(0);
        if *from_ip >= self.limits.max_connections_per_ip {
            return Err(Refusal::PerIp);
        }
        *from_ip += 1;
        held.total += 1;
        self.metrics.open.inc();
        Ok(Slot {
            budget: self.clone(),
            ip,
        })
    }

    fn refused(&self, peer: SocketAddr, why: Refusal) {
        let limit = match why {
            Refusal::Full => {
                self.metrics.refused_full.inc();
                format!("it holds {} connections", self.limits.max_connections)
            }
            Refusal::PerIp => {
                self.metrics.refused_per_ip.inc();
                format!(
                    "{} holds {} connections",
                    Account::source(peer.ip()),
                    self.limits.max_connections_per_ip
                )
            }
        };
        let mut held = self.held();
        let now = Instant::now();
        if held
            .last_warning
            .is_none_or(|at| now.duration_since(at) >= WARN_EVERY)
        {
            held.last_warning = Some(now);
            tracing::warn!(
                listener = self.name,
                %peer,
                "{} listener refused a connection from {peer}: {limit} \
                 (further refusals are counted in raftlock_connections_refused_total)",
                self.name
            );
        }
    }
}

/// A held place in a [`Budget`], given back when the connection closes.
struct Slot {
    budget: Arc<Budget>,
    ip: IpAddr,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut held = self.budget.held();
        held.total = held.total.saturating_sub(1);
        if let Some(n) = held.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.per_ip.remove(&self.ip);
            }
        }
        self.budget.metrics.open.dec();
    }
}

/// The connections `listener` accepts within `limits`, for
/// `tonic::transport::Server::serve_with_incoming_shutdown`. `name` ("client"
/// or "peer") labels log lines. The stream never ends and never yields an
/// error: accept errors are logged and retried.
pub fn bounded_incoming(
    listener: TcpListener,
    limits: ListenerLimits,
    name: &'static str,
    metrics: ListenerMetrics,
) -> impl Stream<Item = Result<BoundedConn, Infallible>> {
    let budget = Arc::new(Budget {
        limits,
        name,
        metrics,
        held: Mutex::default(),
    });
    futures::stream::unfold((listener, budget), |(listener, budget)| async move {
        let conn = accept_within(&listener, &budget).await;
        Some((Ok(conn), (listener, budget)))
    })
}

/// Accepts until a connection fits the budget.
async fn accept_within(listener: &TcpListener, budget: &Arc<Budget>) -> BoundedConn {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(listener = budget.name, "accept failed: {e}; retrying");
                tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                continue;
            }
        };
        match budget.admit(peer.ip()) {
            Ok(slot) => {
                let _ = stream.set_nodelay(true);
                return BoundedConn::new(stream, slot, &budget.limits, budget.metrics.clone());
            }
            // Dropping the stream closes it.
            Err(why) => budget.refused(peer, why),
        }
    }
}

/// An accepted connection that closes itself when it falls silent (see the
/// module doc) and gives its place in the budget back when dropped.
pub struct BoundedConn {
    stream: TcpStream,
    _slot: Slot,
    /// Bytes received so far, up to [`HANDSHAKE_BYTES`].
    received: u64,
    /// When the handshake has to be done by.
    handshake_by: Instant,
    /// When the last byte arrived (or the connection was accepted).
    last_read: Instant,
    idle_timeout: Duration,
    /// Fires at the next moment the connection may have to be closed.
    check: Pin<Box<Sleep>>,
    timed_out: Counter,
}

impl BoundedConn {
    fn new(
        stream: TcpStream,
        slot: Slot,
        limits: &ListenerLimits,
        metrics: ListenerMetrics,
    ) -> Self {
        let now = Instant::now();
        let handshake_by = now + limits.handshake_timeout;
        BoundedConn {
            stream,
            _slot: slot,
            received: 0,
            handshake_by,
            last_read: now,
            idle_timeout: limits.idle_timeout,
            check: Box::pin(tokio::time::sleep_until(handshake_by)),
            timed_out: metrics.timed_out,
        }
    }

    /// The moment this connection is to be closed unless bytes arrive.
    fn deadline(&self) -> Instant {
        let idle_by = self.last_read + self.idle_timeout;
        if self.received < HANDSHAKE_BYTES {
            idle_by.min(self.handshake_by)
        } else {
            idle_by
        }
    }

    /// `Err` once the connection is past its deadline. Arms the timer for the
    /// current deadline otherwise, so the reader is woken when it passes.
    fn poll_deadline(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        loop {
            let deadline = self.deadline();
            if self.check.deadline() != deadline {
                self.check.as_mut().reset(deadline);
            }
            if self.check.as_mut().poll(cx).is_pending() {
                return Ok(());
            }
            if Instant::now() >= self.deadline() {
                self.timed_out.inc();
                let why = if self.received < HANDSHAKE_BYTES {
                    "no handshake within the handshake timeout"
                } else {
                    "nothing received within the idle timeout"
                };
                return Err(io::Error::new(io::ErrorKind::TimedOut, why));
            }
        }
    }
}

impl AsyncRead for BoundedConn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n > 0 {
                    this.received = (this.received + n).min(HANDSHAKE_BYTES);
                    this.last_read = Instant::now();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.poll_deadline(cx) {
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            },
        }
    }
}

impl AsyncWrite for BoundedConn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

impl Connected for BoundedConn {
    type ConnectInfo = TcpConnectInfo;

    fn connect_info(&self) -> TcpConnectInfo {
        self.stream.connect_info()
    }
}

#[cfg(test)]
mod tests;
