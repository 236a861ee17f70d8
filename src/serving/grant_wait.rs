//! Acquire and Campaign as the server runs them: propose, and when queued,
//! hold the call open until the grant is applied on this node.
//!
//! The caller's registration is made before the request is proposed, so no
//! grant can slip past. If the wait times out, or the caller goes away (the
//! call's future is dropped), the server proposes a Cancel itself: a waiter
//! leaves the queue, and a grant that raced the cancel is released, so no
//! grant is ever left with nobody to use it.
//!
//! The cancel names the call it is for (its request id and attempt, a
//! [`Claim`]). A client that lost its connection re-sends the same request
//! with a higher attempt, maybe to another node, and that attempt then owns
//! the wait: the first node's cancel, however late, leaves alone the wait or
//! the grant the retry was told about. A timed-out call answers `Timeout`
//! only once its cancel has committed; until then the wait may still be
//! granted, so the answer is UNAVAILABLE (retry to learn the outcome) and
//! the node keeps proposing the cancel until it commits.

use std::sync::Arc;
use std::time::Duration;

use raftlock_raft::error::{Asked, Internal};
use raftlock_raft::Error;
use raftlock_storage::command::CancelOutcome;
use raftlock_storage::command::{Acquire, Cancel};
use raftlock_storage::{Caller, Claim, ClientSeq, Command, Fence, Response};
use tokio::time::Instant;

use super::event_router::Signal;
use super::stamp::stamped;
pub use super::wait_error::{Unsettle, WaitEnd, WaitError};
use super::Serving;

/// An Acquire as the server runs it: the command to replicate, and what
/// only the call knows.
#[derive(Debug, Clone)]
pub struct AcquireCall {
    /// The command, as checked (its lock-delay the caller's or the
    /// node's default, [`Serving::lock_delay_ms`]).
    pub command: Acquire,
    /// How long to wait in the queue; `None` waits until granted.
    pub timeout: Option<Duration>,
    /// The call's request id.
    pub origin: ClientSeq,
    /// Who asked; the server's own cancel of the wait acts for them too.
    pub caller: Caller,
}

/// A grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub fence: Fence,
    pub count: u32,
    /// Log index at which this node saw the grant.
    pub revision: u64,
}

impl Serving {
    /// The lock-delay of an Acquire or Campaign that names none: the
    /// node's default (`ServingConfig::lock_delay`), put in the command
    /// where the call is checked.
    pub fn lock_delay_ms(&self) -> u64 {
        self.config
            .lock_delay
            .as_millis()
            .try_into()
            .unwrap_or(u64::MAX)
    }

    /// Acquires per `spec`: `Ok(Some(grant))`, or `Ok(None)` for a try-lock that
    /// found the lock busy.
    pub async fn acquire(self: &Arc<Self>, spec: AcquireCall) -> Result<Option<Grant>, WaitError> {
        let node = self;
        let started = Instant::now();
        let mut watch = node.waiters.watch(&spec.command.name, &spec.command.owner);
        let request = stamped(
            Some(spec.origin),
            spec.caller.clone(),
            Command::Acquire(spec.command.clone()),
        );
        let (index, response) = node.write(request).await?;
        match response {
            Response::Granted { fence, count } => {
                node.metrics.on_granted_after(started.elapsed());
                return Ok(Some(Grant {
                    fence,
                    count,
                    revision: index,
                }));
            }
            Response::Busy => return Ok(None),
            Response::Rejected(e) => return Err(Error::from(e).into()),
            Response::Queued { .. } => {}
            other => return Err(Error::from(Internal::unexpected(Asked::Acquire, other)).into()),
        }

        let mut cancel = CancelOnDrop {
            node: node.clone(),
            name: spec.command.name.clone(),
            owner: spec.command.owner.clone(),
            call: Claim::of(&spec.origin),
            caller: spec.caller.clone(),
            armed: true,
        };
        let deadline = spec.timeout.map(|t| Instant::now() + t);
        // A forwarded write is applied here a little after the leader.
        node.replica.wait_applied(index).await?;
        loop {
            match standing(node, &spec.command.name, &spec.command.owner) {
                Standing::Holding(fence, count) => {
                    cancel.armed = false;
                    node.metrics.on_granted_after(started.elapsed());
                    // At least `index`: the wait above saw it applied.
                    let revision = node.replica.applied_index().max(index);
                    return Ok(Some(Grant {
                        fence,
                        count,
                        revision,
                    }));
                }
                Standing::Waiting => {}
                Standing::Gone => {
                    cancel.armed = false;
                    return Err(WaitError::Ended {
                        name: spec.command.name.clone(),
                        why: WaitEnd::NoGrant,
                    });
                }
            }
            let far = Instant::now() + Duration::from_secs(86_400);
            tokio::select! {
                signal = watch.recv() => match signal {
                    Some(Signal::WaitEnded(reason)) => {
                        cancel.armed = false;
                        return Err(WaitError::Ended {
                            name: spec.command.name.clone(),
                            why: WaitEnd::Ended(reason),
                        });
                    }
                    Some(_) => {} // granted, hold ended or snapshot: re-read the state
                    None => return Err(Error::ShuttingDown.into()),
                },
                _ = node.replica.stopped() => {
                    // The caller's retry (same request id) on another node
                    // finds its place in the queue again.
                    cancel.armed = false;
                    return Err(WaitError::Stopping);
                }
                _ = tokio::time::sleep_until(deadline.unwrap_or(far)) => {
                    cancel.armed = false;
                    return Err(timed_out(node, &spec).await);
                }
            }
        }
    }
}

