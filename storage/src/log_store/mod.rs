//! The Raft log and vote store in sled, for openraft's storage-v2 API.
//!
//! Keys in the `log` tree are big-endian `u64` indexes (so sled's byte order
//! is log order); values are the [`Entry`], framed with a checksum by
//! [`crate::codec`]. Vote, committed and last purged log ids live in the
//! `raft_meta` tree. Everything openraft must be able to trust after a power
//! loss is synced ([`DiskSync`]) before openraft hears it was done.

mod flusher;

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::{decode, encode};
use crate::disk_sync::DiskSync;
use crate::error::Error;
use crate::identity::FloorKeeper;
use crate::trees::{LOG_TREE, RAFT_META_TREE};
use crate::types::{Entry, EntryPayload, LogId, Membership, NodeId, TypeConfig, Vote};
pub use flusher::AppendTimer;
use flusher::Flusher;

const VOTE_KEY: &[u8] = b"vote";
const COMMITTED_KEY: &[u8] = b"committed";
const LAST_PURGED_KEY: &[u8] = b"last_purged";

/// A data dir's place in Raft, as [`LogStore::position`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Starts on record, this one included.
    pub boots: u64,
    /// The term of the saved vote (0: none saved).
    pub vote_term: u64,
    /// The index of the last log entry, or of the last purged one.
    pub last_log_index: Option<u64>,
}

/// The sled-backed Raft log. Cheap to clone: every clone shares the same sled
/// trees, which is how openraft's log reader is made.
#[derive(Debug, Clone)]
pub struct LogStore {
    /// Syncs appends on its own thread; started by the first append. Not
    /// shared by clones (see [`FlusherSlot`]).
    flusher: FlusherSlot,
    /// Told how long each append took to become durable.
    pub(crate) append_timer: Option<AppendTimer>,
    /// Syncs the whole database (sled flushes every tree at once).
    sync: Arc<DiskSync>,
    /// Raises the identity file's floor as votes and commits are synced.
    /// `None` only inside [`crate::node_db::open`], which attaches it once
    /// the dir passed its checks, before handing the store out.
    floor: Option<Arc<FloorKeeper>>,
    /// The committed index openraft last saved.
    pub(crate) committed: Arc<AtomicU64>,
    /// The node this store belongs to, once known: entries another node
    /// proposed are synced in place (see [`LogStore::append`]).
    own_id: Option<NodeId>,
    /// Index → entry.
    log: sled::Tree,
    /// Vote, committed and last purged log ids.
    meta: sled::Tree,
}

impl LogStore {
    /// Opens the log trees of `db` and checks every entry (see
    /// [`LogStore::verify`]).
    pub(crate) fn open(db: &sled::Db, sync: Arc<DiskSync>) -> Result<Self, Error> {
        let store = Self {
            flusher: FlusherSlot(None),
            append_timer: None,
            sync,
            floor: None,
            committed: Arc::default(),
            own_id: None,
            log: db.open_tree(LOG_TREE)?,
            meta: db.open_tree(RAFT_META_TREE)?,
        };
        store.verify()?;
        let committed = store.read_committed_id()?.map_or(0, |c| c.index);
        store.committed.store(committed, Ordering::SeqCst);
        Ok(store)
    }

    /// Tells `timer` how long each append takes to become durable.
    pub fn with_append_timer(mut self, timer: AppendTimer) -> Self {
        self.append_timer = Some(timer);
        self
    }

    /// Raises `floor` from now on as votes and commits are synced; the
    /// store belongs to node `own_id`.
    pub(crate) fn with_floor(mut self, floor: Arc<FloorKeeper>, own_id: NodeId) -> Self {
        self.floor = Some(floor);
        self.own_id = Some(own_id);
        self
    }

