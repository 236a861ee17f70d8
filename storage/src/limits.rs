//! Bounds on what a client may ask for. The server checks them at its edge to
//! give a clear error early; the state machine checks them again so that no
//! entry, however it got into the log, can grow the state without bound.

/// Longest lock, semaphore or election name, in bytes.
pub const MAX_NAME_LEN: usize = 512;
/// Longest owner token, in bytes.
pub const MAX_OWNER_LEN: usize = 128;
/// Largest election value, in bytes.
pub const MAX_VALUE_LEN: usize = 64 * 1024;
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
/// Most clients whose replies are remembered. A client that granted a live
/// lease is never forgotten; of the others, the least recently seen is
/// forgotten first to make room. When every remembered client has a live
/// lease, new client ids are refused instead.
pub const MAX_CLIENT_SESSIONS: usize = 100_000;
