//! Integration tests: real nodes (in this process) talking gRPC over
//! loopback, driven through the Rust client. One binary, one fixture
//! ([`cluster::TestCluster`]).

mod allocator;
mod auth;
mod backup;
mod bad_input;
mod cancellation;
mod cli;
mod client_blocking;
mod client_election;
mod client_locks;
mod client_recipes;
mod cluster;
mod connection_attacks;
mod coordination;
mod disk_full;
mod exactly_once;
mod failover;
mod features;
mod group_commit;
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
mod peer_robustness;
mod rollback;
mod small_disk;
mod tls;
