//! Why a call cannot be served right now. Every reason is retryable: later,
//! or on another node; the words say which.

use std::time::Duration;

use raftlock_storage::{LeaseId, NodeId};

use super::dial_error::DialError;
use super::peer_words::PeerWords;
use super::refusal::Refusal;
use super::Source;

/// Why a call cannot be served right now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// No leader is elected (an election is under way).
    #[error("no leader elected")]
    NoLeader,
    /// A leader is known but did not answer within the wait.
    #[error("no leader reachable; retry later")]
    NoLeaderReachable,
    /// This node learnt of no leader within `waited`.
    #[error("no leader after {waited:?}")]
    NoLeaderAfter {
        /// How long it waited.
        waited: Duration,
    },
    /// The leader's read-index round did not reach a majority.
    #[error("no quorum: the leader heard only from node(s) {}", list(heard_from))]
    NoQuorum {
        /// The nodes that answered the round.
        heard_from: Vec<NodeId>,
    },
    /// Node `node` leads, but a majority did not confirm the call within
    /// `waited`; the call may still take effect.
    #[error(
        "no quorum within {waited:?}: node {node} leads but a majority did not confirm; \
         the call may still take effect, and a retry with the same request id is applied once"
    )]
    QuorumTimeout {
        /// The leader that waited.
        node: NodeId,
        /// How long it waited.
        waited: Duration,
    },
    /// Another membership change is still in progress (openraft's refusal).
    #[error("membership change in progress: {0}")]
    MembershipChanging(Source),
    /// A new leader has not committed an entry of its own term yet
    /// (openraft's refusal).
    #[error("the new leader is not ready yet: {0}")]
    LeaderNotReady(Source),
    /// The leader removed itself and waits for its successor.
    #[error("the leader is leaving the cluster; retry on its successor")]
    LeaderLeaving,
    /// Node `node` leads but the layer above has not registered its
    /// leader calls yet (it is starting).
    #[error("node {node} leads but does not serve clients yet")]
    LeaderNotServing {
        /// The leader.
        node: NodeId,
    },
    /// Node `node` is stopping; another node serves the call.
    #[error("node {node} is stopping; try another node")]
    NodeStopping {
        /// The stopping node.
        node: NodeId,
    },
    /// Node `node` did not apply log index `index` in time.
    #[error("node {node} did not apply index {index}: {source}")]
    NotApplied {
        /// This node.
        node: NodeId,
        /// The index waited for.
        index: u64,
        /// openraft's wait error.
        source: Source,
    },
    /// The leader refused calls forwarded from node `node` (its guard
    /// refused the message): ask another node.
    #[error("node {node} cannot forward to the leader ({}); ask another node", failure.reason)]
    ForwardRefused {
        /// This node.
        node: NodeId,
        /// What the leader's side said.
        failure: ForwardFailure,
    },
    /// The leader did not answer a forwarded call.
    #[error("cannot reach leader: {}", .0.reason)]
    LeaderUnreachable(ForwardFailure),
    /// Lease `lease` is being expired; whether the call would have found
    /// it is not known until the expiry commits or fails.
    #[error("lease {lease} is being expired; its outcome is not known yet")]
    LeaseExpiring {
        /// The lease.
        lease: LeaseId,
    },
    /// Another node's reason, relayed over the peer API in its words
    /// (the wire carries kind and words, not the reason; see `wire`).
    #[error("{0}")]
    Relayed(#[source] PeerWords),
}

/// Why a forwarded call got no answer from the leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForwardFailure {
    /// The leader's guard refused this node's message (this node is no
    /// member of its cluster, say, just removed): the same call from this
    /// node is refused again, so the caller should ask another node.
    pub refused: bool,
    /// What happened, naming the leader.
    pub reason: ForwardFault,
}

/// What went wrong with a call forwarded to the leader.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ForwardFault {
    /// A test cut the link to the leader.
    #[error("link to node {0} is cut")]
    LinkCut(NodeId),
    /// The leader's address cannot be dialed.
    #[error(transparent)]
    Dial(#[from] DialError),
    /// The call could not be encoded, or the answer decoded.
    #[error("{0}")]
    Payload(postcard::Error),
    /// The leader's node answered with an error status, in its words.
    #[error("node {leader}: {message}")]
    Status {
        /// The leader.
        leader: NodeId,
        /// The status code.
        code: tonic::Code,
        /// The status message, as the leader's node wrote it.
        #[source]
        message: PeerWords,
    },
    /// The leader's answer failed the envelope check.
    #[error("node {leader} at {addr}: {refusal}")]
    BadReply {
        /// The leader.
        leader: NodeId,
        /// Where it was dialed.
        addr: String,
        /// Why the answer was refused.
        refusal: Box<Refusal>,
    },
}

fn list(ids: &[NodeId]) -> String {
    ids.iter()
        .map(|id| id.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of the reasons that carry data: what clients have always
    /// read (UNAVAILABLE's message is the reason's words).
    #[test]
    fn reasons_keep_their_words() {
        let failure = ForwardFailure {
            refused: true,
            reason: ForwardFault::Status {
                leader: 1,
                code: tonic::Code::PermissionDenied,
                message: PeerWords::new("not a member").said_by(1),
            },
        };
        let cases = [
            (
                Unavailable::NoQuorum {
                    heard_from: vec![1, 3],
                },
                "no quorum: the leader heard only from node(s) 1, 3",
            ),
            (
                Unavailable::NoLeaderAfter {
                    waited: Duration::from_secs(2),
                },
                "no leader after 2s",
            ),
            (
                Unavailable::NodeStopping { node: 2 },
                "node 2 is stopping; try another node",
            ),
            (
                Unavailable::ForwardRefused {
                    node: 2,
                    failure: failure.clone(),
                },
                "node 2 cannot forward to the leader (node 1: not a member); ask another node",
            ),
            (
                Unavailable::LeaderUnreachable(failure),
                "cannot reach leader: node 1: not a member",
            ),
            (
                Unavailable::LeaseExpiring { lease: 9 },
                "lease 9 is being expired; its outcome is not known yet",
            ),
        ];
        for (reason, words) in cases {
            assert_eq!(reason.to_string(), words);
        }
    }

    /// A leader's status message is the fault's source, naming the leader:
    /// a caller reads the words and who said them without parsing. Fails if
    /// `Status` holds its message as a plain field (seen by dropping
    /// `#[source]`).
    #[test]
    fn a_leaders_status_words_are_the_faults_source() {
        let fault = ForwardFault::Status {
            leader: 1,
            code: tonic::Code::PermissionDenied,
            message: PeerWords::new("not a member").said_by(1),
        };
        assert_eq!(fault.to_string(), "node 1: not a member");
        let words = std::error::Error::source(&fault)
            .and_then(|s| s.downcast_ref::<PeerWords>())
            .map(|w| (w.words(), w.node()));
        assert_eq!(words, Some(("not a member", Some(1))));
    }
}
