//! Calls the caller gave up on. An acquire, campaign or lease grant whose
//! future is dropped (a timeout, `select!`, a cancelled asyncio task,
//! Ctrl-C) after its request may have left is finished in the background
//! on the client's runtime, as etcd's and Curator's recipes clean up after
//! an interrupted acquire: the same request is sent again under the same
//! request id — the cluster answers it from its exactly-once table, or
//! applies it once if it never arrived, and a wait is asked to end at once
//! — and what it granted is given back: the lock released one level, the
//! leadership resigned, the lease revoked. Only then is the request id
//! settled, so `acked_below` never passes a request whose outcome is
//! unknown, and the undo can never overtake the grant it undoes.
//!
//! A release or lease revoke the caller stopped waiting for is completed
//! the same way (sent again under its id until answered). Any other call dropped before its
//! first attempt left needs nothing: its id is closed at once. [`Cleanups`] counts the background work (these, and
//! guards released on drop) so that [`Client::close`] can wait for it.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::time::Instant;

use super::endpoints::Endpoints;
use super::request_ids::{InFlightId, WaitAttempts};
use super::unary::{self, Unary, WaitFailed, Waiting};
use super::Client;
use crate::error::Error;
use crate::pb;

/// How many rounds of the retry budget a cleanup spends learning the
/// outcome before it leaves the grant to its lease.
const ROUNDS: u32 = 4;

/// Background work of one client still running.
#[derive(Debug)]
pub(crate) struct Cleanups {
    running: watch::Sender<usize>,
}

