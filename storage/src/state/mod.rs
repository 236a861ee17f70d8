//! The lock state machine: leases, locks (mutex, read-write, semaphore,
//! election), FIFO waiters, fencing tokens and the exactly-once reply table.
//!
//! Pure logic. [`LockState::apply`] is a function of the state, the
//! request's slot, the request and the quotas its entry carries; it reads
//! no clock and does no IO. What
//! happened is reported as [`Changes`] so the node can push events to
//! waiting callers.
//!
//! # Layout
//!
//! - this file: [`LockState`] and the dispatch of a command;
//! - `queries`: what the state answers without changing;
//! - `records`: the public records (leases, locks, holders, waiters,
//!   sessions);
//! - `lease_table`: live leases, the derived lease → attachments index,
//!   and what each account holds (its lease and waiter quotas);
//! - `acquisition`: acquire on a new or existing lock (grant, re-entry,
//!   queue, busy) and its kind and mode checks;
//! - `lock_table`: the lock commands (acquire, release, cancel, force
//!   release, proclaim) and ending every attachment of dying leases;
//! - `queue`: compatibility rules and granting waiters from the queue head;
//! - `coordination`: holds found by their owner on leases of their own,
//!   read-write locks with intents, election records, schedule fires;
//! - `named_table`: the records kept by name beyond any hold;
//! - `session_table`: the exactly-once reply table, keyed by account and
//!   client id: replies with their command's fingerprint, clients with
//!   live leases pinned, the others forgotten least recently seen first;
//! - `authority`: who may act through a lease, and who may force-release;
//! - `bounds`: the input checks on names, owners, values, modes and TTLs;
//! - `slot_shift`: how far a restored cluster's slots run ahead of its
//!   log index, so fences never go backwards across a restore;
//! - `parts`, `legacy_parts`: the records snapshots carry, today's and
//!   those of earlier builds.

mod acquisition;
mod authority;
mod coordination;
mod lease_table;
mod legacy_parts;
mod lock_table;
mod named_table;
mod own_ttl;
mod parts;
mod queries;
mod queue;
mod records;
mod session_table;
mod slot_shift;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use crate::account::Account;
use crate::command::{
    Acquire, AcquireWithTtl, Cancel, ClaimFire, EndLockDelay, ExpireLeases, ForceRelease,
    GrantLease, Hold, Lead, Proclaim, ReadWrite, Release, RevokeAccountLeases, RevokeLease,
    SetLeaseTtl, Unhold,
};
use crate::command::{Claim, Command, CommandError, LeaseId, Request, Response};
use crate::event::{EndReason, Event};
use crate::limits::{Quotas, MAX_REVOKED_PER_ENTRY};

pub use crate::command::ElectionRecord;
use coordination::LeadRequest;
use lease_table::{Grantor, LeaseTable};
pub(crate) use legacy_parts::{StatePartsV5, StatePartsV6, StatePartsV6Named};
use lock_table::LockTable;
use named_table::NamedTable;
use own_ttl::OwnTtlHold;
pub use parts::{StateParts, StatePartsView};
pub use records::{
    AccountUse, ClientSession, Holder, Intent, Kept, Lease, Lock, LockDelay, NamedRecords,
    ReadWriteRecord, ReadWriteState, SessionKey, StoredReply, Waiter,
};
use session_table::{Admission, SessionTable};
pub use slot_shift::{
    ShiftTooLarge, SlotShift, CLOCK_MARGIN_MS, MAX_ENTRIES_PER_MS, MAX_SHIFTED_INDEX,
};

/// What apply steps tell the serving layer: the events they caused, for
/// waking waiting callers and observers. A refused command adds nothing;
/// the state itself is made durable by snapshots and the log, not from here.
#[derive(Debug, Default)]
pub struct Changes {
    /// Events for the serving layer, in order.
    pub events: Vec<Event>,
}

/// Who a lease granted by `request` is for: the client that asked (unless
/// anonymous), the caller's identity and its account.
fn grantor(request: &Request) -> Grantor {
    Grantor {
        client: request
            .origin
            .as_ref()
            .filter(|o| !o.anonymous)
            .map(|o| o.client),
        identity: request.caller.identity.clone(),
        account: request.caller.account(),
    }
}

/// Whether `request` is applied even when no place is left for its client
/// in the reply table: a call without a request id (the id is the
/// server's, for the one call) and the recoveries an operator needs on a
/// table a flood filled: revoking leases and force-releasing locks.
fn always_admitted(request: &Request) -> bool {
    let recovery = matches!(
        request.command,
        Command::RevokeLease(_) | Command::RevokeAccountLeases(_) | Command::ForceRelease(_)
    );
    recovery || request.origin.as_ref().is_some_and(|o| o.anonymous)
}

/// The session of the client that granted `lease`, which the lease pins.
fn granter_key(lease: &Lease) -> Option<SessionKey> {
    lease.granted_by.map(|client| SessionKey {
        account: lease.account.clone(),
        client,
    })
}

