//! openraft's storage conformance suite, run against the sled stores.

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::{ErrorSubject, ErrorVerb, StorageError};
use raftlock_storage::{open, Bootstrap, LogStore, OpenOptions, StateMachineStore, TypeConfig};
use tempfile::TempDir;

/// Opens the stores in a fresh temporary directory each build; the
/// directory lives as long as the suite keeps the guard.
struct SledBuilder;

fn build_err(e: impl Into<std::io::Error>) -> StorageError<TypeConfig> {
    StorageError::from_io_error(ErrorSubject::Store, ErrorVerb::Write, e.into())
}

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for SledBuilder {
    async fn build(
        &self,
    ) -> Result<(TempDir, LogStore, StateMachineStore), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().map_err(build_err)?;
        // Nobody listens to applied events here; sends to a closed channel
        // are ignored by the store.
        let (events, _) = tokio::sync::mpsc::unbounded_channel();
        let (log, sm) = open(
            dir.path(),
            &OpenOptions::new(1, Bootstrap::SingleNode),
            events,
        )
        .map_err(build_err)?;
        Ok((dir, log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_storage_suite() -> Result<(), Box<dyn std::error::Error>> {
    Suite::test_all(SledBuilder).await?;
    Ok(())
}
