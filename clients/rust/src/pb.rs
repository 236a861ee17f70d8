//! The generated `raftlock.v1` client API: the `raftlock-api` crate's, so
//! code written against `raftlock_client::pb` keeps compiling.

pub use raftlock_api::pb::*;
