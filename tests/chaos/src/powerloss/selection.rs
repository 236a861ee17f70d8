//! Which ledger entries a round checks: everything touched since the
//! previous cut, plus a seeded sample of older ones (so a later cut that
//! takes back an old acknowledgement is still seen, without re-reading
//! the whole history every round). Names and leases a check already found
//! violated are left out: each loss is reported once.

use std::collections::BTreeMap;

use rand::seq::IteratorRandom;
use rand_chacha::ChaCha8Rng;

use super::ledger::{Book, ElectionEntry, LockEntry};

/// Older lock names sampled per round.
const OLDER_LOCKS: usize = 200;
/// Older election names sampled per round.
const OLDER_ELECTIONS: usize = 50;
/// Older leases sampled per round.
const OLDER_LEASES: usize = 50;

/// A copy of the entries to check, taken when the load has stopped and
/// before anything after the cut is entered.
#[derive(Debug, Default)]
pub struct Selection {
    pub locks: BTreeMap<String, LockEntry>,
    pub elections: BTreeMap<String, ElectionEntry>,
    pub leases: Vec<u64>,
    /// The highest fence acknowledged for any name before the cut.
    pub max_fence: u64,
}

impl Selection {
    /// Takes the selection from `book` (whose current epoch is the one
    /// the cut ends).
    pub fn take(book: &Book, rng: &mut ChaCha8Rng) -> Selection {
        let now = book.epoch;
        let mut locks: BTreeMap<String, LockEntry> = book
            .locks
            .iter()
            .filter(|(n, e)| e.epoch == now && !book.tainted.contains(*n))
            .map(|(n, e)| (n.clone(), e.clone()))
            .collect();
        let older = book.locks.iter();
        let older = older.filter(|(n, e)| e.epoch < now && !book.tainted.contains(*n));
        for (n, e) in older.choose_multiple(rng, OLDER_LOCKS) {
            locks.insert(n.clone(), e.clone());
        }
        let mut elections: BTreeMap<String, ElectionEntry> = book
            .elections
            .iter()
            .filter(|(n, e)| e.epoch == now && !book.tainted.contains(*n))
            .map(|(n, e)| (n.clone(), e.clone()))
            .collect();
        let older = book.elections.iter();
        let older = older.filter(|(n, e)| e.epoch < now && !book.tainted.contains(*n));
        for (n, e) in older.choose_multiple(rng, OLDER_ELECTIONS) {
            elections.insert(n.clone(), e.clone());
        }
        let live = book.leases.iter();
        let live: Vec<(u64, u32)> = live
            .filter(|(id, _)| !book.lost_leases.contains(*id))
            .map(|(id, epoch)| (*id, *epoch))
            .collect();
        let mut leases: Vec<u64> = live
            .iter()
            .filter(|(_, epoch)| *epoch == now)
            .map(|(id, _)| *id)
            .collect();
        let older = live.iter().filter(|(_, epoch)| *epoch < now);
        leases.extend(older.map(|(id, _)| *id).choose_multiple(rng, OLDER_LEASES));
        Selection {
            locks,
            elections,
            leases,
            max_fence: book.max_fence(),
        }
    }
}
