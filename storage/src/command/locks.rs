//! The lock commands: acquire (and campaign), release, cancel, override,
//! lock-delay end, proclaim, and a lock whose TTL is its own.

use serde::{Deserialize, Serialize};

use super::{Claim, LeaseId, Mode};

/// Take a lock (or campaign, when `value` is set): grant, queue or refuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acquire {
    /// The lock.
    pub name: String,
    /// The client-chosen token of the task taking it.
    pub owner: String,
    /// The lease the hold or wait lives on.
    pub lease: LeaseId,
    /// How the holder takes the lock.
    pub mode: Mode,
    /// Queue when the lock is busy; `false` is a try-lock.
    pub wait: bool,
    /// Election candidates carry the value they will publish as leader.
    pub value: Option<Vec<u8>>,
    /// How long the lock stays closed to everyone else if this hold is
    /// lost to lease expiry or force-release (Consul's and Chubby's
    /// lock-delay); 0 for none. Never applied after a clean release.
    #[serde(default)]
    pub lock_delay_ms: u64,
}

/// Give back one level of re-entry; the hold ends when the count hits 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    /// The lock.
    pub name: String,
    /// The holder giving it back.
    pub owner: String,
}

/// Leave the queue, or release entirely if already granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancel {
    /// The lock.
    pub name: String,
    /// The waiter or holder leaving.
    pub owner: String,
    /// `Some` when the server cancels for a call that gave up: only a hold
    /// or wait that call still owns is ended (see [`Claim`]). `None` (a
    /// client's own Cancel or Resign) ends it regardless.
    #[serde(default)]
    pub call: Option<Claim>,
}

/// Operator override: end every hold on `name` (waiters then get it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForceRelease {
    /// The lock.
    pub name: String,
}

/// Proposed by the leader when the lock-delay of `name` that began at slot
/// `since` has run its course: the lock opens to its waiters. A delay that
/// has ended or restarted since is left alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndLockDelay {
    /// The lock.
    pub name: String,
    /// The slot the delay began at: tells this delay from a later one.
    pub since: u64,
}

/// Change the value published by an election leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proclaim {
    /// The election.
    pub name: String,
    /// Its leader; anyone else is refused.
    pub owner: String,
    /// The new value.
    pub value: Vec<u8>,
}

/// Try-lock `name` on a lease of its own, made by this entry with TTL
/// `ttl_ms` and counted from the grant: a lock whose TTL is its own (Redis
/// `SET NX PX`), in one entry. Busy or refused, no lease is made. Extend it
/// with [`SetLeaseTtl`](super::SetLeaseTtl), end it by revoking the lease
/// ([`Response::GrantedWithLease`](super::Response::GrantedWithLease) names
/// it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquireWithTtl {
    /// The lock.
    pub name: String,
    /// The client-chosen token of the task taking it.
    pub owner: String,
    /// The TTL of the lease the entry makes for the hold.
    pub ttl_ms: u64,
    /// How the holder takes the lock.
    pub mode: Mode,
    /// As [`Acquire::lock_delay_ms`].
    pub lock_delay_ms: u64,
}
