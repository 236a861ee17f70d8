//! The ledger: what the cluster acknowledged during a power-loss run —
//! leases, lock holds, election seats — and, for calls that had no answer
//! when the power went, that their outcome is unknown.
//!
//! Every call is entered before it is sent (`*_begin`) and settled by its
//! answer (`*_done`). A call the cut interrupted is never settled: its
//! entry keeps saying "maybe". The checks compare the cluster after a
//! restart with this book.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, MutexGuard};

pub use super::answer::Answer;
use super::findings::Taint;

/// An election value as the ledger remembers it (values run to 64 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub len: usize,
    pub hash: u64,
}

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        // SipHash with fixed keys: the same bytes give the same digest for
        // the whole run, which is all the ledger needs.
        let mut h = std::hash::DefaultHasher::new();
        bytes.hash(&mut h);
        Digest {
            len: bytes.len(),
            hash: h.finish(),
        }
    }
}

/// What is known about one owner's hold of one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// Its acquire had no answer: it may hold, with any fence.
    Asked,
    /// Acknowledged granted, not released.
    Held { fence: u64 },
    /// Granted, and a release had no answer: held with this fence, or not.
    Releasing { fence: u64 },
    /// Acknowledged released.
    Released { fence: u64 },
}

/// What is known about one candidate in one election. `values` are the
/// values it may show: the acknowledged one first, then unanswered
/// proclaims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seat {
    /// Its campaign had no answer: it may lead, with any fence.
    Campaigning { values: Vec<Digest> },
    /// Acknowledged leader, not resigned.
    Leading { fence: u64, values: Vec<Digest> },
    /// Leader, and a resign had no answer.
    Resigning { fence: u64, values: Vec<Digest> },
    /// Acknowledged resigned.
    Resigned { fence: u64 },
}

/// One lock name.
#[derive(Debug, Clone, Default)]
pub struct LockEntry {
    /// The epoch (see [`Book::epoch`]) that last touched it.
    pub epoch: u32,
    pub owners: BTreeMap<String, Hold>,
    /// Highest fence acknowledged for the name, to any owner.
    pub max_fence: u64,
}

/// One election name.
#[derive(Debug, Clone, Default)]
pub struct ElectionEntry {
    pub epoch: u32,
    pub seats: BTreeMap<String, Seat>,
    pub max_fence: u64,
}

/// Calls of one kind by how they ended.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tally {
    pub begun: u64,
    pub ok: u64,
    /// Definite failures (busy is `ok`; a wait that timed out is here).
    pub fail: u64,
    /// Indeterminate answers (unavailable, deadline).
    pub unknown: u64,
}

impl Tally {
    /// Calls that never got an answer (cut short by a power cut).
    pub fn cut(&self) -> u64 {
        self.begun - self.ok - self.fail - self.unknown
    }
}

/// The ledger's contents.
#[derive(Debug, Default)]
pub struct Book {
    /// Counts the power cuts so far; what is entered now precedes cut
    /// number `epoch + 1`.
    pub epoch: u32,
    /// Acknowledged leases and the epoch that granted them.
    pub leases: BTreeMap<u64, u32>,
    pub locks: BTreeMap<String, LockEntry>,
    pub elections: BTreeMap<String, ElectionEntry>,
    pub tally: BTreeMap<&'static str, Tally>,
    /// Names and leases a check found violated; no longer checked.
    pub tainted: BTreeSet<String>,
    pub lost_leases: BTreeSet<u64>,
}

impl Book {
    /// The highest fence acknowledged for any name.
    pub fn max_fence(&self) -> u64 {
        let locks = self.locks.values().map(|e| e.max_fence);
        let elections = self.elections.values().map(|e| e.max_fence);
        locks.chain(elections).max().unwrap_or(0)
    }

    pub(super) fn count<T>(&mut self, kind: &'static str, answer: &Answer<T>) {
        let t = self.tally.entry(kind).or_default();
        match answer {
            Answer::Ok(_) => t.ok += 1,
            Answer::Fail(_) => t.fail += 1,
            Answer::Unknown(_) => t.unknown += 1,
        }
    }

    pub(super) fn begin(&mut self, kind: &'static str) {
        self.tally.entry(kind).or_default().begun += 1;
    }

    fn lock(&mut self, name: &str) -> &mut LockEntry {
        let epoch = self.epoch;
        let e = self.locks.entry(name.to_string()).or_default();
        e.epoch = epoch;
        e
    }

    pub(super) fn election(&mut self, name: &str) -> &mut ElectionEntry {
        let epoch = self.epoch;
        let e = self.elections.entry(name.to_string()).or_default();
        e.epoch = epoch;
        e
    }
}

/// The shared ledger. Entries are made by one task per owner, in call
/// order; the lock is never held across an await.
#[derive(Debug, Default)]
pub struct Ledger {
    book: Mutex<Book>,
}

impl Ledger {
    /// The book, for the checks and the summary.
    pub fn book(&self) -> MutexGuard<'_, Book> {
        // A panic while holding this lock is a bug in the ledger itself;
        // the book it leaves is still the best record there is.
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets aside what a check found violated.
    pub fn taint(&self, taints: Vec<Taint>) {
        let mut b = self.book();
        for t in taints {
            match t {
                Taint::Name(name) => b.tainted.insert(name),
                Taint::Lease(id) => b.lost_leases.insert(id),
            };
        }
    }

    /// Marks a power cut: later entries belong to the next epoch.
    pub fn cut(&self) {
        self.book().epoch += 1;
    }

    pub fn lease_begin(&self) {
        self.book().begin("grant_lease");
    }

    pub fn lease_done(&self, answer: &Answer<u64>) {
        let mut b = self.book();
        b.count("grant_lease", answer);
        if let Answer::Ok(id) = answer {
            let epoch = b.epoch;
            b.leases.insert(*id, epoch);
        }
    }

    pub fn acquire_begin(&self, kind: &'static str, name: &str, owner: &str) {
        let mut b = self.book();
        b.begin(kind);
        b.lock(name).owners.insert(owner.to_string(), Hold::Asked);
    }

    /// `Ok(Some(fence))`: granted; `Ok(None)`: busy.
    pub fn acquire_done(
        &self,
        kind: &'static str,
        name: &str,
        owner: &str,
        answer: &Answer<Option<u64>>,
    ) {
        let mut b = self.book();
        b.count(kind, answer);
        let e = b.lock(name);
        match answer {
            Answer::Ok(Some(fence)) => {
                e.owners
                    .insert(owner.to_string(), Hold::Held { fence: *fence });
                e.max_fence = e.max_fence.max(*fence);
            }
            Answer::Ok(None) | Answer::Fail(_) => {
                e.owners.remove(owner);
            }
            Answer::Unknown(_) => {}
        }
    }

    pub fn release_begin(&self, name: &str, owner: &str) {
        let mut b = self.book();
        b.begin("release");
        if let Some(h) = b.lock(name).owners.get_mut(owner) {
            if let Hold::Held { fence } = *h {
                *h = Hold::Releasing { fence };
            }
        }
    }

    /// `Ok(n)`: `n` re-entries are still held (the load never re-enters).
    pub fn release_done(&self, name: &str, owner: &str, answer: &Answer<u32>) {
        let mut b = self.book();
        b.count("release", answer);
        if let (Answer::Ok(0), Some(h)) = (answer, b.lock(name).owners.get_mut(owner)) {
            if let Hold::Releasing { fence } = *h {
                *h = Hold::Released { fence };
            }
        }
    }
}
