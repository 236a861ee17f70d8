//! Watches openraft's metrics for the changes an operator cares about:
//! counts elections, leader changes and snapshots, and logs each change
//! of leader, membership and snapshot as one line with fields. As leader,
//! it also keeps what each follower acknowledged (crate::node::rollback).
//! When the Raft core stops on its own (a storage failure), it reports the
//! node failed, so the node does not linger half-alive.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use openraft::async_runtime::WatchReceiver;
use tokio::sync::watch;

use raftlock_storage::NodeId;

use crate::replica::Replica;

/// What was seen last, to tell what changed.
#[derive(Default, PartialEq)]
struct Seen {
    term: u64,
    leader: Option<NodeId>,
    /// id -> is voter.
    members: BTreeMap<NodeId, bool>,
    snapshot: Option<u64>,
}

/// Runs until `stop` or until the Raft core ends.
pub(crate) async fn watch_raft(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    let mut metrics = node.raft.metrics();
    let mut seen: Option<Seen> = None;
    let mut installs = node.metrics.installs_seen.load(Ordering::Relaxed);
    loop {
        let now = {
            let m = metrics.borrow_and_update();
            node.net.witness().saw_leading(&m);
            let membership = m.membership_config.membership();
            let voters: Vec<NodeId> = membership.voter_ids().collect();
            Seen {
                term: m.current_term,
                leader: m.current_leader,
                members: membership
                    .nodes()
                    .map(|(id, _)| (*id, voters.contains(id)))
                    .collect(),
                snapshot: m.snapshot.map(|l| l.index),
            }
        };
        let installed = node.metrics.installs_seen.load(Ordering::Relaxed);
        let snapshot_changed = match &seen {
            Some(before) => {
                report(&node, before, &now);
                before.snapshot != now.snapshot
            }
            None => now.snapshot.is_some(),
        };
        if let (true, Some(index)) = (snapshot_changed, now.snapshot) {
            let kind = if seen.is_none() {
                "found at start"
            } else if installed != installs {
                "installed"
            } else {
                node.metrics.snapshots_built.inc();
                "built"
            };
            let bytes = snapshot_size(&node).await;
            tracing::info!(node = node.id, index, kind, bytes, "snapshot");
        }
        installs = installed;
        seen = Some(now);
        node.removal.check_applied().await;
        let core_stopped = metrics.borrow_watched().state == openraft::ServerState::Shutdown;
        if core_stopped && !*stop.borrow() {
            node.report_fatal("the Raft core stopped".to_string());
            return;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() {
                if !*stop.borrow() {
                    node.report_fatal("the Raft core ended".to_string());
                }
                return;
            },
            _ = stop.changed() => return,
        }
    }
}

/// Sets the snapshot size gauge from the current snapshot; answers its
/// size in bytes (0 if there is none or it cannot be read).
async fn snapshot_size(node: &Replica) -> u64 {
    let bytes = match node.raft.get_snapshot().await {
        Ok(Some(snapshot)) => snapshot.snapshot.get_ref().len() as u64,
        Ok(None) => 0,
        Err(e) => {
            tracing::warn!(
                node = node.id,
                "cannot read the snapshot to measure it: {e}"
            );
            0
        }
    };
    node.metrics
        .snapshot_size
        .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    bytes
}

/// Counts and logs the differences between `before` and `now` (snapshots
/// are left to the caller, which measures them).
fn report(node: &Replica, before: &Seen, now: &Seen) {
    let m = &node.metrics;
    if now.term > before.term {
        m.elections.inc_by(now.term - before.term);
    }
    if now.leader != before.leader {
        if let Some(leader) = now.leader {
            m.leader_changes.inc();
            tracing::info!(
                node = node.id,
                term = now.term,
                leader,
                previous = ?before.leader,
                "leader changed"
            );
        } else {
            tracing::info!(
                node = node.id,
                term = now.term,
                previous = ?before.leader,
                "leader lost; election under way"
            );
        }
    }
    for (id, voter) in &now.members {
        match before.members.get(id) {
            None => tracing::info!(node = node.id, member = id, voter, "member added"),
            Some(was) if was != voter => {
                tracing::info!(node = node.id, member = id, voter, "member changed role")
            }
            Some(_) => {}
        }
    }
    for id in before.members.keys() {
        if !now.members.contains_key(id) {
            tracing::info!(node = node.id, member = id, "member removed");
        }
    }
}
