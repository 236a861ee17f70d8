//! The lock-serving layer: what turns replicated commands into a lock
//! service. It sits between the gRPC services and replication
//! (`raftlock_raft`), whose [`Replica`] it reaches only through its
//! narrow handle: write and get the applied result, read barrier, the
//! applied stream, leadership changes and one leader-only call hook.
//!
//! # Layout
//!
//! - [`Serving`] (this file): the layer's handle, its tasks and their stop.
//! - [`grant_wait`]: Acquire and Campaign: propose, then hold the call open
//!   until the grant is applied on this node; cancel a wait nobody needs.
//! - [`event_router`]: routes applied events to callers waiting for a grant,
//!   the lease and lock-delay timers, and election observers.
//! - `deadline_queue`: the leader-only deadline queue both timers are:
//!   [`lease_timer`], deadlines of every lease (with the expiries in
//!   flight), and [`lock_delay_timer`], the same for lock-delays.
//! - `leader_tasks`: starts and stops those timers as leadership comes and
//!   goes, and proposes the expiries and delay ends they find due.
//! - `repeated_warning`: a retry loop's warning, logged once, then counted.
//! - [`stamp`]: the one constructor of a [`Request`]
//!   to replicate, a caller's or the cluster's own.
//! - `lease_calls`: a lease's leader-only calls (renew, time left, TTL
//!   change), served on the leader's timer and forwarded by followers.

mod deadline_queue;
pub mod event_router;
pub mod grant_wait;
mod leader_tasks;
mod lease_calls;
pub mod lease_timer;
pub mod lock_delay_timer;
pub mod metrics;
mod repeated_warning;
pub mod stamp;
mod wait_error;

use raftlock_storage::command::SetLeaseTtl;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::ServingConfig;
use metrics::{LockGauges, LockMetrics};
use raftlock_raft::error::Internal;
use raftlock_raft::{Error, Replica};
use raftlock_storage::{Command, Request, Response};

use event_router::{route_events, Waiters};
use lease_calls::LeaseCalls;
use lease_timer::LeaseTimer;
use lock_delay_timer::LockDelayTimer;

/// How many lock-change notices an election observer may fall behind
/// before it is told to re-read everything.
const CHANGES_BACKLOG: usize = 1024;

/// The lock-serving layer of one node: what the gRPC services call.
pub struct Serving {
    /// The replica below, reached through its methods only.
    replica: Arc<Replica>,
    /// This layer's settings.
    config: ServingConfig,
    /// Locks and leases, as `/metrics` shows them.
    metrics: Arc<LockMetrics>,
    /// Callers waiting for grants.
    waiters: Waiters,
    /// Lease deadlines (active on the leader only).
    timer: LeaseTimer,
    /// Lock-delay deadlines (active on the leader only).
    delays: LockDelayTimer,
    /// Names of locks whose holders or value changed ("" = everything may
    /// have changed), for election observers.
    changed: broadcast::Sender<String>,
}

/// The serving layer's tasks: told to stop with [`ServingTasks::stop`],
/// aborted if dropped first (like a crash).
pub struct ServingTasks {
    stop: watch::Sender<bool>,
    /// Routes applied events; ends by itself when the state machine is
    /// gone, after Raft stopped.
    router: JoinHandle<()>,
    /// The leader's timers and leadership tracking; they watch `stop`.
    timers: Vec<JoinHandle<()>>,
}

impl Serving {
    /// Starts serving locks on `replica`: takes its applied stream, registers
    /// the lease calls the leader serves, and starts the timers' tasks.
    pub fn start(
        replica: Arc<Replica>,
        config: ServingConfig,
    ) -> Result<(Arc<Serving>, ServingTasks), Error> {
        let applied = replica.take_applied().ok_or(Internal::AppliedStreamTaken)?;
        let (changed, _) = broadcast::channel(CHANGES_BACKLOG);
        let serving = Arc::new(Serving {
            replica,
            config,
            metrics: Arc::new(LockMetrics::new()),
            waiters: Waiters::default(),
            timer: LeaseTimer::default(),
            delays: LockDelayTimer::default(),
            changed,
        });
        serving
            .replica
            .serve_leader_calls(Arc::new(LeaseCalls(Arc::downgrade(&serving))))?;
        let (stop, stop_rx) = watch::channel(false);
        let router = tokio::spawn(route_events(
            applied,
            serving.waiters.clone(),
            (serving.timer.clone(), serving.delays.clone()),
            serving.changed.clone(),
            serving.metrics.clone(),
        ));
        let timers = vec![
            tokio::spawn(leader_tasks::track_leadership(
                serving.clone(),
                stop_rx.clone(),
            )),
            tokio::spawn(leader_tasks::expire_leases(
                serving.clone(),
                stop_rx.clone(),
            )),
            tokio::spawn(leader_tasks::end_lock_delays(serving.clone(), stop_rx)),
        ];
        Ok((
            serving,
            ServingTasks {
                stop,
                router,
                timers,
            },
        ))
    }

    /// The replica below.
    pub fn replica(&self) -> &Arc<Replica> {
        &self.replica
    }

    /// Replicates `request` and returns the entry's log index and the state
    /// machine's response. A lease's TTL change goes through the leader's
    /// lease timer, which holds the lease off expiry meanwhile.
    pub async fn write(&self, request: Request) -> Result<(u64, Response), Error> {
        match request.command {
            Command::SetLeaseTtl(SetLeaseTtl { .. }) => self.set_ttl(request).await,
            _ => self.replica.write(request).await,
        }
    }

    /// Names of locks whose holders or value changed from now on ("" =
    /// everything may have changed), for election observers.
    pub fn changes(&self) -> broadcast::Receiver<String> {
        self.changed.subscribe()
    }

    /// The node's metrics in the Prometheus text format, the lock gauges
    /// and the replica's brought up to date.
    pub fn scrape_metrics(&self) -> String {
        let mut gauges = self.replica.read_state(|state| {
            let mut gauges = LockGauges {
                leases: state.leases().count() as u64,
                ..LockGauges::default()
            };
            for lock in state.locks() {
                gauges.locks_held += u64::from(!lock.holders.is_empty());
                gauges.holders += lock.holders.len() as u64;
                gauges.waiters += lock.waiters.len() as u64;
            }
            gauges
        });
        if self.replica.is_leader() {
            gauges.expiry_backlog = Some(self.timer.backlog(Instant::now()) as u64);
        }
        self.metrics.set_gauges(gauges);
        self.replica.scrape_metrics(self.metrics.registry())
    }
}

impl ServingTasks {
    /// Stops the timers' tasks, waiting up to 5 s for each. The event
    /// router goes on until the state machine is gone.
    pub async fn stop(&mut self) {
        let _ = self.stop.send(true);
        for task in &mut self.timers {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl ServingTasks {
    /// Aborts every task at once, as a crash would.
    pub fn abort(&self) {
        self.router.abort();
        for task in &self.timers {
            task.abort();
        }
    }
}

impl Drop for ServingTasks {
    fn drop(&mut self) {
        self.abort();
    }
}
