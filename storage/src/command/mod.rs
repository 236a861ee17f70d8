//! What a Raft entry carries and what applying it answers.
//!
//! A Raft entry carries a [`Proposal`]: the client requests the leader
//! gathered while the previous entry was being written (group commit). Each
//! [`Request`] is one command. Applying it is a pure function of the state,
//! the request and its [`slot`]: the only notion of time inside is
//! [`Request::time_ms`], the proposer's wall clock, kept for display (hold
//! durations) and never used to decide anything.

pub mod checks;
mod coordination;
mod election_record;
mod error;
mod leases;
mod locks;
mod size;
#[cfg(test)]
mod tests;

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::account::{source_network, Account};
use crate::limits::Quotas;
pub use coordination::{ClaimFire, Hold, Lead, ReadWrite, Unhold};
pub use election_record::ElectionRecord;
pub use error::CommandError;
pub use leases::{ExpireLeases, GrantLease, RevokeAccountLeases, RevokeLease, SetLeaseTtl};
pub use locks::{Acquire, AcquireWithTtl, Cancel, EndLockDelay, ForceRelease, Proclaim, Release};

/// Lease ids are the [`slot`] of the request that granted the lease, so they
/// are unique for the life of the cluster.
pub type LeaseId = u64;

/// A fencing token: the [`slot`] of the request that granted a hold.
/// Strictly increasing per lock name across everything, restarts included.
pub type Fence = u64;

/// Bits of a [`slot`] that number a request within its entry.
pub const POSITION_BITS: u32 = 16;

/// Most requests one entry may carry.
pub const MAX_REQUESTS_PER_ENTRY: usize = 1 << POSITION_BITS;

/// Where a request sits in the log: `log_index << 16 | position`. Slots of
/// later requests are larger, within an entry and across entries, so a slot
/// is a fencing token and a lease id at once. `position` must be below
/// [`MAX_REQUESTS_PER_ENTRY`].
pub fn slot(log_index: u64, position: usize) -> u64 {
    debug_assert!(
        position < MAX_REQUESTS_PER_ENTRY,
        "position {position} out of range"
    );
    (log_index << POSITION_BITS) | position as u64
}

/// The log index a [`slot`] (fence, lease id) was taken at.
pub fn slot_index(slot: u64) -> u64 {
    slot >> POSITION_BITS
}

/// The payload of one Raft entry: requests applied in order, one response
/// each, under the quotas of the leader that proposed them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// At most [`MAX_REQUESTS_PER_ENTRY`]; the proposer never builds more.
    pub requests: Vec<Request>,
    /// The proposing leader's per-account quotas: carried in the entry so
    /// that every replica, whatever its own settings, decides alike.
    pub quotas: Quotas,
}

impl std::fmt::Display for Proposal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "proposal of {} requests", self.requests.len())
    }
}

impl From<Request> for Proposal {
    fn from(request: Request) -> Self {
        Proposal {
            requests: vec![request],
            quotas: Quotas::default(),
        }
    }
}

/// Identifies a client request for exactly-once application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSeq {
    /// Chosen by the client once per process (or per `Client`).
    pub client: Uuid,
    /// Increases by one per request; a retry reuses the same number.
    pub seq: u64,
    /// The client has received the replies to every request below this
    /// number, so the server may forget them.
    pub acked_below: u64,
    /// How many times the client sent this request before (0 the first
    /// time). Only waits use it: see [`Claim`].
    #[serde(default)]
    pub attempt: u32,
    /// The client sent no request id and the server made this one up for
    /// the one call. It still de-duplicates the cluster's own re-sends of
    /// the call, but nobody can retry under it later, so the leases it
    /// grants do not keep its session (see `state::session_table`).
    #[serde(default)]
    pub anonymous: bool,
}

/// Which call asked for a hold or a wait: a client request and the attempt
/// at sending it. When a waiting call gives up, the server cancels on its
/// behalf naming its claim, and the cancel leaves alone a hold or wait that
/// a later attempt (the client's retry, answered elsewhere) or another
/// request has claimed since.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// The requesting client.
    pub client: Uuid,
    /// The request's sequence number.
    pub seq: u64,
    /// The attempt; a retry of the same request has a higher one.
    pub attempt: u32,
}

impl Claim {
    /// The claim of a request from `origin`.
    pub fn of(origin: &ClientSeq) -> Claim {
        Claim {
            client: origin.client,
            seq: origin.seq,
            attempt: origin.attempt,
        }
    }

    /// Whether `self` is the same request as `other`.
    pub fn same_request(&self, other: &Claim) -> bool {
        self.client == other.client && self.seq == other.seq
    }

    /// Whether a cancel on behalf of `self` may end a record whose claim is
    /// `current` (`None`: made before claims were recorded, or by a request
    /// without an origin).
    pub fn may_cancel(&self, current: Option<&Claim>) -> bool {
        current.is_none_or(|c| self.same_request(c) && self.attempt >= c.attempt)
    }
}

