//! The Raft log and vote store for openraft's storage-v2 API, on a
//! write-ahead log of its own (the data dir's `wal/` directory).
//!
//! Every change — an appended entry, the vote, the committed and last
//! purged log ids, a truncation — is a checksummed record appended to the
//! last segment file with one `pwrite`; a sync is one `fdatasync` of that
//! file (`wal.rs`). The store keeps where each entry's record is and reads
//! entries back with `pread`. Everything openraft must be able to trust
//! after a power loss is synced before openraft hears it was done. sled
//! keeps only the state machine's snapshots ([`crate::sm_store`]).
//!
//! A data dir of the earlier layout (the log in sled's `log` and
//! `raft_meta` trees) is moved across when it is opened: [`upgrade`]
//! (test builds can write that layout: `format6`).

mod flusher;
#[cfg(feature = "format6-writer")]
pub mod format6;
mod reader;
mod record;
mod state;
#[cfg(test)]
mod tests;
pub mod upgrade;
mod wal;

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader};

use crate::disk_sync::{io_error, DiskSync};
use crate::error::Error;
use crate::identity::FloorKeeper;
use crate::types::{Entry, EntryPayload, LogId, Membership, NodeId, TypeConfig, Vote};
pub use flusher::AppendTimer;
use flusher::Flusher;
use record::Record;
use wal::Wal;
pub use wal::WAL_DIR;

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

/// The Raft log. Cheap to clone: every clone shares the same log, which is
/// how openraft's log reader is made.
#[derive(Debug, Clone)]
pub struct LogStore {
    /// Syncs appends on its own thread; started by the first append. Not
    /// shared by clones (see [`FlusherSlot`]).
    flusher: FlusherSlot,
    /// Told how long each append took to become durable.
    pub(crate) append_timer: Option<AppendTimer>,
    /// Syncs sled's database (the snapshots): [`LogStore::flush`] and
    /// [`LogStore::abandon`] cover the whole node.
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
    /// The write-ahead log: its files and what it holds.
    wal: Arc<Mutex<Wal>>,
}

impl LogStore {
    /// Opens the log in `dir` (creating it in a new dir), replaying and
    /// checking every record: see `wal.rs`. `sync` is the node's sled
    /// database, synced by [`LogStore::flush`] with the log.
    pub(crate) fn open(dir: &Path, sync: Arc<DiskSync>) -> Result<Self, Error> {
        let wal = Wal::open(dir, sync.mode())?;
        let committed = wal.state.committed.map_or(0, |c| c.index);
        Ok(Self {
            flusher: FlusherSlot(None),
            append_timer: None,
            sync,
            floor: None,
            committed: Arc::new(AtomicU64::new(committed)),
            own_id: None,
            wal: Arc::new(Mutex::new(wal)),
        })
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

    /// The newest membership in the log, if the log (after its last purge)
    /// holds one. Reads backwards from the end; for checks at start.
    pub fn last_membership(&self) -> Result<Option<Membership>, Error> {
        let Some(mut index) = self.last_entry_id()?.map(|l| l.index) else {
            return Ok(None);
        };
        loop {
            let Some(entry) = self.read_entries(index, index)?.pop() else {
                return Ok(None);
            };
            if let EntryPayload::Membership(m) = entry.payload {
                return Ok(Some(m));
            }
            match index.checked_sub(1) {
                Some(i) => index = i,
                None => return Ok(None),
            }
        }
    }

    /// Makes every write so far durable: the log, then sled's database.
    pub async fn flush(&self) -> Result<(), Error> {
        self.blocking(LogStore::sync_log).await?;
        self.sync.sync_async().await
    }

    /// Runs `work` on a clone of the store on tokio's blocking pool.
    async fn blocking<F>(&self, work: F) -> Result<(), Error>
    where
        F: FnOnce(&LogStore) -> Result<(), Error> + Send + 'static,
    {
        let store = self.reader();
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| Error::Worker(e.to_string()))?
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

    /// Syncs the log, then hands the identity file's floor keeper to
    /// `raise` (which a store without one skips). Blocks.
    pub(crate) fn sync_with<F>(&self, raise: F) -> Result<(), Error>
    where
        F: FnOnce(&LogStore, &FloorKeeper) -> Result<(), Error>,
    {
        self.sync_log()?;
        match &self.floor {
            Some(floor) => raise(self, floor),
            None => Ok(()),
        }
    }

    /// Makes every record written so far durable: one `fdatasync` of the
    /// last segment (rotation synced the ones before it), outside the
    /// log's lock so appends go on meanwhile. Blocks.
    fn sync_log(&self) -> Result<(), Error> {
        let target = self.locked()?.to_sync()?;
        match target {
            Some((file, path)) => file
                .sync_data()
                .map_err(|e| io_error(&path, "fdatasync", e)),
            None => Ok(()),
        }
    }

    /// The log, locked.
    fn locked(&self) -> Result<MutexGuard<'_, Wal>, Error> {
        self.wal.lock().map_err(|_| Error::Poisoned)
    }

