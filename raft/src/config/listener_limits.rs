//! [`ListenerLimits`]: the connection budget of one listener, as the
//! settings give it (`transport::bounded_listener` enforces it).

use std::time::Duration;

/// The budget of one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerLimits {
    /// Connections open at once; one more is accepted and closed.
    pub max_connections: usize,
    /// Connections open at once from one source IP address.
    pub max_connections_per_ip: usize,
    /// Time a new connection has to send its first `HANDSHAKE_BYTES` (see `transport::bounded_listener`).
    pub handshake_timeout: Duration,
    /// A connection that sends nothing for this long is closed. Longer than
    /// `keepalive_interval + keepalive_timeout`, so that a live peer, which
    /// answers the server's pings, is never closed by it.
    pub idle_timeout: Duration,
    /// The server pings every connection this often (HTTP/2 keep-alive).
    pub keepalive_interval: Duration,
    /// A connection that does not answer a ping within this is closed.
    pub keepalive_timeout: Duration,
}

impl ListenerLimits {
    /// Defaults for the client listener.
    pub fn client_default() -> Self {
        ListenerLimits {
            max_connections: 10_000,
            // 2 000 clients on one host and room for reconnects; a quarter
            // of `max_connections` (see `ServingConfig::max_connections_per_ip` in the
            // `raftlock` crate).
            max_connections_per_ip: 2_500,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            keepalive_interval: Duration::from_secs(15),
            keepalive_timeout: Duration::from_secs(10),
        }
    }

    /// Defaults for the peer listener: a member holds a few connections to
    /// each other member (replication, forwarded calls, start-up checks).
    pub fn peer_default() -> Self {
        ListenerLimits {
            max_connections: 256,
            max_connections_per_ip: 64,
            ..Self::client_default()
        }
    }
}
