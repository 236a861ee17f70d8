//! The `raftlock.v1` API, shared by the server (`raftlock`), the Rust
//! client (`raftlock-client`) and the Python binding: what crosses the
//! wire and nothing more. Dependencies point at this crate, never from
//! the server to a client.
//!
//! # Layout
//!
//! - [`pb`]: the generated messages and client stubs of `raftlock.v1`
//!   (`proto/raftlock/v1/raftlock.proto`). The server generates its own
//!   service stubs over these messages (its decoder answers a malformed
//!   request with `INVALID_ARGUMENT`).
//! - [`metadata`]: the gRPC metadata keys a node sets on its answers and a
//!   client reads back.
//! - [`NodeAccess`]: what an application needs to reach the node it
//!   embeds (address, TLS material, admin credential), handed from
//!   `raftlock::Node::access` to `raftlock_client::Client::for_node`.

pub mod metadata;
mod node_access;
pub mod pb;

pub use node_access::{NodeAccess, NodeAccessTls};
