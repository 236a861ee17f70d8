//! What a follower hands to the leader over the peer API, and the answers.

use serde::{Deserialize, Serialize};

use raftlock_storage::{Caller, LeaseId, NodeAddr, NodeId, Request, Response};

use crate::error::Error;

/// A call only the leader can serve.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Forwarded {
    /// Replicate this request.
    Write(Request),
    /// Confirm leadership and name the log index a linearizable read must
    /// wait for.
    ReadIndex,
    /// Renew a lease's deadline on the leader's timer, for `caller` (who
    /// must own the lease or be an admin).
    KeepAlive {
        id: LeaseId,
        caller: Caller,
    },
    /// Remaining time of a lease on the leader's timer.
    Remaining(LeaseId),
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
    /// Time left on a lease (keep-alive answers the full TTL).
    LeaseTtl(Option<u64>),
    /// A membership change was committed at `index`.
    Membership { index: u64 },
}

/// The wire form: the reply or the error the leader hit.
pub type ForwardResult = Result<ForwardReply, Error>;
