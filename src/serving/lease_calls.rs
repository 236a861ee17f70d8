//! A lease's calls that only the leader can serve, on its lease timer:
//! renew (keep-alive), time left, and a TTL change (held off expiry while
//! in flight). A follower sends them to the leader through replication's
//! [`LeaderService`] hook, as bytes this file encodes and decodes.

use raftlock_storage::command::SetLeaseTtl;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use raftlock_raft::error::{Asked, Internal, Source, Step, Unavailable, ValidationError};
use raftlock_raft::{Error, LeaderService};
use raftlock_storage::{Caller, Command, CommandError, LeaseId, Request, Response};

use super::lease_timer::KeepAliveRefused;
use super::Serving;

/// A call the leader's lease timer answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum LeaseCall {
    /// Renew lease `id`'s deadline, for `caller` (who must own the lease or
    /// be an admin).
    KeepAlive { id: LeaseId, caller: Caller },
    /// Time left on lease `id`.
    Remaining(LeaseId),
    /// Replicate a `SetLeaseTtl`, with the lease held off expiry meanwhile.
    SetTtl(Request),
}

/// The leader's answer to a [`LeaseCall`].
#[derive(Debug, Clone, Serialize, Deserialize)]
enum LeaseReply {
    /// Time left, or the full TTL after a renewal; `None`: no such lease.
    Ttl(Option<u64>),
    /// The TTL change's log index and state machine response.
    Written { index: u64, response: Response },
}

impl Serving {
    /// Renews lease `id` on the leader for `caller`; answers its TTL. Only
    /// the identity that granted the lease, or an admin, may renew it.
    pub async fn keep_alive(&self, id: LeaseId, caller: &Caller) -> Result<u64, Error> {
        let call = LeaseCall::KeepAlive {
            id,
            caller: caller.clone(),
        };
        match self.call_leader(&call).await? {
            LeaseReply::Ttl(Some(ttl)) => {
                self.metrics.on_keep_alive();
                Ok(ttl)
            }
            LeaseReply::Ttl(None) => Err(CommandError::LeaseNotFound(id).into()),
            other => Err(unexpected(other)),
        }
    }

    /// Time left on lease `id` by the leader's timer.
    pub async fn lease_remaining(&self, id: LeaseId) -> Result<Option<u64>, Error> {
        match self.call_leader(&LeaseCall::Remaining(id)).await? {
            LeaseReply::Ttl(left) => Ok(left),
            other => Err(unexpected(other)),
        }
    }

    /// Replicates `request`, a `SetLeaseTtl`, through the leader's timer.
    pub(super) async fn set_ttl(&self, request: Request) -> Result<(u64, Response), Error> {
        match self.call_leader(&LeaseCall::SetTtl(request)).await? {
            LeaseReply::Written { index, response } => Ok((index, response)),
            other => Err(unexpected(other)),
        }
    }

    async fn call_leader(&self, call: &LeaseCall) -> Result<LeaseReply, Error> {
        let bytes =
            postcard::to_stdvec(call).map_err(|e| Internal::failed(Step::EncodeLeaseCall, e))?;
        let reply = self.replica.call_leader_service(bytes).await?;
        postcard::from_bytes(&reply)
            .map_err(|e| Internal::failed(Step::DecodeLeaseAnswer, e).into())
    }

