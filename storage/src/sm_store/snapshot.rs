//! Snapshots: the [`SnapshotBuilder`] openraft runs to make one, and where
//! it finds the cluster id it stamps them with (`ClusterSource`).
//!
//! # Layout
//! - `payload`: what a snapshot's bytes hold, their frame and checks.
//! - `store`: where the current snapshot is kept (the `snapshot` tree).

use std::io::{self, Cursor};
use std::sync::{Arc, OnceLock};

use openraft::RaftSnapshotBuilder;
use uuid::Uuid;

use super::builds::BuildInFlight;
use super::{read_state, AppliedMeta, SharedMeta, SharedState};
use crate::disk_sync::DiskSync;
use crate::error::Error;
use crate::log_store::LogStore;
use crate::types::{Snapshot, SnapshotData, SnapshotMeta, TypeConfig};
pub(crate) use payload::SnapshotPayload;
use payload::{encode_payload, SnapshotPayloadView};
pub use payload::{encode_snapshot, verify_snapshot};
pub(crate) use store::SnapshotStore;

mod payload;
mod store;

/// Where the state machine finds the cluster id it stamps snapshots with
/// and checks installed ones against: the data dir's identity, read through
/// the log store once the node hands it over
/// ([`crate::StateMachineStore::check_cluster_with`]). Clones share it.
#[derive(Clone, Default)]
pub(crate) struct ClusterSource(Arc<OnceLock<LogStore>>);

impl ClusterSource {
    /// The cluster id, if the data dir records one.
    pub(crate) fn get(&self) -> Option<Uuid> {
        self.0.get().and_then(LogStore::cluster_id)
    }

    /// Reads the cluster id through `log` from now on (the first call wins).
    pub(crate) fn set(&self, log: LogStore) {
        // A second call names the same data dir: keeping the first is right.
        let _ = self.0.set(log);
    }
}

/// Builds snapshots of the state machine, possibly while it keeps applying.
#[derive(Clone)]
pub struct SnapshotBuilder {
    pub(crate) sync: Arc<DiskSync>,
    pub(crate) cluster: ClusterSource,
    pub(crate) state: SharedState,
    pub(crate) meta: SharedMeta,
    pub(crate) snapshots: SnapshotStore,
    /// Counts this build while it holds the storage; last, so it drops
    /// after the handles above.
    pub(crate) _in_flight: BuildInFlight,
}

impl SnapshotBuilder {
    /// Encodes the state and its applied meta under the state's read lock,
    /// so the two agree (apply updates both under the write lock), straight
    /// from the state rather than from a copy of it. For W7's 100 000 leases
    /// and locks (`cargo run --release -p raftlock-storage --example
    /// state_memory`) that is 12.7 MB of postcard where earlier builds held
    /// a 37.5 MB copy plus 47.4 MB of JSON; applies wait somewhat longer
    /// (95–170 ms against 77–99 ms for the copy, on a busy 2-core machine),
    /// once per snapshot.
    fn encode(&self) -> Result<(SnapshotMeta, Vec<u8>), Error> {
        let state = read_state(&self.state)?;
        let meta: AppliedMeta = self.meta.lock().map_err(|_| Error::Poisoned)?.clone();
        let data = encode_payload(
            &SnapshotPayloadView {
                last_applied: meta.last_applied,
                membership: &meta.membership,
                state: state.parts_view(),
            },
            self.cluster.get(),
        )?;
        drop(state);
        let meta = SnapshotMeta {
            last_log_id: meta.last_applied,
            last_membership: meta.membership,
        };
        Ok((meta, data))
    }

    /// Encodes and stores a snapshot (blocking work: the encoding, a large
    /// sled insert).
    fn write(&self) -> Result<(SnapshotMeta, Vec<u8>), Error> {
        let (meta, data) = self.encode()?;
        self.snapshots.store(&meta, &data)?;
        Ok((meta, data))
    }

    async fn build(&mut self) -> Result<Snapshot, Error> {
        // On the blocking pool: with a large state this takes long enough to
        // starve the runtime worker it would otherwise occupy.
        let builder = self.clone();
        let (meta, data) = tokio::task::spawn_blocking(move || builder.write())
            .await
            .unwrap_or_else(|e| Err(Error::Worker(e.to_string())))?;
        // The snapshot is the state's only copy on disk: it must be durable
        // before openraft may purge the logs it covers.
        self.sync.sync_async().await?;
        Ok(Snapshot {
            meta,
            snapshot: Cursor::new(data),
        })
    }
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    type SnapshotData = SnapshotData;

    async fn build_snapshot(&mut self) -> Result<Snapshot, io::Error> {
        Ok(self.build().await?)
    }
}
