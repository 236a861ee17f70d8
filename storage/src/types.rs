//! The openraft type configuration shared by every raftlock crate.

use std::fmt;
use std::io::Cursor;

use serde::{Deserialize, Serialize};

use crate::command::{Proposal, Response};

/// Raft node ids are plain integers chosen by the operator (1, 2, 3, ...).
pub type NodeId = u64;

/// Where a node can be reached. Both addresses live in the Raft membership so
/// any node can name the leader's client address in a not-leader answer and
/// reach the leader's peer address to forward a call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAddr {
    /// `host:port` of the peer (Raft) listener.
    pub peer_addr: String,
    /// `host:port` of the client API listener.
    pub client_addr: String,
}

impl fmt::Display for NodeAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer={} client={}", self.peer_addr, self.client_addr)
    }
}

openraft::declare_raft_types!(
    /// raftlock's openraft type configuration.
    pub TypeConfig:
        D = Proposal,
        R = Vec<Response>,
        NodeId = NodeId,
        Node = NodeAddr,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = openraft::TokioRuntime,
);
