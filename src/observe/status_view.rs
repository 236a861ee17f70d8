//! What the status page shows, as JSON (`/api/status`): every member's
//! role, term, indexes and lag, the leader, and the leases and locks this
//! node has applied, holders and waiters in order.
//!
//! This node's own figures come from its replica; every other member is
//! asked for its own with a `Cluster.Status` call (the generated stub over
//! a tonic channel; with TLS as between peers: this node's certificate
//! presented, the member's name checked), so the page shows the same numbers
//! on whichever node it is opened.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raftlock_raft::clock::wall_clock_ms;
use raftlock_raft::transport::tls::member_endpoint;
use raftlock_raft::NodeTls;
use raftlock_raft::Replica;
use raftlock_storage::Mode;
use serde::Serialize;

use tonic::transport::Channel;

use crate::pb;
use crate::pb::cluster_client::ClusterClient;

/// Most leases and locks listed; the totals say how many there are.
const MAX_LISTED: usize = 200;

/// How long a member gets to answer before the page shows it unreachable.
const MEMBER_TIMEOUT: Duration = Duration::from_millis(1500);

/// The whole page's data.
#[derive(Debug, Serialize)]
pub struct StatusView {
    /// The node that answered.
    pub node: u64,
    pub leader: Option<u64>,
    pub term: u64,
    /// Wall clock of the answer, ms since the epoch.
    pub now_ms: u64,
    /// How peers authenticate: "mutual TLS", "join token", or
    /// "NOT AUTHENTICATED (--insecure)".
    pub peer_auth: &'static str,
    pub members: Vec<MemberView>,
    pub leases_total: usize,
    pub leases: Vec<LeaseView>,
    pub locks_total: usize,
    pub locks: Vec<LockView>,
}

/// One member as it reports itself.
#[derive(Debug, Serialize)]
pub struct MemberView {
    pub id: u64,
    pub client_addr: String,
    pub voter: bool,
    /// leader, follower, candidate, learner, shutdown, or unreachable.
    pub role: String,
    pub term: Option<u64>,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// Entries behind the leader's log end.
    pub lag: Option<u64>,
}

/// One lease.
#[derive(Debug, Serialize)]
pub struct LeaseView {
    pub id: u64,
    pub ttl_ms: u64,
    pub age_ms: u64,
}

/// One lock with its holders and its queue.
#[derive(Debug, Serialize)]
pub struct LockView {
    pub name: String,
    pub holders: Vec<HolderView>,
    /// In queue order.
    pub waiters: Vec<HolderView>,
}

/// A holder or a waiter.
#[derive(Debug, Serialize)]
pub struct HolderView {
    pub owner: String,
    pub lease: u64,
    pub mode: String,
    /// Holders only.
    pub fence: Option<u64>,
    /// How long it has held, or waited.
    pub for_ms: u64,
}

/// Builds [`StatusView`]s, keeping one channel per member between calls.
pub struct StatusSource {
    node: Arc<Replica>,
    tls: Option<NodeTls>,
    channels: Mutex<HashMap<(u64, String), Channel>>,
}

impl StatusSource {
    /// A source for `node`, reaching other members with `tls` if set.
    pub fn new(node: Arc<Replica>, tls: Option<NodeTls>) -> Self {
        StatusSource {
            node,
            tls,
            channels: Mutex::default(),
        }
    }

    /// The page's data now.
    pub async fn view(&self) -> StatusView {
        let own = self.node.status();
        let mut members = Vec::new();
        for (id, (addr, voter)) in &own.members {
            let mut m = MemberView {
                id: *id,
                client_addr: addr.client_addr.clone(),
                voter: *voter,
                role: "unreachable".into(),
                term: None,
                last_log_index: None,
                applied_index: None,
                lag: None,
            };
            if *id == own.id {
                m.role = own.role.to_string();
                m.term = Some(own.term);
                m.last_log_index = Some(own.last_log_index);
                m.applied_index = Some(own.applied_index);
            } else if let Some(s) = self.ask(*id, &addr.client_addr).await {
                m.role = s.role;
                m.term = Some(s.term);
                m.last_log_index = Some(s.last_log_index);
                m.applied_index = Some(s.applied_index);
            }
            members.push(m);
        }
        let leader_end = members
            .iter()
            .find(|m| Some(m.id) == own.leader)
            .and_then(|m| m.last_log_index);
        for m in &mut members {
            m.lag = leader_end
                .zip(m.applied_index)
                .map(|(l, a)| l.saturating_sub(a));
        }
        let mut view = StatusView {
            node: own.id,
            leader: own.leader,
            term: own.term,
            now_ms: wall_clock_ms(),
            peer_auth: self.node.peer_auth(),
            members,
            leases_total: 0,
            leases: Vec::new(),
            locks_total: 0,
            locks: Vec::new(),
        };
        self.fill_state(&mut view);
        view
    }

    /// Leases and locks from this node's applied state.
    fn fill_state(&self, view: &mut StatusView) {
        let now = view.now_ms;
        self.node.read_state(|state| {
            view.leases_total = state.leases().count();
            view.leases = state
                .leases()
                .take(MAX_LISTED)
                .map(|l| LeaseView {
                    id: l.id,
                    ttl_ms: l.ttl_ms,
                    age_ms: now.saturating_sub(l.granted_at_ms),
                })
                .collect();
            view.locks_total = state.locks().count();
            view.locks = state
                .locks()
                .take(MAX_LISTED)
                .map(|lock| LockView {
                    name: lock.name.clone(),
                    holders: lock
                        .holders
                        .iter()
                        .map(|h| HolderView {
                            owner: h.owner.clone(),
                            lease: h.lease,
                            mode: mode_name(h.mode),
                            fence: Some(h.fence),
                            for_ms: now.saturating_sub(h.granted_at_ms),
                        })
                        .collect(),
                    waiters: lock
                        .waiters
                        .iter()
                        .map(|w| HolderView {
                            owner: w.owner.clone(),
                            lease: w.lease,
                            mode: mode_name(w.mode),
                            fence: None,
                            for_ms: now.saturating_sub(w.queued_at_ms),
                        })
                        .collect(),
                })
                .collect();
        });
    }

    /// Member `id`'s own status, or `None` if it does not answer in time.
    async fn ask(&self, id: u64, addr: &str) -> Option<pb::StatusResponse> {
        let channel = self.channel(id, addr)?;
        let mut cluster = ClusterClient::new(channel);
        tokio::time::timeout(MEMBER_TIMEOUT, cluster.status(pb::StatusRequest::default()))
            .await
            .ok()?
            .ok()
            .map(|r| r.into_inner())
    }

    /// The channel to member `id` at `addr`, made on first use and kept
    /// (it reconnects by itself). With TLS it presents this node's
    /// certificate, trusts the cluster CA and expects `node-ID.raftlock`;
    /// `None` if `addr` is not a valid address.
    fn channel(&self, id: u64, addr: &str) -> Option<Channel> {
        let key = (id, addr.to_string());
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(channel) = channels.get(&key) {
            return Some(channel.clone());
        }
        let endpoint = member_endpoint(self.tls.as_ref(), id, addr)
            .ok()?
            .connect_timeout(MEMBER_TIMEOUT);
        let channel = endpoint.connect_lazy();
        channels.insert(key, channel.clone());
        Some(channel)
    }
}

/// How a mode reads on the page.
fn mode_name(mode: Mode) -> String {
    match mode {
        Mode::Exclusive => "exclusive".into(),
        Mode::Shared => "shared".into(),
        Mode::Permits { count, limit } => format!("{count} of {limit} permits"),
    }
}
