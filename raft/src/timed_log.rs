//! The log store as openraft sees it: the sled log store, with each append
//! timed for the `raftlock_raft_log_append_seconds` histogram. The store
//! writes and syncs inside `append`, so its time is what a write waits for
//! on this node's disk. Timing lives here so storage needs no metrics.

use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::Arc;
use std::time::Instant;

use openraft::storage::{LogFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{Entry, LogId, OptionalSend, StorageError, Vote};

use raftlock_storage::{LogStore, NodeId, TypeConfig};

use crate::metrics::NodeMetrics;

/// [`LogStore`] with its appends timed.
#[derive(Clone)]
pub(crate) struct TimedLogStore {
    /// This node, for log lines.
    id: NodeId,
    inner: LogStore,
    metrics: Arc<NodeMetrics>,
}

impl TimedLogStore {
    pub(crate) fn new(id: NodeId, inner: LogStore, metrics: Arc<NodeMetrics>) -> Self {
        TimedLogStore { id, inner, metrics }
    }
}

impl RaftLogReader<TypeConfig> for TimedLogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<NodeId>> {
        self.inner.try_get_log_entries(range).await
    }
}

impl RaftLogStorage<TypeConfig> for TimedLogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<NodeId>> {
        self.inner.get_log_state().await
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.inner.get_log_reader().await
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.save_vote(vote).await
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>, StorageError<NodeId>> {
        self.inner.read_vote().await
    }

    async fn save_committed(
        &mut self,
        committed: Option<LogId<NodeId>>,
    ) -> Result<(), StorageError<NodeId>> {
        self.inner.save_committed(committed).await
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>, StorageError<NodeId>> {
        self.inner.read_committed().await
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<NodeId>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry<TypeConfig>> = entries.into_iter().collect();
        let count = entries.len();
        let started = Instant::now();
        let result = self.inner.append(entries, callback).await;
        match &result {
            Ok(()) => self.metrics.on_log_append(count, started.elapsed()),
            Err(e) => tracing::error!(node = self.id, error = %e, entries = count, "storage error"),
        }
        result
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.truncate(log_id).await
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<(), StorageError<NodeId>> {
        self.inner.purge(log_id).await
    }
}