/// Counts one piece of background work until dropped (also when its task
/// is aborted, or never runs because the runtime shut down).
struct Running(watch::Sender<usize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Cleanups {
    pub fn new() -> Self {
        Cleanups {
            running: watch::Sender::new(0),
        }
    }

    /// Runs `work` on `runtime`, counted until it ends.
    pub fn spawn(&self, runtime: &Handle, work: impl Future<Output = ()> + Send + 'static) {
        self.running.send_modify(|n| *n += 1);
        let running = Running(self.running.clone());
        runtime.spawn(async move {
            work.await;
            drop(running);
        });
    }

    /// Waits until no cleanup runs, or `limit` passed; answers how many
    /// still run.
    pub async fn wait(&self, limit: Duration) -> usize {
        let mut running = self.running.subscribe();
        let _ = tokio::time::timeout(limit, running.wait_for(|n| *n == 0)).await;
        let left = *running.borrow();
        left
    }
}

/// A call that may be abandoned: its request (without its request id),
/// which says how to finish it.
#[derive(Debug, Clone)]
pub(crate) enum Call {
    /// Undone by releasing one level (or revoking the lease the request
    /// made for itself, `ttl_ms`).
    Acquire(pb::AcquireRequest),
    /// Undone by resigning.
    Campaign(pb::CampaignRequest),
    /// Undone by revoking the lease.
    Lease(pb::LeaseGrantRequest),
    /// Not undone but completed: a release the caller stopped waiting for
    /// is sent (again) until it has an answer, even if it never left.
    Release(pb::ReleaseRequest),
    /// Completed like a release.
    Revoke(pb::LeaseRevokeRequest),
}

impl Call {
    /// Whether a call dropped before it was sent must still be sent: it
    /// gives something back rather than taking it.
    fn completes(&self) -> bool {
        matches!(self, Call::Release(_) | Call::Revoke(_))
    }
}

/// A [`Call`] in progress. Keep it for the whole call, call
/// [`sending`](Self::sending) before each attempt, and take the id back
/// with [`answered`](Self::answered); dropped before that, it hands the
/// call to a background cleanup.
pub(crate) struct Pending {
    /// `None` once answered.
    call: Option<(Client, Call, pb::RequestId, InFlightId)>,
    /// Attempts sent so far (the cleanup continues the numbering).
    sent: AtomicU32,
}

impl Pending {
    /// `call` (its request id left unset) under `id`, for `client`.
    pub fn new(client: &Client, call: Call, id: pb::RequestId, open: InFlightId) -> Self {
        Pending {
            call: Some((client.detached(), call, id, open)),
            sent: AtomicU32::new(0),
        }
    }

    /// Notes that attempt `attempt` is about to be sent.
    pub fn sending(&self, attempt: u32) {
        self.sent
            .fetch_max(attempt.saturating_add(1), Ordering::SeqCst);
    }

    /// Sends `req` (this call's request, its id set) as it is until
    /// answered or `deadline`, and settles the id with the answer.
    pub async fn send<R: Unary>(
        self,
        endpoints: &Endpoints,
        deadline: Option<Instant>,
        req: &R,
    ) -> Result<R::Reply, Error> {
        let answer = unary::send(endpoints, deadline, req, || self.sending(0)).await;
        self.answered().settle(answer)
    }

    /// Sends `req` (this call's request) as numbered attempts of `id`, each
    /// asking for the wait left until `deadline`, and settles the id with
    /// the answer.
    pub async fn send_attempts<R: Waiting>(
        self,
        endpoints: &Endpoints,
        deadline: Option<Instant>,
        req: &R,
        id: &pb::RequestId,
    ) -> Result<R::Reply, WaitFailed> {
        let mut attempts = WaitAttempts::new(deadline);
        let answer = unary::send_attempts(endpoints, deadline, req, id, &mut attempts, |attempt| {
            self.sending(attempt)
        })
        .await;
        let gone = matches!(answer, Err(WaitFailed::Gone(_)));
        let settled = self.answered().settle(answer.map_err(Error::from));
        settled.map_err(|e| match gone {
            true => WaitFailed::Gone(e),
            false => WaitFailed::Failed(e),
        })
    }

    /// The call has its answer: its id, to settle.
    fn answered(mut self) -> InFlightId {
        match self.call.take() {
            Some((_, _, _, open)) => open,
            None => unreachable!("a pending call is answered once (it is taken by value)"),
        }
    }
}

/// How many times a wait asks again under a new request id after finding
/// the wait of its earlier attempt cancelled; each time its node had left
/// it unanswered for two dial timeouts.
const ASK_AGAIN: u32 = 8;

impl Client {
    /// Runs the waiting call `call` (`req`, its request without an id)
    /// until answered or `deadline`, under a new request id; dropped before
    /// its answer, it is finished in the background. A wait that finds
    /// nothing left under its request (its node went unanswered past the
    /// dial timeout, the client gave that attempt up, and the node
    /// cancelled the wait it had made) asks again under a new id, at the
    /// back of the queue: its caller is still waiting.
    pub(crate) async fn wait_call<R: Waiting>(
        &self,
        call: Call,
        req: &R,
        deadline: Option<Instant>,
    ) -> Result<R::Reply, Error> {
        let mut asked_again = 0;
        loop {
            let (request_id, open) = self.inner.ids.next();
            let pending = Pending::new(self, call.clone(), request_id.clone(), open);
            let answer = pending
                .send_attempts(&self.inner.endpoints, deadline, req, &request_id)
                .await;
            match answer {
                Err(WaitFailed::Gone(e))
                    if asked_again < ASK_AGAIN && deadline.is_none_or(|d| Instant::now() < d) =>
                {
                    tracing::debug!("asking again under a new request id: {e}");
                    asked_again += 1;
                }
                answer => return answer.map_err(Error::from),
            }
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let Some((client, call, id, open)) = self.call.take() else {
            return;
        };
        let sent = self.sent.load(Ordering::SeqCst);
        if sent == 0 && !call.completes() {
            // Nothing left this client: nothing to learn or undo.
            return;
        }
        // On the client's own runtime, whichever the call was polled on.
        let (inner, runtime) = (client.inner.clone(), client.home());
        inner
            .cleanups
            .spawn(&runtime, finish(client, call, id, sent, open));
    }
}

/// Learns how an abandoned call ended and undoes its grant.
async fn finish(client: Client, call: Call, id: pb::RequestId, sent: u32, open: InFlightId) {
    let mut attempts = WaitAttempts::starting_at(Some(Instant::now()), sent);
    let mut answer = Err(Error::Unavailable("not sent".into()));
    for _ in 0..ROUNDS {
        answer = resend(&client, &call, &id, &mut attempts).await;
        if !matches!(&answer, Err(e) if e.is_retryable()) {
            break;
        }
    }
    let undone = match open.settle(answer) {
        Ok(Granted::Lock { name, owner }) => client.release(&name, &owner).await.map(drop),
        Ok(Granted::Leadership { name, owner }) => client.resign(&name, &owner).await,
        Ok(Granted::Lease(lease)) => client.revoke(lease).await.map(drop),
        Ok(Granted::Nothing) => Ok(()),
        Err(e) => Err(e),
    };
    match undone {
        Ok(()) => {}
        // No answer, or the answer was forgotten: a grant may stand.
        Err(e @ (Error::Unavailable(_) | Error::OutcomeUnknown(_))) => tracing::warn!(
            "could not learn or undo the outcome of an abandoned call ({e}); \
             its lease ends whatever it was granted"
        ),
        // Refused, timed out or ended (nothing was granted), or the grant
        // is gone already (its lease ended).
        Err(e) => tracing::debug!("abandoned call finished: {e}"),
    }
}

/// What an abandoned call turned out to have granted.
enum Granted {
    Lock { name: String, owner: String },
    Leadership { name: String, owner: String },
    Lease(u64),
    Nothing,
}

/// Sends the call again (next attempts, a wait of 1 ms) and reads its
/// answer.
async fn resend(
    client: &Client,
    call: &Call,
    id: &pb::RequestId,
    attempts: &mut WaitAttempts,
) -> Result<Granted, Error> {
    let endpoints = &client.inner.endpoints;
    match call {
        Call::Acquire(req) => {
            let r = unary::send_attempts(endpoints, None, req, id, attempts, |_| {})
                .await
                .map_err(Error::from)?;
            Ok(match (r.acquired, req.ttl_ms) {
                (false, _) => Granted::Nothing,
                (true, Some(_)) => Granted::Lease(r.lease),
                (true, None) => Granted::Lock {
                    name: req.name.clone(),
                    owner: req.owner.clone(),
                },
            })
        }
        Call::Campaign(req) => {
            let r = unary::send_attempts(endpoints, None, req, id, attempts, |_| {})
                .await
                .map_err(Error::from)?;
            Ok(match r.busy {
                true => Granted::Nothing,
                false => Granted::Leadership {
                    name: req.name.clone(),
                    owner: req.owner.clone(),
                },
            })
        }
        Call::Lease(req) => {
            let req = req.clone().with_id(id);
            let r = unary::send(endpoints, None, &req, || {}).await?;
            Ok(Granted::Lease(r.id))
        }
        Call::Release(req) => {
            unary::send(endpoints, None, &req.clone().with_id(id), || {}).await?;
            Ok(Granted::Nothing)
        }
        Call::Revoke(req) => {
            unary::send(endpoints, None, &req.clone().with_id(id), || {}).await?;
            Ok(Granted::Nothing)
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    #[tokio::test]
    async fn wait_sees_every_cleanup_end_and_is_bounded() {
        let cleanups = Cleanups::new();
        let (tx, rx) = oneshot::channel::<()>();
        cleanups.spawn(&Handle::current(), async move {
            let _ = rx.await;
        });
        cleanups.spawn(&Handle::current(), async {});
        assert_eq!(cleanups.wait(Duration::from_millis(50)).await, 1);
        let _ = tx.send(());
        assert_eq!(cleanups.wait(Duration::from_secs(30)).await, 0);
    }
}
