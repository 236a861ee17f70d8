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
//! A write takes as few hand-offs between tasks as it can: a request that
//! finds room in flight and nobody queued proposes its own entry from the
//! caller's task, and the entry's [`Reply`] answers every caller from where
//! openraft applied it. Only queued requests go through the proposer task,
//! which an entry's completion wakes when it leaves room.
//!
//! Requests in one entry are applied in order; each gets its own response,
//! and its own [`slot`](raftlock_storage::slot) for lease ids and fences.
//! Every entry carries this node's per-account [`Quotas`]: the leader's
//! settings decide, on every replica alike.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::{oneshot, watch, Notify};

use raftlock_storage::{Proposal, Quotas, Reply, Request, Response};

use crate::error::{Error, Internal};
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

/// Hands requests to Raft. Cheap to clone.
#[derive(Clone)]
pub struct Proposer {
    shared: Arc<Shared>,
}

struct Shared {
    raft: Raft,
    quotas: Quotas,
    metrics: Arc<NodeMetrics>,
    queue: Mutex<Queue>,
    /// Wakes the proposer task: an entry completed while requests queued.
    room: Notify,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Pending>,
    in_flight: usize,
    /// Set once the proposer stopped: nothing more is proposed.
    stopped: bool,
}

/// One entry's place among the [`MAX_IN_FLIGHT`]; dropping it (once the
/// entry is applied, failed, or never proposed) gives the place back.
struct InFlight(Arc<Shared>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let more = {
            let mut queue = self.0.queue();
            queue.in_flight -= 1;
            !queue.waiting.is_empty()
        };
        if more {
            self.0.room.notify_one();
        }
    }
}

impl Proposer {
    /// Starts the proposer for `raft`, whose entries carry `quotas`, and
    /// returns the task that proposes queued requests; it stops when `stop`
    /// turns true (callers still queued get [`Error::ShuttingDown`]).
    pub fn start(
        raft: Raft,
        quotas: Quotas,
        stop: watch::Receiver<bool>,
        metrics: Arc<NodeMetrics>,
    ) -> (Proposer, impl std::future::Future<Output = ()>) {
        let shared = Arc::new(Shared {
            raft,
            quotas,
            metrics,
            queue: Mutex::default(),
            room: Notify::new(),
        });
        (
            Proposer {
                shared: shared.clone(),
            },
            run(shared, stop),
        )
    }

    /// Replicates `request` (in an entry shared with other requests) and
    /// waits until it is applied. Only meaningful on the leader; elsewhere
    /// it answers [`Error::NotLeader`].
    pub async fn write(&self, request: Request) -> Written {
        let (reply, answer) = oneshot::channel();
        let pending = Pending { request, reply };
        let alone = {
            let mut queue = self.shared.queue();
            if queue.stopped {
                return Err(Error::ShuttingDown);
            }
            if queue.in_flight < MAX_IN_FLIGHT && queue.waiting.is_empty() {
                queue.in_flight += 1;
                Some(pending)
            } else {
                queue.waiting.push_back(pending);
                None
            }
        };
        if let Some(pending) = alone {
            let place = InFlight(self.shared.clone());
            self.shared.propose(vec![pending], place).await;
        }
        answer.await.unwrap_or(Err(Error::ShuttingDown))
    }
}

impl Shared {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding the lock; a poisoned one is still
        // consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Proposes `batch` as one entry holding `place`; its callers are
    /// answered from where openraft applies the entry, or fails it.
    async fn propose(&self, batch: Vec<Pending>, place: InFlight) {
        let (requests, replies): (Vec<Request>, Vec<_>) =
            batch.into_iter().map(|p| (p.request, p.reply)).unzip();
        let writes = requests.len();
        let proposed = Instant::now();
        let metrics = self.metrics.clone();
        let reply = Reply::new(move |applied: openraft::raft::ClientWriteResult<_>| {
            let outcome = match applied {
                Ok(written) => {
                    metrics.on_proposal_applied(proposed.elapsed());
                    Ok((written.log_id.index, written.data))
                }
                Err(e) => Err(e.into()),
            };
            answer(replies, outcome);
            drop(place);
        });
        // On an error the reply is dropped unanswered, and with it the
        // callers' senders and the place: they see `ShuttingDown`.
        if self
            .raft
            .client_write_ff(
                Proposal {
                    requests,
                    quotas: self.quotas,
                },
                Some(reply),
            )
            .await
            .is_ok()
        {
            self.metrics.on_proposed(writes);
        }
    }
}

/// The proposer task: proposes what queued while [`MAX_IN_FLIGHT`]
/// entries were in flight, whenever one of them completes.
async fn run(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            () = shared.room.notified() => {}
        }
        loop {
            let batch = {
                let mut queue = shared.queue();
                if queue.in_flight >= MAX_IN_FLIGHT || queue.waiting.is_empty() {
                    break;
                }
                queue.in_flight += 1;
                gather(&mut queue.waiting)
            };
            let place = InFlight(shared.clone());
            shared.propose(batch, place).await;
        }
    }
    // Callers still queued see `ShuttingDown` as their senders drop.
    let mut queue = shared.queue();
    queue.stopped = true;
    queue.waiting.clear();
}

/// The oldest queued requests, up to the batch bounds.
fn gather(waiting: &mut VecDeque<Pending>) -> Vec<Pending> {
    let mut bytes = 0;
    let mut batch = Vec::new();
    while batch.len() < MAX_BATCH && bytes < MAX_BATCH_BYTES {
        let Some(next) = waiting.pop_front() else {
            break;
        };
        bytes += next.request.approximate_size();
        batch.push(next);
    }
    batch
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
            let e = Error::Internal(Internal::ResponseCount {
                index,
                responses: responses.len(),
                requests: replies.len(),
            });
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
