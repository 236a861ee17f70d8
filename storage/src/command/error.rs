//! [`CommandError`]: why the state machine refused a request, the same on
//! every replica.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::LeaseId;
use crate::account::Account;
use crate::limits::Quota;

/// Why a request was refused. Deterministic: every replica refuses alike.
///
/// Not `#[non_exhaustive]`: the one mapping to `tonic::Status`
/// (`raftlock::status`) names every variant, so a new one does not compile
/// until it is mapped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum CommandError {
    /// Malformed input (empty or oversized name, TTL out of range, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The lease does not exist (never granted, revoked or expired).
    #[error("lease {0} not found (expired or revoked)")]
    LeaseNotFound(LeaseId),
    /// Release, proclaim or re-entry by someone who does not hold the lock.
    #[error("{owner} does not hold {name}")]
    NotHolder { name: String, owner: String },
    /// The lock's queue is full.
    #[error("{name} already has {limit} waiters")]
    TooManyWaiters { name: String, limit: usize },
    /// The cluster holds as many leases as it may.
    #[error("too many leases (limit {0})")]
    TooManyLeases(usize),
    /// The lock exists with a different kind or mode than asked for.
    #[error("conflicting use of {name}: {detail}")]
    Conflict { name: String, detail: String },
    /// A retry whose reply was already forgotten; its outcome is unknown.
    #[error(
        "request {seq} is older than the replies kept for this client: \
         it may or may not have been applied"
    )]
    StaleRequest { seq: u64 },
    /// A request from a client the reply table does not know, whose request
    /// id says it had replies before (`acked_below` > 1): its session was
    /// forgotten, so whether this request was applied is unknown. Nothing
    /// from this client id is applied again; use a new one.
    #[error(
        "client {client} is not known but has had replies (acked_below {acked_below}): \
         its session was forgotten, so request {seq} may or may not have been applied; \
         continue with a new client id"
    )]
    SessionExpired {
        client: Uuid,
        seq: u64,
        acked_below: u64,
    },
    /// The request id was already used for a different command.
    #[error(
        "request id {seq} of client {client} was already used for a different command; \
         a retry must repeat the same command, and a new command needs a new sequence number"
    )]
    RequestIdReused { client: Uuid, seq: u64 },
    /// Every remembered client owns a live lease, so none can be forgotten to
    /// make room for a new one.
    #[error(
        "too many clients (limit {0}), each with a live lease: \
         new client ids are refused until leases end"
    )]
    TooManyClients(usize),
    /// The caller may not do this: another identity's lease, or an
    /// operator command without the admin role.
    #[error("{0}")]
    PermissionDenied(String),
    /// The caller's account already has as much of something as its quota
    /// allows (`count`, usually `limit`).
    #[error("{}", quota_message(*quota, account, *count, *limit))]
    QuotaExceeded {
        quota: Quota,
        account: Account,
        count: u64,
        limit: u32,
    },
    /// The cluster keeps as many named records (elections, schedules,
    /// read-write generations) as it may.
    #[error(
        "too many named records (limit {0}): no new election, schedule or \
         read-write lock name until one is released"
    )]
    TooManyRecords(usize),
}

/// "identity billing holds 10000 leases (limit 10000, ...)": the quota,
/// whose, and what to wait for.
fn quota_message(quota: Quota, account: &Account, count: u64, limit: u32) -> String {
    format!("{account} {}", quota.refusal(count, limit))
}
