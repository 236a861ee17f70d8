//! The one list of metric names, help texts, types and units.

use prometheus_client::registry::{Registry, Unit};

use super::NodeMetrics;

impl NodeMetrics {
    /// Registers every metric in `r`. The one list of names, help texts
    /// and units (docs/operations.md lists the same).
    pub(super) fn register(&self, r: &mut Registry) {
        let raft = r.sub_registry_with_prefix("raft");
        raft.register("term", "Current Raft term", self.term.clone());
        raft.register(
            "is_leader",
            "1 if this node is the Raft leader, else 0",
            self.is_leader.clone(),
        );
        raft.register(
            "leader_id",
            "Id of the leader this node knows, 0 if none",
            self.leader_id.clone(),
        );
        raft.register(
            "last_log_index",
            "Index of the last entry in this node's log",
            self.last_log_index.clone(),
        );
        raft.register(
            "commit_index",
            "Highest index a quorum of voters stored (reported by the leader only)",
            self.commit_index.clone(),
        );
        raft.register(
            "applied_index",
            "Index of the last entry applied to the lock state",
            self.applied_index.clone(),
        );
        raft.register(
            "snapshot_index",
            "Last index covered by this node's snapshot",
            self.snapshot_index.clone(),
        );
        raft.register(
            "log_entries",
            "Entries kept in the log (last index minus purged index)",
            self.log_entries.clone(),
        );
        raft.register("voters", "Voting members", self.voters.clone());
        raft.register("learners", "Non-voting members", self.learners.clone());
        raft.register(
            "elections",
            "Terms this node has seen begin (each new term is one election)",
            self.elections.clone(),
        );
        raft.register(
            "leader_changes",
            "Times this node learned of a new leader",
            self.leader_changes.clone(),
        );
        raft.register(
            "snapshots_built",
            "Snapshots this node built from its own state",
            self.snapshots_built.clone(),
        );
        raft.register(
            "snapshots_installed",
            "Snapshots this node installed from the leader",
            self.snapshots_installed.clone(),
        );
        raft.register_with_unit(
            "snapshot_size",
            "Size of this node's current snapshot",
            Unit::Bytes,
            self.snapshot_size.clone(),
        );
        raft.register(
            "proposals",
            "Client writes this node proposed as leader",
            self.proposals.clone(),
        );
        raft.register(
            "proposed_entries",
            "Log entries this node proposed as leader (writes are batched into entries)",
            self.proposed_entries.clone(),
        );
        raft.register(
            "writes_per_entry",
            "Client writes packed into one proposed log entry",
            self.requests_per_entry.clone(),
        );
        raft.register_with_unit(
            "log_append",
            "Time to write a batch of log entries and sync it to disk",
            Unit::Seconds,
            self.log_append.clone(),
        );
        raft.register(
            "log_append_entries",
            "Log entries per appended (and synced) batch",
            self.log_append_entries.clone(),
        );
        raft.register_with_unit(
            "proposal",
            "Time from proposing an entry to its being applied, on the leader \
             (replication, syncs, commit and apply)",
            Unit::Seconds,
            self.proposal_time.clone(),
        );
        let grpc = r.sub_registry_with_prefix("grpc");
        grpc.register(
            "requests",
            "Client API calls served by this node, by RPC and gRPC status code",
            self.requests.clone(),
        );
        grpc.register_with_unit(
            "request_duration",
            "Client API call latency, by RPC and gRPC status code (streams: until they end)",
            Unit::Seconds,
            self.request_time.clone(),
        );
        let peer = r.sub_registry_with_prefix("peer");
        peer.register(
            "replication_lag_entries",
            "Entries the leader has that a peer has not stored (leader only)",
            self.peer_lag.clone(),
        );
        peer.register(
            "rpc_errors",
            "Failed Raft RPCs to a peer, by peer and RPC",
            self.peer_errors.clone(),
        );
        peer.register(
            "refused",
            "Peer messages refused before Raft saw them, by reason (auth, replay, cluster, \
             addressee, member, speaker, boot, self, senders, malformed, certificate, content)",
            self.peer_refused.clone(),
        );
        peer.register_with_unit(
            "append",
            "AppendEntries RPCs carrying entries, from sending to the reply, by peer (leader side)",
            Unit::Seconds,
            self.peer_append_time.clone(),
        );
        peer.register_with_unit(
            "append_served",
            "AppendEntries RPCs carrying entries, from arrival to the reply: checks, \
             append and sync (follower side)",
            Unit::Seconds,
            self.append_served_time.clone(),
        );
        let conn = r.sub_registry_with_prefix("connections");
        conn.register(
            "open",
            "Connections open now, by listener (client, peer)",
            self.connections_open.clone(),
        );
        conn.register(
            "refused",
            "Connections closed at accept, by listener and reason (full: the listener's cap; per_ip: the source address's cap)",
            self.connections_refused.clone(),
        );
        conn.register(
            "timed_out",
            "Connections closed for sending no handshake or nothing at all in time, by listener",
            self.connections_timed_out.clone(),
        );
    }
}
