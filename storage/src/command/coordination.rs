//! The coordination commands grelmicro's backends call: hold, unhold, a
//! read-write lock step, lead an election, claim a schedule's fire.

use serde::{Deserialize, Serialize};

use super::ReadWriteOp;

/// Take `name` alone for `owner` on a lease of its own with TTL `ttl_ms`,
/// or, when `owner` holds it so already, set that lease's TTL to `ttl_ms`
/// and keep the hold and its fence. A try-lock: busy, it changes nothing.
/// grelmicro's `LockBackend.acquire`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The lock.
    pub name: String,
    /// The client-chosen token of the holder.
    pub owner: String,
    /// The TTL of the hold's own lease.
    pub ttl_ms: u64,
}

/// End `owner`'s hold of `name` taken by [`Hold`], [`ReadWrite`] or
/// [`Lead`], with its lease. An election's record goes with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unhold {
    /// The lock.
    pub name: String,
    /// The holder.
    pub owner: String,
}

/// One step of a read-write lock whose holders and intents each live on a
/// lease of their own (grelmicro's `ReadWriteLockBackend`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadWrite {
    /// The lock.
    pub name: String,
    /// The client-chosen token of the reader or writer.
    pub owner: String,
    /// The step.
    pub op: ReadWriteOp,
}

/// Lead election `name` as `owner` for `ttl_ms`, or renew the lead it has,
/// publishing `metadata`; the answer is the election's record. grelmicro's
/// `LeaderElectionBackend.acquire_or_renew`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lead {
    /// The election.
    pub name: String,
    /// The candidate.
    pub owner: String,
    /// The TTL of the lead's own lease.
    pub ttl_ms: u64,
    /// What the leader publishes, as key-value pairs.
    pub metadata: Vec<(String, String)>,
}

/// Claim schedule `name`'s fire at `due` (an instant in seconds since the
/// Unix epoch, as `f64::to_bits`): won when nothing is stored for `name` or
/// what is stored is earlier. grelmicro's `ScheduleBackend.claim`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimFire {
    /// The schedule.
    pub name: String,
    /// The fire's instant, as `f64::to_bits` of seconds since the epoch.
    pub due: u64,
}
