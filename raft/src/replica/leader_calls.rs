//! Calls only the leader can serve — writes, read-index, membership, and
//! the layer above's [`LeaderService`](crate::leader_service::LeaderService)
//! calls — served locally on the leader and forwarded by followers.
//!
//! A caller may reach any node. On a follower the call goes to the leader
//! over the peer API; while no leader is known (an election is running) it
//! waits up to `Config::leader_wait`. Retrying a write is safe because every
//! client write carries a request id the state machine de-duplicates.

use std::collections::BTreeSet;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::{ChangeMembers, ReadPolicy};
use tokio::time::Instant;

use raftlock_storage::{NodeAddr, NodeId, Request, Response};

use crate::error::{Asked, Error, Internal, MembershipRefusal, Source, Unavailable};
use crate::membership::catch_up;
use crate::membership::checks::{check_new_learner, check_promotable, Candidate};
use crate::peer::forward::{ForwardReply, ForwardResult, Forwarded};
use crate::replica::Replica;

/// Pause between attempts while the cluster has no reachable leader.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

impl Replica {
    /// Replicates `request` and returns the entry's log index and the state
    /// machine's response.
    pub async fn write(&self, request: Request) -> Result<(u64, Response), Error> {
        match self.call_leader(Forwarded::Write(request)).await? {
            ForwardReply::Written { index, response } => Ok((index, response)),
            other => Err(unexpected(other)),
        }
    }

    /// Waits until this node's state reflects every write acknowledged
    /// before the call (read-index through the leader); returns that index.
    pub async fn read_barrier(&self) -> Result<u64, Error> {
        let index = match self.call_leader(Forwarded::ReadIndex).await? {
            ForwardReply::ReadIndex(index) => index,
            other => return Err(unexpected(other)),
        };
        self.wait_applied(index).await?;
        Ok(index)
    }

    /// Waits until this node applied `index`.
    pub async fn wait_applied(&self, index: u64) -> Result<(), Error> {
        if self.applied_index() >= index {
            // The common case; openraft's waiter would clone the metrics.
            return Ok(());
        }
        self.raft
            .wait(Some(self.config.leader_wait))
            .applied_index_at_least(Some(index), "wait for apply")
            .await
            .map(|_| ())
            .map_err(|e| {
                Unavailable::NotApplied {
                    node: self.id,
                    index,
                    source: Source::new(e),
                }
                .into()
            })
    }

    /// Serves `call` with the leader's [`LeaderService`]: here if this
    /// node leads, else on the leader, through the peer API.
    ///
    /// [`LeaderService`]: crate::leader_service::LeaderService
    pub async fn call_leader_service(&self, call: Vec<u8>) -> Result<Vec<u8>, Error> {
        match self.call_leader(Forwarded::Service(call)).await? {
            ForwardReply::Service(reply) => Ok(reply),
            other => Err(unexpected(other)),
        }
    }

    /// Replicates `request` from this node, which must lead: for the
    /// leader's own tasks and its [`LeaderService`], which never forward.
    ///
    /// [`LeaderService`]: crate::leader_service::LeaderService
    pub async fn propose_here(&self, request: Request) -> Result<(u64, Response), Error> {
        self.proposer.write(request).await
    }

    /// Adds a non-voting member and waits until it has caught up.
    pub async fn add_learner(&self, id: NodeId, node: NodeAddr) -> Result<u64, Error> {
        self.membership(Forwarded::AddLearner { id, node }).await
    }

    /// Turns a caught-up learner into a voter.
    pub async fn promote(&self, id: NodeId) -> Result<u64, Error> {
        self.membership(Forwarded::Promote(id)).await
    }

    /// Removes a member (voter or learner) from the cluster.
    pub async fn remove(&self, id: NodeId) -> Result<u64, Error> {
        self.membership(Forwarded::Remove(id)).await
    }

    async fn membership(&self, call: Forwarded) -> Result<u64, Error> {
        match self.call_leader(call).await? {
            ForwardReply::Membership { index } => Ok(index),
            other => Err(unexpected(other)),
        }
    }