/// The whole replicated lock state.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LockState {
    /// Live leases and what is attached to each.
    leases: LeaseTable,
    /// Every lock with a holder or a waiter.
    locks: LockTable,
    /// Remembered replies per client.
    sessions: SessionTable,
    /// Election records, schedule fires and read-write lock records.
    named: NamedTable,
    /// How far slots run ahead of the log index (after a restore).
    slots: SlotShift,
    /// Node ids removed from the membership: a removed node's data dir
    /// may still hold votes and entries of the cluster, so its id is never
    /// added again.
    retired_nodes: BTreeSet<u64>,
}

/// What one apply step needs besides the state: where it is in the log and
/// where to report what it did.
struct Step<'a> {
    /// [`slot`](crate::command::slot) of the request being applied: lease
    /// ids and fences.
    slot: u64,
    /// Proposer wall clock, for display fields only.
    time_ms: u64,
    /// The per-account quotas the entry carries.
    quotas: Quotas,
    /// The call the request comes from; `None` for the cluster's own.
    claim: Option<Claim>,
    /// Where this step reports its events.
    changes: &'a mut Changes,
}

impl LockState {
    /// The same state with room for at most `capacity` client sessions
    /// (instead of [`MAX_CLIENT_SESSIONS`](crate::limits::MAX_CLIENT_SESSIONS)),
    /// so tests can fill the table quickly.
    #[cfg(test)]
    pub(crate) fn with_client_capacity(mut self, capacity: usize) -> Self {
        self.sessions.set_capacity(capacity);
        self
    }

    /// The slot of the request at `position` of the entry at log `index`,
    /// proposed at `time_ms`: `slot(index, position)` plus the shift a
    /// restore left ([`SlotShift`]), which the first request after a
    /// restore settles. Call it once per request, in log order, before
    /// [`apply`](Self::apply).
    pub fn slot_of(&mut self, index: u64, position: usize, time_ms: u64) -> u64 {
        self.slots.slot(index, position, time_ms)
    }

    /// How far slots run ahead of the log index.
    pub fn slot_shift(&self) -> SlotShift {
        self.slots
    }

    /// Records that a membership change took `removed` out of the
    /// cluster. Applied with the membership entry, so every replica agrees.
    pub fn retire_nodes(&mut self, removed: impl IntoIterator<Item = u64>) {
        self.retired_nodes.extend(removed);
    }

    /// Whether node `id` was once removed from the membership.
    pub fn is_retired(&self, id: u64) -> bool {
        self.retired_nodes.contains(&id)
    }

    /// Forgets every removed id: a restore makes a new cluster, whose
    /// members the operator names.
    pub fn forget_retired(&mut self) {
        self.retired_nodes.clear();
    }

    /// Applies the request at `slot` (see [`slot`](crate::command::slot))
    /// under `quotas`, the ones its entry carries.
    pub fn apply(
        &mut self,
        slot: u64,
        request: &Request,
        quotas: &Quotas,
        changes: &mut Changes,
    ) -> Response {
        let Some(origin) = &request.origin else {
            return self.execute(slot, request, quotas, changes);
        };
        let key = SessionKey {
            account: request.caller.account(),
            client: origin.client,
        };
        let fingerprint = request.fingerprint();
        let always = always_admitted(request);
        match self
            .sessions
            .admit(&key, origin, fingerprint, slot, quotas, always)
        {
            Admission::Replay(reply) => {
                // A retried wait: the retry is now the call that owns it.
                if let (Command::Acquire(Acquire { name, owner, .. }), Response::Queued { .. }) =
                    (&request.command, &reply)
                {
                    self.locks.reclaim(name, owner, Claim::of(origin));
                }
                reply
            }
            Admission::Refuse(e) => Response::Rejected(e),
            Admission::ApplyUnrecorded => self.execute(slot, request, quotas, changes),
            Admission::Apply => {
                let reply = self.execute(slot, request, quotas, changes);
                self.sessions.record(&key, origin, fingerprint, &reply);
                reply
            }
        }
    }

