//! Who may hold a lock together, and granting waiters from the queue head.
//!
//! Strict FIFO: a waiter is granted only when every waiter ahead of it was,
//! so a large request at the head (a writer, a many-permit semaphore request)
//! is never starved by smaller ones behind it.

use super::lease_table::LeaseTable;
use super::{Holder, Lock, Step};
use crate::command::{Claim, LeaseId, Mode};
use crate::event::Event;

/// A summary of a lock's current holders, enough to decide whether one more
/// request fits without rescanning them.
#[derive(Debug, Clone, Copy)]
pub(super) struct Occupancy {
    /// How many holds there are.
    holders: usize,
    /// Whether every hold is `Shared` (vacuously true when there are none).
    all_shared: bool,
    /// Semaphore permits taken.
    permits: u64,
}

impl Occupancy {
    /// The occupancy of `lock` as it stands.
    pub(super) fn of(lock: &Lock) -> Self {
        let mut occupancy = Self {
            holders: 0,
            all_shared: true,
            permits: 0,
        };
        for holder in &lock.holders {
            occupancy.add(holder.mode);
        }
        occupancy
    }

    /// Whether a new hold in `mode` is compatible with the current ones on a
    /// lock whose semaphore limit is `semaphore_limit`.
    pub(super) fn fits(&self, mode: Mode, semaphore_limit: Option<u32>) -> bool {
        match mode {
            Mode::Exclusive => self.holders == 0,
            Mode::Shared => self.all_shared,
            Mode::Permits { count, limit } => {
                // Acquire keeps the request's limit equal to the lock's.
                let limit = semaphore_limit.unwrap_or(limit);
                self.permits + u64::from(count) <= u64::from(limit)
            }
        }
    }

    /// Accounts for one more hold in `mode`.
    fn add(&mut self, mode: Mode) {
        self.holders += 1;
        self.all_shared &= mode == Mode::Shared;
        if let Mode::Permits { count, .. } = mode {
            self.permits += u64::from(count);
        }
    }
}

/// A hold to create: who, under which lease, how, publishing what.
pub(super) struct NewHold {
    pub(super) owner: String,
    pub(super) lease: LeaseId,
    pub(super) mode: Mode,
    pub(super) value: Option<Vec<u8>>,
    pub(super) claim: Option<Claim>,
    pub(super) lock_delay_ms: u64,
}

/// Adds a hold on `lock` whose fence is the step's slot, indexes it
/// under its lease and announces it. Returns the fence.
pub(super) fn grant(
    lock: &mut Lock,
    grant: NewHold,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) -> u64 {
    let fence = step.slot;
    leases.attach(grant.lease, &lock.name, &grant.owner, true);
    step.changes.events.push(Event::Granted {
        name: lock.name.clone(),
        owner: grant.owner.clone(),
        lease: grant.lease,
        fence,
    });
    lock.holders.push(Holder {
        owner: grant.owner,
        lease: grant.lease,
        mode: grant.mode,
        fence,
        count: 1,
        granted_at_ms: step.time_ms,
        value: grant.value,
        claim: grant.claim,
        lock_delay_ms: grant.lock_delay_ms,
    });
    fence
}

/// Grants waiters from the head of the queue for as long as the head fits
/// (nobody while a lock-delay is in force). Returns how many were granted.
pub(super) fn grant_from_head(
    lock: &mut Lock,
    leases: &mut LeaseTable,
    step: &mut Step<'_>,
) -> usize {
    if lock.delay.is_some() {
        return 0;
    }
    let mut occupancy = Occupancy::of(lock);
    let mut granted = 0;
    while let Some(head) = lock.waiters.front() {
        if !occupancy.fits(head.mode, lock.semaphore_limit) {
            break;
        }
        let Some(waiter) = lock.waiters.pop_front() else {
            break;
        };
        occupancy.add(waiter.mode);
        let hold = NewHold {
            owner: waiter.owner,
            lease: waiter.lease,
            mode: waiter.mode,
            value: waiter.value,
            claim: waiter.claim,
            lock_delay_ms: waiter.lock_delay_ms,
        };
        grant(lock, hold, leases, step);
        granted += 1;
    }
    granted
}

/// A length as a protocol count, saturating (bounded by the limits anyway).
pub(super) fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}
