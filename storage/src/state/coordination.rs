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
//! [`Command::Hold`]: crate::command::Command::Hold
//! [`Command::Unhold`]: crate::command::Command::Unhold
//! [`Command::ReadWrite`]: crate::command::Command::ReadWrite
//! [`Command::Lead`]: crate::command::Command::Lead
//! [`Command::ClaimFire`]: crate::command::Command::ClaimFire

use std::collections::BTreeSet;

use super::own_ttl::OwnTtlHold;
use super::queue::count_u32;
use super::records::{Intent, ReadWriteState};
use super::{granter_key, grantor, LockState, Step};
use crate::command::ElectionRecord;
use crate::command::{
    CommandError, Fence, LeaseId, Mode, ReadWriteOp, ReadWriteOutcome, Request, Response,
};
use crate::event::EndReason;

/// An owner's hold on a lease of its own.
#[derive(Debug, Clone, Copy)]
struct OwnHold {
    lease: LeaseId,
    fence: Fence,
    mode: Mode,
}

/// The fields of [`Command::Lead`](crate::command::Command::Lead).
pub(super) struct LeadRequest<'a> {
    pub(super) name: &'a str,
    pub(super) owner: &'a str,
    pub(super) ttl_ms: u64,
    pub(super) metadata: &'a [(String, String)],
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

    /// A clean end of `owner`'s write hold of `name`: the next writer is
    /// not poisoned.
    fn clear_writer(&mut self, name: &str, owner: &str) {
        if self
            .named
            .read_write(name)
            .is_some_and(|r| r.writer.as_deref() == Some(owner))
        {
            self.named.read_write_mut(name, None).writer = None;
        }
    }

    /// [`Command::ReadWrite`](crate::command::Command::ReadWrite).
    pub(super) fn read_write(
        &mut self,
        name: &str,
        owner: &str,
        op: ReadWriteOp,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let held = self.own_hold(name, owner)?;
        let outcome = match op {
            ReadWriteOp::Read { ttl_ms } => {
                let generation = self.read(name, owner, ttl_ms, held, request, step)?;
                ReadWriteOutcome::Read { generation }
            }
            ReadWriteOp::Write { ttl_ms, intent } => {
                let granted = self.write(name, owner, ttl_ms, intent, held, request, step)?;
                ReadWriteOutcome::Write { granted }
            }
            ReadWriteOp::ReleaseRead | ReadWriteOp::ReleaseWrite => {
                let mode = match op {
                    ReadWriteOp::ReleaseRead => Mode::Shared,
                    _ => Mode::Exclusive,
                };
                let ended = match held {
                    Some(h) if h.mode == mode => {
                        self.end_lease(h.lease, step);
                        if mode == Mode::Exclusive {
                            self.clear_writer(name, owner);
                        }
                        true
                    }
                    _ => false,
                };
                ReadWriteOutcome::Ended { ended }
            }
            ReadWriteOp::CancelIntent => {
                let lease = self.intent_of(name, owner);
                if let Some(lease) = lease {
                    self.end_lease(lease, step);
                }
                ReadWriteOutcome::Ended {
                    ended: lease.is_some(),
                }
            }
            ReadWriteOp::Downgrade { ttl_ms } => {
                let generation = match held {
                    Some(h) if h.mode == Mode::Exclusive => {
                        self.leases.set_ttl(h.lease, ttl_ms, step)?;
                        self.locks.downgrade(name, owner, &mut self.leases, step);
                        self.clear_writer(name, owner);
                        Some(self.generation(name))
                    }
                    _ => None,
                };
                ReadWriteOutcome::Read { generation }
            }
        };
        Ok(Response::ReadWrite(outcome))
    }

    /// The lease of `owner`'s write intent on `name`, if it has one.
    fn intent_of(&self, name: &str, owner: &str) -> Option<LeaseId> {
        self.named
            .read_write(name)?
            .intents
            .iter()
            .find(|i| i.owner == owner)
            .map(|i| i.lease)
    }

    /// The fence of the latest write grant on `name` (0: none).
    fn generation(&self, name: &str) -> Fence {
        self.named.read_write(name).map_or(0, |r| r.generation)
    }

    /// A read: renews `owner`'s read lease, or joins the readers unless a
    /// writer holds or another owner's intent lives.
    fn read(
        &mut self,
        name: &str,
        owner: &str,
        ttl_ms: u64,
        held: Option<OwnHold>,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Option<Fence>, CommandError> {
        match held {
            Some(h) if h.mode == Mode::Shared => {
                self.leases.set_ttl(h.lease, ttl_ms, step)?;
                return Ok(Some(self.generation(name)));
            }
            Some(_) => return Ok(None),
            None => {}
        }
        let intents_of_others = self
            .named
            .read_write(name)
            .is_some_and(|r| r.intents.iter().any(|i| i.owner != owner));
        if intents_of_others {
            return Ok(None);
        }
        let taken = self.take_own_hold(name, owner, ttl_ms, Mode::Shared, request, step)?;
        Ok(taken.map(|_| self.generation(name)))
    }

    /// A write: renews `owner`'s write lease, or takes the lock alone, or
    /// (refused, with `intent`) records or renews `owner`'s intent.
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        name: &str,
        owner: &str,
        ttl_ms: u64,
        intent: bool,
        held: Option<OwnHold>,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Option<(Fence, bool)>, CommandError> {
        if let Some(h) = held.filter(|h| h.mode == Mode::Exclusive) {
            self.leases.set_ttl(h.lease, ttl_ms, step)?;
            return Ok(Some((h.fence, false)));
        }
        let account = request.caller.account();
        if self.named.read_write(name).is_none() {
            self.named.admit(account.as_ref(), &step.quotas)?;
        }
        let taken = match held {
            Some(_) => None,
            None => self.take_own_hold(name, owner, ttl_ms, Mode::Exclusive, request, step)?,
        };
        let Some((_, fence)) = taken else {
            if intent {
                self.record_intent(name, owner, ttl_ms, request, step)?;
            }
            return Ok(None);
        };
        let record = self.named.read_write_mut(name, account);
        let poisoned = record.writer.is_some();
        record.writer = Some(owner.to_owned());
        record.generation = fence;
        if let Some(lease) = self.intent_of(name, owner) {
            self.end_lease(lease, step);
        }
        Ok(Some((fence, poisoned)))
    }

    /// Records `owner`'s intent on `name` on a new lease of `ttl_ms`, or
    /// renews the one it has.
    fn record_intent(
        &mut self,
        name: &str,
        owner: &str,
        ttl_ms: u64,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<(), CommandError> {
        if let Some(lease) = self.intent_of(name, owner) {
            self.leases.set_ttl(lease, ttl_ms, step)?;
            return Ok(());
        }
        let Response::LeaseGranted { id, .. } =
            self.leases.grant(ttl_ms, grantor(request), step)?
        else {
            unreachable!("a lease grant answers LeaseGranted")
        };
        if let Some(key) = self.leases.get(id).and_then(granter_key) {
            self.sessions.pin(&key);
        }
        let record = self.named.read_write_mut(name, request.caller.account());
        record.intents.push(Intent {
            owner: owner.to_owned(),
            lease: id,
        });
        self.named.index_intent(id, name);
        Ok(())
    }

    /// [`Command::Lead`](crate::command::Command::Lead).
    pub(super) fn lead(
        &mut self,
        lead: &LeadRequest<'_>,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let LeadRequest {
            name,
            owner,
            ttl_ms,
            metadata,
        } = *lead;
        let mut metadata = metadata.to_vec();
        metadata.sort();
        let previous = self.named.election(name).cloned();
        let account = request.caller.account();
        let led_by_other = self
            .locks
            .get(name)
            .is_some_and(|l| l.holders.iter().any(|h| h.owner != owner));
        if previous.is_none() && !led_by_other {
            self.named.admit(account.as_ref(), &step.quotas)?;
        }
        let record = match self.own_hold(name, owner)? {
            Some(h) if h.mode == Mode::Exclusive => {
                self.leases.set_ttl(h.lease, ttl_ms, step)?;
                let kept = previous.filter(|r| r.holder == owner);
                Some(ElectionRecord {
                    holder: owner.to_owned(),
                    ttl_ms,
                    acquired_at_ms: kept.as_ref().map_or(step.time_ms, |r| r.acquired_at_ms),
                    renewed_at_ms: step.time_ms,
                    transitions: kept.as_ref().map_or(0, |r| r.transitions),
                    metadata,
                })
            }
            Some(_) => None,
            None => self
                .take_own_hold(name, owner, ttl_ms, Mode::Exclusive, request, step)?
                .map(|_| ElectionRecord {
                    holder: owner.to_owned(),
                    ttl_ms,
                    acquired_at_ms: step.time_ms,
                    renewed_at_ms: step.time_ms,
                    transitions: previous
                        .as_ref()
                        .map_or(0, |r| r.transitions + u64::from(r.holder != owner)),
                    metadata,
                }),
        };
        if let Some(record) = record {
            self.named.set_election(name, account, record);
        }
        let answer = self.election(name).unwrap_or_else(|| ElectionRecord {
            transitions: self.named.election(name).map_or(0, |r| r.transitions),
            ..ElectionRecord::default()
        });
        Ok(Response::Led(answer))
    }

    /// [`Command::ClaimFire`](crate::command::Command::ClaimFire).
    pub(super) fn claim_fire(
        &mut self,
        name: &str,
        due: u64,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let won = match self.named.last_fired(name) {
            // Bits of non-negative finite floats order as the floats do.
            Some(fired) => fired < due,
            None => {
                self.named
                    .admit(request.caller.account().as_ref(), &step.quotas)?;
                true
            }
        };
        if won {
            self.named.set_fired(name, request.caller.account(), due);
        }
        Ok(Response::FireClaimed { won })
    }

    /// The live record of election `name`: its holder holds the lock alone.
    /// A lock held alone without a record (taken another way) answers a
    /// record made from its hold.
    pub fn election(&self, name: &str) -> Option<ElectionRecord> {
        let lock = self.locks.get(name)?;
        let holder = lock.holders.iter().find(|h| h.mode == Mode::Exclusive)?;
        match self.named.election(name) {
            Some(record) if record.holder == holder.owner => Some(record.clone()),
            _ => Some(ElectionRecord {
                holder: holder.owner.clone(),
                ttl_ms: self.leases.get(holder.lease).map_or(0, |l| l.ttl_ms),
                acquired_at_ms: holder.granted_at_ms,
                renewed_at_ms: holder.granted_at_ms,
                transitions: 0,
                metadata: Vec::new(),
            }),
        }
    }

    /// The last fire claimed for schedule `name`, in seconds since the
    /// Unix epoch.
    pub fn last_fired(&self, name: &str) -> Option<f64> {
        self.named.last_fired(name).map(f64::from_bits)
    }

    /// Read-write lock `name` as it stands: live holds and intents only.
    pub fn read_write_state(&self, name: &str) -> ReadWriteState {
        let holders = self.locks.get(name).map_or(&[][..], |l| &l.holders[..]);
        let count = |mode| holders.iter().filter(|h| h.mode == mode).count();
        ReadWriteState {
            generation: self.generation(name),
            writing: count(Mode::Exclusive) > 0,
            readers: count_u32(count(Mode::Shared)),
            waiting_writers: self
                .named
                .read_write(name)
                .map_or(0, |r| count_u32(r.intents.len())),
        }
    }
}
