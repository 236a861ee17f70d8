//! A worker's lease: granted when needed, kept alive by a task of its own
//! that records each keep-alive, marked dead when a call learns it is
//! gone, and revoked when the worker gives up on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use raftlock_client::Client;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::super::recorder::Recorder;
use super::Worker;
use crate::history::{Failure, Op, Outcome, Value};

/// A lease and the task keeping it alive.
pub(super) struct LeaseHandle {
    pub(super) id: u64,
    /// Set when a keep-alive (or any call) learned the lease is gone.
    pub(super) dead: Arc<AtomicBool>,
    pub(super) keeper: JoinHandle<()>,
}

impl Worker {
    /// The live lease, granting a new one (and first, sometimes, trying the
    /// dead one) when needed. `None` once the deadline passed.
    pub(super) async fn ensure_lease(&mut self, deadline: Instant) -> Option<u64> {
        if let Some(l) = &self.lease {
            if !l.dead.load(Ordering::Relaxed) {
                return Some(l.id);
            }
            self.mark_dead();
        }
        while Instant::now() < deadline {
            let client = self.client.clone();
            let ttl = self.ttl;
            let op = Op::GrantLease {
                ttl_ms: ttl.as_millis() as u64,
            };
            let call = async move { client.grant_lease(ttl).await };
            if let Outcome::Ok(Value::Lease { id }) = self
                .rec
                .record(op, call, |id| Value::Lease { id: *id })
                .await
            {
                let dead = Arc::new(AtomicBool::new(false));
                let keeper = tokio::spawn(keep_alive(
                    self.client.clone(),
                    self.keeper_rec.clone(),
                    id,
                    self.ttl,
                    dead.clone(),
                ));
                self.lease = Some(LeaseHandle { id, dead, keeper });
                return Some(id);
            }
            self.pause(100, 300).await;
        }
        None
    }

    /// The lease is known dead: drop it, and maybe try it once more.
    pub(super) fn mark_dead(&mut self) {
        if let Some(l) = self.lease.take() {
            l.keeper.abort();
            self.zombie = Some(l.id);
        }
    }

    /// Revokes the lease (retrying until the answer is definite, a few
    /// times), ending anything it holds.
    pub(super) async fn abandon_lease(&mut self) {
        let Some(l) = self.lease.take() else {
            return;
        };
        l.keeper.abort();
        for _ in 0..4 {
            match self.revoke(l.id).await {
                Outcome::Ok(_) | Outcome::Fail(_) => {
                    self.zombie = Some(l.id);
                    return;
                }
                Outcome::Info { .. } => self.pause(200, 500).await,
            }
        }
    }

    pub(super) async fn revoke(&mut self, lease: u64) -> Outcome {
        let client = self.client.clone();
        let call = async move { client.revoke(lease).await };
        self.rec
            .record(Op::Revoke { lease }, call, |_| Value::Unit)
            .await
    }
}

/// Keeps `lease` alive every ttl/4, recording each call, until it is gone.
async fn keep_alive(
    client: Client,
    rec: Recorder,
    lease: u64,
    ttl: Duration,
    dead: Arc<AtomicBool>,
) {
    let mut tick = tokio::time::interval(ttl / 4);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let c = client.clone();
        let call = async move { c.keep_alive(lease).await };
        let outcome = rec
            .record(Op::KeepAlive { lease }, call, |ttl| Value::Remaining {
                count: ttl.as_millis() as u32,
            })
            .await;
        if let Outcome::Fail(Failure::LeaseExpired) = outcome {
            dead.store(true, Ordering::Relaxed);
            return;
        }
    }
}
