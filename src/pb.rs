//! The `raftlock.v1` API: the messages and client stubs of the
//! `raftlock-api` crate, and the server stubs generated here over them
//! (with the decoder that answers a malformed request `INVALID_ARGUMENT`).

pub use raftlock_api::pb::*;

tonic::include_proto!("raftlock.v1");