    /// Reads every entry once, checking its checksum, that it decodes and
    /// sits under its own index, and that the indexes after the purge point
    /// follow each other without a gap.
    ///
    /// A gap, or an entry that fails its checksum, cannot come from a crash
    /// or a power loss: entries are inserted in index order and synced
    /// before openraft hears of them, and sled recovers its log up to the
    /// first incomplete write, so a crash leaves a prefix. Either is damage,
    /// and the entries involved may have been acknowledged, so the store is
    /// refused rather than repaired.
    fn verify(&self) -> Result<(), Error> {
        let purged = self.last_purged()?.map(|id| id.index);
        let from = purged.map_or(Bound::Unbounded, |p| Bound::Excluded(index_key(p)));
        let mut expected = purged.map(|p| p + 1);
        for item in self.log.range((from, Bound::Unbounded)) {
            let (key, value) = item?;
            let index = decode_entry(&key, &value)?.log_id.index;
            if let Some(e) = expected.filter(|e| *e != index) {
                return Err(Error::Corrupt(format!(
                    "the Raft log jumps from index {} to {index}: entries are missing",
                    e.saturating_sub(1)
                )));
            }
            expected = Some(index + 1);
        }
        Ok(())
    }

    /// The newest membership in the log, if the log (after its last purge)
    /// holds one. Reads backwards from the end; for checks at start.
    pub fn last_membership(&self) -> Result<Option<Membership>, Error> {
        for item in self.log.iter().rev() {
            let (key, value) = item?;
            if let EntryPayload::Membership(m) = decode_entry(&key, &value)?.payload {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }

    /// Makes every write so far durable (the whole node database, not only
    /// the log).
    pub async fn flush(&self) -> Result<(), Error> {
        self.sync.sync_async().await
    }

    /// Makes every write durable and records the exact floor of a clean
    /// shutdown in the identity file. Call it once Raft has stopped.
    pub async fn close(&self) -> Result<(), Error> {
        self.sync_then(|store, floor| {
            let last = store.last_entry_id()?.map_or(0, |id| id.index);
            floor.close(last)
        })
        .await
    }

    /// Gives up on the data dir after its storage failed, so that stopping
    /// the node never waits on it (see [`DiskSync::abandon`]).
    pub fn abandon(&self) {
        self.sync.abandon();
    }

    /// The cluster id the data dir records, if any.
    pub fn cluster_id(&self) -> Option<uuid::Uuid> {
        self.floor.as_ref().and_then(|f| f.cluster_id())
    }

    /// How many times a node has started on this data dir, this start
    /// included.
    pub fn boots(&self) -> u64 {
        self.floor.as_ref().map_or(0, |f| f.boots())
    }

    /// What this dir durably holds of its node's place in Raft: how often
    /// it started, its saved vote's term and its last log index. A starting
    /// node compares it with what its peers saw of it (raft's `rollback`).
    pub fn position(&self) -> Result<Position, Error> {
        let last_entry = self.last_entry_id()?.map(|id| id.index);
        let purged = self.last_purged()?.map(|id| id.index);
        Ok(Position {
            boots: self.boots(),
            vote_term: self.vote()?.map_or(0, |v| v.leader_id().term),
            last_log_index: last_entry.max(purged),
        })
    }

    /// Records the data dir's cluster id durably; refuses to replace a
    /// different one.
    pub async fn record_cluster_id(&self, cluster_id: uuid::Uuid) -> Result<(), Error> {
        let floor = self.floor.clone();
        tokio::task::spawn_blocking(move || match floor {
            Some(floor) => floor.record_cluster_id(cluster_id),
            None => Ok(()),
        })
        .await
        .map_err(|e| Error::Worker(e.to_string()))?
    }

    /// From which applied membership on (its log index) one without this
    /// node means it was removed; `None` while a node started with `--join`
    /// has not yet applied a membership that lists it.
    pub fn admitted_at(&self) -> Option<u64> {
        match &self.floor {
            Some(floor) => floor.admitted_at(),
            None => Some(0),
        }
    }

    /// Records durably that this node, started with `--join`, applied a
    /// membership listing it at log `index` (the first call wins).
    pub async fn record_admission(&self, index: u64) -> Result<(), Error> {
        let floor = self.floor.clone();
        tokio::task::spawn_blocking(move || match floor {
            Some(floor) => floor.record_admission(index),
            None => Ok(()),
        })
        .await
        .map_err(|e| Error::Worker(e.to_string()))?
    }

    /// A clone for reading (without the flusher).
    fn reader(&self) -> Self {
        self.clone()
    }

    /// This store's flusher, started on first use.
    fn flusher(&mut self) -> &Flusher {
        let reader = self.reader();
        self.flusher.0.get_or_insert_with(|| Flusher::start(reader))
    }

    /// On the blocking pool: [`LogStore::sync_with`].
    async fn sync_then<F>(&self, raise: F) -> Result<(), Error>
    where
        F: FnOnce(&LogStore, &FloorKeeper) -> Result<(), Error> + Send + 'static,
    {
        let store = self.clone();
        tokio::task::spawn_blocking(move || store.sync_with(raise))
            .await
            .map_err(|e| Error::Worker(e.to_string()))?
    }

    /// Syncs, then hands the identity file's floor keeper to `raise`
    /// (which a store without one skips). Blocks.
    pub(crate) fn sync_with<F>(&self, raise: F) -> Result<(), Error>
    where
        F: FnOnce(&LogStore, &FloorKeeper) -> Result<(), Error>,
    {
        self.sync.sync()?;
        match &self.floor {
            Some(floor) => raise(self, floor),
            None => Ok(()),
        }
    }

    fn read_meta<T: DeserializeOwned>(&self, key: &[u8], what: &str) -> Result<Option<T>, Error> {
        match self.meta.get(key)? {
            Some(bytes) => Ok(Some(decode(what, &bytes)?)),
            None => Ok(None),
        }
    }

    fn write_meta<T: Serialize>(&self, key: &[u8], what: &str, value: &T) -> Result<(), Error> {
        self.meta.insert(key, encode(what, value)?)?;
        Ok(())
    }

    /// The last purged log id: entries up to it are covered by a snapshot.
    /// Records the log as purged up to `log_id` in a new dir whose snapshot
    /// covers it (a restore). Not synced: the caller syncs.
    pub(crate) fn seed_purged(&self, log_id: LogId) -> Result<(), Error> {
        self.write_meta(LAST_PURGED_KEY, "last purged log id", &log_id)
    }

    pub(crate) fn last_purged(&self) -> Result<Option<LogId>, Error> {
        self.read_meta(LAST_PURGED_KEY, "last purged log id")
    }

    /// The saved vote.
    pub(crate) fn vote(&self) -> Result<Option<Vote>, Error> {
        self.read_meta(VOTE_KEY, "vote")
    }

    /// The committed log id openraft last saved.
    pub(crate) fn read_committed_id(&self) -> Result<Option<LogId>, Error> {
        let committed: Option<Option<LogId>> = self.read_meta(COMMITTED_KEY, "committed log id")?;
        Ok(committed.flatten())
    }

    /// The log id of the newest entry still in the tree.
    pub(crate) fn last_entry_id(&self) -> Result<Option<LogId>, Error> {
        match self.log.last()? {
            Some((key, value)) => Ok(Some(decode_entry(&key, &value)?.log_id)),
            None => Ok(None),
        }
    }

    /// Removes every entry whose key falls in `range`, as one batch.
    fn remove_range<R: RangeBounds<[u8; 8]>>(&self, range: R) -> Result<(), Error> {
        let mut batch = sled::Batch::default();
        for item in self.log.range(range) {
            let (key, _) = item?;
            batch.remove(key);
        }
        self.log.apply_batch(batch)?;
        Ok(())
    }

    /// Inserts `entries` one by one, in index order; the caller flushes.
    /// Returns the last index inserted and how many entries.
    ///
    /// Not a `sled::Batch`: sled's `apply_batch` seals and writes the
    /// current IO buffer before and after its batch manifest, so a
    /// one-entry append cost three IO-buffer writes (three `pwrite` +
    /// `sync_file_range`, each handed to sled's IO thread pool) instead of
    /// the one its flush needs. Atomicity is not needed: openraft hears of
    /// the entries only after the flush, and a crash before it leaves a
    /// prefix of them ([`LogStore::verify`] refuses anything else).
    fn insert_entries<I: IntoIterator<Item = Entry>>(
        &self,
        entries: I,
    ) -> Result<(Option<LogId>, usize), Error> {
        let mut last = None;
        let mut count = 0;
        for entry in entries {
            last = Some(entry.log_id);
            count += 1;
            let index = entry.log_id.index;
            self.log
                .insert(index_key(index), encode(&entry_name(index), &entry)?)?;
        }
        Ok((last, count))
    }
}

/// The flusher of one store. A clone of the store does not share it: the
/// flusher thread holds a clone itself, and ends when the store that
/// started it is dropped.
#[derive(Debug)]
struct FlusherSlot(Option<Flusher>);

impl Clone for FlusherSlot {
    fn clone(&self) -> Self {
        FlusherSlot(None)
    }
}

/// How errors name the entry at `index`.
fn entry_name(index: u64) -> String {
    format!("log entry {index}")
}

/// The sled key of log index `index`.
fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

fn key_bound(bound: Bound<&u64>) -> Bound<[u8; 8]> {
    match bound {
        Bound::Included(i) => Bound::Included(index_key(*i)),
        Bound::Excluded(i) => Bound::Excluded(index_key(*i)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The log index a `log` tree key stands for.
fn decode_index(key: &[u8]) -> Result<u64, Error> {
    <[u8; 8]>::try_from(key)
        .map(u64::from_be_bytes)
        .map_err(|_| Error::Corrupt(format!("log key of {} bytes", key.len())))
}

/// Decodes a stored entry and checks it sits under its own index.
fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry, Error> {
    let index = decode_index(key)?;
    let entry: Entry = decode(&entry_name(index), value)?;
    if entry.log_id.index != index {
        return Err(Error::Corrupt(format!(
            "log entry {} stored under index {index}",
            entry.log_id.index
        )));
    }
    Ok(entry)
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        let keys = (key_bound(range.start_bound()), key_bound(range.end_bound()));
        let mut entries = Vec::new();
        for item in self.log.range(keys) {
            let (key, value) = item.map_err(Error::from)?;
            entries.push(decode_entry(&key, &value)?);
        }
        Ok(entries)
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, io::Error> {
        Ok(self.vote()?)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, io::Error> {
        let last_purged_log_id = self.last_purged()?;
        let last_entry = self.last_entry_id()?;
        // After a purge the tree may be empty; the purged id is then the last.
        // (`None` orders below any `Some`, and a purge interrupted before its
        // removals landed can leave entries at or below the purged id.)
        let last_log_id = std::cmp::max(last_entry, last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.reader()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), io::Error> {
        self.write_meta(VOTE_KEY, "vote", vote)?;
        let term = vote.leader_id().term;
        Ok(self
            .sync_then(move |_, floor| floor.vote_synced(term))
            .await?)
    }

    /// Not synced on its own: a committed id lost in a crash is only a hint
    /// lost (openraft re-learns it), and the next log sync persists it. The
    /// identity file's floor, which open checks the log against, only ever
    /// records a committed index whose entry was synced here.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        if let Some(c) = committed {
            self.committed.fetch_max(c.index, Ordering::SeqCst);
        }
        Ok(self.write_meta(COMMITTED_KEY, "committed log id", &committed)?)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.read_committed_id()?)
    }

    /// Inserts the entries and has them synced; `callback` tells openraft
    /// once they are on stable storage, and nothing counts towards a commit
    /// before it fires.
    ///
    /// Entries this node proposed go to the flusher thread and the append
    /// returns before their sync, so the leader replicates an entry while
    /// its own copy is being written. Entries another node proposed come in
    /// an AppendEntries call whose answer waits for the sync anyway: they
    /// are synced here, on the Raft core's task (docs/decisions.md).
    async fn append<I>(
        &mut self,
        entries: I,
        callback: IOFlushed<TypeConfig>,
    ) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let started = Instant::now();
        let (last, count) = self.insert_entries(entries)?;
        let proposer = last.map(|id| id.leader_id.node_id);
        let last = last.map(|id| id.index);
        if proposer.is_some() && proposer != self.own_id {
            callback.io_completed(flusher::sync_appended(self, &[(last, count, started)]));
        } else {
            self.flusher().flush(last, count, started, callback);
        }
        Ok(())
    }

    /// Removes every entry after `last_log_id` (all of them for `None`),
    /// durably.
    async fn truncate_after(&mut self, last_log_id: Option<LogId>) -> Result<(), io::Error> {
        let from = last_log_id.map_or(0, |id| id.index + 1);
        self.remove_range(index_key(from)..)?;
        Ok(self.flush().await?)
    }

    /// Records `log_id` as the last purged id, then removes every entry up
    /// to and including it. The id is written first so that a crash in
    /// between never leaves the log state without its purge point.
    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        self.write_meta(LAST_PURGED_KEY, "last purged log id", &log_id)?;
        self.remove_range(..=index_key(log_id.index))?;
        Ok(self.flush().await?)
    }
}
