//! The `raftlock.v1` API: the client crate's messages and client stubs,
//! and the server stubs generated here over them.

pub use raftlock_client::pb::*;

tonic::include_proto!("raftlock.v1");
