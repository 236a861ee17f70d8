//! Integration tests: real nodes (in this process) talking gRPC over
//! loopback, driven through the Rust client. One binary, one fixture
//! ([`cluster::TestCluster`]).

mod admin_listener;
mod allocator;
mod auth;
mod backup;
mod bad_input;
mod cancellation;
mod cli;
mod client_blocking;
mod client_dial;
mod client_election;
mod client_locks;
mod client_ownership;
mod client_recipes;
mod cluster;
mod connection_attacks;
mod coordination;
mod disk_full;
mod exactly_once;
mod failover;
mod features;
mod group_commit;
mod guarantees;
mod layout;
mod lease_expiry;
mod leases;
mod locks;
mod membership;
mod node_errors;
mod observe;
mod partitions;
mod peer_attacks;
mod peer_auth;
mod peer_fuzz;
mod peer_refusals;
mod peer_robustness;
mod proxies;
mod rollback;
mod small_disk;
mod tls;

/// The repository's top directory. The suite is a test of the command
/// line's package (clients/cli), two levels down.
fn repo_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
