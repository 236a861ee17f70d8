//! The records the lock state is made of, as queries answer them and
//! snapshots carry them: leases, locks with their holders, waiters and
//! lock-delay, remembered client replies keyed by account and client id,
//! and what one account holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::account::Account;
use crate::command::{Claim, ElectionRecord, Fence, LeaseId, Mode, Response};

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
    /// Replies by sequence number. Boxed: a B-tree leaf has room for 11
    /// values whatever it holds, and most sessions hold one reply, so a
    /// leaf of pointers costs 11 pointers instead of 11 replies (about
    /// 1.2 KB less per session). Encoded as the reply itself.
    pub replies: BTreeMap<u64, Box<StoredReply>>,
    /// Replies below this were forgotten; a retry of one is `StaleRequest`.
    pub forgotten_below: u64,
    /// Slot of the last request seen, for least-recently-used eviction.
    pub last_index: u64,
}

/// One remembered reply and what it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredReply {
    /// [`Request::fingerprint`](crate::Request::fingerprint) of the
    /// command that got this reply; a request reusing the id with another
    /// command is refused.
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
    /// Named records charged to it.
    pub records: usize,
}

/// What a read-write lock taken through
/// [`Command::ReadWrite`](crate::command::Command::ReadWrite) keeps beyond
/// its holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadWriteRecord {
    /// The fence of the latest write grant (0: never written).
    pub generation: Fence,
    /// The owner of the latest write grant until it releases or
    /// downgrades; still set at the next write grant, that grant is
    /// poisoned.
    pub writer: Option<String>,
    /// Refused writers waiting, each on a lease of its own.
    pub intents: Vec<Intent>,
}

/// A refused writer's intent: new readers stay out while it lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// The writer's owner token.
    pub owner: String,
    /// The lease the intent lives and dies with.
    pub lease: LeaseId,
}

/// A named record and the account it is charged to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept<T> {
    /// Who made it (`None`: a caller without an account).
    pub account: Option<Account>,
    /// The record.
    pub record: T,
}

/// Every named record, by name, as snapshots and backups carry them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedRecords {
    /// Election records.
    pub elections: Vec<(String, Kept<ElectionRecord>)>,
    /// The last fire claimed per schedule (`f64::to_bits` of its instant).
    pub schedules: Vec<(String, Kept<u64>)>,
    /// Read-write lock records.
    pub read_write: Vec<(String, Kept<ReadWriteRecord>)>,
}

/// A read-write lock as [`LockState::read_write_state`] counts it.
///
/// [`LockState::read_write_state`]: super::LockState::read_write_state
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadWriteState {
    /// The fence of the latest write grant (0: never written).
    pub generation: Fence,
    /// Whether a writer holds it.
    pub writing: bool,
    /// Readers holding it.
    pub readers: u32,
    /// Writers with a live intent.
    pub waiting_writers: u32,
}