    /// Serves `call` as the leader.
    async fn serve_lease_call(&self, call: LeaseCall) -> Result<LeaseReply, Error> {
        let replica = &self.replica;
        match call {
            LeaseCall::KeepAlive { id, caller } => {
                // Leadership must be confirmed by a quorum before renewing:
                // a deposed leader renews nothing. A round confirmed moments
                // ago still vouches for a renewal (leader lease); a lease
                // that is missing or expiring is re-checked with a fresh
                // round, so "gone" is only ever said by a confirmed leader
                // whose applied state is current.
                let leased = replica.holds_leader_lease();
                if !leased {
                    replica.linearize().await?;
                }
                let ttl = match self.renew(id, &caller)? {
                    Err(KeepAliveRefused::NotFound | KeepAliveRefused::Expiring) if leased => {
                        replica.linearize().await?;
                        self.renew(id, &caller)?
                    }
                    other => other,
                };
                match ttl {
                    Ok(ttl) => Ok(LeaseReply::Ttl(Some(ttl))),
                    Err(KeepAliveRefused::NotFound) => Ok(LeaseReply::Ttl(None)),
                    // Retryable: the caller's node asks again until the
                    // expiry entry has committed or failed.
                    Err(KeepAliveRefused::Expiring) => Err(expiring(id)),
                    Err(KeepAliveRefused::NotLeader) => Err(replica.not_leader()),
                }
            }
            LeaseCall::Remaining(id) => {
                replica.linearize().await?;
                let left = self.timer.remaining(id, Instant::now());
                Ok(LeaseReply::Ttl(left.map(|d| d.as_millis() as u64)))
            }
            LeaseCall::SetTtl(request) => {
                let Command::SetLeaseTtl(SetLeaseTtl { id, ttl_ms }) = request.command else {
                    return Err(ValidationError::WrongCommand {
                        call: "lease TTL change",
                    }
                    .into());
                };
                self.hold_for_ttl_change(id, ttl_ms)?;
                let (index, response) = replica.propose_here(request).await?;
                Ok(LeaseReply::Written { index, response })
            }
        }
    }

    /// Keeps lease `id` from expiring while a change of its TTL to `ttl_ms`
    /// is in flight; once applied, the change sets its deadline (see
    /// `LeaseTimer::hold`). Without this, an expiry proposed meanwhile would
    /// end the lease right after the change was answered.
    fn hold_for_ttl_change(&self, id: LeaseId, ttl_ms: u64) -> Result<(), Error> {
        // Bounded: the state machine refuses a TTL above the maximum anyway.
        let ttl = Duration::from_millis(ttl_ms.min(raftlock_storage::limits::MAX_TTL_MS));
        let hold = ttl + self.replica.config().leader_wait;
        match self.timer.hold(id, Instant::now(), hold) {
            Ok(()) | Err(KeepAliveRefused::NotFound) => Ok(()),
            Err(KeepAliveRefused::Expiring) => Err(expiring(id)),
            Err(KeepAliveRefused::NotLeader) => Err(self.replica.not_leader()),
        }
    }

    /// Moves lease `id`'s deadline to now + TTL if the applied state has it
    /// and `caller` may use it; refuses another identity's lease.
    fn renew(&self, id: LeaseId, caller: &Caller) -> Result<Result<u64, KeepAliveRefused>, Error> {
        let mut owner_refused = None;
        let renewed = self.timer.keep_alive(id, Instant::now(), || {
            self.replica.read_state(|state| {
                let lease = state.lease(id)?;
                if !caller.may_use_lease_of(lease.identity.as_deref()) {
                    owner_refused = Some(lease.identity.clone().unwrap_or_default());
                    return None;
                }
                Some(lease.ttl_ms)
            })
        });
        if let Some(owner) = owner_refused {
            let who = caller
                .identity
                .as_deref()
                .unwrap_or("an unauthenticated caller");
            return Err(CommandError::PermissionDenied(format!(
                "{who} may not keep lease {id} alive: it belongs to {owner}"
            ))
            .into());
        }
        Ok(renewed)
    }
}

/// The [`LeaderService`] replication calls with a follower's lease call. It
/// holds the serving layer weakly: the replica holds it, and the serving
/// layer holds the replica.
pub(super) struct LeaseCalls(pub(super) Weak<Serving>);

impl LeaderService for LeaseCalls {
    fn serve(&self, call: Vec<u8>) -> BoxFuture<'_, Result<Vec<u8>, Error>> {
        Box::pin(async move {
            let serving: Arc<Serving> = self.0.upgrade().ok_or(Error::ShuttingDown)?;
            let call: LeaseCall =
                postcard::from_bytes(&call).map_err(|e| ValidationError::Malformed {
                    what: "lease call",
                    source: Source::new(e),
                })?;
            let reply = serving.serve_lease_call(call).await?;
            postcard::to_stdvec(&reply)
                .map_err(|e| Internal::failed(Step::EncodeLeaseAnswer, e).into())
        })
    }
}

fn expiring(id: LeaseId) -> Error {
    Unavailable::LeaseExpiring { lease: id }.into()
}

fn unexpected(reply: LeaseReply) -> Error {
    Internal::unexpected(Asked::LeaseCall, reply).into()
}
