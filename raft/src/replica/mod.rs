//! [`Replica`]: a running replica as the layer above sees it, through its
//! methods only (its parts are private to this crate): write (propose and
//! get the applied result, forwarded to the leader), read barrier, the
//! applied stream, leadership changes, the leader-call hook, membership
//! changes, status.
//!
//! - `leader_calls`: the calls only the leader serves, and forwarding them;
//!   [`proposer`]: group commit, many client writes per Raft entry;
//!   [`read_index`]: one leadership round shared by concurrent reads.
//! - [`health`]: liveness and readiness; `scrape`: the replica's gauges
//!   set when `/metrics` is read; `raft_errors`: openraft's errors mapped to
//!   this crate's, in one place.

pub mod health;
mod leader_calls;
pub mod proposer;
mod raft_errors;
pub mod read_index;
mod scrape;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use tokio::sync::{mpsc, watch};

use raftlock_storage::backup::Backup;
use raftlock_storage::state::LockState;
use raftlock_storage::{Applied, NodeAddr, NodeId, SharedState};

use crate::config::Config;
use crate::error::{Error, Internal, Step};
use crate::leader_service::{LeaderService, LeaderServiceSlot};
use crate::membership::removal::Removal;
use crate::metrics::NodeMetrics;
use crate::peer::guard::PeerGuard;
use crate::peer::network::PeerNetwork;
use crate::replica::proposer::Proposer;
use crate::replica::read_index::ReadIndexRounds;
use crate::Raft;

/// A node's view of the cluster, for `cluster status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub id: NodeId,
    /// "leader", "follower", "candidate", "learner" or "shutdown".
    pub role: &'static str,
    pub term: u64,
    pub leader: Option<NodeId>,
    pub last_log_index: u64,
    pub applied_index: u64,
    pub snapshot_index: u64,
    /// id -> (addresses, is voter).
    pub members: BTreeMap<NodeId, (NodeAddr, bool)>,
}

/// State shared by the node's tasks and services.
pub struct Replica {
    /// This node's id.
    pub(crate) id: NodeId,
    /// Settings it was started with.
    pub(crate) config: Config,
    /// The openraft handle.
    pub(crate) raft: Raft,
    /// The applied lock state, read by the serving layer.
    pub(crate) state: SharedState,
    /// What the state machine applied, until the layer above takes it
    /// ([`Replica::take_applied`]).
    pub(crate) applied: std::sync::Mutex<Option<mpsc::UnboundedReceiver<Applied>>>,
    /// The layer above's leader-only calls, once it registered them.
    pub(crate) leader_service: LeaderServiceSlot,
    /// Peer clients, for forwarding.
    pub(crate) net: PeerNetwork,
    /// Seals and checks the envelope of every peer message.
    pub(crate) guard: Arc<PeerGuard>,
    /// The committed membership: peer messages from a node removed from
    /// it are refused (as etcd does).
    pub(crate) members: raftlock_storage::AppliedMembers,
    /// Whether this node was removed from the cluster, and why.
    pub(crate) removal: Removal,
    /// Set once the Raft core stopped on its own (a storage failure or a
    /// bug): the node can no longer serve and its process should exit.
    pub(crate) fatal: watch::Sender<Option<String>>,
    /// Packs the leader's writes into shared entries.
    pub(crate) proposer: Proposer,
    /// Shares leadership checks among concurrent reads and keep-alives.
    pub(crate) read_rounds: ReadIndexRounds,
    /// Becomes `true` when the node starts stopping. Calls held open (a
    /// queued Acquire, Observe) end with "unavailable" so their clients
    /// retry elsewhere, and their waits are *not* cancelled: the caller did
    /// not go away, this node did.
    pub(crate) stopping: watch::Sender<bool>,
    /// This node's Prometheus metrics.
    pub(crate) metrics: Arc<NodeMetrics>,
    /// The last leader whose append-entries this node answered as its
    /// follower, and when. With PreVote a follower cut off from the leader
    /// keeps naming it; readiness asks when it last heard from it.
    pub(crate) leader_contact: std::sync::Mutex<Option<(NodeId, std::time::Instant)>>,
}

impl Replica {
    /// Records that `leader`'s append-entries was just answered.
    pub(crate) fn heard_from_leader(&self, leader: NodeId) {
        let mut contact = self
            .leader_contact
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *contact = Some((leader, std::time::Instant::now()));
    }

