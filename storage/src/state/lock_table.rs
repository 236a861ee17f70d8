//! The locks by name and every command that changes one: acquire (whose
//! cases live in `acquisition`), release, cancel, force release, proclaim,
//! and ending what dying leases own.
//!
//! Each command validates everything before it mutates anything, so a
//! refusal leaves the state and the events untouched.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::acquisition::{acquire_existing, acquire_new, Touched};
use super::lease_table::LeaseTable;
use super::queue::{self, count_u32};
use super::{Holder, Lock, LockDelay, Step, Waiter};
use crate::command::{Acquire, CancelOutcome, Claim, CommandError, LeaseId, Mode, Response};
use crate::event::{EndReason, Event};

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
        req: &Acquire,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        // The chaos suite's deliberately broken build (see docs/chaos.md)
        // skips this check, so a dead lease can be granted a lock.
        #[cfg(not(feature = "chaos-skip-lease-check"))]
        if leases.get(req.lease).is_none() {
            return Err(CommandError::LeaseNotFound(req.lease));
        }
        let (reply, touched) = match self.locks.get_mut(&req.name) {
            Some(lock) => acquire_existing(lock, req, leases, step)?,
            None => {
                let (lock, reply) = acquire_new(req, leases, step);
                self.locks.insert(lock.name.clone(), lock);
                (reply, Touched::Holders)
            }
        };
        self.finish(&req.name, touched, step);
        Ok(reply)
    }

    /// Lock `name` and the place of `owner`'s hold in its holders;
    /// [`CommandError::NotHolder`] if `owner` holds no part of it.
    fn hold_of(&mut self, name: &str, owner: &str) -> Result<(&mut Lock, usize), CommandError> {
        self.locks
            .get_mut(name)
            .and_then(|lock| {
                let at = lock.holders.iter().position(|h| h.owner == owner)?;
                Some((lock, at))
            })
            .ok_or_else(|| CommandError::NotHolder {
                name: name.to_owned(),
                owner: owner.to_owned(),
            })
    }

    /// Gives back one level of `owner`'s hold on `name`.
    pub(super) fn release(
        &mut self,
        name: &str,
        owner: &str,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let (lock, at) = self.hold_of(name, owner)?;
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
    /// A cancel on behalf of `call` leaves alone a hold or wait that
    /// another call has claimed since.
    pub(super) fn cancel(
        &mut self,
        name: &str,
        owner: &str,
        call: Option<&Claim>,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Response {
        let Some(lock) = self.locks.get_mut(name) else {
            return Response::Cancelled {
                outcome: CancelOutcome::NotFound,
            };
        };
        let owned = |claim: &Option<Claim>| call.is_none_or(|c| c.may_cancel(claim.as_ref()));
        let held = lock.holders.iter().position(|h| h.owner == owner);
        let waiting = lock.waiter_position(owner);
        let (outcome, touched) = match (held, waiting) {
            (Some(at), _) if !owned(&lock.holders[at].claim) => {
                (CancelOutcome::Superseded, Touched::Nothing)
            }
            (Some(at), _) => {
                end_hold(lock, at, EndReason::Released, leases, step);
                queue::grant_from_head(lock, leases, step);
                (CancelOutcome::Released, Touched::Holders)
            }
            (None, Some(at)) if !owned(&lock.waiters[at].claim) => {
                (CancelOutcome::Superseded, Touched::Nothing)
            }
            (None, Some(at)) => match lock.waiters.remove(at) {
                Some(waiter) => {
                    wait_ended(name, &waiter, EndReason::Released, leases, step);
                    // The head may have been what blocked the others.
                    let touched = match queue::grant_from_head(lock, leases, step) {
                        0 => Touched::Record,
                        _ => Touched::Holders,
                    };
                    (CancelOutcome::Dequeued, touched)
                }
                None => (CancelOutcome::NotFound, Touched::Nothing),
            },
            (None, None) => (CancelOutcome::NotFound, Touched::Nothing),
        };
        self.finish(name, touched, step);
        Response::Cancelled { outcome }
    }

    /// Makes `call`, a retry of the request that holds or waits as `owner`
    /// on `name`, the call that owns the hold or wait, if it is a later
    /// attempt than the one that does.
    pub(super) fn reclaim(&mut self, name: &str, owner: &str, call: Claim) {
        let Some(lock) = self.locks.get_mut(name) else {
            return;
        };
        let holder = lock.holders.iter_mut().find(|h| h.owner == owner);
        let claim = match holder {
            Some(h) => &mut h.claim,
            None => match lock.waiters.iter_mut().find(|w| w.owner == owner) {
                Some(w) => &mut w.claim,
                None => return,
            },
        };
        // Only a wait this request asked for; the owner may wait again by
        // another request since the one being retried ended.
        if let Some(c) = claim {
            if c.same_request(&call) && c.attempt < call.attempt {
                *c = call;
            }
        }
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
        start_delay(lock, &holders, step);
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
        let (lock, at) = self.hold_of(name, owner)?;
        lock.holders[at].value = Some(value.to_vec());
        self.finish(name, Touched::Holders, step);
        Ok(Response::Proclaimed)
    }

    /// Turns `owner`'s exclusive hold of `name` into a shared one, in
    /// place (same lease and fence); shared waiters at the head may then
    /// join it. Nothing happens if it holds no such hold.
    pub(super) fn downgrade(
        &mut self,
        name: &str,
        owner: &str,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) {
        let Some(lock) = self.locks.get_mut(name) else {
            return;
        };
        let Some(holder) = lock
            .holders
            .iter_mut()
            .find(|h| h.owner == owner && h.mode == Mode::Exclusive)
        else {
            return;
        };
        holder.mode = Mode::Shared;
        queue::grant_from_head(lock, leases, step);
        self.finish(name, Touched::Holders, step);
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
            if reason == EndReason::LeaseExpired {
                start_delay(lock, &ended, step);
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

    /// Ends the lock-delay of `name` that began at `since`, if it is still
    /// the one in force, and grants the lock to its waiters.
    pub(super) fn end_delay(
        &mut self,
        name: &str,
        since: u64,
        leases: &mut LeaseTable,
        step: &mut Step<'_>,
    ) -> Response {
        let Some(lock) = self.locks.get_mut(name) else {
            return Response::LockDelayEnded { ended: false };
        };
        if lock.delay.as_ref().is_none_or(|d| d.since != since) {
            return Response::LockDelayEnded { ended: false };
        }
        lock.delay = None;
        step.changes.events.push(Event::LockDelayEnded {
            name: name.to_owned(),
            since,
        });
        let touched = match queue::grant_from_head(lock, leases, step) {
            0 => Touched::Record,
            _ => Touched::Holders,
        };
        self.finish(name, touched, step);
        Response::LockDelayEnded { ended: true }
    }

    /// Records what a command did to `name`: announces holder changes and
    /// removes the lock once nobody holds or waits and no lock-delay runs.
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
            .is_some_and(|l| l.holders.is_empty() && l.waiters.is_empty() && l.delay.is_none())
        {
            self.locks.remove(name);
        }
    }
}

/// Closes `lock` for the longest lock-delay among `lost`, holds just lost
/// to expiry or force-release (none if they asked for none). A delay in
/// force already is replaced by a new one counted from now.
fn start_delay(lock: &mut Lock, lost: &[Holder], step: &mut Step<'_>) {
    let ms = lost.iter().map(|h| h.lock_delay_ms).max().unwrap_or(0);
    if ms == 0 {
        return;
    }
    let ms = ms.max(lock.delay.as_ref().map_or(0, |d| d.ms));
    lock.delay = Some(LockDelay {
        ms,
        since: step.slot,
        started_at_ms: step.time_ms,
    });
    step.changes.events.push(Event::LockDelayStarted {
        name: lock.name.clone(),
        since: step.slot,
        ms,
    });
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
