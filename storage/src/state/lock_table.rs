//! The locks by name and every command that changes one: acquire, release,
//! cancel, force release, proclaim, and ending what dying leases own.
//!
//! Each command validates everything before it mutates anything, so a
//! refusal leaves the state, the events and the change set untouched.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::bounds::{check_mode, check_name, check_owner, check_value};
use super::lease_table::LeaseTable;
use super::queue::{self, Grant, Occupancy};
use super::{Holder, Lock, Step, Waiter};
use crate::command::{CancelOutcome, CommandError, LeaseId, Mode, Response};
use crate::event::{EndReason, Event};
use crate::limits::MAX_WAITERS_PER_LOCK;

/// The fields of [`Command::Acquire`](crate::command::Command::Acquire).
pub(super) struct AcquireRequest<'a> {
    pub(super) name: &'a str,
    pub(super) owner: &'a str,
    pub(super) lease: LeaseId,
    pub(super) mode: Mode,
    pub(super) wait: bool,
    pub(super) value: &'a Option<Vec<u8>>,
}

/// What a command did to one lock's record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Touched {
    /// Nothing.
    Nothing,
    /// The record changed, its holders did not (count, queue).
    Record,
    /// The holders or a holder's value changed: observers hear of it.
    Holders,
}

/// Every lock with at least one holder or waiter, by name.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct LockTable {
    locks: BTreeMap<String, Lock>,
}

impl LockTable {
    /// The table holding `locks`, indexing each hold and wait in `leases`.
    pub(super) fn from_locks(locks: Vec<Lock>, leases: &mut LeaseTable) -> Self {
        for lock in &locks {
            for holder in &lock.holders {
                leases.attach(holder.lease, &lock.name, &holder.owner, true);
            }
            for waiter in &lock.waiters {
                leases.attach(waiter.lease, &lock.name, &waiter.owner, false);
            }
        }
        let locks = locks.into_iter().map(|l| (l.name.clone(), l)).collect();
        Self { locks }
    }

    /// A lock by name.
    pub(super) fn get(&self, name: &str) -> Option<&Lock> {
        self.locks.get(name)
    }