/// Who sent a request, as the node that took it authenticated them. The
/// node decides; the state machine only compares identities, so every
/// replica decides alike whatever its own settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    /// The authenticated identity (a token's user or a certificate's
    /// name). `None` when the node runs without authentication: such a
    /// caller may use leases granted without an identity only.
    pub identity: Option<String>,
    /// The identity has the admin role: it may act through any lease and
    /// force-release any lock.
    pub admin: bool,
    /// Where an unauthenticated caller connected from, as the node that took
    /// the call saw it (`None` for an authenticated caller, and for the
    /// cluster's own requests).
    pub source: Option<IpAddr>,
}

impl Caller {
    /// An unauthenticated caller connected from `addr`, recorded by the
    /// address it is counted by ([`source_network`]: an IPv6 caller by its
    /// /64). The node that takes the call masks it, so the entry carries
    /// the account and apply never has to decide it.
    pub fn unauthenticated(addr: IpAddr) -> Caller {
        Caller {
            source: Some(source_network(addr)),
            ..Caller::default()
        }
    }

    /// Whom the request is charged to: the identity, else the source
    /// address; `None` for the cluster's own requests, which no quota
    /// bounds.
    pub fn account(&self) -> Option<Account> {
        match (&self.identity, self.source) {
            (Some(identity), _) => Some(Account::Identity(identity.clone())),
            // As the entry carries it: masking here would count entries of
            // earlier builds (full IPv6 addresses) differently on replicas
            // of this build and of the earlier one.
            (None, Some(addr)) => Some(Account::Source(addr.to_canonical())),
            (None, None) => None,
        }
    }

    /// Whether this caller may act through a lease granted by `owner`
    /// (`None`: granted without authentication, open to every caller).
    pub fn may_use_lease_of(&self, owner: Option<&str>) -> bool {
        match owner {
            None => true,
            Some(owner) => self.admin || self.identity.as_deref() == Some(owner),
        }
    }
}

/// One replicated command with its origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// `None` for commands the cluster issues itself (lease expiry).
    pub origin: Option<ClientSeq>,
    /// Who asked (empty for commands the cluster issues itself).
    pub caller: Caller,
    /// Proposer's wall clock in ms since the Unix epoch; informational only.
    pub time_ms: u64,
    /// What to do.
    pub command: Command,
}

/// Bytes of the SHA-256 of a command kept as its [`Command::fingerprint`].
const FINGERPRINT_BYTES: usize = 8;

/// How a holder takes a lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Sole holder (a mutex, the write side of a read-write lock, an election).
    Exclusive,
    /// Shares the lock with other `Shared` holders (the read side).
    Shared,
    /// Takes `count` permits of a counting semaphore with `limit` permits.
    Permits { count: u32, limit: u32 },
}

/// Everything that can change the lock state. Each variant with fields
/// carries the named struct the state machine executes; postcard encodes a
/// newtype variant of a struct exactly as it encoded the struct variant it
/// replaced, so stored logs decode unchanged (`tests.rs` holds the bytes).
/// New variants go last, so earlier logs decode unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create a lease; its id is the entry's log index.
    GrantLease(GrantLease),
    /// End a lease, releasing its holds and dropping its waiters.
    RevokeLease(RevokeLease),
    /// The leader's lease timer saw deadlines pass.
    ExpireLeases(ExpireLeases),
    /// Take a lock (or campaign, when `value` is set): grant, queue or refuse.
    Acquire(Acquire),
    /// Give back one level of re-entry.
    Release(Release),
    /// Leave the queue, or release entirely if already granted.
    Cancel(Cancel),
    /// Operator override: end every hold on a lock.
    ForceRelease(ForceRelease),
    /// A lock-delay has run its course.
    EndLockDelay(EndLockDelay),
    /// Change the value published by an election leader.
    Proclaim(Proclaim),
    /// Give a lease a new TTL.
    SetLeaseTtl(SetLeaseTtl),
    /// Try-lock on a lease of its own, made by this entry.
    AcquireWithTtl(AcquireWithTtl),
    /// Operator command: revoke an account's leases.
    RevokeAccountLeases(RevokeAccountLeases),
    /// Take or renew a hold on a lease of its own.
    Hold(Hold),
    /// End a hold taken by `Hold`, `ReadWrite` or `Lead`, with its lease.
    Unhold(Unhold),
    /// One step of a read-write lock on leases of their own.
    ReadWrite(ReadWrite),
    /// Lead an election, or renew the lead.
    Lead(Lead),
    /// Claim a schedule's fire.
    ClaimFire(ClaimFire),
}

