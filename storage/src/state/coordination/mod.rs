//! Holds found again by their owner token, each on a lease of its own, and
//! the records kept by name around them: [`Command::Hold`],
//! [`Command::Unhold`], [`Command::ReadWrite`], [`Command::Lead`] and
//! [`Command::ClaimFire`] — what grelmicro's coordination backends ask of a
//! store.
//!
//! A hold made here is an ordinary hold (fenced, observed, ended by its
//! lease) on a lease that holds nothing else; renewing it sets that
//! lease's TTL. Times recorded are the proposer's clock carried in the
//! entry (`Step::time_ms`), never read here.
//!
//! # Layout
//! - this file: an owner's hold on a lease of its own — found, taken,
//!   renewed, ended ([`Command::Hold`], [`Command::Unhold`]).
//! - `read_write`: read-write locks with write intents.
//! - `election`: election records around an exclusive hold.
//! - `schedule`: schedule fires, claimed once each.
//!
//! [`Command::Hold`]: crate::command::Command::Hold
//! [`Command::Unhold`]: crate::command::Command::Unhold
//! [`Command::ReadWrite`]: crate::command::Command::ReadWrite
//! [`Command::Lead`]: crate::command::Command::Lead
//! [`Command::ClaimFire`]: crate::command::Command::ClaimFire

use std::collections::BTreeSet;

use super::own_ttl::OwnTtlHold;
use super::{LockState, Step};
use crate::command::{CommandError, Fence, LeaseId, Mode, Request, Response};
use crate::event::EndReason;

mod election;
mod read_write;
mod schedule;

pub(super) use election::LeadRequest;

/// An owner's hold on a lease of its own.
#[derive(Debug, Clone, Copy)]
struct OwnHold {
    lease: LeaseId,
    fence: Fence,
    mode: Mode,
}

impl LockState {
    /// `owner`'s hold of `name`, if it has one; refused when that hold
    /// shares its lease with other holds or waits, which renewing or
    /// ending it here would touch too.
    fn own_hold(&self, name: &str, owner: &str) -> Result<Option<OwnHold>, CommandError> {
        let Some(holder) = self.locks.get(name).and_then(|l| l.holder(owner)) else {
            return Ok(None);
        };
        if self.leases.attachments(holder.lease).count() > 1 {
            return Err(CommandError::Conflict {
                name: name.to_owned(),
                detail: format!(
                    "{owner} holds it through lease {}, which holds other locks too",
                    holder.lease
                ),
            });
        }
        Ok(Some(OwnHold {
            lease: holder.lease,
            fence: holder.fence,
            mode: holder.mode,
        }))
    }

    /// Try-locks `name` in `mode` on a new lease of `ttl_ms`; `None` when
    /// it is busy (nothing changed).
    fn take_own_hold(
        &mut self,
        name: &str,
        owner: &str,
        ttl_ms: u64,
        mode: Mode,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Option<(LeaseId, Fence)>, CommandError> {
        let hold = OwnTtlHold {
            name,
            owner,
            ttl_ms,
            mode,
            lock_delay_ms: 0,
        };
        match self.acquire_with_ttl(&hold, request, step)? {
            Response::GrantedWithLease { lease, fence, .. } => Ok(Some((lease, fence))),
            _ => Ok(None),
        }
    }

    /// Ends lease `id` as a revoke does.
    fn end_lease(&mut self, id: LeaseId, step: &mut Step<'_>) {
        self.end_leases(&BTreeSet::from([id]), EndReason::LeaseRevoked, step);
    }

    /// [`Command::Hold`](crate::command::Command::Hold).
    pub(super) fn hold(
        &mut self,
        name: &str,
        owner: &str,
        ttl_ms: u64,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        if let Some(held) = self.own_hold(name, owner)? {
            if held.mode != Mode::Exclusive {
                return Err(CommandError::Conflict {
                    name: name.to_owned(),
                    detail: format!("{owner} holds it in mode {:?}, not alone", held.mode),
                });
            }
            self.leases.set_ttl(held.lease, ttl_ms, step)?;
            return Ok(Response::Held {
                lease: held.lease,
                fence: held.fence,
            });
        }
        Ok(
            match self.take_own_hold(name, owner, ttl_ms, Mode::Exclusive, request, step)? {
                Some((lease, fence)) => Response::Held { lease, fence },
                None => Response::Busy,
            },
        )
    }

    /// [`Command::Unhold`](crate::command::Command::Unhold).
    pub(super) fn unhold(
        &mut self,
        name: &str,
        owner: &str,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let Some(held) = self.own_hold(name, owner)? else {
            return Ok(Response::Unheld { ended: false });
        };
        self.end_lease(held.lease, step);
        if self.named.election(name).is_some_and(|r| r.holder == owner) {
            self.named.remove_election(name);
        }
        self.clear_writer(name, owner);
        Ok(Response::Unheld { ended: true })
    }
}
