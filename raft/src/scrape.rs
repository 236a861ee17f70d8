//! What `/metrics` reads at scrape time: the gauges that describe the
//! node's state now (term, leader, indexes, members, leases, locks,
//! per-peer lag), set from openraft's metrics and the applied lock state
//! just before the registry is encoded.

use std::collections::BTreeSet;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use tokio::time::Instant;

use raftlock_storage::NodeId;

use crate::metrics::Labels;
use crate::replica::Replica;

impl Replica {
    /// The node's metrics, state gauges brought up to date, in the
    /// Prometheus text format.
    pub fn scrape_metrics(&self) -> String {
        self.refresh_gauges();
        self.metrics.encode()
    }

    fn refresh_gauges(&self) {
        let m = &self.metrics;
        let raft = self.raft.metrics().borrow_watched().clone();
        let leading = raft.state == ServerState::Leader && raft.current_leader == Some(self.id);
        m.term.set(clamp(raft.current_term));
        m.is_leader.set(i64::from(leading));
        m.leader_id.set(raft.current_leader.map_or(0, clamp));
        let last = raft.last_log_index.unwrap_or(0);
        m.last_log_index.set(clamp(last));
        m.applied_index
            .set(clamp(raft.last_applied.map_or(0, |l| l.index)));
        m.snapshot_index
            .set(clamp(raft.snapshot.map_or(0, |l| l.index)));
        let purged = raft.purged.map_or(0, |l| l.index + 1);
        m.log_entries
            .set(clamp(last.saturating_add(1).saturating_sub(purged)));
        let membership = raft.membership_config.membership();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let all = membership.nodes().count();
        m.voters.set(clamp(voters.len() as u64));
        m.learners
            .set(clamp(all.saturating_sub(voters.len()) as u64));

        m.commit_index.clear();
        m.peer_lag.clear();
        m.expiry_backlog.clear();
        if leading {
            if let Some(replication) = &raft.replication {
                let matched = |id: &NodeId| {
                    if *id == self.id {
                        Some(last)
                    } else {
                        replication.get(id).map(|l| l.map_or(0, |l| l.index))
                    }
                };
                for (peer, log) in replication.iter() {
                    if *peer == self.id {
                        continue;
                    }
                    let lag = last.saturating_sub(log.map_or(0, |l| l.index));
                    m.peer_lag
                        .get_or_create(&vec![("peer", peer.to_string())])
                        .set(clamp(lag));
                }
                let mut stored: Vec<u64> = voters.iter().filter_map(matched).collect();
                if !stored.is_empty() && stored.len() == voters.len() {
                    stored.sort_unstable_by(|a, b| b.cmp(a));
                    let commit = stored[voters.len() / 2];
                    m.commit_index
                        .get_or_create(&Labels::new())
                        .set(clamp(commit));
                }
            }
            let backlog = self.timer.backlog(Instant::now());
            m.expiry_backlog
                .get_or_create(&Labels::new())
                .set(clamp(backlog as u64));
        }

        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        m.leases.set(clamp(state.leases().count() as u64));
        let (mut held, mut holders, mut waiters) = (0u64, 0u64, 0u64);
        for lock in state.locks() {
            held += u64::from(!lock.holders.is_empty());
            holders += lock.holders.len() as u64;
            waiters += lock.waiters.len() as u64;
        }
        m.locks_held.set(clamp(held));
        m.holders.set(clamp(holders));
        m.waiters.set(clamp(waiters));
    }
}

/// A gauge value from a count or index (gauges are signed).
fn clamp(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
