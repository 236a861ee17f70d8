//! raftlock-testkit: the one cluster launcher that raftlock's integration
//! tests (`tests/it`), its chaos suite (`tests/chaos`) and its benchmark
//! (`bench`) share.
//!
//! A node runs one of two ways:
//! - in the test's own process (`TestCluster`, feature `in-process`): a
//!   `raftlock::Node` per node, listeners bound to port 0 first, links cut
//!   by the product's `LinkFilter` (a test-only feature of `raftlock`);
//! - as a child process of a `raftlock serve` binary ([`NodeProcess`] with
//!   the flags of [`ServeFlags`]): kill -9, SIGSTOP/SIGCONT, SIGTERM and
//!   restart with the same argv and data dir; killed when dropped.
//!
//! Python's tests and `cluster-scripts/` start their processes through
//! `cluster-scripts/start.sh` instead.
//!
//! # Layout
//!
//! - [`ports`]: loopback ports, free ones (bound to port 0 and held until
//!   every node has its own) or a fixed layout checked before use;
//! - [`serve`]: the flags and environment of one `raftlock serve` node,
//!   and the `--initial-cluster` list;
//! - [`process`]: one node process of any program (raftlock, etcd);
//! - [`delay_proxy`]: a TCP proxy that delays every byte (a slow network
//!   between a client and a node);
//! - [`runtime`]: the async runtime of a harness binary;
//! - `in_process` (feature `in-process`): `TestCluster`, nodes inside the
//!   test process.

pub mod delay_proxy;
#[cfg(feature = "in-process")]
mod in_process;
pub mod ports;
pub mod process;
pub mod runtime;
pub mod serve;

pub use delay_proxy::DelayProxy;
#[cfg(feature = "in-process")]
pub use in_process::{test_config, TestCluster, TEST_CLIENT};
pub use process::{signal, Memory, NodeProcess, NodeSpec};
pub use serve::{initial_cluster, ServeFlags};

/// What can stop the kit from laying out or starting a cluster.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file, socket or process operation failed.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A port of a fixed layout is taken.
    #[error("port {addr} is in use or cannot be bound ({source})")]
    PortTaken {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Wraps an IO error with what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}