    /// How long ago this node last answered an append-entries of
    /// `leader`; `None` if it never did.
    pub(crate) fn since_leader_contact(&self, leader: NodeId) -> Option<std::time::Duration> {
        let contact = self
            .leader_contact
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        contact
            .filter(|(id, _)| *id == leader)
            .map(|(_, at)| at.elapsed())
    }

    /// Announces that this node is stopping (calls held open end with "unavailable").
    pub fn mark_stopping(&self) {
        self.stopping.send_replace(true);
    }

    /// Resolves once this node starts stopping.
    pub async fn stopped(&self) {
        let mut rx = self.stopping.subscribe();
        let stopping = rx.wait_for(|s| *s).await.is_ok();
        if !stopping {
            // The sender lives as long as `self`; unreachable in practice.
            std::future::pending::<()>().await;
        }
    }

    /// Records that the Raft core stopped on its own, with openraft's
    /// reason, and starts stopping: the node must not linger half-alive.
    pub(crate) fn report_fatal(&self, what: String) {
        let reason = match &self.raft.metrics().borrow_watched().running_state {
            Err(fatal) => format!(
                "{what}: {}",
                raftlock_storage::fatal_report::describe_fatal(fatal, &self.config.data_dir)
            ),
            Ok(()) => what,
        };
        tracing::error!(node = self.id, "{reason}; this node stops serving");
        self.fatal.send_replace(Some(reason));
        self.mark_stopping();
    }

    /// Resolves with the reason once this node learns it was removed from
    /// the cluster; it has then stopped serving.
    pub async fn removed(&self) -> String {
        self.removal.wait().await
    }

    /// Resolves with the reason once the Raft core stopped on its own.
    pub async fn failed(&self) -> String {
        let mut rx = self.fatal.subscribe();
        let reason = match rx.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone(),
            Err(_) => None,
        };
        match reason {
            Some(reason) => reason,
            // The sender lives as long as `self`; unreachable in practice.
            None => std::future::pending().await,
        }
    }

    /// The id of the cluster this node belongs to, once known.
    pub fn cluster_id(&self) -> Option<uuid::Uuid> {
        self.guard.cluster_id()
    }

    /// A backup of the whole lock state (see `raftlock_storage::backup`):
    /// at an index at least the leader's commit index when asked (a read
    /// barrier first), or this node's applied state when `local`. The copy
    /// and its encoding run on the blocking pool.
    pub async fn backup(&self, local: bool) -> Result<Backup, Error> {
        if !local {
            self.read_barrier().await?;
        }
        let (state, applied) = (self.state.clone(), self.members.clone());
        let cluster_id = self.cluster_id();
        let taken_at_ms = crate::clock::wall_clock_ms();
        tokio::task::spawn_blocking(move || {
            Backup::capture(&state, &applied, cluster_id, taken_at_ms)
        })
        .await
        .map_err(|e| Internal::failed(Step::BackupWorker, e))?
        .map_err(|e| Internal::failed(Step::CopyState, e).into())
    }

    /// This node's Prometheus metrics.
    pub fn metrics(&self) -> &NodeMetrics {
        &self.metrics
    }

    /// Whether this node is stopping.
    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// This node's view of the cluster.
    pub fn status(&self) -> NodeStatus {
        let m = self.raft.metrics().borrow_watched().clone();
        let role = match m.state {
            ServerState::Leader => "leader",
            ServerState::Follower => "follower",
            ServerState::Candidate => "candidate",
            ServerState::Learner => "learner",
            ServerState::Shutdown => "shutdown",
        };
        let membership = m.membership_config.membership();
        let voters: std::collections::BTreeSet<NodeId> = membership.voter_ids().collect();
        let members = membership
            .nodes()
            .map(|(id, addr)| (*id, (addr.clone(), voters.contains(id))))
            .collect();
        NodeStatus {
            id: self.id,
            role,
            term: m.current_term,
            leader: m.current_leader,
            last_log_index: m.last_log_index.unwrap_or(0),
            applied_index: m.last_applied.map(|l| l.index).unwrap_or(0),
            snapshot_index: m.snapshot.map(|l| l.index).unwrap_or(0),
            members,
        }
    }

    /// The current leader and its addresses, if known.
    pub fn leader(&self) -> Option<(NodeId, NodeAddr)> {
        let m = self.raft.metrics().borrow_watched().clone();
        let id = m.current_leader?;
        let addr = m.membership_config.membership().get_node(&id)?.clone();
        Some((id, addr))
    }

    /// The log index this node has applied up to (0 before the first).
    pub fn applied_index(&self) -> u64 {
        self.raft
            .metrics()
            .borrow_watched()
            .last_applied
            .map_or(0, |l| l.index)
    }

    /// Whether this node currently believes it leads.
    pub fn is_leader(&self) -> bool {
        let m = self.raft.metrics();
        let m = m.borrow_watched();
        m.state == ServerState::Leader && m.current_leader == Some(self.id)
    }
}