enum Standing {
    Holding(Fence, u32),
    Waiting,
    Gone,
}

fn standing(node: &Serving, name: &str, owner: &str) -> Standing {
    node.replica.read_state(|state| {
        let Some(lock) = state.lock(name) else {
            return Standing::Gone;
        };
        if let Some(h) = lock.holders.iter().find(|h| h.owner == owner) {
            return Standing::Holding(h.fence, h.count);
        }
        if lock.waiters.iter().any(|w| w.owner == owner) {
            return Standing::Waiting;
        }
        Standing::Gone
    })
}

/// Ends a call whose wait ran out of time: cancels on its behalf. Only a
/// committed cancel makes the answer a definite `Timeout`.
async fn timed_out(node: &Arc<Serving>, spec: &AcquireCall) -> WaitError {
    let name = spec.command.name.clone();
    let waited = spec.timeout.unwrap_or_default();
    let call = Claim::of(&spec.origin);
    match cancel(
        node,
        &spec.command.name,
        &spec.command.owner,
        call,
        &spec.caller,
    )
    .await
    {
        Ok(CancelOutcome::Dequeued | CancelOutcome::Released | CancelOutcome::NotFound) => {
            WaitError::Timeout { name, waited }
        }
        Ok(CancelOutcome::Superseded) => WaitError::Unsettled {
            name,
            waited,
            why: Unsettle::Superseded,
        },
        Err(e) => {
            keep_cancelling(
                node.clone(),
                spec.command.name.clone(),
                spec.command.owner.clone(),
                call,
                spec.caller.clone(),
            );
            WaitError::Unsettled {
                name,
                waited,
                why: Unsettle::CancelFailed(Box::new(e)),
            }
        }
    }
}

/// Proposes a Cancel of `owner`'s wait or hold on `name` on behalf of `call`.
async fn cancel(
    node: &Serving,
    name: &str,
    owner: &str,
    call: Claim,
    caller: &Caller,
) -> Result<CancelOutcome, Error> {
    let request = stamped(
        None,
        caller.clone(),
        Command::Cancel(Cancel {
            name: name.to_string(),
            owner: owner.to_string(),
            call: Some(call),
        }),
    );
    match node.write(request).await? {
        (_, Response::Cancelled { outcome }) => Ok(outcome),
        (_, other) => Err(Internal::unexpected(Asked::Cancel, other).into()),
    }
}

/// Proposes the Cancel for `call` in the background until it commits or the
/// node stops. Harmless if the call's client retried meanwhile: the retry's
/// higher attempt makes the cancel leave the wait alone.
fn keep_cancelling(node: Arc<Serving>, name: String, owner: String, call: Claim, caller: Caller) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    rt.spawn(async move {
        let mut pause = Duration::from_millis(100);
        while !node.replica.is_stopping() {
            match cancel(&node, &name, &owner, call, &caller).await {
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(name, owner, "cannot cancel an abandoned wait yet: {e}");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    });
}

/// Cancels the wait if the call's future is dropped (the caller went away).
struct CancelOnDrop {
    node: Arc<Serving>,
    name: String,
    owner: String,
    call: Claim,
    caller: Caller,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed || self.node.replica.is_stopping() {
            return;
        }
        keep_cancelling(
            self.node.clone(),
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.owner),
            self.call,
            std::mem::take(&mut self.caller),
        );
    }
}
