//! The load a power cut interrupts: tasks on one client that grant leases,
//! take and release locks and campaign in elections, every call entered
//! in the ledger.
//!
//! Three kinds of task, [`TASKS_PER_KIND`] of each:
//! - `solo`: try-locks of names nobody else uses, releasing a random one
//!   of its holds now and then (so both holds and releases pile up);
//! - `hot`: waiting acquires on a few shared names, so there are queued
//!   waiters when the power goes; most holds are released again;
//! - `elect`: campaigns (shared and private names) with values up to
//!   64 KiB, a few proclaims as leader, and a resign half of the time.
//!
//! Names carry the epoch (`pl/<epoch>/...`), so each round's load starts
//! on fresh names and the waiters an earlier cut left behind stay out of
//! its way. Owners are `<epoch>-<task>-<n>`: unique and readable.

use std::time::Duration;

use raftlock_storage::limits::MAX_VALUE_LEN;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::task::JoinSet;

use super::calls::Calls;

/// Tasks of each kind.
pub const TASKS_PER_KIND: u64 = 3;
/// Shared lock names per epoch.
const HOT_NAMES: u32 = 5;
/// Shared election names per epoch.
const HOT_ELECTIONS: u32 = 3;

/// The running load.
pub struct Load {
    tasks: JoinSet<()>,
}

impl Load {
    /// Starts the tasks of `epoch`, seeded from `seed`. Each elect task's
    /// first value is 64 KiB, and then one in `large_every` (0: no more).
    pub fn start(calls: &Calls, epoch: u32, seed: u64, large_every: u32) -> Load {
        let mut tasks = JoinSet::new();
        for i in 0..TASKS_PER_KIND {
            let task = |kind: u64, tag: &str| Task {
                calls: calls.clone(),
                epoch,
                tag: format!("{tag}{i}"),
                rng: ChaCha8Rng::seed_from_u64(seed ^ (u64::from(epoch) << 32) ^ (kind << 16) ^ i),
                n: 0,
                values: 0,
                large_every,
            };
            tasks.spawn(task(1, "s").solo());
            tasks.spawn(task(2, "h").hot());
            tasks.spawn(task(3, "e").elect());
        }
        Load { tasks }
    }

    /// Drops every task where it stands: calls in flight are never
    /// answered, so the ledger keeps them as unknown.
    pub async fn stop(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// One task's state.
struct Task {
    calls: Calls,
    epoch: u32,
    tag: String,
    rng: ChaCha8Rng,
    /// Owners made so far.
    n: u64,
    /// Election values made so far.
    values: u64,
    /// One election value in this many (after the first) is 64 KiB; 0:
    /// only the first.
    large_every: u32,
}

impl Task {
    fn owner(&mut self) -> String {
        self.n += 1;
        format!("{}-{}-{}", self.epoch, self.tag, self.n)
    }

    async fn pause(&mut self, max_ms: u64) {
        let ms = self.rng.gen_range(1..=max_ms);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    /// A lease, retried until one is granted (the load runs on a healthy
    /// cluster; only a cut ends it, and that aborts the task).
    async fn lease(&mut self) -> u64 {
        loop {
            if let Some(id) = self.calls.grant_lease().await.ok() {
                return *id;
            }
            self.pause(200).await;
        }
    }

    async fn solo(mut self) {
        let mut lease = self.lease().await;
        let mut held: Vec<(String, String)> = Vec::new();
        for i in 1u64.. {
            if !held.is_empty() && self.rng.gen_bool(0.3) {
                let (name, owner) = held.swap_remove(self.rng.gen_range(0..held.len()));
                self.calls.release(&name, &owner).await;
            } else {
                let owner = self.owner();
                let name = format!("pl/{}/{}", self.epoch, owner);
                let answer = self.calls.acquire(&name, &owner, lease, None).await;
                if let Some(Some(_)) = answer.ok() {
                    held.push((name, owner));
                }
            }
            if i % 40 == 0 {
                // Several leases per task, so a lost lease shows alone.
                lease = self.lease().await;
            }
            self.pause(10).await;
        }
    }

    async fn hot(mut self) {
        let lease = self.lease().await;
        loop {
            let name = format!("pl/{}/hot{}", self.epoch, self.rng.gen_range(0..HOT_NAMES));
            let owner = self.owner();
            let wait = Duration::from_millis(self.rng.gen_range(200..1500));
            let answer = self.calls.acquire(&name, &owner, lease, Some(wait)).await;
            if let Some(Some(_)) = answer.ok() {
                self.pause(40).await;
                if self.rng.gen_bool(0.8) {
                    self.calls.release(&name, &owner).await;
                }
            }
            self.pause(10).await;
        }
    }

    async fn elect(mut self) {
        let lease = self.lease().await;
        loop {
            let owner = self.owner();
            let name = if self.rng.gen_bool(0.6) {
                let j = self.rng.gen_range(0..HOT_ELECTIONS);
                format!("pl/{}/e{j}", self.epoch)
            } else {
                format!("pl/{}/{owner}", self.epoch)
            };
            let value = self.value(&owner);
            let wait = Duration::from_millis(self.rng.gen_range(300..1200));
            let answer = self
                .calls
                .campaign(&name, &owner, lease, &value, wait)
                .await;
            if answer.ok().is_some() {
                for _ in 0..self.rng.gen_range(1..=3) {
                    let value = self.value(&owner);
                    self.calls.proclaim(&name, &owner, &value).await;
                }
                if self.rng.gen_bool(0.5) {
                    self.calls.resign(&name, &owner).await;
                }
            }
            self.pause(10).await;
        }
    }

    /// An election value: the task's first and then one in `large_every`
    /// the largest allowed (64 KiB: sled's large-value path), the rest
    /// short; random bytes up front so no two are alike.
    ///
    /// The bulk is bytes 0..=9: two characters each where a build encodes
    /// entries as JSON (before the storage fix), so an entry stays just
    /// above sled's blob threshold (a quarter of a 512 KiB segment) at the
    /// least cost. With postcard an entry is ~64 KiB, below it; the
    /// snapshots (every `--snapshot-after` entries) that hold several
    /// such values are above it.
    fn value(&mut self, owner: &str) -> Vec<u8> {
        self.values += 1;
        let more = self.large_every > 0 && self.rng.gen_ratio(1, self.large_every);
        let len = if self.values == 1 || more {
            MAX_VALUE_LEN
        } else {
            self.rng.gen_range(16..256)
        };
        let mut v: Vec<u8> = (0..len).map(|i| (i % 10) as u8).collect();
        self.rng.fill_bytes(&mut v[..8]);
        let tag = owner.as_bytes();
        let n = tag.len().min(len - 8);
        v[8..8 + n].copy_from_slice(&tag[..n]);
        v
    }
}