impl Replica {
    /// This node's Raft id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// The settings this node was started with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// `None` while this node's log holds no membership; else whether it
    /// lists `id` (the latest, maybe not yet committed, membership).
    pub(crate) fn logged_membership_contains(&self, id: NodeId) -> Option<bool> {
        let m = self.raft.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        membership.nodes().next()?;
        Some(membership.get_node(&id).is_some())
    }

    /// How this node's peers authenticate, in words for the status page.
    pub fn peer_auth(&self) -> &'static str {
        match (self.config.tls_enabled(), self.guard.key().is_some()) {
            (true, _) => "mutual TLS",
            (false, true) => "join token",
            (false, false) => "NOT AUTHENTICATED (--insecure)",
        }
    }

    /// The Raft term this node is in.
    pub fn term(&self) -> u64 {
        self.raft.metrics().borrow_watched().current_term
    }

    /// Runs `f` on this node's applied lock state, as it is now (a local
    /// read; follow [`Replica::read_barrier`] for a linearizable one).
    pub fn read_state<R>(&self, f: impl FnOnce(&LockState) -> R) -> R {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        f(&state)
    }

    /// The applied lock state, shared: for tasks that read it later.
    pub fn shared_state(&self) -> SharedState {
        self.state.clone()
    }

    /// What the state machine applies from now on, in log order (entries
    /// with their events, and installed snapshots). One taker: the layer
    /// above takes it once at start; later calls get `None`.
    pub fn take_applied(&self) -> Option<mpsc::UnboundedReceiver<Applied>> {
        self.applied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Registers the layer above's leader-only calls (see
    /// [`LeaderService`]). Once per node: a second service is refused.
    pub fn serve_leader_calls(&self, service: Arc<dyn LeaderService>) -> Result<(), Error> {
        self.leader_service
            .set(service)
            .map_err(|_| Internal::LeaderServiceTaken.into())
    }

    /// Follows this node's leadership: see [`Leadership`].
    pub fn leadership(&self) -> Leadership {
        Leadership {
            metrics: self.raft.metrics(),
            id: self.id,
        }
    }

    /// Waits until this node knows a leader, up to `timeout`; `None` if
    /// it knows none by then.
    pub async fn wait_for_leader(&self, timeout: Duration) -> Option<NodeId> {
        let m = self
            .raft
            .wait(Some(timeout))
            .metrics(|m| m.current_leader.is_some(), "leader known")
            .await
            .ok()?;
        m.current_leader
    }

    /// Shuts the Raft core down without the rest of the node, as a storage
    /// failure would stop it. For tests of the fatal path only.
    #[doc(hidden)]
    pub async fn stop_core(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(node = self.id, "stopping the Raft core: {e}");
        }
    }
}

/// Metrics as openraft publishes them.
type MetricsWatch = openraft::type_config::alias::WatchReceiverOf<
    raftlock_storage::TypeConfig,
    openraft::RaftMetrics<raftlock_storage::TypeConfig>,
>;

/// This node's leadership as it changes, for tasks that run only while it
/// leads (the layer above's lease timer).
pub struct Leadership {
    metrics: MetricsWatch,
    id: NodeId,
}

impl Leadership {
    /// The term this node leads in now, or `None` if it does not lead.
    pub fn now(&mut self) -> Option<u64> {
        let m = self.metrics.borrow_and_update();
        let leading = m.state == ServerState::Leader && m.current_leader == Some(self.id);
        leading.then_some(m.current_term)
    }

    /// Waits until openraft's state may have changed; `false` once the
    /// Raft core has ended.
    pub async fn changed(&mut self) -> bool {
        self.metrics.changed().await.is_ok()
    }
}
