//! What applying entries tells the serving layer. The state machine store
//! sends one [`Applied`] per applied entry that changed something, in log
//! order; the node routes grants to waiting callers, lease changes to the
//! leader's lease timer and lock changes to election observers.

use serde::{Deserialize, Serialize};

use crate::command::{Fence, LeaseId};

/// Events produced by one applied entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The entry at `index` produced `events`.
    Entry { index: u64, events: Vec<Event> },
    /// The whole state was replaced by a snapshot whose last entry is
    /// `index`; listeners must re-read whatever they track.
    Snapshot { index: u64 },
}

/// One change to the lock state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// `owner` now holds `name` (immediately or off the queue).
    Granted {
        name: String,
        owner: String,
        lease: LeaseId,
        fence: Fence,
    },
    /// `owner`'s wait for `name` ended without a grant.
    WaitEnded {
        name: String,
        owner: String,
        reason: EndReason,
    },
    /// `owner`'s hold on `name` ended.
    HoldEnded {
        name: String,
        owner: String,
        fence: Fence,
        reason: EndReason,
    },
    /// Holders or the published value of `name` changed (election observers).
    Changed { name: String },
    /// A lease was created; the leader starts its deadline.
    LeaseGranted { id: LeaseId, ttl_ms: u64 },
    /// A lease ended; the leader stops tracking it.
    LeaseEnded { id: LeaseId, reason: EndReason },
    /// `name` lost a holder to expiry or force-release and stays closed for
    /// `ms`; the leader starts the delay's deadline. `since` names the delay.
    LockDelayStarted { name: String, since: u64, ms: u64 },
    /// The lock-delay `since` of `name` ended; the leader stops tracking it.
    LockDelayEnded { name: String, since: u64 },
    /// Lease `id` was given TTL `ttl_ms`; the leader restarts its deadline
    /// at now + `ttl_ms`.
    LeaseTtlSet { id: LeaseId, ttl_ms: u64 },
}

/// Why a hold, a wait or a lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EndReason {
    /// The owner released or cancelled.
    Released,
    /// The lease was revoked.
    LeaseRevoked,
    /// The lease expired.
    LeaseExpired,
    /// An operator forced the release.
    ForceReleased,
}
