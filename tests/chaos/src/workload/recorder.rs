//! How a worker records what it does: each call stamped as an invoke and
//! a completion on the event stream, and client or register answers
//! classified into outcomes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::mpsc;

use super::OP_DEADLINE;
use crate::clock::now_ns;
use crate::history::{Event, Failure, Op, OpId, Outcome, Value};
use crate::register::Reply;

/// Stamps and sends events for one worker.
#[derive(Clone)]
pub(super) struct Recorder {
    client: u32,
    worker: u32,
    seq: Arc<AtomicU64>,
    tx: mpsc::UnboundedSender<Event>,
}

impl Recorder {
    pub(super) fn new(client: u32, worker: u32, tx: mpsc::UnboundedSender<Event>) -> Self {
        Recorder {
            client,
            worker,
            seq: Arc::default(),
            tx,
        }
    }

    pub(super) fn invoke(&self, op: Op) -> OpId {
        let id = OpId {
            client: self.client,
            worker: self.worker,
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
        };
        let _ = self.tx.send(Event::Invoke {
            id,
            t: now_ns(),
            op,
        });
        id
    }

    pub(super) fn complete(&self, id: OpId, outcome: Outcome) {
        let _ = self.tx.send(Event::Complete {
            id,
            t: now_ns(),
            outcome,
        });
    }

    /// Records `op`, runs `call` with the op deadline, records its outcome
    /// (`value` maps a success) and hands back the outcome.
    pub(super) async fn record<T, F>(
        &self,
        op: Op,
        call: F,
        value: impl FnOnce(&T) -> Value,
    ) -> Outcome
    where
        F: std::future::Future<Output = Result<T, raftlock_client::Error>>,
    {
        let id = self.invoke(op);
        let outcome = match tokio::time::timeout(OP_DEADLINE, call).await {
            Ok(Ok(v)) => Outcome::Ok(value(&v)),
            Ok(Err(e)) => outcome_of(&e),
            Err(_) => Outcome::Info {
                reason: "client deadline".into(),
            },
        };
        self.complete(id, outcome.clone());
        outcome
    }
}

/// Classifies a client error: definite failures vs indeterminate.
fn outcome_of(e: &raftlock_client::Error) -> Outcome {
    use raftlock_client::Error as E;
    let fail = match e {
        E::InvalidArgument(_) => Failure::InvalidArgument,
        E::LeaseExpired(_) => Failure::LeaseExpired,
        E::NotHeld(_) => Failure::NotHeld,
        E::Timeout(_) => Failure::Timeout,
        E::WaitEnded(_) => Failure::WaitEnded,
        E::LimitReached(_) => Failure::LimitReached,
        other => {
            return Outcome::Info {
                reason: other.to_string(),
            }
        }
    };
    Outcome::Fail(fail)
}

pub(super) fn register_outcome(reply: Result<Reply, String>) -> Outcome {
    match reply {
        Ok(Reply::Ok(value)) => Outcome::Ok(Value::Register { value }),
        Ok(Reply::Stale(max_fence)) => Outcome::Fail(Failure::Stale { max_fence }),
        Err(reason) => Outcome::Info { reason },
    }
}
