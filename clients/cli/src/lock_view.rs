//! How a lock is printed: a serializable view of `LockInfo` for
//! `--output json`, and table rows for people.

use serde::Serialize;

use raftlock::pb::{HolderInfo, WaiterInfo};
use raftlock_client::{LockInfo, LockMode};

/// A lock as `locks list` / `locks describe` print it.
#[derive(Debug, Serialize)]
pub struct LockView {
    pub name: String,
    /// 0 for a mutex or read-write lock.
    pub semaphore_limit: u32,
    pub holders: Vec<HolderView>,
    /// In queue order.
    pub waiters: Vec<WaiterView>,
    /// The lock-delay in force (0: none): nobody new is granted the lock
    /// until it ends.
    pub lock_delay_ms: u64,
    /// How long ago that lock-delay began.
    pub delayed_ms: u64,
}

/// One holder of a lock.
#[derive(Debug, Serialize)]
pub struct HolderView {
    pub owner: String,
    pub lease: u64,
    pub mode: &'static str,
    pub permits: u32,
    pub fence: u64,
    /// Re-entry depth.
    pub count: u32,
    pub held_ms: u64,
    /// Election value (UTF-8, lossy); empty for plain locks.
    pub value: String,
    /// The lock-delay that starts if this hold is lost (0: none).
    pub lock_delay_ms: u64,
}

/// One waiter for a lock.
#[derive(Debug, Serialize)]
pub struct WaiterView {
    pub owner: String,
    pub lease: u64,
    pub mode: &'static str,
    pub permits: u32,
    pub waited_ms: u64,
}

fn mode_name(mode: i32) -> &'static str {
    match LockMode::try_from(mode) {
        Ok(LockMode::Exclusive) => "exclusive",
        Ok(LockMode::Shared) => "shared",
        Ok(LockMode::Permits) => "permits",
        Err(_) => "unknown",
    }
}

impl From<HolderInfo> for HolderView {
    fn from(h: HolderInfo) -> Self {
        HolderView {
            mode: mode_name(h.mode),
            value: String::from_utf8_lossy(&h.value).into_owned(),
            owner: h.owner,
            lease: h.lease,
            permits: h.permits,
            fence: h.fence,
            count: h.count,
            held_ms: h.held_ms,
            lock_delay_ms: h.lock_delay_ms,
        }
    }
}

impl From<WaiterInfo> for WaiterView {
    fn from(w: WaiterInfo) -> Self {
        WaiterView {
            mode: mode_name(w.mode),
            owner: w.owner,
            lease: w.lease,
            permits: w.permits,
            waited_ms: w.waited_ms,
        }
    }
}

impl From<LockInfo> for LockView {
    fn from(l: LockInfo) -> Self {
        LockView {
            name: l.name,
            semaphore_limit: l.semaphore_limit,
            holders: l.holders.into_iter().map(Into::into).collect(),
            waiters: l.waiters.into_iter().map(Into::into).collect(),
            lock_delay_ms: l.lock_delay_ms,
            delayed_ms: l.delayed_ms,
        }
    }
}

impl LockView {
    /// The mode of its holders ("-" when free).
    fn mode(&self) -> &'static str {
        self.holders.first().map(|h| h.mode).unwrap_or("-")
    }

    /// Highest fence among its holders ("-" when free).
    fn fence(&self) -> String {
        self.holders
            .iter()
            .map(|h| h.fence)
            .max()
            .map(|f| f.to_string())
            .unwrap_or_else(|| "-".into())
    }
}

/// `locks list` as a table.
pub fn print_list(locks: &[LockView]) {
    out!(
        "{:<32} {:<10} {:>7} {:>7} {:>10}",
        "NAME",
        "MODE",
        "HOLDERS",
        "WAITERS",
        "FENCE"
    );
    for l in locks {
        out!(
            "{:<32} {:<10} {:>7} {:>7} {:>10}",
            l.name,
            l.mode(),
            l.holders.len(),
            l.waiters.len(),
            l.fence()
        );
    }
}

/// `locks describe` as text: a header, then holders, then waiters in order.
pub fn print_describe(lock: &LockView) {
    let limit = match lock.semaphore_limit {
        0 => String::new(),
        n => format!(" (semaphore, limit {n})"),
    };
    out!("lock {}{limit}", lock.name);
    if lock.lock_delay_ms > 0 {
        out!(
            "lock-delay: closed to new holders for {} ms after losing a holder ({} ms ago)",
            lock.lock_delay_ms,
            lock.delayed_ms
        );
    }
    out!(
        "{:<8} {:<44} {:>8} {:<10} {:>10} {:>5} {:>10}  VALUE",
        "ROLE",
        "OWNER",
        "LEASE",
        "MODE",
        "FENCE",
        "COUNT",
        "FOR_MS"
    );
    for h in &lock.holders {
        out!(
            "{:<8} {:<44} {:>8} {:<10} {:>10} {:>5} {:>10}  {}",
            "holder",
            h.owner,
            h.lease,
            h.mode,
            h.fence,
            h.count,
            h.held_ms,
            h.value
        );
    }
    for h in lock.holders.iter().filter(|h| h.lock_delay_ms > 0) {
        out!(
            "if {} is lost to expiry or force-release, the lock stays closed for {} ms",
            h.owner,
            h.lock_delay_ms
        );
    }
    for w in &lock.waiters {
        out!(
            "{:<8} {:<44} {:>8} {:<10} {:>10} {:>5} {:>10}",
            "waiter",
            w.owner,
            w.lease,
            w.mode,
            "-",
            "-",
            w.waited_ms
        );
    }
}
