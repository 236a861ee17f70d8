//! Loopback ports for a cluster's nodes: free ones, chosen by binding port
//! 0 and held until every node has its own, or a fixed layout whose ports
//! are checked before a node is started on them.

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
        let listener = TcpListener::bind("127.0.0.1:0").map_err(Error::io("bind port 0"))?;
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

    #[test]
    fn the_fixed_layout_is_the_scripts_one() {
        assert_eq!(
            base_layout(27000, 2),
            ("127.0.0.1:27021".into(), "127.0.0.1:27022".into())
        );
    }
}
