//! What a Raft entry carries and what applying it answers.
//!
//! A Raft entry carries a [`Proposal`]: the client requests the leader
//! gathered while the previous entry was being written (group commit). Each
//! [`Request`] is one command. Applying it is a pure function of the state,
//! the request and its [`slot`]: the only notion of time inside is
//! [`Request::time_ms`], the proposer's wall clock, kept for display (hold
//! durations) and never used to decide anything.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

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
/// each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// At most [`MAX_REQUESTS_PER_ENTRY`]; the proposer never builds more.
    pub requests: Vec<Request>,
}

impl From<Request> for Proposal {
    fn from(request: Request) -> Self {
        Proposal {
            requests: vec![request],
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

/// One replicated command with its origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// `None` for commands the cluster issues itself (lease expiry).
    pub origin: Option<ClientSeq>,
    /// Proposer's wall clock in ms since the Unix epoch; informational only.
    pub time_ms: u64,
    /// What to do.
    pub command: Command,
}

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

/// Everything that can change the lock state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Command {
    /// Create a lease; its id is the entry's log index.
    GrantLease { ttl_ms: u64 },
    /// End a lease, releasing its holds and dropping its waiters.
    RevokeLease { id: LeaseId },
    /// Proposed by the leader's lease timer when deadlines pass. Ids that no
    /// longer exist are ignored.
    ExpireLeases { ids: Vec<LeaseId> },
    /// Take a lock (or campaign, when `value` is set): grant, queue or refuse.
    Acquire {
        name: String,
        owner: String,
        lease: LeaseId,
        mode: Mode,
        /// Queue when the lock is busy; `false` is a try-lock.
        wait: bool,
        /// Election candidates carry the value they will publish as leader.
        value: Option<Vec<u8>>,
    },
    /// Give back one level of re-entry; the hold ends when the count hits 0.
    Release { name: String, owner: String },
    /// Leave the queue, or release entirely if already granted.
    Cancel {
        name: String,
        owner: String,
        /// `Some` when the server cancels for a call that gave up: only a
        /// hold or wait that call still owns is ended (see [`Claim`]).
        /// `None` (a client's own Cancel or Resign) ends it regardless.
        #[serde(default)]
        call: Option<Claim>,
    },
    /// Operator override: end every hold on `name` (waiters then get it).
    ForceRelease { name: String },
    /// Change the value published by an election leader.
    Proclaim {
        name: String,
        owner: String,
        value: Vec<u8>,
    },
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
    /// The request was refused and changed nothing.
    Rejected(CommandError),
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

/// Why a request was refused. Deterministic: every replica refuses alike.
#[non_exhaustive]
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
    #[error("request {seq} is older than the replies kept for this client")]
    StaleRequest { seq: u64 },
}
