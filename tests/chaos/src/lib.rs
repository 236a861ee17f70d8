//! raftlock-chaos: a fault-injection suite for raftlock.
//!
//! It starts a real cluster of `raftlock serve` processes on loopback, puts a
//! userspace TCP proxy in front of every node's peer and client port, runs a
//! lock workload in separate client processes, injects faults (kill -9,
//! SIGSTOP of nodes and of lock-holding clients, partitions, full restarts)
//! from a seeded schedule, records every operation with its invocation and
//! completion time, and checks the history. See `docs/chaos.md`.
//!
//! # Layout
//!
//! - [`clock`]: the machine-wide monotonic clock every process stamps with;
//! - [`history`]: operations, outcomes and the recorded events;
//! - [`cluster`]: node processes (start, kill -9, SIGSTOP/SIGCONT, restart),
//!   launched through the shared test kit (`raftlock-testkit`);
//! - [`proxy`]: the TCP proxies and the partition policy they enforce;
//! - [`proc_net`]: which node process owns a loopback connection;
//! - [`register`]: the fenced register service critical sections write to;
//! - [`workload`]: the client process: workers contending on locks;
//! - [`clients`]: the harness side of the client processes;
//! - [`nemesis`]: the seeded fault schedule;
//! - [`checker`]: linearizability search and the safety checks;
//! - [`report`] and [`timeline`]: the one-screen summary and the PNG;
//! - [`run`]: one whole run, from flags to verdict;
//! - [`secure`]: the `--secure` mode (TLS, mutual TLS, client auth);
//! - [`powerloss`]: the power-loss test (rounds of load, power cut,
//!   restart and checks; `docs/powerloss.md`);
//! - [`cli`]: the command line.

pub mod checker;
pub mod cli;
pub mod clients;
pub mod clock;
pub mod cluster;
pub mod history;
pub mod nemesis;
pub mod powerloss;
pub mod proc_net;
pub mod proxy;
pub mod register;
pub mod report;
pub mod run;
pub mod secure;
pub mod timeline;
pub mod workload;

/// What can stop a chaos run before it has a verdict.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The cluster never elected a leader, a flag made no sense, ...
    #[error("{0}")]
    Setup(String),
    /// A file, socket or process operation failed
    /// ([`raftlock_testkit::Error::Io`]), or the test kit could not lay
    /// out or start a node.
    #[error("{0}")]
    Kit(#[from] raftlock_testkit::Error),
    /// The raftlock client refused to start.
    #[error("client: {0}")]
    Client(#[from] raftlock_client::Error),
    /// Drawing the timeline failed.
    #[error("timeline: {0}")]
    Plot(String),
}

impl Error {
    /// Wraps an IO error with what was being done.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let wrap = raftlock_testkit::Error::io(what);
        move |source| Error::Kit(wrap(source))
    }
}
