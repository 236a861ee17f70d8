//! What a node runs beside openraft for as long as it is up: following
//! leadership to start and stop the lease and lock-delay timers, and, while
//! leading, proposing the expiries and delay ends those timers find due.

use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use raftlock_storage::{Command, LeaseId, Request};

use crate::node::wall_clock_ms;
use crate::replica::Replica;

/// Starts the lease timer when this node becomes leader and stops it when it
/// steps down.
pub(crate) async fn track_leadership(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    let mut metrics = node.raft.metrics();
    let mut leading_term = None;
    loop {
        let (leading, term) = {
            let m = metrics.borrow_and_update();
            (
                m.state == ServerState::Leader && m.current_leader == Some(node.id),
                m.current_term,
            )
        };
        if leading && leading_term != Some(term) {
            tracing::info!(
                node = node.id,
                term,
                "became leader; restarting every lease deadline at now + ttl"
            );
            let state = node.state.clone();
            node.timer.activate(Instant::now(), move || {
                let state = state.read().unwrap_or_else(|e| e.into_inner());
                state.leases().map(|l| (l.id, l.ttl_ms)).collect::<Vec<_>>()
            });
            let state = node.state.clone();
            node.delays.activate(Instant::now(), move || {
                let state = state.read().unwrap_or_else(|e| e.into_inner());
                state
                    .lock_delays()
                    .map(|(name, d)| (name.to_owned(), d.since, d.ms))
                    .collect::<Vec<_>>()
            });
            leading_term = Some(term);
        } else if !leading && leading_term.is_some() {
            tracing::info!(node = node.id, "stepped down; lease timer stopped");
            node.timer.deactivate();
            node.delays.deactivate();
            leading_term = None;
        }
        let stopped = metrics.borrow_watched().state == ServerState::Shutdown;
        if stopped && !*stop.borrow() {
            node.report_fatal("the Raft core stopped".to_string());
            break;
        }
        tokio::select! {
            changed = metrics.changed() => if changed.is_err() {
                if !*stop.borrow() {
                    node.report_fatal("the Raft core ended".to_string());
                }
                break;
            },
            _ = stop.changed() => break,
        }
    }
    node.timer.deactivate();
    node.delays.deactivate();
}

/// Expiry entries proposed and not yet applied. A mass expiry then costs a
/// few round trips in parallel instead of one per batch in series.
const EXPIRY_IN_FLIGHT: usize = 4;

/// Proposes expiry entries whenever lease deadlines pass (leader only; the
/// timer is empty elsewhere).
pub(crate) async fn expire_leases(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    // Dropped on return, which aborts proposals still waiting.
    let mut in_flight = JoinSet::new();
    loop {
        while in_flight.try_join_next().is_some() {}
        let next = if in_flight.len() < EXPIRY_IN_FLIGHT {
            let (due, next) = node.timer.take_due(Instant::now());
            if !due.is_empty() {
                in_flight.spawn(expire(node.clone(), due));
                continue;
            }
            next
        } else {
            None
        };
        tokio::select! {
            _ = node.timer.sleep_until(next), if in_flight.len() < EXPIRY_IN_FLIGHT => {}
            Some(_) = in_flight.join_next(), if !in_flight.is_empty() => {}
            _ = stop.changed() => return,
        }
    }
}

/// Proposes the expiry of `due` (marked expiring by the timer) and settles
/// the marks with the outcome.
async fn expire(node: Arc<Replica>, due: Vec<LeaseId>) {
    tracing::info!(
        node = node.id,
        count = due.len(),
        "proposing a lease expiry batch"
    );
    let req = Request {
        origin: None,
        caller: Default::default(),
        time_ms: wall_clock_ms(),
        command: Command::ExpireLeases { ids: due.clone() },
    };
    match node.proposer.write(req).await {
        Ok(_) => due.iter().for_each(|id| node.timer.on_ended(*id)),
        Err(e) => {
            tracing::warn!("cannot propose lease expiry: {e}");
            node.timer.unmark(&due);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Proposes the end of every lock-delay whose time has passed (leader only;
/// the timer is empty elsewhere). A delay stays tracked until its end is
/// applied, so a failed proposal is retried on the next pass.
pub(crate) async fn end_lock_delays(node: Arc<Replica>, mut stop: watch::Receiver<bool>) {
    loop {
        let (due, next) = node.delays.due(Instant::now());
        for (name, since) in due {
            let req = Request {
                origin: None,
                caller: Default::default(),
                time_ms: wall_clock_ms(),
                command: Command::EndLockDelay {
                    name: name.clone(),
                    since,
                },
            };
            tokio::select! {
                result = node.proposer.write(req) => match result {
                    // Applied: the event router has stopped tracking it.
                    Ok(_) => node.delays.on_ended(&name, since),
                    Err(e) => {
                        tracing::warn!(lock = %name, "cannot propose the end of a lock-delay: {e}");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                            _ = stop.changed() => return,
                        }
                    }
                },
                _ = stop.changed() => return,
            }
        }
        tokio::select! {
            _ = node.delays.sleep_until(next) => {}
            _ = stop.changed() => return,
        }
    }
}
