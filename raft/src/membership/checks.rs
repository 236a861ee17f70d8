//! What the leader checks before it proposes a membership change that an
//! operator typed: a new learner must answer at the peer address given, as
//! the node id given, with the client address given; a learner to promote
//! must be a learner, up and caught up. A change that fails a check is
//! refused with what was found and what to do; nothing is proposed.

use std::time::Duration;

use raftlock_storage::{NodeAddr, NodeId};

use crate::error::Error;
use crate::error::{Found, MembershipRefusal, NewLearner};
use crate::peer::network::PeerNetwork;
use crate::peer::probe::{probe, PeerProbe};
#[cfg(test)]
use crate::peer::probe::{NoAnswer, NoSecret, OtherService};

/// How long the leader waits for a new node to answer at its peer address.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// A learner that has not acknowledged the leader for this long is
/// treated as down: promoting it would add a voter that cannot vote.
pub const LEARNER_CONTACT: Duration = Duration::from_secs(3);

/// A learner further behind the leader's log than this many entries is
/// still catching up: as a voter it would hold back every commit that
/// needs it.
pub const MAX_PROMOTE_LAG: u64 = 1_000;

/// Checks that node `id` answers at `node.peer_addr` as itself, in no other
/// cluster than `cluster_id`, with `node.client_addr` as its client address.
pub async fn check_new_learner(
    net: &PeerNetwork,
    cluster_id: Option<&str>,
    id: NodeId,
    node: &NodeAddr,
) -> Result<(), Error> {
    let answer = probe(net, id, &node.peer_addr, PROBE_TIMEOUT).await;
    let secret = net.uses_join_token();
    judge_probe(answer, cluster_id, secret, id, node).map_err(Error::from)
}

/// The verdict on what answered at a new learner's peer address.
/// `secret`: peers use a join token, so the command that starts the node
/// names a token file.
fn judge_probe(
    probe: PeerProbe,
    cluster_id: Option<&str>,
    secret: bool,
    id: NodeId,
    node: &NodeAddr,
) -> Result<(), MembershipRefusal> {
    let found = match probe {
        PeerProbe::Unreachable(why) => Found::Unreachable(why),
        PeerProbe::NoSecret(why) => Found::NoSecret(why),
        PeerProbe::NotPeerPort(why) => Found::NotPeerPort(why),
        PeerProbe::Node { id: other, .. } if other != id => Found::OtherNode(other),
        PeerProbe::Node {
            cluster_id: theirs, ..
        } if !theirs.is_empty() && Some(theirs.as_str()) != cluster_id => {
            Found::OtherCluster(theirs)
        }
        PeerProbe::Node {
            client_addr: Some(theirs),
            ..
        } if theirs != node.client_addr => Found::OtherClientAddr(theirs),
        PeerProbe::Node { .. } => return Ok(()),
    };
    Err(MembershipRefusal::NewLearner(NewLearner {
        id,
        node: node.clone(),
        secret,
        found,
    }))
}

/// What the leader knows of a member it is asked to promote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// `None`: not a member; `Some(true)`: already a voter.
    pub voter: Option<bool>,
    /// How long ago it last acknowledged the leader (`None`: never).
    pub last_ack: Option<Duration>,
    /// The last log index it is known to hold.
    pub matched: Option<u64>,
    /// The leader's last log index.
    pub leader_last: u64,
}

/// Checks that a member may become a voter now.
pub fn check_promotable(id: NodeId, c: &Candidate) -> Result<(), MembershipRefusal> {
    match c.voter {
        None => return Err(MembershipRefusal::PromoteNonMember { id }),
        Some(true) => return Err(MembershipRefusal::AlreadyVoter { id }),
        Some(false) => {}
    }
    match c.last_ack {
        None => return Err(MembershipRefusal::LearnerSilent { id }),
        Some(ago) if ago > LEARNER_CONTACT => {
            return Err(MembershipRefusal::LearnerDown { id, ago })
        }
        Some(_) => {}
    }
    let matched = c.matched.unwrap_or(0);
    let behind = c.leader_last.saturating_sub(matched);
    if behind > MAX_PROMOTE_LAG {
        return Err(MembershipRefusal::LearnerBehind {
            id,
            behind,
            matched,
            leader_last: c.leader_last,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::PeerWords;

    fn addr() -> NodeAddr {
        NodeAddr {
            peer_addr: "127.0.0.1:7480".into(),
            client_addr: "127.0.0.1:7479".into(),
        }
    }

    fn node(id: NodeId, cluster: &str, client: &str) -> PeerProbe {
        PeerProbe::Node {
            id,
            boot: 1,
            cluster_id: cluster.into(),
            client_addr: Some(client.into()),
        }
    }

    #[test]
    fn a_new_learner_must_answer_as_itself_at_the_addresses_given() {
        let ours = Some("c1");
        let fresh = node(4, "", "127.0.0.1:7479");
        assert_eq!(judge_probe(fresh, ours, false, 4, &addr()), Ok(()));
        let rejoining = node(4, "c1", "127.0.0.1:7479");
        assert_eq!(judge_probe(rejoining, ours, false, 4, &addr()), Ok(()));
        let cases = [
            (
                PeerProbe::Unreachable(NoAnswer::Silent(Duration::from_secs(1))),
                "start node 4 first",
            ),
            (
                PeerProbe::NotPeerPort(OtherService {
                    code: tonic::Code::Unimplemented,
                    message: PeerWords::new("unknown service raftlock.peer.Peer"),
                }),
                "is it a client port?",
            ),
            (
                PeerProbe::NoSecret(NoSecret::Untagged),
                "serve --id 4 --join --join-token-file FILE --peer-addr",
            ),
            (node(5, "", "127.0.0.1:7479"), "is node 5, not node 4"),
            (node(4, "c2", "127.0.0.1:7479"), "another cluster (c2)"),
            (
                node(4, "", "127.0.0.1:7379"),
                "serves clients at 127.0.0.1:7379",
            ),
        ];
        for (probe, says) in cases {
            let err = judge_probe(probe, ours, true, 4, &addr())
                .expect_err(says)
                .to_string();
            assert!(err.contains(says), "{err}");
            assert!(!err.contains("rlj1-"), "a secret in {err}");
        }
    }

    #[test]
    fn only_a_learner_that_is_up_and_caught_up_is_promoted() {
        let good = Candidate {
            voter: Some(false),
            last_ack: Some(Duration::from_millis(40)),
            matched: Some(990),
            leader_last: 1_000,
        };
        assert_eq!(check_promotable(4, &good), Ok(()));
        let cases = [
            (
                Candidate {
                    voter: None,
                    ..good.clone()
                },
                "not a member",
            ),
            (
                Candidate {
                    voter: Some(true),
                    ..good.clone()
                },
                "already a voter",
            ),
            (
                Candidate {
                    last_ack: None,
                    ..good.clone()
                },
                "has not answered",
            ),
            (
                Candidate {
                    last_ack: Some(Duration::from_secs(9)),
                    ..good.clone()
                },
                "looks down",
            ),
            (
                Candidate {
                    matched: Some(5),
                    leader_last: 5_000,
                    ..good.clone()
                },
                "4995 entries behind",
            ),
        ];
        for (candidate, says) in cases {
            let err = check_promotable(4, &candidate).expect_err(says).to_string();
            assert!(err.contains(says), "{err}");
        }
        // Exactly the allowed lag is still promotable.
        let at_limit = Candidate {
            matched: None,
            ..good
        };
        assert_eq!(check_promotable(4, &at_limit), Ok(()));
    }
}
