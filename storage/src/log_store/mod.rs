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
//!
//! # Layout
//! - this file: the store itself — opening, reading and writing records,
//!   syncing the log and sled's database.
//! - `raft_storage`: openraft's log storage API on the store.
//! - `dir_record`: what the data dir records of its node (cluster id,
//!   starts, admission, [`Position`]).
//! - `wal`, `record`, `state`, `reader`: the segment files, the records
//!   framed in them, what the records add up to, and reading entries back.
//! - `flusher`: syncing appends on a thread of their own.

mod dir_record;
mod flusher;
#[cfg(feature = "format6-writer")]
pub mod format6;
mod raft_storage;
mod reader;
mod record;
mod state;
#[cfg(test)]
mod tests;
pub mod upgrade;
mod wal;

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::disk_sync::{io_error, DiskSync};
use crate::error::Error;
use crate::identity::FloorKeeper;
use crate::types::{Entry, EntryPayload, LogId, Membership, NodeId, Vote};
pub use dir_record::Position;
pub use flusher::AppendTimer;
use flusher::Flusher;
use record::Record;
use wal::Wal;
pub use wal::WAL_DIR;

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