/// What a [`Command::ReadWrite`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadWriteOp {
    /// Join the readers (or renew this owner's read lease): refused while a
    /// writer holds the lock or another owner's write intent lives.
    Read { ttl_ms: u64 },
    /// Take the lock alone (or renew this owner's write lease); refused
    /// while anyone else holds it, and then, with `intent`, this owner's
    /// intent is recorded (or renewed) on a lease of `ttl_ms`, keeping new
    /// readers out.
    Write { ttl_ms: u64, intent: bool },
    /// End this owner's read lease.
    ReleaseRead,
    /// End this owner's write lease: a clean release.
    ReleaseWrite,
    /// Withdraw this owner's write intent.
    CancelIntent,
    /// Turn this owner's write lease into a read lease of `ttl_ms`, with no
    /// writer in between.
    Downgrade { ttl_ms: u64 },
}

/// What a [`Command::ReadWrite`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReadWriteOutcome {
    /// `Read` and `Downgrade`: the lock's generation when granted.
    Read { generation: Option<Fence> },
    /// `Write`: the fence when granted, and whether the writer before took
    /// the lock and never released it (its lease ended instead).
    Write { granted: Option<(Fence, bool)> },
    /// The releases and `CancelIntent`: whether there was something to end.
    Ended { ended: bool },
}

impl Request {
    /// What a retry must repeat: the first 8 bytes (big-endian) of the
    /// SHA-256 of the postcard encoding of the caller's identity and the
    /// command. The request's origin and `time_ms` (which differ between
    /// re-sends of one request) are not part of it; the identity is, so a
    /// request id cannot be replayed by another identity to read or claim
    /// a reply. SHA-256 and postcard's encoding are fixed by their
    /// specifications, so every replica and every build that reads the same
    /// log computes the same value.
    pub fn fingerprint(&self) -> u64 {
        // A request always encodes: the log stores it in this encoding.
        let bytes = postcard::to_stdvec(&(&self.caller.identity, &self.command))
            .unwrap_or_else(|e| unreachable!("a Request failed to encode: {e}"));
        let digest = Sha256::digest(&bytes);
        let mut head = [0u8; FINGERPRINT_BYTES];
        head.copy_from_slice(&digest[..FINGERPRINT_BYTES]);
        u64::from_be_bytes(head)
    }
}

/// What applying a request answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Response {
    /// Blank and membership entries.
    #[default]
    None,
    /// A lease was granted.
    LeaseGranted { id: LeaseId, ttl_ms: u64 },
    /// A lease was revoked; `released` holds ended with it.
    LeaseRevoked { id: LeaseId, released: u32 },
    /// These leases (the ones that still existed) expired.
    LeasesExpired { ids: Vec<LeaseId> },
    /// The caller holds the lock; `count` is its re-entry depth.
    Granted { fence: Fence, count: u32 },
    /// The caller waits at `position` (0 = next in line).
    Queued { position: u32 },
    /// Try-lock found the lock taken. An expected outcome, not an error.
    Busy,
    /// One level released; `remaining` is the re-entry depth still held
    /// (0 = the hold ended).
    Released { remaining: u32 },
    /// Cancel's outcome.
    Cancelled { outcome: CancelOutcome },
    /// Operator override ended `holders` holds.
    ForceReleased { holders: u32 },
    /// The election value changed.
    Proclaimed,
    /// A lock-delay ended (`false`: it had ended or restarted already).
    LockDelayEnded { ended: bool },
    /// The request was refused and changed nothing.
    Rejected(CommandError),
    /// Lease `id` now has TTL `ttl_ms` (after `Rejected` so stored replies
    /// decode unchanged).
    LeaseTtlSet { id: LeaseId, ttl_ms: u64 },
    /// [`Command::AcquireWithTtl`] granted: the hold is on lease `lease`.
    GrantedWithLease {
        lease: LeaseId,
        fence: Fence,
        count: u32,
    },
    /// [`Command::RevokeAccountLeases`] revoked `revoked` leases, which held
    /// `released` holds; `remaining` leases of the account are left for the
    /// next entry.
    AccountLeasesRevoked {
        revoked: u32,
        released: u32,
        remaining: u32,
    },
    /// [`Command::Hold`] granted or renewed the hold on lease `lease`.
    Held { lease: LeaseId, fence: Fence },
    /// [`Command::Unhold`]: whether the owner held the lock.
    Unheld { ended: bool },
    /// [`Command::ReadWrite`]'s outcome.
    ReadWrite(ReadWriteOutcome),
    /// [`Command::Lead`]: the election's record after it (whoever leads).
    Led(ElectionRecord),
    /// [`Command::ClaimFire`]: whether this claim won the fire.
    FireClaimed { won: bool },
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelOutcome {
    /// The owner was waiting and has left the queue.
    Dequeued,
    /// The owner held the lock, so the hold was released entirely.
    Released,
    /// The owner neither held nor waited for the lock.
    NotFound,
    /// A server-issued cancel found the hold or wait claimed by a later
    /// attempt or another request, and left it alone.
    Superseded,
}
