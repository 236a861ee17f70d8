//! openraft's storage conformance suite, run against the sled stores.

use openraft::testing::{StoreBuilder, Suite};
use openraft::{StorageError, StorageIOError};
use raftlock_storage::{
    open, Bootstrap, LogStore, NodeId, OpenOptions, StateMachineStore, TypeConfig,
};
use tempfile::TempDir;

/// Opens the stores in a fresh temporary directory each build; the
/// directory lives as long as the suite keeps the guard.
struct SledBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for SledBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<NodeId>> {
        let dir = tempfile::tempdir().map_err(|e| StorageIOError::write(&e))?;
        // Nobody listens to applied events here; sends to a closed channel
        // are ignored by the store.
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let (log, sm) = open(
            dir.path(),
            &OpenOptions::new(1, Bootstrap::SingleNode),
            events,
        )
        .map_err(|e| StorageIOError::write(&e))?;
        Ok((dir, log, sm))
    }
}

/// `Suite::test_all` makes its own tokio runtime, so this is a plain test.
#[test]
fn openraft_storage_suite() -> Result<(), Box<dyn std::error::Error>> {
    Suite::test_all(SledBuilder)?;
    Ok(())
}
