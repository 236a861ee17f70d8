//! What the log holds, rebuilt record by record: the same rules run when a
//! record is written and when it is replayed at open, so a log that was
//! accepted while running is read back exactly.

use std::collections::VecDeque;

use super::record::{Checkpoint, Record};
use crate::types::{LogId, Vote};

/// Where an entry's record sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Loc {
    /// The entry's log id.
    pub(super) log_id: LogId,
    /// The segment holding it.
    pub(super) seq: u64,
    /// The offset of its frame in that segment.
    pub(super) offset: u64,
    /// The length of its frame.
    pub(super) len: u32,
}

/// The vote, the saved ids, and where each entry after the purge point is.
#[derive(Debug, Default)]
pub(super) struct LogState {
    pub(super) vote: Option<Vote>,
    pub(super) committed: Option<LogId>,
    pub(super) purged: Option<LogId>,
    /// The entries after the purge point, in index order, without gaps.
    pub(super) entries: VecDeque<Loc>,
    /// Replay only: the last entry of the segments before the first one
    /// present, as that segment's start recorded it. Entries up to it are
    /// missing unless the log was purged past it by the end of the replay.
    pub(super) missing_up_to: Option<LogId>,
}

impl LogState {
    /// The last entry's id, counting the missing ones.
    pub(super) fn last_entry(&self) -> Option<LogId> {
        self.entries.back().map(|l| l.log_id).or(self.missing_up_to)
    }

    /// The log's state as a new segment's start records it.
    pub(super) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            vote: self.vote,
            committed: self.committed,
            purged: self.purged,
            last: self.last_entry(),
        }
    }

    /// Checks that an entry at `index` may be appended now.
    pub(super) fn check_next(&self, index: u64) -> Result<(), String> {
        let expected = match (self.last_entry(), self.purged) {
            (Some(last), _) => Some(last.index + 1),
            (None, Some(purged)) => Some(purged.index + 1),
            (None, None) => None,
        };
        match expected {
            Some(e) if e != index => Err(format!(
                "entry {index} does not follow the log's last index {}: entries are missing \
                 or repeated",
                e - 1
            )),
            _ => Ok(()),
        }
    }

    /// Applies `record`, found at `at` (segment, offset, frame length).
    /// `first` says whether it starts the first segment of a replay.
    pub(super) fn apply(
        &mut self,
        record: &Record,
        at: (u64, u64, u32),
        first: bool,
    ) -> Result<(), String> {
        let (seq, offset, len) = at;
        match record {
            Record::Start { state, .. } if first => {
                self.vote = state.vote;
                self.committed = state.committed;
                self.purged = state.purged;
                self.missing_up_to = state.last.filter(|l| Some(l.index) > self.purged_index());
            }
            Record::Start { state, .. } => {
                if state.last != self.last_entry() {
                    return Err(format!(
                        "segment {seq} starts after entry {:?}, the segment before it ends \
                         at {:?}",
                        state.last.map(|l| l.index),
                        self.last_entry().map(|l| l.index)
                    ));
                }
            }
            Record::Entry(entry) => {
                let index = entry.log_id.index;
                if Some(index) <= self.purged_index() && self.entries.is_empty() {
                    // Purged after it was written: what a purge whose
                    // segment deletion did not happen leaves.
                    return Ok(());
                }
                self.check_next(index)?;
                self.entries.push_back(Loc {
                    log_id: entry.log_id,
                    seq,
                    offset,
                    len,
                });
            }
            Record::Vote(vote) => self.vote = Some(*vote),
            Record::Committed(committed) => self.committed = *committed,
            Record::Purged(id) => {
                self.purged = std::cmp::max(self.purged, Some(*id));
                while self
                    .entries
                    .front()
                    .is_some_and(|l| l.log_id.index <= id.index)
                {
                    self.entries.pop_front();
                }
                if self.missing_up_to.is_some_and(|m| m.index <= id.index) {
                    self.missing_up_to = None;
                }
            }
            Record::TruncatedAfter(after) => {
                let keep = |l: &LogId| after.is_some_and(|a| l.index <= a.index);
                while self.entries.back().is_some_and(|l| !keep(&l.log_id)) {
                    self.entries.pop_back();
                }
                if self.missing_up_to.is_some_and(|m| !keep(&m)) {
                    self.missing_up_to = *after;
                }
            }
        }
        Ok(())
    }

    fn purged_index(&self) -> Option<u64> {
        self.purged.map(|p| p.index)
    }

    /// The location of entry `index`, if the log holds it.
    pub(super) fn find(&self, index: u64) -> Option<usize> {
        let first = self.entries.front()?.log_id.index;
        let at = usize::try_from(index.checked_sub(first)?).ok()?;
        (at < self.entries.len()).then_some(at)
    }
}
