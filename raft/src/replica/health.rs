//! Liveness and readiness, as `/healthz`, `/readyz` and the gRPC health
//! service answer them.
//!
//! - **Live**: the Raft core runs (it has not stopped on a storage error
//!   or a bug) and the node is not shutting down.
//! - **Ready**: live, it knows a leader that is a member, has heard from
//!   it lately (a leader: from a quorum; a follower: from the leader — with
//!   PreVote a follower cut off from the leader keeps naming it, and a
//!   leader cut off from the others does not step down at once; the only
//!   voter of a one-node cluster is its own quorum), and this
//!   node has applied its log up to at most [`READY_MAX_LAG`] entries
//!   behind the end of its log.

use openraft::async_runtime::WatchReceiver;
use openraft::{Instant, ServerState};
use serde::Serialize;

use raftlock_storage::NodeId;

use crate::replica::Replica;

/// Most entries a ready node may have in its log and not yet applied.
pub const READY_MAX_LAG: u64 = 1_000;

/// A leader that has not heard from a quorum, or a follower that has not
/// heard from its leader, for this many election timeouts is not ready: it
/// is likely cut off, and a new leader may be elected on the other side.
const QUORUM_SILENCE_TIMEOUTS: u32 = 4;

/// What a health check found. Serialized as the body of `/healthz` and
/// `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Whether the check passed.
    pub ok: bool,
    /// Why not, in a sentence; empty when it passed.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// This node's id.
    pub node: NodeId,
    /// Its role: leader, follower, candidate, learner or shutdown.
    pub role: &'static str,
    /// The leader it knows.
    pub leader: Option<NodeId>,
    /// Its term.
    pub term: u64,
    /// The end of its log.
    pub last_log_index: u64,
    /// The last entry it applied.
    pub applied_index: u64,
}

impl Replica {
    /// Whether the node is alive: the Raft core runs and it is not
    /// stopping.
    pub fn liveness(&self) -> Health {
        let mut health = self.health_base();
        let fatal = self.fatal.borrow().clone();
        health.reason = if let Some(reason) = fatal {
            format!("the Raft core stopped: {reason}")
        } else if self.is_stopping() {
            "the node is shutting down".to_string()
        } else if health.role == "shutdown" {
            "the Raft core is not running".to_string()
        } else {
            String::new()
        };
        health.ok = health.reason.is_empty();
        health
    }

    /// Whether the node is ready to serve calls (see the module docs).
    pub fn readiness(&self) -> Health {
        let mut health = self.liveness();
        if !health.ok {
            return health;
        }
        let m = self.raft.metrics().borrow_watched().clone();
        let lag = health.last_log_index.saturating_sub(health.applied_index);
        let silence_limit = self.config.election_timeout * QUORUM_SILENCE_TIMEOUTS;
        // A leader that is the only voter is its own quorum. Nobody acks
        // it, so openraft's `last_quorum_acked` stays at its last write: an
        // idle one-node cluster would turn unready after four election
        // timeouts.
        let sole_voter = m
            .membership_config
            .membership()
            .voter_ids()
            .all(|voter| voter == self.id);
        health.reason = match m.current_leader {
            None => "no leader known (an election is under way, or this node is cut off \
                     from a quorum)"
                .to_string(),
            Some(leader) if m.membership_config.membership().get_node(&leader).is_none() => {
                format!("the leader it knows (node {leader}) is not a member")
            }
            Some(_) if lag > READY_MAX_LAG => {
                format!("{lag} log entries not applied yet (ready at {READY_MAX_LAG} or fewer)")
            }
            Some(_) if m.state == ServerState::Leader && sole_voter => String::new(),
            Some(_) if m.state == ServerState::Leader => {
                match m.last_quorum_acked.map(|at| at.elapsed()) {
                    Some(silence) if silence <= silence_limit => String::new(),
                    Some(silence) => format!(
                        "leader has not heard from a quorum for {} ms",
                        silence.as_millis()
                    ),
                    None => "leader has not heard from a quorum yet".to_string(),
                }
            }
            Some(leader) => match self.since_leader_contact(leader) {
                Some(silence) if silence <= silence_limit => String::new(),
                Some(silence) => format!(
                    "no word from the leader (node {leader}) for {} ms",
                    silence.as_millis()
                ),
                None => format!("no word from the leader (node {leader}) yet"),
            },
        };
        health.ok = health.reason.is_empty();
        health
    }

    fn health_base(&self) -> Health {
        let status = self.status();
        Health {
            ok: false,
            reason: String::new(),
            node: self.id,
            role: status.role,
            leader: status.leader,
            term: status.term,
            last_log_index: status.last_log_index,
            applied_index: status.applied_index,
        }
    }
}
