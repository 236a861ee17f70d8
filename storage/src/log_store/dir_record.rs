//! What the data dir records of its node, read and written through the
//! store: its cluster id, how often a node started on it, when a joining
//! node was admitted, and its place in Raft ([`Position`]). The identity
//! file holds them ([`FloorKeeper`](crate::identity::FloorKeeper)); the store offers them because it is
//! the handle the node keeps on its dir. Apart from the log's own
//! records, which the store writes to its segments.

use crate::error::Error;

use super::LogStore;

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

impl LogStore {
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
}
