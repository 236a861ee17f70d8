//! What `/metrics` reads at scrape time: the gauges that describe the
//! replica's state now (term, leader, indexes, members, per-peer lag), set
//! from openraft's metrics just before the registry is encoded. The layer
//! above sets its own gauges (leases, locks) before it asks for the text.

use std::collections::BTreeSet;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;

use raftlock_storage::NodeId;

use crate::metrics::{clamp, Labels};
use crate::replica::Replica;

impl Replica {
    /// The node's metrics, the replica's state gauges brought up to date,
    /// with those of the layer above (`layer_above`), in the Prometheus
    /// text format.
    pub fn scrape_metrics(&self, layer_above: &prometheus_client::registry::Registry) -> String {
        self.refresh_gauges();
        self.metrics.encode_with(layer_above)
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
        }
    }
}
