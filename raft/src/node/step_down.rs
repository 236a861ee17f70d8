//! A leader that cannot keep its lease gives way.
//!
//! openraft refuses writes on a leader that no quorum acknowledged for a
//! leader lease (the longest election timeout) but keeps it leading, and
//! its followers campaign only once they stop hearing it. A leader starved
//! of CPU sends heartbeats that reach its followers but whose answers it
//! reads past openraft's heartbeat limit: its followers keep hearing it,
//! it keeps losing its lease, and every write is refused for as long as
//! the starvation lasts.
//!
//! This task watches the leader's last quorum acknowledgement. Once it is
//! older than [`GIVE_WAY_AFTER`] election timeouts, the leader stops
//! sending heartbeats: its followers stop hearing it and elect another
//! leader an election timeout and a lease later, whose higher term makes
//! this node a follower. Heartbeats come back on as soon as this node
//! no longer leads that term, so a later leadership heartbeats as usual.
//! A single-voter cluster is left alone: it has no one to give way to.

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use tokio::sync::watch;

use crate::replica::Replica;

/// How many (minimum) election timeouts without a quorum acknowledgement
/// a leader waits before it gives way: twice openraft's leader lease
/// (the longest election timeout, two minimum ones), so a leader that only
/// missed a heartbeat or two under load is left alone.
pub const GIVE_WAY_AFTER: u32 = 4;

/// What the metrics say of this node's leadership now.
struct Leading {
    term: u64,
    /// Time since a quorum last acknowledged it; `None` before the first.
    unacked_for: Option<Duration>,
    voters: usize,
}

fn leading(node: &Replica) -> Option<Leading> {
    let m = node.raft.metrics();
    let m = m.borrow_watched();
    if m.state != ServerState::Leader {
        return None;
    }
    Some(Leading {
        term: m.current_term,
        unacked_for: m
            .last_quorum_acked
            .as_ref()
            .map(|acked| openraft::Instant::elapsed(&**acked)),
        voters: m.membership_config.membership().voter_ids().count(),
    })
}

/// Runs until `stop`: gives way when this node leads without a quorum's
/// acknowledgement for too long (see the module docs).
pub(crate) async fn give_way_when_starved(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    let limit = node.config.election_timeout * GIVE_WAY_AFTER;
    let every = node.config.election_timeout / 3;
    // The term in which this node stopped its heartbeats.
    let mut silenced: Option<u64> = None;
    loop {
        let now = leading(&node);
        match (silenced, &now) {
            (Some(term), now) if now.as_ref().map(|l| l.term) != Some(term) => {
                node.raft.runtime_config().heartbeat(true);
                silenced = None;
                tracing::info!(
                    node = node.id,
                    term,
                    "no longer the leader of term {term}; heartbeats back on"
                );
            }
            (None, Some(l)) if l.voters > 1 && l.unacked_for.is_some_and(|t| t > limit) => {
                node.raft.runtime_config().heartbeat(false);
                silenced = Some(l.term);
                tracing::warn!(
                    node = node.id,
                    term = l.term,
                    unacked_ms = l.unacked_for.unwrap_or_default().as_millis() as u64,
                    "giving way: no quorum acknowledged this leader for {limit:?}, so it \
                     cannot keep its lease and refuses writes (a starved CPU or a slow \
                     network?); heartbeats stop until another node leads"
                );
            }
            _ => {}
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => break,
        }
    }
    if silenced.is_some() {
        node.raft.runtime_config().heartbeat(true);
    }
}
