//! raftlock-bench: raftlock and etcd 3.4 side by side on one machine.
//!
//! One run starts a 3-node etcd cluster and a 3-node raftlock cluster on
//! loopback (each node with its own data dir on the same disk), drives both
//! with the same load generator, alternating the systems round by round
//! (A B A B …) so machine noise cancels, and writes a JSON file, a markdown
//! table and a PNG chart of the medians and raftlock/etcd ratios.
//!
//! # Layout
//!
//! - [`plan`]: what a `--smoke` or `--full` run does (counts, durations,
//!   rounds) and the targets each workload is judged by.
//! - [`cluster`]: starting, killing and restarting the node processes of
//!   both systems; installing etcd when it is missing.
//! - [`driver`]: one client of either system behind one enum — grant,
//!   keep-alive and revoke a lease; lock and unlock a name.
//! - [`etcd_rpc`]: the generated etcd v3 gRPC client (Lease, Lock, KV,
//!   Maintenance).
//! - [`workload`]: W1–W8, each a function from a cluster and a plan to one
//!   round's measurements.
//! - [`stats`]: latency summaries and medians.
//! - [`report`]: the JSON model, the markdown table and the chart.
//! - [`holder`]: the `hold` subcommand — a lock holder in its own process,
//!   for W5 to kill.
//! - [`pairs_client`]: the `pairs` subcommand — W1–W3's clients against a
//!   cluster started elsewhere (the Python driver's Rust column).
//! - [`run`]: the whole benchmark, start to finish.

pub mod breakdown;
pub mod cluster;
pub mod driver;
pub mod error;
pub mod etcd_rpc;
pub mod holder;
pub mod pairs_client;
pub mod plan;
pub mod report;
pub mod run;
pub mod stats;
pub mod workload;

pub use error::Error;
