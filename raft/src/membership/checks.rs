//! What the leader checks before it proposes a membership change that an
//! operator typed: a new learner must answer at the peer address given, as
//! the node id given, with the client address given; a learner to promote
//! must be a learner, up and caught up. A change that fails a check is
//! refused with what was found and what to do; nothing is proposed.

use std::time::Duration;

use raftlock_storage::{NodeAddr, NodeId};

use crate::error::Error;
use crate::peer::network::PeerNetwork;
use crate::peer::probe::{probe, PeerProbe};

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
    judge_probe(answer, cluster_id, secret, id, node).map_err(Error::InvalidArgument)
}

/// The verdict on what answered at a new learner's peer address.
/// `secret`: peers use a join token, so the command that starts the node
/// names a token file. The token itself is never written here: this
/// message goes to whoever called, and the secret never leaves a node.
fn judge_probe(
    probe: PeerProbe,
    cluster_id: Option<&str>,
    secret: bool,
    id: NodeId,
    node: &NodeAddr,
) -> Result<(), String> {
    let (peer, client) = (&node.peer_addr, &node.client_addr);
    let order = "`raftlock cluster add-learner` takes ID PEER_ADDR CLIENT_ADDR";
    let token = match secret {
        true => " --join-token-file FILE",
        false => "",
    };
    let start = format!(
        "`raftlock serve --id {id} --join{token} --peer-addr {peer} --client-addr {client}`"
    );
    let copy = match secret {
        true => {
            "; FILE holds the cluster's join token: copy a member's data-dir file \
             raftlock.key to the new node's host"
        }
        false => "",
    };
    match probe {
        PeerProbe::Unreachable(why) => Err(format!(
            "no raftlock node answers at peer address {peer} ({why}); start node {id} first \
             ({start}{copy}), then add it"
        )),
        PeerProbe::NoSecret(why) => Err(format!(
            "the node at peer address {peer} does not hold this cluster's join token ({why}); \
             start node {id} on an empty data dir with {start}{copy}, then add it"
        )),
        PeerProbe::NotPeerPort(why) => Err(format!(
            "{peer} answers, but not as a raftlock peer port ({why}): is it a client port? \
             {order}"
        )),
        PeerProbe::Node { id: other, .. } if other != id => Err(format!(
            "the node at peer address {peer} is node {other}, not node {id}; give the id it \
             was started with (--id), or the address of node {id}"
        )),
        PeerProbe::Node {
            cluster_id: theirs, ..
        } if !theirs.is_empty() && Some(theirs.as_str()) != cluster_id => Err(format!(
            "node {id} at {peer} belongs to another cluster ({theirs}); a node joins with an \
             empty data dir and --join"
        )),
        PeerProbe::Node {
            client_addr: Some(theirs),
            ..
        } if &theirs != client => Err(format!(
            "node {id} at {peer} serves clients at {theirs}, not at {client}; {order}"
        )),
        PeerProbe::Node { .. } => Ok(()),
    }
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
pub fn check_promotable(id: NodeId, c: &Candidate) -> Result<(), Error> {
    let status = "watch `raftlock cluster status`";
    let refuse = |why: String| Err(Error::InvalidArgument(why));
    match c.voter {
        None => {
            return refuse(format!(
                "node {id} is not a member; add it first with `raftlock cluster add-learner`"
            ))
        }
        Some(true) => return refuse(format!("node {id} is already a voter")),
        Some(false) => {}
    }
    match c.last_ack {
        None => {
            return refuse(format!(
                "learner {id} has not answered the leader since it was added; is it running? \
                 Start it (or fix its address), {status}, then promote it"
            ))
        }
        Some(ago) if ago > LEARNER_CONTACT => {
            return refuse(format!(
                "learner {id} last answered the leader {:.1} s ago: it looks down, and a \
                 voter that is down counts against the quorum. Start it, {status}, then \
                 promote it",
                ago.as_secs_f64()
            ))
        }
        Some(_) => {}
    }
    let matched = c.matched.unwrap_or(0);
    let behind = c.leader_last.saturating_sub(matched);
    if behind > MAX_PROMOTE_LAG {
        return refuse(format!(
            "learner {id} is {behind} entries behind the leader (it holds index {matched} of \
             {}); wait until it catches up ({status}), then promote it",
            c.leader_last
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
                PeerProbe::Unreachable("connection refused".into()),
                "start node 4 first",
            ),
            (
                PeerProbe::NotPeerPort("Unimplemented".into()),
                "is it a client port?",
            ),
            (
                PeerProbe::NoSecret("no tag".into()),
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
            let err = judge_probe(probe, ours, true, 4, &addr()).expect_err(says);
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