    /// Every lock, by name.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Lock> + '_ {
        self.locks.values()
    }

    /// Locks whose name starts with `prefix`, by name, at most `limit`.
    pub(super) fn with_prefix(&self, prefix: &str, limit: usize) -> Vec<&Lock> {
        use std::ops::Bound;
        self.locks
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(prefix))
            .take(limit)
            .map(|(_, lock)| lock)
            .collect()
    }

    /// Grants, re-enters, queues or refuses a lock request.
    pub(super) fn acquire(
        &mut self,
        req: &AcquireRequest<'_>,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        check_name(req.name)?;
        check_owner(req.owner)?;
        if let Some(value) = req.value {
            check_value(value)?;
        }
        check_mode(req.mode)?;
        if leases.get(req.lease).is_none() {
            return Err(CommandError::LeaseNotFound(req.lease));
        }
        let (reply, touched) = match self.locks.get_mut(req.name) {
            Some(lock) => acquire_existing(lock, req, leases, step)?,
            None => {
                let semaphore_limit = match req.mode {
                    Mode::Permits { limit, .. } => Some(limit),
                    Mode::Exclusive | Mode::Shared => None,
                };
                let mut lock = Lock {
                    name: req.name.to_owned(),
                    semaphore_limit,
                    holders: Vec::new(),
                    waiters: VecDeque::new(),
                };
                let fence = queue::grant(&mut lock, grant_of(req), leases, step);
                self.locks.insert(lock.name.clone(), lock);
                (Response::Granted { fence, count: 1 }, Touched::Holders)
            }
        };
        self.finish(req.name, touched, step);
        Ok(reply)
    }

    /// Gives back one level of `owner`'s hold on `name`.
    pub(super) fn release(
        &mut self,
        name: &str,
        owner: &str,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let not_holder = || CommandError::NotHolder {
            name: name.to_owned(),
            owner: owner.to_owned(),
        };
        let lock = self.locks.get_mut(name).ok_or_else(not_holder)?;
        let at = lock
            .holders
            .iter()
            .position(|h| h.owner == owner)
            .ok_or_else(not_holder)?;
        let remaining = lock.holders[at].count.saturating_sub(1);
        let touched = if remaining == 0 {
            end_hold(lock, at, EndReason::Released, leases, step);
            queue::grant_from_head(lock, leases, step);
            Touched::Holders
        } else {
            lock.holders[at].count = remaining;
            Touched::Record
        };
        self.finish(name, touched, step);
        Ok(Response::Released { remaining })
    }

    /// Takes `owner` out of the queue for `name`, or ends its hold entirely.
    pub(super) fn cancel(
        &mut self,
        name: &str,
        owner: &str,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Response {
        let Some(lock) = self.locks.get_mut(name) else {
            return Response::Cancelled {
                outcome: CancelOutcome::NotFound,
            };
        };
        let (outcome, touched) =
            if let Some(at) = lock.holders.iter().position(|h| h.owner == owner) {
                end_hold(lock, at, EndReason::Released, leases, step);
                queue::grant_from_head(lock, leases, step);
                (CancelOutcome::Released, Touched::Holders)
            } else if let Some(waiter) = lock
                .waiter_position(owner)
                .and_then(|at| lock.waiters.remove(at))
            {
                wait_ended(name, &waiter, EndReason::Released, leases, step);
                // The head may have been what blocked the others.
                let touched = match queue::grant_from_head(lock, leases, step) {
                    0 => Touched::Record,
                    _ => Touched::Holders,
                };
                (CancelOutcome::Dequeued, touched)
            } else {
                (CancelOutcome::NotFound, Touched::Nothing)
            };
        self.finish(name, touched, step);
        Response::Cancelled { outcome }
    }

    /// Ends every hold on `name`; the waiters then get it.
    pub(super) fn force_release(
        &mut self,
        name: &str,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Response {
        let Some(lock) = self.locks.get_mut(name) else {
            return Response::ForceReleased { holders: 0 };
        };
        let holders = std::mem::take(&mut lock.holders);
        for holder in &holders {
            hold_ended(name, holder, EndReason::ForceReleased, leases, step);
        }
        let granted = queue::grant_from_head(lock, leases, step);
        let touched = if holders.is_empty() && granted == 0 {
            Touched::Nothing
        } else {
            Touched::Holders
        };
        self.finish(name, touched, step);
        Response::ForceReleased {
            holders: count_u32(holders.len()),
        }
    }

    /// Sets the value `owner` publishes as a holder of `name`.
    pub(super) fn proclaim(
        &mut self,
        name: &str,
        owner: &str,
        value: &[u8],
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        check_value(value)?;
        let not_holder = || CommandError::NotHolder {
            name: name.to_owned(),
            owner: owner.to_owned(),
        };
        let lock = self.locks.get_mut(name).ok_or_else(not_holder)?;
        let holder = lock
            .holders
            .iter_mut()
            .find(|h| h.owner == owner)
            .ok_or_else(not_holder)?;
        holder.value = Some(value.to_vec());
        self.finish(name, Touched::Holders, step);
        Ok(Response::Proclaimed)
    }

    /// Ends every hold and wait attached to `ids`, then grants each freed
    /// lock to its next waiters. Returns how many holds ended.
    pub(super) fn end_leases(
        &mut self,
        ids: &BTreeSet<LeaseId>,
        reason: EndReason,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> u32 {
        let mut released = 0u32;
        for name in leases.attached_lock_names(ids) {
            let Some(lock) = self.locks.get_mut(&name) else {
                continue;
            };
            let (ended, kept): (Vec<Holder>, Vec<Holder>) = std::mem::take(&mut lock.holders)
                .into_iter()
                .partition(|h| ids.contains(&h.lease));
            lock.holders = kept;
            for holder in &ended {
                hold_ended(&name, holder, reason, leases, step);
            }
            let (dropped, kept): (VecDeque<Waiter>, VecDeque<Waiter>) =
                std::mem::take(&mut lock.waiters)
                    .into_iter()
                    .partition(|w| ids.contains(&w.lease));
            lock.waiters = kept;
            for waiter in &dropped {
                wait_ended(&name, waiter, reason, leases, step);
            }
            let granted = queue::grant_from_head(lock, leases, step);
            let touched = if !ended.is_empty() || granted > 0 {
                Touched::Holders
            } else if !dropped.is_empty() {
                Touched::Record
            } else {
                Touched::Nothing
            };
            released = released.saturating_add(count_u32(ended.len()));
            self.finish(&name, touched, step);
        }
        released
    }

    /// Records what a command did to `name`: announces holder changes,
    /// removes the lock once nobody holds or waits, marks the record dirty.
    fn finish(&mut self, name: &str, touched: Touched, step: &mut Step<'_>) {
        if touched == Touched::Nothing {
            return;
        }
        if touched == Touched::Holders {
            step.changes.events.push(Event::Changed {
                name: name.to_owned(),
            });
        }
        if self
            .locks
            .get(name)
            .is_some_and(|l| l.holders.is_empty() && l.waiters.is_empty())
        {
            self.locks.remove(name);
        }
        step.changes.locks.insert(name.to_owned());
    }
}

/// Acquire on a lock that exists: re-entry, already queued, grant, queue or
/// busy.
fn acquire_existing(
    lock: &mut Lock,
    req: &AcquireRequest<'_>,
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
        return Ok((
            Response::Granted {
                fence: holder.fence,
                count,
            },
            Touched::Record,
        ));
    }
    if let Some(at) = lock.waiter_position(req.owner) {
        let waiter = &lock.waiters[at];
        check_same(&lock.name, "waits for", req, waiter.lease, waiter.mode)?;
        return Ok((
            Response::Queued {
                position: count_u32(at),
            },
            Touched::Nothing,
        ));
    }
    if lock.waiters.is_empty() && Occupancy::of(lock).fits(req.mode, lock.semaphore_limit) {
        let fence = queue::grant(lock, grant_of(req), leases, step);
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
    leases.attach(req.lease, &lock.name, req.owner, false);
    lock.waiters.push_back(Waiter {
        owner: req.owner.to_owned(),
        lease: req.lease,
        mode: req.mode,
        queued_at_ms: step.time_ms,
        value: req.value.clone(),
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
    req: &AcquireRequest<'_>,
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
fn grant_of(req: &AcquireRequest<'_>) -> Grant {
    Grant {
        owner: req.owner.to_owned(),
        lease: req.lease,
        mode: req.mode,
        value: req.value.clone(),
    }
}

/// Removes the hold at `at` and announces it.
fn end_hold(
    lock: &mut Lock,
    at: usize,
    reason: EndReason,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) {
    let holder = lock.holders.remove(at);
    hold_ended(&lock.name, &holder, reason, leases, step);
}

/// Unindexes a hold already taken off `name` and announces its end.
fn hold_ended(
    name: &str,
    holder: &Holder,
    reason: EndReason,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) {
    leases.detach(holder.lease, name, &holder.owner);
    step.changes.events.push(Event::HoldEnded {
        name: name.to_owned(),
        owner: holder.owner.clone(),
        fence: holder.fence,
        reason,
    });
}

/// Unindexes a wait already taken off `name` and announces its end.
fn wait_ended(
    name: &str,
    waiter: &Waiter,
    reason: EndReason,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) {
    leases.detach(waiter.lease, name, &waiter.owner);
    step.changes.events.push(Event::WaitEnded {
        name: name.to_owned(),
        owner: waiter.owner.clone(),
        reason,
    });
}

/// A length as a protocol count, saturating (bounded by the limits anyway).
fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
