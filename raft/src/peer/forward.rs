//! What a follower hands to the leader over the peer API, and the answers.

use serde::{Deserialize, Serialize};

use raftlock_storage::{NodeAddr, NodeId, Request, Response};

use crate::error::Error;

/// A call only the leader can serve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Forwarded {
    /// Replicate this request.
    Write(Request),
    /// Confirm leadership and name the log index a linearizable read must
    /// wait for.
    ReadIndex,
    /// A call of the layer above that only the leader serves (see
    /// [`LeaderService`](crate::leader_service::LeaderService)); its bytes
    /// are that layer's, carried here unread.
    Service(Vec<u8>),
    /// Membership changes.
    AddLearner {
        id: NodeId,
        node: NodeAddr,
    },
    Promote(NodeId),
    Remove(NodeId),
}

/// The leader's answer to a [`Forwarded`] call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ForwardReply {
    /// A write's log index and state machine response.
    Written { index: u64, response: Response },
    /// Read index for a linearizable read.
    ReadIndex(u64),
    /// The leader service's answer to a [`Forwarded::Service`] call.
    Service(Vec<u8>),
    /// A membership change was committed at `index`.
    Membership { index: u64 },
}

/// The wire form: the reply or the error the leader hit.
pub type ForwardResult = Result<ForwardReply, Error>;
