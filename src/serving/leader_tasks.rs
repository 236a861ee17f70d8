//! What a node runs beside openraft for as long as it is up: following
//! leadership to start and stop the lease and lock-delay timers, and, while
//! leading, proposing the expiries and delay ends those timers find due.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use raftlock_storage::command::{EndLockDelay, ExpireLeases};
use raftlock_storage::{Command, LeaseId};

use super::repeated_warning::{RepeatedWarning, Report};
use super::stamp::by_cluster;
use super::Serving;

/// Starts the lease timer when this node becomes leader and stops it when it
/// steps down.
pub(crate) async fn track_leadership(node: Arc<Serving>, mut stop: watch::Receiver<bool>) {
    let id = node.replica.id();
    let mut leadership = node.replica.leadership();
    let mut leading_term = None;
    loop {
        let leading = leadership.now();
        if let Some(term) = leading.filter(|term| leading_term != Some(*term)) {
            tracing::info!(
                node = id,
                term,
                "became leader; restarting every lease deadline at now + ttl"
            );
            let state = node.replica.shared_state();
            node.timer.activate(Instant::now(), move || {
                let state = state.read().unwrap_or_else(|e| e.into_inner());
                state.leases().map(|l| (l.id, l.ttl_ms)).collect::<Vec<_>>()
            });
            let state = node.replica.shared_state();
            node.delays.activate(Instant::now(), move || {
                let state = state.read().unwrap_or_else(|e| e.into_inner());
                state
                    .lock_delays()
                    .map(|(name, d)| (name.to_owned(), d.since, d.ms))
                    .collect::<Vec<_>>()
            });
            leading_term = Some(term);
        } else if leading.is_none() && leading_term.is_some() {
            tracing::info!(node = id, "stepped down; lease timer stopped");
            node.timer.deactivate();
            node.delays.deactivate();
            leading_term = None;
        }
        // The Raft core ending is reported by replication itself.
        tokio::select! {
            alive = leadership.changed() => if !alive { break },
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
pub(crate) async fn expire_leases(node: Arc<Serving>, mut stop: watch::Receiver<bool>) {
    // Dropped on return, which aborts proposals still waiting.
    let mut in_flight = JoinSet::new();
    let mut warning = RepeatedWarning::default();
    loop {
        while let Some(done) = in_flight.try_join_next() {
            report_expiry(&mut warning, done);
        }
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
            Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                report_expiry(&mut warning, done);
            }
            _ = stop.changed() => return,
        }
    }
}

/// Logs how an expiry proposal went: a failure in full the first time,
/// then as a count every [`SUMMARY_EVERY`](super::repeated_warning::SUMMARY_EVERY)
/// (a leader without a quorum retries every 50 ms).
fn report_expiry(
    warning: &mut RepeatedWarning,
    done: Result<Result<(), raftlock_raft::Error>, tokio::task::JoinError>,
) {
    match done {
        Ok(Ok(())) => {
            if let Some(failures) = warning.succeeded() {
                tracing::info!("lease expiries proposed again after {failures} failed attempts");
            }
        }
        Ok(Err(e)) => match warning.failed(Instant::now()) {
            Report::First => tracing::warn!(
                "cannot propose lease expiry: {e} (retried every 50 ms; repeats are counted)"
            ),
            Report::Summary { count } => tracing::warn!(
                "cannot propose lease expiry: {count} more failed attempts, the last: {e}"
            ),
            Report::Quiet => {}
        },
        // Aborted with the task set.
        Err(_) => {}
    }
}

/// Proposes the expiry of `due` (marked expiring by the timer) and settles
/// the marks with the outcome.
async fn expire(node: Arc<Serving>, due: Vec<LeaseId>) -> Result<(), raftlock_raft::Error> {
    tracing::info!(
        node = node.replica.id(),
        count = due.len(),
        "proposing a lease expiry batch"
    );
    let req = by_cluster(Command::ExpireLeases(ExpireLeases { ids: due.clone() }));
    match node.replica.propose_here(req).await {
        Ok(_) => {
            due.iter().for_each(|id| node.timer.on_ended(*id));
            Ok(())
        }
        Err(e) => {
            node.timer.unmark(&due);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(e)
        }
    }
}

/// Proposes the end of every lock-delay whose time has passed (leader only;
/// the timer is empty elsewhere). A delay stays tracked until its end is
/// applied, so a failed proposal is retried on the next pass.
pub(crate) async fn end_lock_delays(node: Arc<Serving>, mut stop: watch::Receiver<bool>) {
    let mut warning = RepeatedWarning::default();
    loop {
        let (due, next) = node.delays.due(Instant::now());
        for (name, since) in due {
            let req = by_cluster(Command::EndLockDelay(EndLockDelay {
                name: name.clone(),
                since,
            }));
            tokio::select! {
                result = node.replica.propose_here(req) => match result {
                    // Applied: the event router has stopped tracking it.
                    Ok(_) => {
                        node.delays.on_ended(&name, since);
                        warning.succeeded();
                    }
                    Err(e) => {
                        match warning.failed(Instant::now()) {
                            Report::First => tracing::warn!(
                                lock = %name,
                                "cannot propose the end of a lock-delay: {e} \
                                 (retried every 50 ms; repeats are counted)"
                            ),
                            Report::Summary { count } => tracing::warn!(
                                "cannot propose the end of a lock-delay: {count} more failed \
                                 attempts, the last: {e}"
                            ),
                            Report::Quiet => {}
                        }
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
