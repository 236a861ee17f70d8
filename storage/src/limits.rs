//! Bounds on what a client may ask for. The server checks them at its edge to
//! give a clear error early; the state machine checks them again so that no
//! entry, however it got into the log, can grow the state without bound.
//!
//! The global bounds are fixed; the [`Quotas`] per account (identity, or
//! source address without authentication) are settings, so that one
//! caller cannot take what every caller shares.

use serde::{Deserialize, Serialize};

/// Longest lock, semaphore or election name, in bytes.
pub const MAX_NAME_LEN: usize = 512;
/// Longest owner token, in bytes.
pub const MAX_OWNER_LEN: usize = 128;
/// Largest election value, in bytes.
pub const MAX_VALUE_LEN: usize = 64 * 1024;
/// Most bytes of an election's metadata, keys and values together.
pub const MAX_METADATA_BYTES: usize = 4 * 1024;
/// Shortest lease TTL: 1 ms, as Redis `PX` and grelmicro allow. A lease
/// that is never kept alive (a lock whose TTL is its own) may be that short;
/// one that is kept alive needs a TTL a keep-alive can cross a loaded
/// network within, which the clients enforce for their sessions (100 ms).
pub const MIN_TTL_MS: u64 = 1;
/// Longest lease TTL: one day. Anything longer is almost surely a unit mistake.
pub const MAX_TTL_MS: u64 = 24 * 60 * 60 * 1000;
/// Longest lock-delay: a minute, as Consul allows. A longer pause between
/// losing a holder and granting the next is better served by a longer TTL.
pub const MAX_LOCK_DELAY_MS: u64 = 60_000;
/// Most waiters one lock may queue. A lock is stored as one record, so each
/// change to it rewrites its whole queue: this bound keeps that cheap.
pub const MAX_WAITERS_PER_LOCK: usize = 1_000;
/// Largest semaphore limit.
pub const MAX_SEMAPHORE_LIMIT: u32 = 1_000_000;
/// Most live leases in the cluster.
pub const MAX_LEASES: usize = 1_000_000;
/// Most replies remembered per client for exactly-once retries.
pub const MAX_REPLIES_PER_CLIENT: usize = 1024;
/// Most clients whose replies are remembered without a live lease: the
/// room [`MAX_CLIENT_SESSIONS`] keeps beyond one client per live lease.
pub const MAX_IDLE_CLIENT_SESSIONS: usize = 100_000;
/// Most clients whose replies are remembered. A client that granted a live
/// lease is never forgotten; of the others, the least recently seen is
/// forgotten first to make room. Only a live lease keeps a client, and at
/// most [`MAX_LEASES`] live, so the table is sized beyond them: it always
/// has a client without a live lease to forget, and no number of accounts
/// at their quotas can make it refuse a new client id.
pub const MAX_CLIENT_SESSIONS: usize = MAX_LEASES + MAX_IDLE_CLIENT_SESSIONS;

/// Most leases one [`RevokeAccountLeases`] entry ends: a bound on one apply
/// step's work, as a lease expiry batch has. The client sends the command
/// again until none are left.
///
/// [`RevokeAccountLeases`]: crate::command::Command::RevokeAccountLeases
pub const MAX_REVOKED_PER_ENTRY: usize = 5_000;

/// Most named records (election records, schedule fires, read-write lock
/// generations) the cluster keeps.
pub const MAX_NAMED_RECORDS: usize = 100_000;

/// Default of [`Quotas::leases`]: a hundredth of [`MAX_LEASES`].
pub const DEFAULT_QUOTA_LEASES: u32 = 10_000;
/// Default of [`Quotas::clients`]: a tenth of [`MAX_IDLE_CLIENT_SESSIONS`],
/// so ten accounts at their quota leave the clients of every other account
/// at least as much room again.
pub const DEFAULT_QUOTA_CLIENTS: u32 = 10_000;
/// Default of [`Quotas::waiters`].
pub const DEFAULT_QUOTA_WAITERS: u32 = 10_000;

/// What one account (see [`Account`](crate::Account)) may hold in the
/// replicated state. Every entry carries the quotas of the leader that
/// proposed it, so every replica decides alike whatever its own settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quotas {
    /// Live leases (including those of locks whose TTL is their own).
    pub leases: u32,
    /// Client ids remembered for exactly-once retries. Past it, the
    /// account's own least recently seen client id without a live lease is
    /// forgotten; when each of them granted a live lease, a new client id is
    /// refused (revokes, force-releases and calls without a request id are
    /// applied all the same, unremembered). Another account's client ids
    /// are never touched.
    pub clients: u32,
    /// Requests waiting in lock and election queues, counted by the account
    /// of the lease they wait on.
    pub waiters: u32,
}

impl Default for Quotas {
    fn default() -> Self {
        Quotas {
            leases: DEFAULT_QUOTA_LEASES,
            clients: DEFAULT_QUOTA_CLIENTS,
            waiters: DEFAULT_QUOTA_WAITERS,
        }
    }
}

/// Which quota a refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Quota {
    /// [`Quotas::leases`].
    Leases,
    /// [`Quotas::clients`].
    Clients,
    /// [`Quotas::waiters`].
    Waiters,
    /// Calls held open on one node (watch and wait streams): a quota of
    /// each node's serving layer, not of the replicated state.
    Streams,
    /// Named records (elections, schedules, read-write generations): bounded
    /// by [`Quotas::leases`] too, so that no new setting is needed.
    Records,
}

impl Quota {
    /// A refusal's words: "holds 12 leases (limit 10, the server's
    /// quota_leases): ...".
    pub fn refusal(self, count: u64, limit: u32) -> String {
        let (what, setting, until) = match self {
            Quota::Leases => (
                format!("holds {count} leases"),
                "quota_leases",
                "no new lease until one of them ends",
            ),
            Quota::Clients => (
                format!("has {count} client ids with a live lease"),
                "quota_clients",
                "no new client id until one of those leases ends",
            ),
            Quota::Waiters => (
                format!("has {count} requests waiting for locks"),
                "quota_waiters",
                "no new wait until one of them ends",
            ),
            Quota::Streams => (
                format!("has {count} watch or wait calls open on this node"),
                "quota_streams",
                "no new one until one of them ends",
            ),
            Quota::Records => (
                format!("keeps {count} named records"),
                "quota_leases",
                "no new election, schedule or read-write lock name until one is released",
            ),
        };
        format!("{what} (limit {limit}, the server's {setting}): {until}")
    }
}
