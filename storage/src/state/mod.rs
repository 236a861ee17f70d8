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
//! - this file: the public records, [`LockState`], dispatch and queries;
//! - `lease_table`: live leases, the derived lease → attachments index,
//!   and what each account holds (its lease and waiter quotas);
//! - `acquisition`: acquire on a new or existing lock (grant, re-entry,
//!   queue, busy) and its kind and mode checks;
//! - `lock_table`: the lock commands (acquire, release, cancel, force
//!   release, proclaim) and ending every attachment of dying leases;
//! - `queue`: compatibility rules and granting waiters from the queue head;
//! - `session_table`: the exactly-once reply table, keyed by account and
//!   client id: replies with their command's fingerprint, clients with
//!   live leases pinned, the others forgotten least recently seen first;
//! - `authority`: who may act through a lease, and who may force-release;
//! - `bounds`: the input checks on names, owners, values, modes and TTLs;
//! - `parts`, `legacy_parts`: the records snapshots carry, today's and
//!   those of format-5 builds.

mod acquisition;
mod authority;
mod bounds;
mod lease_table;
mod legacy_parts;
mod lock_table;
mod own_ttl;
mod parts;
mod queue;
mod session_table;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::account::Account;
use crate::command::{Claim, Command, CommandError, Fence, LeaseId, Mode, Request, Response};
use crate::event::{EndReason, Event};
use crate::limits::{Quotas, MAX_REVOKED_PER_ENTRY};

use acquisition::AcquireRequest;
use lease_table::{Grantor, LeaseTable};
pub(crate) use legacy_parts::StatePartsV5;
use lock_table::LockTable;
use own_ttl::OwnTtlHold;
pub use parts::{StateParts, StatePartsView};
use session_table::{Admission, SessionTable};

/// A live lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The slot of the request that granted it.
    pub id: LeaseId,
    /// Time to live after the last keep-alive, in milliseconds.
    pub ttl_ms: u64,
    /// Proposer wall clock at grant, for display.
    pub granted_at_ms: u64,
    /// The client whose request granted it (`None` when the request had no
    /// client request id). While the lease lives, that client's replies are
    /// never forgotten.
    pub granted_by: Option<Uuid>,
    /// The authenticated identity that granted it (`None` without
    /// authentication). Only that identity, or an admin, may keep it
    /// alive, revoke it, or acquire, release, cancel or proclaim through it.
    pub identity: Option<String>,
    /// The account it is charged to: the granting identity, or the source
    /// address of an unauthenticated grant (`None`: granted by the cluster
    /// itself, or before accounts were recorded). Its leases count against
    /// that account's quota, and `lease revoke --identity` / `--source`
    /// ends them together.
    #[serde(default)]
    pub account: Option<Account>,
}

/// One holder of a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The client-chosen owner token.
    pub owner: String,
    /// The lease the hold lives and dies with.
    pub lease: LeaseId,
    /// How the lock is held.
    pub mode: Mode,
    /// Slot of the request that granted the hold.
    pub fence: Fence,
    /// Re-entry depth, at least 1.
    pub count: u32,
    /// Proposer wall clock at grant, for display (hold durations).
    pub granted_at_ms: u64,
    /// Published value (elections).
    pub value: Option<Vec<u8>>,
    /// The call that asked for the hold last (see [`Claim`]).
    #[serde(default)]
    pub claim: Option<Claim>,
    /// The lock-delay that starts if this hold is lost (0: none).
    #[serde(default)]
    pub lock_delay_ms: u64,
}

/// One queued request for a lock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiter {
    /// The client-chosen owner token.
    pub owner: String,
    /// The lease the wait lives and dies with.
    pub lease: LeaseId,
    /// The mode asked for.
    pub mode: Mode,
    /// Proposer wall clock when queued, for display.
    pub queued_at_ms: u64,
    /// The value to publish once granted (elections).
    pub value: Option<Vec<u8>>,
    /// The call that asked for the wait last (see [`Claim`]).
    #[serde(default)]
    pub claim: Option<Claim>,
    /// The lock-delay its hold will carry once granted.
    #[serde(default)]
    pub lock_delay_ms: u64,
}

