//! openraft's log storage API on the store: the log reader, the log
//! state, the vote, and appending, truncating and purging, each durable
//! before openraft hears it was done. Apart from the store's own
//! methods because it translates openraft's calls (ranges, callbacks, IO
//! errors) to them.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::Ordering;
use std::time::Instant;

use openraft::storage::{IOFlushed, RaftLogStorage};
use openraft::{LogState, OptionalSend, RaftLogReader};

use crate::types::{Entry, LogId, TypeConfig, Vote};

use super::flusher;
use super::record::Record;
use super::LogStore;

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
