//! Group commit on the leader: writes that arrive while earlier entries are
//! being written travel together in one Raft entry.
//!
//! Every entry costs the leader a log append and a sync, and a replication
//! round, whatever it carries: one entry per request makes every request
//! pay them alone. The proposer keeps at most [`MAX_IN_FLIGHT`] entries in
//! flight; requests arriving meanwhile queue and go into the next entry
//! together. A lone request is proposed at once, so an idle cluster adds no
//! delay.
//!
//! Requests in one entry are applied in order; each gets its own response,
//! and its own [`slot`](raftlock_storage::slot) for lease ids and fences.
//! Every entry carries this node's per-account [`Quotas`]: the leader's
//! settings decide, on every replica alike.

use std::sync::Arc;
use std::time::Instant;

use openraft::impls::ProgressResponder;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use raftlock_storage::command::{
    Acquire, AcquireWithTtl, Cancel, ClaimFire, EndLockDelay, ExpireLeases, ForceRelease,
    GrantLease, Hold, Lead, Proclaim, ReadWrite, Release, RevokeAccountLeases, RevokeLease,
    SetLeaseTtl, Unhold,
};
use raftlock_storage::{Command, Proposal, Quotas, Request, Response};

use crate::error::Error;
use crate::metrics::NodeMetrics;
use crate::Raft;

/// Entries proposed and not yet applied. Two let the leader flush one entry
/// while the previous one is replicated; more would only split the queue
/// into smaller entries.
pub const MAX_IN_FLIGHT: usize = 2;

/// Most requests in one entry (well under
/// [`MAX_REQUESTS_PER_ENTRY`](raftlock_storage::MAX_REQUESTS_PER_ENTRY)).
pub const MAX_BATCH: usize = 1024;

/// Rough bytes one entry may carry before the rest waits for the next one.
pub const MAX_BATCH_BYTES: usize = 1 << 20;

/// What a proposed request comes back as: the entry's log index and the
/// state machine's response.
pub type Written = Result<(u64, Response), Error>;

struct Pending {
    request: Request,
    reply: oneshot::Sender<Written>,
}

/// Hands requests to the proposer task. Cheap to clone.
#[derive(Clone)]
pub struct Proposer {
    tx: mpsc::UnboundedSender<Pending>,
}

impl Proposer {
    /// Starts the proposer task for `raft`, whose entries carry `quotas`;
    /// it stops when `stop` turns true (callers still waiting get
    /// [`Error::ShuttingDown`]).
    pub fn start(
        raft: Raft,
        quotas: Quotas,
        stop: watch::Receiver<bool>,
        metrics: Arc<NodeMetrics>,
    ) -> (Proposer, impl std::future::Future<Output = ()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Proposer { tx }, run(raft, quotas, rx, stop, metrics))
    }

    /// Replicates `request` (in an entry shared with other requests) and
    /// waits until it is applied. Only meaningful on the leader; elsewhere
    /// it answers [`Error::NotLeader`].
    pub async fn write(&self, request: Request) -> Written {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Pending { request, reply })
            .map_err(|_| Error::ShuttingDown)?;
        rx.await.unwrap_or(Err(Error::ShuttingDown))
    }
}

async fn run(
    raft: Raft,
    quotas: Quotas,
    mut rx: mpsc::UnboundedReceiver<Pending>,
    mut stop: watch::Receiver<bool>,
    metrics: Arc<NodeMetrics>,
) {
    // Dropping the set at the end aborts the entries still in flight; their
    // callers' reply senders drop with them and they see `ShuttingDown`.
    let mut in_flight = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
            first = rx.recv(), if in_flight.len() < MAX_IN_FLIGHT => {
                let Some(first) = first else { break };
                let batch = gather(first, &mut rx);
                propose(&raft, quotas, batch, &mut in_flight, &metrics).await;
            }
        }
    }
}

/// `first` and whatever else is queued, up to the batch bounds.
fn gather(first: Pending, rx: &mut mpsc::UnboundedReceiver<Pending>) -> Vec<Pending> {
    let mut bytes = weight(&first.request);
    let mut batch = vec![first];
    while batch.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES {
        match rx.try_recv() {
            Ok(next) => {
                bytes += weight(&next.request);
                batch.push(next);
            }
            Err(_) => break,
        }
    }
    batch
}

/// Approximate encoded size of a request.
fn weight(request: &Request) -> usize {
    let variable = match &request.command {
        Command::Acquire(Acquire {
            name, owner, value, ..
        }) => name.len() + owner.len() + value.as_ref().map_or(0, Vec::len),
        Command::Proclaim(Proclaim {
            name, owner, value, ..
        }) => name.len() + owner.len() + value.len(),
        Command::Release(Release { name, owner })
        | Command::Cancel(Cancel { name, owner, .. })
        | Command::AcquireWithTtl(AcquireWithTtl { name, owner, .. })
        | Command::Hold(Hold { name, owner, .. })
        | Command::Unhold(Unhold { name, owner })
        | Command::ReadWrite(ReadWrite { name, owner, .. }) => name.len() + owner.len(),
        Command::Lead(Lead {
            name,
            owner,
            metadata,
            ..
        }) => {
            let pairs: usize = metadata.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
            name.len() + owner.len() + pairs
        }
        Command::ClaimFire(ClaimFire { name, .. }) => name.len(),
        Command::ForceRelease(ForceRelease { name })
        | Command::EndLockDelay(EndLockDelay { name, .. }) => name.len(),
        Command::RevokeAccountLeases(RevokeAccountLeases { account }) => account.to_string().len(),
        Command::ExpireLeases(ExpireLeases { ids }) => ids.len() * 8,
        Command::GrantLease(GrantLease { .. })
        | Command::RevokeLease(RevokeLease { .. })
        | Command::SetLeaseTtl(SetLeaseTtl { .. }) => 0,
    };
    128 + variable
}

async fn propose(
    raft: &Raft,
    quotas: Quotas,
    batch: Vec<Pending>,
    in_flight: &mut JoinSet<()>,
    metrics: &Arc<NodeMetrics>,
) {
    let (requests, replies): (Vec<Request>, Vec<_>) =
        batch.into_iter().map(|p| (p.request, p.reply)).unzip();
    let writes = requests.len();
    let (responder, applied) = ProgressResponder::complete_only();
    let proposed = Instant::now();
    match raft
        .client_write_ff(Proposal { requests, quotas }, Some(responder))
        .await
    {
        Ok(()) => {
            metrics.on_proposed(writes);
            let metrics = metrics.clone();
            in_flight.spawn(async move {
                let outcome = match applied.await {
                    Ok(Ok(written)) => {
                        metrics.on_proposal_applied(proposed.elapsed());
                        Ok((written.log_id.index, written.data))
                    }
                    Ok(Err(e)) => Err(e.into()),
                    Err(_) => Err(Error::ShuttingDown),
                };
                answer(replies, outcome);
            });
        }
        Err(e) => answer(replies, Err(e.into())),
    }
}

/// Sends every caller its own response, or the shared error.
fn answer(replies: Vec<oneshot::Sender<Written>>, outcome: Result<(u64, Vec<Response>), Error>) {
    match outcome {
        Ok((index, responses)) if responses.len() == replies.len() => {
            for (reply, response) in replies.into_iter().zip(responses) {
                // A caller that went away needs no answer.
                let _ = reply.send(Ok((index, response)));
            }
        }
        Ok((index, responses)) => {
            let e = Error::Internal(format!(
                "entry {index} answered {} responses for {} requests",
                responses.len(),
                replies.len()
            ));
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
        Err(e) => {
            for reply in replies {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}