/// A lock closed to new holders after losing one to expiry or
/// force-release, so that writes the lost holder still has in flight land
/// before anyone else holds the lock. It ends when the leader, having
/// counted `ms` on its monotonic clock, proposes
/// [`EndLockDelay`](crate::command::Command::EndLockDelay); a new leader
/// counts the whole delay again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockDelay {
    /// How long the lock stays closed.
    pub ms: u64,
    /// Slot of the entry that started it: names this delay, so a stale end
    /// cannot end a later one.
    pub since: u64,
    /// Proposer wall clock at its start, for display.
    pub started_at_ms: u64,
}

/// A lock with at least one holder or waiter, or a lock-delay in force.
/// Locks with none of these are removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    /// The lock's name.
    pub name: String,
    /// `Some(limit)` for a semaphore; `None` for a mutex / read-write lock.
    pub semaphore_limit: Option<u32>,
    /// In grant order.
    pub holders: Vec<Holder>,
    /// FIFO.
    pub waiters: std::collections::VecDeque<Waiter>,
    /// While `Some`, nobody new is granted the lock (re-entry by a current
    /// holder still is).
    #[serde(default)]
    pub delay: Option<LockDelay>,
}

impl Lock {
    /// The hold of `owner`, if it holds the lock.
    pub fn holder(&self, owner: &str) -> Option<&Holder> {
        self.holders.iter().find(|h| h.owner == owner)
    }

    /// The queue position of `owner` (0 = next in line), if it waits.
    pub fn waiter_position(&self, owner: &str) -> Option<usize> {
        self.waiters.iter().position(|w| w.owner == owner)
    }
}

/// Whose session: the account a request is charged to and the client id it
/// sent. One client id used by two accounts is two sessions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SessionKey {
    /// The requests' account (`None` for requests that carry none).
    pub account: Option<Account>,
    /// The client id the requests carry.
    pub client: Uuid,
}

/// Replies remembered for one client (exactly-once retries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ClientSession {
    /// Replies by sequence number.
    pub replies: BTreeMap<u64, StoredReply>,
    /// Replies below this were forgotten; a retry of one is `StaleRequest`.
    pub forgotten_below: u64,
    /// Slot of the last request seen, for least-recently-used eviction.
    pub last_index: u64,
}

/// One remembered reply and what it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReply {
    /// [`Request::fingerprint`] of the command that got this reply; a
    /// request reusing the id with another command is refused.
    pub fingerprint: u64,
    /// The reply, answered again to a retry.
    pub response: Response,
}