    /// Records the log as purged up to `log_id` in a new dir whose snapshot
    /// covers it (a restore), durably.
    pub(crate) fn seed_purged(&self, log_id: LogId) -> Result<(), Error> {
        self.locked()?.write(vec![Record::Purged(log_id)])?;
        self.sync_log()
    }

    /// The last purged log id: entries up to it are covered by a snapshot.
    pub(crate) fn last_purged(&self) -> Result<Option<LogId>, Error> {
        Ok(self.locked()?.state.purged)
    }

    /// The saved vote.
    pub(crate) fn vote(&self) -> Result<Option<Vote>, Error> {
        Ok(self.locked()?.state.vote)
    }

    /// The committed log id openraft last saved.
    pub(crate) fn read_committed_id(&self) -> Result<Option<LogId>, Error> {
        Ok(self.locked()?.state.committed)
    }

    /// The log id of the newest entry still in the log.
    pub(crate) fn last_entry_id(&self) -> Result<Option<LogId>, Error> {
        Ok(self.locked()?.state.entries.back().map(|l| l.log_id))
    }

    /// The entries from `from` to `to` (both included) the log holds, read
    /// and checked outside the log's lock.
    fn read_entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, Error> {
        let located = self.locked()?.locate(from, to);
        reader::read(&located)
    }

    /// Writes `entries`, in index order, with one `pwrite`; the caller
    /// syncs. Returns the last id written and how many entries. Refuses,
    /// before writing anything, entries that do not follow the log's last.
    fn insert_entries<I: IntoIterator<Item = Entry>>(
        &self,
        entries: I,
    ) -> Result<(Option<LogId>, usize), Error> {
        let records: Vec<Record> = entries.into_iter().map(Record::Entry).collect();
        let last = records.iter().rev().find_map(|r| match r {
            Record::Entry(e) => Some(e.log_id),
            _ => None,
        });
        let count = records.len();
        let mut wal = self.locked()?;
        let mut previous: Option<u64> = None;
        for record in &records {
            if let Record::Entry(e) = record {
                let index = e.log_id.index;
                match previous {
                    None => wal.state.check_next(index).map_err(Error::Corrupt)?,
                    Some(p) if p.checked_add(1) == Some(index) => {}
                    Some(p) => {
                        return Err(Error::Corrupt(format!(
                            "entry {index} appended after entry {p}: the log would have a gap"
                        )))
                    }
                }
                previous = Some(index);
            }
        }
        if count > 0 {
            wal.write(records)?;
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

/// The first and last index a range of indexes covers, if any.
fn index_bounds<RB: RangeBounds<u64>>(range: &RB) -> Option<(u64, u64)> {
    let from = match range.start_bound() {
        Bound::Included(i) => *i,
        Bound::Excluded(i) => i.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let to = match range.end_bound() {
        Bound::Included(i) => *i,
        Bound::Excluded(i) => i.checked_sub(1)?,
        Bound::Unbounded => u64::MAX,
    };
    (from <= to).then_some((from, to))
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, io::Error> {
        match index_bounds(&range) {
            Some((from, to)) => Ok(self.read_entries(from, to)?),
            None => Ok(Vec::new()),
        }
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
        // After a purge the log may be empty; the purged id is then the last.
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
        self.locked()?.write(vec![Record::Vote(*vote)])?;
        let term = vote.leader_id().term;
        Ok(self
            .sync_then(move |_, floor| floor.vote_synced(term))
            .await?)
    }

    /// Written, not synced on its own: a committed id lost in a crash is
    /// only a hint lost (openraft re-learns it), and the next log sync
    /// persists it. The
    /// identity file's floor, which open checks the log against, only ever
    /// records a committed index whose entry was synced here.
    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), io::Error> {
        if let Some(c) = committed {
            self.committed.fetch_max(c.index, Ordering::SeqCst);
        }
        Ok(self.locked()?.write(vec![Record::Committed(committed)])?)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, io::Error> {
        Ok(self.read_committed_id()?)
    }

    /// Writes the entries and has them synced; `callback` tells openraft
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
        self.locked()?
            .write(vec![Record::TruncatedAfter(last_log_id)])?;
        Ok(self.blocking(LogStore::sync_log).await?)
    }

    /// Records `log_id` as the last purged id durably, then deletes the
    /// segments that hold nothing after it. A crash in between leaves
    /// segments whose entries the replay drops again.
    async fn purge(&mut self, log_id: LogId) -> Result<(), io::Error> {
        self.locked()?.write(vec![Record::Purged(log_id)])?;
        Ok(self
            .blocking(|store| {
                store.sync_log()?;
                store.locked()?.remove_purged_segments()
            })
            .await?)
    }
}
