//! The lease commands: grant, revoke, expire, re-time, revoke an account's.

use serde::{Deserialize, Serialize};

use super::LeaseId;
use crate::account::Account;

/// Create a lease; its id is the request's slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantLease {
    /// How long the lease lives without a keep-alive.
    pub ttl_ms: u64,
}

/// End a lease, releasing its holds and dropping its waiters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeLease {
    /// The lease to end.
    pub id: LeaseId,
}

/// Proposed by the leader's lease timer when deadlines pass. Ids that no
/// longer exist are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpireLeases {
    /// The leases whose deadlines passed on the leader.
    pub ids: Vec<LeaseId>,
}

/// Give lease `id` a new TTL: later keep-alives renew to it, a new leader
/// restarts it with it, and the leader's deadline becomes now + `ttl_ms`
/// when this applies (shorter or longer than before). A lock on a lease of
/// its own that is never kept alive is then a lock whose TTL is its own
/// (Redis `SET PX` + `PEXPIRE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetLeaseTtl {
    /// The lease to re-time.
    pub id: LeaseId,
    /// Its new TTL.
    pub ttl_ms: u64,
}

/// Operator command: revoke the leases of `account`, lowest ids first, at
/// most [`MAX_REVOKED_PER_ENTRY`](crate::limits::MAX_REVOKED_PER_ENTRY) per
/// entry (the answer says how many are left for the next one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevokeAccountLeases {
    /// Whose leases to revoke.
    pub account: Account,
}
