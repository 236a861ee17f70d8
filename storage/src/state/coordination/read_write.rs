//! Read-write locks with write intents ([`Command::ReadWrite`]): readers
//! share the lock, a writer holds it alone, a refused writer may leave an
//! intent (on a lease of its own) that keeps new readers out, and every
//! write grant's fence is the lock's generation. Apart from the plain own
//! holds because of the record kept by name beside the hold: the writer,
//! the generation and the intents.
//!
//! [`Command::ReadWrite`]: crate::command::Command::ReadWrite

use crate::command::{
    CommandError, Fence, LeaseId, Mode, ReadWriteOp, ReadWriteOutcome, Request, Response,
};
use crate::state::queue::count_u32;
use crate::state::records::{Intent, ReadWriteState};
use crate::state::{granter_key, grantor, LockState, Step};

use super::OwnHold;

impl LockState {
    /// A clean end of `owner`'s write hold of `name`: the next writer is
    /// not poisoned.
    pub(super) fn clear_writer(&mut self, name: &str, owner: &str) {
        if self
            .named
            .read_write(name)
            .is_some_and(|r| r.writer.as_deref() == Some(owner))
        {
            self.named.read_write_mut(name, None).writer = None;
        }
    }

    /// [`Command::ReadWrite`](crate::command::Command::ReadWrite).
    pub(in crate::state) fn read_write(
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
