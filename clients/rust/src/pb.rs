//! The generated `raftlock.v1` client API.

tonic::include_proto!("raftlock.v1");