/// What one account has in the state, as its quotas count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccountUse {
    /// Live leases charged to it.
    pub leases: usize,
    /// Requests waiting on its leases.
    pub waiters: u64,
    /// Client ids remembered for it.
    pub clients: usize,
}

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
        match self.sessions.admit(&key, origin, fingerprint, slot, quotas) {
            Admission::Replay(reply) => {
                // A retried wait: the retry is now the call that owns it.
                if let (Command::Acquire { name, owner, .. }, Response::Queued { .. }) =
                    (&request.command, &reply)
                {
                    self.locks.reclaim(name, owner, Claim::of(origin));
                }
                reply
            }
            Admission::Refuse(e) => Response::Rejected(e),
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
        let mut step = Step {
            slot,
            time_ms: request.time_ms,
            quotas: *quotas,
            claim: request.origin.as_ref().map(Claim::of),
            changes,
        };
        let result = match &request.command {
            Command::GrantLease { ttl_ms } => self.grant_lease(*ttl_ms, request, &mut step),
            Command::RevokeLease { id } => self.revoke_lease(*id, &mut step),
            Command::RevokeAccountLeases { account } => {
                Ok(self.revoke_account_leases(account, &mut step))
            }
            Command::SetLeaseTtl { id, ttl_ms } => self.leases.set_ttl(*id, *ttl_ms, &mut step),
            Command::AcquireWithTtl {
                name,
                owner,
                ttl_ms,
                mode,
                lock_delay_ms,
            } => {
                let hold = OwnTtlHold {
                    name,
                    owner,
                    ttl_ms: *ttl_ms,
                    mode: *mode,
                    lock_delay_ms: *lock_delay_ms,
                };
                self.acquire_with_ttl(&hold, request, &mut step)
            }
            Command::ExpireLeases { ids } => Ok(self.expire_leases(ids, &mut step)),
            Command::Acquire {
                name,
                owner,
                lease,
                mode,
                wait,
                value,
                lock_delay_ms,
            } => {
                let request = AcquireRequest {
                    name,
                    owner,
                    lease: *lease,
                    mode: *mode,
                    wait: *wait,
                    value,
                    lock_delay_ms: *lock_delay_ms,
                };
                self.locks.acquire(&request, &mut self.leases, &mut step)
            }
            Command::Release { name, owner } => {
                self.locks.release(name, owner, &mut self.leases, &mut step)
            }
            Command::Cancel { name, owner, call } => {
                Ok(self
                    .locks
                    .cancel(name, owner, call.as_ref(), &mut self.leases, &mut step))
            }
            Command::ForceRelease { name } => {
                Ok(self.locks.force_release(name, &mut self.leases, &mut step))
            }
            Command::Proclaim { name, owner, value } => {
                self.locks.proclaim(name, owner, value, &mut step)
            }
            Command::EndLockDelay { name, since } => {
                Ok(self
                    .locks
                    .end_delay(name, *since, &mut self.leases, &mut step))
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
        for &id in ids {
            if let Some(key) = self.leases.remove(id).as_ref().and_then(granter_key) {
                self.sessions.unpin(&key);
            }
            step.changes.events.push(Event::LeaseEnded { id, reason });
        }
        released
    }

    /// A live lease.
    pub fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(id)
    }

    /// Every live lease, by id.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> + '_ {
        self.leases.iter()
    }

    /// (lock name, owner, held = true / waiting = false) attached to a lease.
    pub fn lease_attachments(&self, id: LeaseId) -> Vec<(String, String, bool)> {
        self.leases
            .attachments(id)
            .map(|(name, owner, held)| (name.to_owned(), owner.to_owned(), held))
            .collect()
    }

    /// A lock with a holder or a waiter.
    pub fn lock(&self, name: &str) -> Option<&Lock> {
        self.locks.get(name)
    }

    /// Every lock, by name.
    pub fn locks(&self) -> impl Iterator<Item = &Lock> + '_ {
        self.locks.iter()
    }

    /// Locks whose name starts with `prefix`, in name order, at most `limit`.
    pub fn locks_with_prefix(&self, prefix: &str, limit: usize) -> Vec<&Lock> {
        self.locks.with_prefix(prefix, limit)
    }

    /// Every lock with a lock-delay in force: (name, delay).
    pub fn lock_delays(&self) -> impl Iterator<Item = (&str, &LockDelay)> + '_ {
        self.locks
            .iter()
            .filter_map(|l| l.delay.as_ref().map(|d| (l.name.as_str(), d)))
    }

    /// Whether `fence` is the token of a current holder of `name`.
    pub fn check(&self, name: &str, fence: Fence) -> bool {
        self.locks
            .get(name)
            .is_some_and(|lock| lock.holders.iter().any(|h| h.fence == fence))
    }

    /// The remembered replies to client `id` of `account`.
    pub fn client(&self, account: Option<&Account>, id: &Uuid) -> Option<&ClientSession> {
        self.sessions.get(&SessionKey {
            account: account.cloned(),
            client: *id,
        })
    }

    /// Every remembered client session, by account then client id.
    pub fn clients(&self) -> impl Iterator<Item = (&SessionKey, &ClientSession)> + '_ {
        self.sessions.iter()
    }

    /// What `account` has: its live leases, its waiting requests and its
    /// remembered client ids.
    pub fn account_use(&self, account: &Account) -> AccountUse {
        let (leases, waiters) = self.leases.account_use(account);
        AccountUse {
            leases,
            waiters,
            clients: self.sessions.count_of(account),
        }
    }
}