    /// Serves `call` here if this node leads, else hands it to the leader,
    /// waiting out elections up to `leader_wait`.
    async fn call_leader(&self, call: Forwarded) -> Result<ForwardReply, Error> {
        let deadline = Instant::now() + self.config.leader_wait;
        loop {
            // A stopping node neither forwards nor waits out elections: its
            // caller hears so at once and tries another node.
            let attempt = self.attempt_leader_call(&call, deadline);
            let result = tokio::select! {
                // A refused forward ends the call: waiting here does not
                // help, the caller asks another node.
                attempt = attempt => attempt?,
                () = self.stopped() => Err(self.stopping_error()),
            };
            match result {
                Err(e)
                    if e.is_retryable()
                        && !self.is_stopping()
                        && Instant::now() + RETRY_PAUSE < deadline =>
                {
                    tracing::debug!(node = self.id, "retrying after: {e}");
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
                Err(Error::NotLeader { .. }) => return Err(Unavailable::NoLeaderReachable.into()),
                other => return other,
            }
        }
    }

    /// What a call to a stopping node answers.
    fn stopping_error(&self) -> Error {
        Unavailable::NodeStopping { node: self.id }.into()
    }

    /// One try of [`call_leader`](Self::call_leader): here, or forwarded.
    /// The outer error ends the call at once (the leader refused to take
    /// it from this node, e.g. "node 2 is not a member"); the inner result
    /// is the try's own, retried while retryable.
    async fn attempt_leader_call(
        &self,
        call: &Forwarded,
        deadline: Instant,
    ) -> Result<ForwardResult, Error> {
        if self.is_leader() {
            Ok(self.serve_here(call, deadline).await)
        } else if let Some((leader, addr)) = self.leader().filter(|(id, _)| *id != self.id) {
            let attempt = self.forward_attempt(call, deadline);
            match self
                .net
                .forward(leader, &addr.peer_addr, call, attempt)
                .await
            {
                Ok(result) => Ok(result),
                Err(failure) if failure.refused => Err(Unavailable::ForwardRefused {
                    node: self.id,
                    failure,
                }
                .into()),
                Err(failure) => Ok(Err(Unavailable::LeaderUnreachable(failure).into())),
            }
        } else {
            Ok(Err(Unavailable::NoLeader.into()))
        }
    }

    /// Serves `call` as the leader, giving up at `deadline` (membership
    /// changes excepted: a learner may take long to catch up). A leader cut
    /// off from its quorum cannot commit, and the caller hears so instead
    /// of waiting for ever. The write may still commit later (if the leader
    /// regains its quorum before a successor overwrites it): a retry with
    /// the same request id is answered once, either way.
    async fn serve_here(&self, call: &Forwarded, deadline: Instant) -> ForwardResult {
        if matches!(
            call,
            Forwarded::AddLearner { .. } | Forwarded::Promote(_) | Forwarded::Remove(_)
        ) {
            return self.serve_as_leader(call.clone()).await;
        }
        match tokio::time::timeout_at(deadline, self.serve_as_leader(call.clone())).await {
            Ok(result) => result,
            Err(_) => Err(Unavailable::QuorumTimeout {
                node: self.id,
                waited: self.config.leader_wait,
            }
            .into()),
        }
    }

    /// How long one forward may take. A leader that died or was cut off
    /// mid-call must not hold the caller for all of `leader_wait`: after
    /// about two maximal election timeouts a successor may lead, so the call
    /// is tried again (writes carry request ids, so a retry is applied
    /// once). Membership changes may legitimately take longer (a learner
    /// catching up) and get the whole wait.
    fn forward_attempt(&self, call: &Forwarded, deadline: Instant) -> Duration {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(RETRY_PAUSE);
        match call {
            Forwarded::AddLearner { .. } | Forwarded::Promote(_) | Forwarded::Remove(_) => left,
            _ => left.min(self.config.election_timeout * 4),
        }
    }

    /// Serves a call that needs the leader, refusing if this node is not it.
    /// The peer service calls this for forwarded calls; it never forwards
    /// again, so a call crosses at most one hop.
    pub async fn serve_as_leader(&self, call: Forwarded) -> ForwardResult {
        match call {
            Forwarded::Write(request) => {
                let (index, response) = self.proposer.write(request).await?;
                Ok(ForwardReply::Written { index, response })
            }
            Forwarded::ReadIndex => Ok(ForwardReply::ReadIndex(self.read_index().await?)),
            Forwarded::Service(call) => match self.leader_service.get() {
                Some(service) => Ok(ForwardReply::Service(service.serve(call).await?)),
                None => Err(Unavailable::LeaderNotServing { node: self.id }.into()),
            },
            Forwarded::AddLearner { id, node } => {
                self.refuse_if_leaving()?;
                self.refuse_retired(id)?;
                let cluster = self.guard.cluster_id().map(|c| c.to_string());
                check_new_learner(&self.net, cluster.as_deref(), id, &node).await?;
                let r = self.raft.add_learner(id, node, false).await?;
                // Answered either way: the learner was added and keeps
                // catching up; the caller waits on for a long catch-up.
                catch_up::wait_holds(&self.raft, id, r.log_id.index, catch_up::CATCH_UP_WAIT).await;
                Ok(ForwardReply::Membership {
                    index: r.log_id.index,
                })
            }
            Forwarded::Promote(id) => {
                self.refuse_if_leaving()?;
                check_promotable(id, &self.promotion_candidate(id).await)?;
                let change = ChangeMembers::AddVoterIds(BTreeSet::from([id]));
                let r = self.raft.change_membership(change, false).await?;
                Ok(ForwardReply::Membership {
                    index: r.log_id.index,
                })
            }
            Forwarded::Remove(id) => {
                self.refuse_if_leaving()?;
                let is_voter = self.status().members.get(&id).map(|(_, voter)| *voter);
                let change = match is_voter {
                    Some(true) => ChangeMembers::RemoveVoters(BTreeSet::from([id])),
                    Some(false) => ChangeMembers::RemoveNodes(BTreeSet::from([id])),
                    // Removed already: a retry of a removal whose answer
                    // was lost (the removed leader stopped before it
                    // answered) is told it is done, not refused.
                    None if self.is_retired(id) => {
                        return Ok(ForwardReply::Membership {
                            index: self.applied_index(),
                        })
                    }
                    None => return Err(MembershipRefusal::NotMember { id }.into()),
                };
                let r = self.raft.change_membership(change, false).await?;
                Ok(ForwardReply::Membership {
                    index: r.log_id.index,
                })
            }
        }
    }

    /// Refuses to add node `id` again once it was removed: its old data dir
    /// may still hold the cluster's votes and entries, and members may
    /// still remember its boot count (docs/decisions.md, "Membership").
    fn refuse_retired(&self, id: NodeId) -> Result<(), Error> {
        if self.is_retired(id) {
            return Err(MembershipRefusal::Retired { id }.into());
        }
        Ok(())
    }

    /// Whether node `id` was removed from this cluster (and is remembered).
    fn is_retired(&self, id: NodeId) -> bool {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.is_retired(id)
    }

    /// A read index confirmed by a quorum round that started after this
    /// call (rounds are shared by concurrent callers, see
    /// [`ReadIndexRounds`](crate::replica::read_index::ReadIndexRounds)).
    /// At least this leader's log end when it first answered one in its
    /// term ([`ReadIndexRounds::floor`](crate::replica::read_index::ReadIndexRounds::floor)).
    async fn read_index(&self) -> Result<u64, Error> {
        self.read_rounds
            .read_index(|| async {
                let floor = {
                    let m = self.raft.metrics();
                    let m = m.borrow_watched();
                    self.read_rounds
                        .floor(m.current_term, m.last_log_index.unwrap_or(0))
                };
                let (read, _) = self.raft.get_read_log_id(ReadPolicy::ReadIndex).await?;
                Ok(read.index().max(floor))
            })
            .await
    }

    /// Confirms this node leads and waits until it applied everything
    /// committed before the call; then holds a leader lease for one election
    /// timeout from the call (see
    /// [`ReadIndexRounds::extend_lease`](crate::replica::read_index::ReadIndexRounds::extend_lease)).
    pub async fn linearize(&self) -> Result<(), Error> {
        let arrived = Instant::now();
        let term = self.raft.metrics().borrow_watched().current_term;
        let index = self.read_index().await?;
        self.wait_applied(index).await?;
        self.read_rounds
            .extend_lease(term, arrived + self.config.election_timeout);
        Ok(())
    }

    /// Whether this node leads under a leader lease confirmed moments ago.
    pub fn holds_leader_lease(&self) -> bool {
        let term = {
            let m = self.raft.metrics();
            let m = m.borrow_watched();
            if m.state != openraft::ServerState::Leader || m.current_leader != Some(self.id) {
                return false;
            }
            m.current_term
        };
        self.read_rounds.leased(term, Instant::now())
    }

    /// What this leader knows of member `id`, for [`check_promotable`].
    /// A learner added a moment ago may not have answered its first
    /// heartbeat yet, or may still be catching up: a learner is given up
    /// to [`catch_up::CATCH_UP_WAIT`] to pass the check.
    async fn promotion_candidate(&self, id: NodeId) -> Candidate {
        let deadline = Instant::now() + catch_up::CATCH_UP_WAIT;
        loop {
            let candidate = self.promotion_candidate_now(id);
            let waiting = candidate.voter == Some(false)
                && check_promotable(id, &candidate).is_err()
                && Instant::now() < deadline;
            if !waiting {
                return candidate;
            }
            tokio::time::sleep(self.config.heartbeat).await;
        }
    }

    fn promotion_candidate_now(&self, id: NodeId) -> Candidate {
        let m = self.raft.metrics().borrow_watched().clone();
        let membership = m.membership_config.membership();
        let voter = membership
            .get_node(&id)
            .map(|_| membership.voter_ids().any(|v| v == id));
        let last_ack = m
            .heartbeat
            .as_ref()
            .and_then(|h| h.get(&id).cloned().flatten())
            .map(|at| openraft::Instant::elapsed(&*at));
        let matched = catch_up::matched(&m, id);
        Candidate {
            voter,
            last_ack,
            matched,
            leader_last: m.last_log_index.unwrap_or(0),
        }
    }

    /// A leader that removed itself keeps leading until the change is
    /// committed and a successor takes over; openraft does not accept
    /// further membership changes from it (a debug assertion fires), so the
    /// caller waits for the successor instead.
    fn refuse_if_leaving(&self) -> Result<(), Error> {
        match self.status().members.get(&self.id) {
            Some((_, true)) => Ok(()),
            _ => Err(Unavailable::LeaderLeaving.into()),
        }
    }

    /// The error a call that needs the leader gets here: the leader's id
    /// and address when known, else unavailable.
    pub fn not_leader(&self) -> Error {
        match self.leader() {
            Some((id, addr)) if id != self.id => Error::NotLeader {
                leader_id: id,
                leader_addr: addr.client_addr,
            },
            _ => Unavailable::NoLeader.into(),
        }
    }
}

fn unexpected(reply: ForwardReply) -> Error {
    Internal::unexpected(Asked::Leader, reply).into()
}
