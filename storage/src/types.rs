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

/// raftlock's openraft type configuration. Leader ids are openraft's
/// default (`leader_id_adv`: a (term, node) pair, so a term may see two
/// candidates but never two leaders with one leader id). Written out rather
/// than through `declare_raft_types!`, which cannot name a responder of
/// our own ([`Reply`]); the rest are that macro's defaults.
#[derive(Debug, Clone, Copy, Default, Eq, PartialEq, Ord, PartialOrd)]
pub struct TypeConfig {}

impl openraft::RaftTypeConfig for TypeConfig {
    type D = Proposal;
    type R = Vec<Response>;
    type NodeId = NodeId;
    type Node = NodeAddr;
    type Term = u64;
    type LeaderId = openraft::impls::leader_id_adv::LeaderId<Self::Term, Self::NodeId>;
    type Vote = openraft::impls::Vote<Self::LeaderId>;
    type Payload = openraft::EntryPayload<Self::D, Self::NodeId, Self::Node>;
    type Entry =
        openraft::Entry<<Self::LeaderId as openraft::vote::RaftLeaderId>::Committed, Self::Payload>;
    type Responder<T>
        = Reply<T>
    where
        T: openraft::OptionalSend + 'static;
    type Batch<T>
        = openraft::impls::InlineBatch<T>
    where
        T: openraft::OptionalSend + 'static;
    type AsyncRuntime = openraft::TokioRuntime;
    type ErrorSource = crate::storage_failure::StorageFailure;
}

/// Where openraft sends the outcome of a write proposed with
/// `client_write_ff`: a function run on the thread that applied the entry
/// (or failed it), so the proposer can answer its callers there, with no
/// task in between.
pub struct Reply<T>(Box<dyn FnOnce(T) + Send>);

impl<T> Reply<T> {
    /// A reply that runs `f` with the outcome.
    pub fn new(f: impl FnOnce(T) + Send + 'static) -> Self {
        Reply(Box::new(f))
    }
}

impl<T> fmt::Debug for Reply<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reply")
    }
}

impl<T: openraft::OptionalSend + 'static> openraft::raft::responder::Responder<TypeConfig, T>
    for Reply<T>
{
    fn on_complete(self, result: T) {
        (self.0)(result)
    }
}

/// A Raft log id: the leader that proposed the entry and its index.
pub type LogId = openraft::alias::LogIdOf<TypeConfig>;
/// The leader part of a [`LogId`]: term and node.
pub type CommittedLeaderId = openraft::alias::CommittedLeaderIdOf<TypeConfig>;
/// A vote: the leader a node voted for, and whether it is committed.
pub type Vote = openraft::alias::VoteOf<TypeConfig>;
/// A Raft log entry.
pub type Entry = openraft::alias::EntryOf<TypeConfig>;
/// What a log entry carries.
pub type EntryPayload = openraft::alias::EntryPayloadOf<TypeConfig>;
/// A cluster membership (voters and learners with their addresses).
pub type Membership = openraft::Membership<NodeId, NodeAddr>;
/// A membership and the log id of the entry that set it.
pub type StoredMembership = openraft::alias::StoredMembershipOf<TypeConfig>;
/// What a snapshot covers.
pub type SnapshotMeta = openraft::alias::SnapshotMetaOf<TypeConfig>;
/// The bytes a snapshot is shipped and stored as.
pub type SnapshotData = Cursor<Vec<u8>>;
/// A snapshot: its meta and its bytes.
pub type Snapshot = openraft::alias::SnapshotOf<TypeConfig, SnapshotData>;