    /// Runs the command itself; a refusal leaves `changes` untouched.
    fn execute(
        &mut self,
        slot: u64,
        request: &Request,
        quotas: &Quotas,
        changes: &mut Changes,
    ) -> Response {
        if let Err(e) = self.authorize(request) {
            return Response::Rejected(e);
        }
        if let Err(e) = request.command.check() {
            return Response::Rejected(e);
        }
        let mut step = Step {
            slot,
            time_ms: request.time_ms,
            quotas: *quotas,
            claim: request.origin.as_ref().map(Claim::of),
            changes,
        };
        let result = match &request.command {
            Command::GrantLease(GrantLease { ttl_ms }) => {
                self.grant_lease(*ttl_ms, request, &mut step)
            }
            Command::RevokeLease(RevokeLease { id }) => self.revoke_lease(*id, &mut step),
            Command::RevokeAccountLeases(RevokeAccountLeases { account }) => {
                Ok(self.revoke_account_leases(account, &mut step))
            }
            Command::SetLeaseTtl(SetLeaseTtl { id, ttl_ms }) => {
                self.leases.set_ttl(*id, *ttl_ms, &mut step)
            }
            Command::AcquireWithTtl(AcquireWithTtl {
                name,
                owner,
                ttl_ms,
                mode,
                lock_delay_ms,
            }) => {
                let hold = OwnTtlHold {
                    name,
                    owner,
                    ttl_ms: *ttl_ms,
                    mode: *mode,
                    lock_delay_ms: *lock_delay_ms,
                };
                self.acquire_with_ttl(&hold, request, &mut step)
            }
            Command::ExpireLeases(ExpireLeases { ids }) => Ok(self.expire_leases(ids, &mut step)),
            Command::Acquire(acquire) => self.locks.acquire(acquire, &mut self.leases, &mut step),
            Command::Release(Release { name, owner }) => {
                self.locks.release(name, owner, &mut self.leases, &mut step)
            }
            Command::Cancel(Cancel { name, owner, call }) => {
                Ok(self
                    .locks
                    .cancel(name, owner, call.as_ref(), &mut self.leases, &mut step))
            }
            Command::ForceRelease(ForceRelease { name }) => {
                Ok(self.locks.force_release(name, &mut self.leases, &mut step))
            }
            Command::Proclaim(Proclaim { name, owner, value }) => {
                self.locks.proclaim(name, owner, value, &mut step)
            }
            Command::EndLockDelay(EndLockDelay { name, since }) => {
                Ok(self
                    .locks
                    .end_delay(name, *since, &mut self.leases, &mut step))
            }
            Command::Hold(Hold {
                name,
                owner,
                ttl_ms,
            }) => self.hold(name, owner, *ttl_ms, request, &mut step),
            Command::Unhold(Unhold { name, owner }) => self.unhold(name, owner, &mut step),
            Command::ReadWrite(ReadWrite { name, owner, op }) => {
                self.read_write(name, owner, *op, request, &mut step)
            }
            Command::Lead(Lead {
                name,
                owner,
                ttl_ms,
                metadata,
            }) => {
                let lead = LeadRequest {
                    name,
                    owner,
                    ttl_ms: *ttl_ms,
                    metadata,
                };
                self.lead(&lead, request, &mut step)
            }
            Command::ClaimFire(ClaimFire { name, due }) => {
                self.claim_fire(name, *due, request, &mut step)
            }
        };
        result.unwrap_or_else(Response::Rejected)
    }

    /// Grants a lease to the caller's identity; the client that asked
    /// (unless anonymous) stays remembered while the lease lives.
    fn grant_lease(
        &mut self,
        ttl_ms: u64,
        request: &Request,
        step: &mut Step<'_>,
    ) -> Result<Response, CommandError> {
        let response = self.leases.grant(ttl_ms, grantor(request), step)?;
        if let Response::LeaseGranted { id, .. } = &response {
            if let Some(key) = self.leases.get(*id).and_then(granter_key) {
                self.sessions.pin(&key);
            }
        }
        Ok(response)
    }

    fn revoke_lease(&mut self, id: LeaseId, step: &mut Step<'_>) -> Result<Response, CommandError> {
        if self.leases.get(id).is_none() {
            return Err(CommandError::LeaseNotFound(id));
        }
        let ids = BTreeSet::from([id]);
        let released = self.end_leases(&ids, EndReason::LeaseRevoked, step);
        Ok(Response::LeaseRevoked { id, released })
    }

    /// Revokes the leases of `account`, lowest ids first, at most
    /// [`MAX_REVOKED_PER_ENTRY`] of them.
    fn revoke_account_leases(&mut self, account: &Account, step: &mut Step<'_>) -> Response {
        let ids: BTreeSet<LeaseId> = self
            .leases
            .of_account(account)
            .take(MAX_REVOKED_PER_ENTRY)
            .collect();
        let released = self.end_leases(&ids, EndReason::LeaseRevoked, step);
        let (remaining, _) = self.leases.account_use(account);
        Response::AccountLeasesRevoked {
            revoked: queue::count_u32(ids.len()),
            released,
            remaining: queue::count_u32(remaining),
        }
    }

    fn expire_leases(&mut self, ids: &[LeaseId], step: &mut Step<'_>) -> Response {
        let mut live = BTreeSet::new();
        // Keep the caller's order, without duplicates, for the reply.
        let mut expired = Vec::new();
        for &id in ids {
            if self.leases.get(id).is_some() && live.insert(id) {
                expired.push(id);
            }
        }
        self.end_leases(&live, EndReason::LeaseExpired, step);
        Response::LeasesExpired { ids: expired }
    }

    /// Ends the (existing) leases `ids`: every hold and wait attached to them
    /// ends, the freed locks go to their next waiters, then the leases go.
    /// Returns how many holds ended.
    fn end_leases(
        &mut self,
        ids: &BTreeSet<LeaseId>,
        reason: EndReason,
        step: &mut Step<'_>,
    ) -> u32 {
        let released = self.locks.end_leases(ids, reason, &mut self.leases, step);
        self.named.leases_ended(ids);
        for &id in ids {
            if let Some(key) = self.leases.remove(id).as_ref().and_then(granter_key) {
                self.sessions.unpin(&key);
            }
            step.changes.events.push(Event::LeaseEnded { id, reason });
        }
        released
    }
}
