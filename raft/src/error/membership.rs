//! Why the leader refuses a membership change an operator typed: what it
//! found, as data, and in words that say what to do next. The join token
//! is never written here: the words go to whoever called, and the secret
//! never leaves a node.

use std::fmt;
use std::time::Duration;

use raftlock_storage::{NodeAddr, NodeId};

use super::probe_fault::{NoAnswer, NoSecret, OtherService};

/// A membership change the leader will not make; nothing was proposed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipRefusal {
    /// Removing a node that is no member.
    #[error("node {id} is not a member")]
    NotMember { id: NodeId },
    /// Promoting a node that is no member.
    #[error("node {id} is not a member; add it first with `raftlock cluster add-learner`")]
    PromoteNonMember { id: NodeId },
    /// Promoting a voter.
    #[error("node {id} is already a voter")]
    AlreadyVoter { id: NodeId },
    /// Promoting a learner that never acknowledged the leader.
    #[error(
        "learner {id} has not answered the leader since it was added; is it running? \
         Start it (or fix its address), {STATUS}, then promote it"
    )]
    LearnerSilent { id: NodeId },
    /// Promoting a learner last heard from `ago`.
    #[error(
        "learner {id} last answered the leader {:.1} s ago: it looks down, and a voter that \
         is down counts against the quorum. Start it, {STATUS}, then promote it",
        ago.as_secs_f64()
    )]
    LearnerDown { id: NodeId, ago: Duration },
    /// Promoting a learner `behind` entries behind the leader.
    #[error(
        "learner {id} is {behind} entries behind the leader (it holds index {matched} of \
         {leader_last}); wait until it catches up ({STATUS}), then promote it"
    )]
    LearnerBehind {
        id: NodeId,
        behind: u64,
        matched: u64,
        leader_last: u64,
    },
    /// Adding a node id the cluster removed before.
    #[error(
        "node id {id} was removed from this cluster and is never added again; give the new \
         node an id the cluster has not used"
    )]
    Retired { id: NodeId },
    /// Adding a learner that does not answer as itself at its address.
    #[error("{0}")]
    NewLearner(NewLearner),
}

const STATUS: &str = "watch `raftlock cluster status`";

/// A new learner `id` given at `node` that did not answer as itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLearner {
    /// The id the operator gave.
    pub id: NodeId,
    /// The addresses the operator gave.
    pub node: NodeAddr,
    /// Whether peers use a join token (the start command then names a
    /// token file).
    pub secret: bool,
    /// What answered.
    pub found: Found,
}

/// What answered at a new learner's peer address, when it was not the
/// learner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// Nothing raftlock answered.
    Unreachable(NoAnswer),
    /// A raftlock node without this cluster's join token.
    NoSecret(NoSecret),
    /// Something that is not a raftlock peer port.
    NotPeerPort(OtherService),
    /// Another node.
    OtherNode(NodeId),
    /// The node, but of another cluster.
    OtherCluster(String),
    /// The node, serving clients at another address.
    OtherClientAddr(String),
}

impl fmt::Display for NewLearner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.id;
        let (peer, client) = (&self.node.peer_addr, &self.node.client_addr);
        let order = "`raftlock cluster add-learner` takes ID PEER_ADDR CLIENT_ADDR";
        let token = match self.secret {
            true => " --join-token-file FILE",
            false => "",
        };
        let start = format!(
            "`raftlock serve --id {id} --join{token} --peer-addr {peer} --client-addr {client}`"
        );
        let copy = match self.secret {
            true => {
                "; FILE holds the cluster's join token: copy a member's data-dir file \
                 raftlock.key to the new node's host"
            }
            false => "",
        };
        match &self.found {
            Found::Unreachable(why) => write!(
                f,
                "no raftlock node answers at peer address {peer} ({why}); start node {id} \
                 first ({start}{copy}), then add it"
            ),
            Found::NoSecret(why) => write!(
                f,
                "the node at peer address {peer} does not hold this cluster's join token \
                 ({why}); start node {id} on an empty data dir with {start}{copy}, then add it"
            ),
            Found::NotPeerPort(why) => write!(
                f,
                "{peer} answers, but not as a raftlock peer port ({why}): is it a client \
                 port? {order}"
            ),
            Found::OtherNode(other) => write!(
                f,
                "the node at peer address {peer} is node {other}, not node {id}; give the id \
                 it was started with (--id), or the address of node {id}"
            ),
            Found::OtherCluster(theirs) => write!(
                f,
                "node {id} at {peer} belongs to another cluster ({theirs}); a node joins with \
                 an empty data dir and --join"
            ),
            Found::OtherClientAddr(theirs) => write!(
                f,
                "node {id} at {peer} serves clients at {theirs}, not at {client}; {order}"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words an operator reads, kept from before the refusals were
    /// typed.
    #[test]
    fn refusals_keep_their_words() {
        assert_eq!(
            MembershipRefusal::LearnerSilent { id: 4 }.to_string(),
            "learner 4 has not answered the leader since it was added; is it running? Start \
             it (or fix its address), watch `raftlock cluster status`, then promote it"
        );
        let refusal = MembershipRefusal::NewLearner(NewLearner {
            id: 4,
            node: NodeAddr {
                peer_addr: "10.0.0.4:7380".into(),
                client_addr: "10.0.0.4:7379".into(),
            },
            secret: false,
            found: Found::Unreachable(NoAnswer::Silent(std::time::Duration::from_secs(1))),
        });
        assert_eq!(
            refusal.to_string(),
            "no raftlock node answers at peer address 10.0.0.4:7380 (no answer within 1s); \
             start node 4 first (`raftlock serve --id 4 --join --peer-addr 10.0.0.4:7380 \
             --client-addr 10.0.0.4:7379`), then add it"
        );
    }
}
