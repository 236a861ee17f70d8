//! Acquire: granting, re-entering, queueing or refusing a lock request
//! once `LockTable::acquire` has checked the input and the lease.

use std::collections::VecDeque;

use super::lease_table::LeaseTable;
use super::queue::{self, count_u32, NewHold, Occupancy};
use super::{Lock, Step, Waiter};
use crate::command::{Acquire, CommandError, LeaseId, Mode, Response};
use crate::limits::MAX_WAITERS_PER_LOCK;

/// What a command did to one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Touched {
    /// Nothing.
    Nothing,
    /// The lock changed, its holders did not (count, queue); it may now be
    /// empty.
    Record,
    /// The holders or a holder's value changed: observers hear of it.
    Holders,
}

/// Acquire on a lock that does not exist yet: it is created with the
/// request's kind and granted at once.
pub(super) fn acquire_new(
    req: &Acquire,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) -> (Lock, Response) {
    let semaphore_limit = match req.mode {
        Mode::Permits { limit, .. } => Some(limit),
        Mode::Exclusive | Mode::Shared => None,
    };
    let mut lock = Lock {
        name: req.name.to_owned(),
        semaphore_limit,
        holders: Vec::new(),
        waiters: VecDeque::new(),
        delay: None,
    };
    let fence = queue::grant(&mut lock, grant_of(req, step), leases, step);
    (lock, Response::Granted { fence, count: 1 })
}

/// Acquire on a lock that exists: re-entry, already queued, grant, queue or
/// busy. A lock under a lock-delay grants nobody new: a try-lock is busy, a
/// wait queues.
pub(super) fn acquire_existing(
    lock: &mut Lock,
    req: &Acquire,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) -> Result<(Response, Touched), CommandError> {
    check_kind(lock, req.mode)?;
    if let Some(holder) = lock.holders.iter_mut().find(|h| h.owner == req.owner) {
        check_same(&lock.name, "holds", req, holder.lease, holder.mode)?;
        let count = holder.count.checked_add(1).ok_or_else(|| {
            CommandError::InvalidArgument(format!(
                "re-entry count of {} on {} overflows",
                req.owner, req.name
            ))
        })?;
        holder.count = count;
        holder.claim = step.claim;
        return Ok((
            Response::Granted {
                fence: holder.fence,
                count,
            },
            Touched::Record,
        ));
    }
    if let Some(at) = lock.waiter_position(&req.owner) {
        let waiter = &mut lock.waiters[at];
        check_same(&lock.name, "waits for", req, waiter.lease, waiter.mode)?;
        // Another request for the same wait: it is now the call that owns it.
        waiter.claim = step.claim;
        return Ok((
            Response::Queued {
                position: count_u32(at),
            },
            Touched::Nothing,
        ));
    }
    if lock.delay.is_none()
        && lock.waiters.is_empty()
        && Occupancy::of(lock).fits(req.mode, lock.semaphore_limit)
    {
        let fence = queue::grant(lock, grant_of(req, step), leases, step);
        return Ok((Response::Granted { fence, count: 1 }, Touched::Holders));
    }
    if !req.wait {
        return Ok((Response::Busy, Touched::Nothing));
    }
    if lock.waiters.len() >= MAX_WAITERS_PER_LOCK {
        return Err(CommandError::TooManyWaiters {
            name: lock.name.clone(),
            limit: MAX_WAITERS_PER_LOCK,
        });
    }
    leases.check_waiter_quota(req.lease, &step.quotas)?;
    leases.attach(req.lease, &lock.name, &req.owner, false);
    lock.waiters.push_back(Waiter {
        owner: req.owner.to_owned(),
        lease: req.lease,
        mode: req.mode,
        queued_at_ms: step.time_ms,
        value: req.value.clone(),
        claim: step.claim,
        lock_delay_ms: req.lock_delay_ms,
    });
    let position = count_u32(lock.waiters.len() - 1);
    Ok((Response::Queued { position }, Touched::Record))
}

/// A lock's kind is fixed while it exists: a semaphore with one limit, or a
/// mutex / read-write lock.
fn check_kind(lock: &Lock, mode: Mode) -> Result<(), CommandError> {
    let detail = match (lock.semaphore_limit, mode) {
        (None, Mode::Exclusive | Mode::Shared) => return Ok(()),
        (Some(have), Mode::Permits { limit, .. }) if have == limit => return Ok(()),
        (Some(have), Mode::Permits { limit, .. }) => {
            format!("it is a semaphore of {have} permits, not {limit}")
        }
        (Some(have), _) => {
            format!("it is a semaphore of {have} permits, not a mutex or read-write lock")
        }
        (None, Mode::Permits { .. }) => {
            "it is a mutex or read-write lock, not a semaphore".to_owned()
        }
    };
    Err(CommandError::Conflict {
        name: lock.name.clone(),
        detail,
    })
}

/// An owner already holding or waiting must ask again with the same lease
/// and mode.
fn check_same(
    name: &str,
    verb: &str,
    req: &Acquire,
    lease: LeaseId,
    mode: Mode,
) -> Result<(), CommandError> {
    let detail = if lease != req.lease {
        format!(
            "{} {verb} it under lease {lease}, not {}",
            req.owner, req.lease
        )
    } else if mode != req.mode {
        format!(
            "{} {verb} it in mode {mode:?}, not {:?}",
            req.owner, req.mode
        )
    } else {
        return Ok(());
    };
    Err(CommandError::Conflict {
        name: name.to_owned(),
        detail,
    })
}

/// The hold an acquire asks for.
fn grant_of(req: &Acquire, step: &Step<'_>) -> NewHold {
    NewHold {
        owner: req.owner.to_owned(),
        lease: req.lease,
        mode: req.mode,
        value: req.value.clone(),
        claim: step.claim,
        lock_delay_ms: req.lock_delay_ms,
    }
}
