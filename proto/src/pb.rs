//! The generated `raftlock.v1` messages and client stubs.

tonic::include_proto!("raftlock.v1");
