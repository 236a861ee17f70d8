//! Loopback ports for a cluster's nodes: free ones, held until every node
//! has its own, or a fixed layout whose ports are checked before a node is
//! started on them.
//!
//! A free port is drawn at random below the kernel's ephemeral range
//! (`net.ipv4.ip_local_port_range`), never by binding port 0: a port the
//! kernel handed out for port 0 and the test freed for its node could be
//! handed out again, in that gap, to another test binding port 0 (seen in
//! CI: a node that could not listen, and a client that reached another
//! test's node). Below the range only another draw can take it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{SocketAddr, TcpListener};

use crate::Error;

/// Free loopback ports, each held by a bound listener until released.
///
/// A port released as soon as it is chosen could be handed out again for
/// the next node (seen in CI: two nodes given the same client port, and no
/// leader), so every port stays bound until the whole layout is chosen.
#[derive(Debug, Default)]
pub struct Reserved {
    held: Vec<TcpListener>,
}

impl Reserved {
    /// No ports yet.
    pub fn new() -> Reserved {
        Reserved::default()
    }

    /// Binds one more free port on 127.0.0.1 and holds it.
    pub fn take(&mut self) -> Result<SocketAddr, Error> {
        let listener = bind_free()?;
        let addr = listener
            .local_addr()
            .map_err(Error::io("read a bound port"))?;
        self.held.push(listener);
        Ok(addr)
    }

    /// Frees every held port, for the nodes to bind.
    pub fn release(self) {
        drop(self.held);
    }
}

/// A free loopback address, released at once: for one process that will
/// listen there (several, from one test: [`Reserved`], so they differ).
pub fn free_addr() -> Result<SocketAddr, Error> {
    let listener = bind_free()?;
    listener
        .local_addr()
        .map_err(Error::io("read a bound port"))
}

/// How many ports below the ephemeral range are drawn from.
const DRAWN_PORTS: u16 = 12_000;

/// A listener on a free port drawn below the ephemeral range.
fn bind_free() -> Result<TcpListener, Error> {
    let (low, high) = drawn_range();
    let mut draw = RandomState::new().build_hasher();
    let mut last = std::io::Error::from(std::io::ErrorKind::AddrInUse);
    for attempt in 0..256u64 {
        draw.write_u64(attempt);
        let port = low + (draw.finish() % u64::from(high - low)) as u16;
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(listener) => return Ok(listener),
            Err(e) => last = e,
        }
    }
    Err(Error::io("bind a free port below the ephemeral range")(
        last,
    ))
}

/// The ports drawn from: the [`DRAWN_PORTS`] below the ephemeral range's
/// start (32768 where it cannot be read), and never below 10000.
fn drawn_range() -> (u16, u16) {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768)
        .max(10_000 + DRAWN_PORTS);
    (start - DRAWN_PORTS, start)
}

/// Node `i`'s (1-based) client and peer address in the fixed layout of
/// `cluster-scripts` and the benchmark: clients on `base + 10*i + 1`,
/// peers on `base + 10*i + 2` (and the admin listener, by default, on
/// `base + 10*i + 3`).
pub fn base_layout(base: u16, i: u16) -> (String, String) {
    (
        format!("127.0.0.1:{}", base + 10 * i + 1),
        format!("127.0.0.1:{}", base + 10 * i + 2),
    )
}

/// Fails with [`Error::PortTaken`] if `addr` cannot be listened on now.
pub fn check_free(addr: &str) -> Result<(), Error> {
    TcpListener::bind(addr)
        .map(drop)
        .map_err(|source| Error::PortTaken {
            addr: addr.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_ports_are_distinct_and_taken_until_released() {
        let mut ports = Reserved::new();
        let a = ports.take().expect("a port");
        let b = ports.take().expect("another port");
        assert_ne!(a, b);
        assert!(check_free(&a.to_string()).is_err());
        ports.release();
        check_free(&a.to_string()).expect("free once released");
    }

    /// Fails if free ports come from binding port 0 again (they would lie
    /// in the ephemeral range).
    #[test]
    fn free_ports_lie_below_the_ephemeral_range() {
        let (low, high) = drawn_range();
        let mut ports = Reserved::new();
        for _ in 0..20 {
            let port = ports.take().expect("a port").port();
            assert!((low..high).contains(&port), "{port} not in {low}..{high}");
        }
        let port = free_addr().expect("a port").port();
        assert!((low..high).contains(&port), "{port} not in {low}..{high}");
    }

    #[test]
    fn the_fixed_layout_is_the_scripts_one() {
        assert_eq!(
            base_layout(27000, 2),
            ("127.0.0.1:27021".into(), "127.0.0.1:27022".into())
        );
    }
}
