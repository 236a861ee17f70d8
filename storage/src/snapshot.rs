//! Snapshots: what their bytes hold, where the current one is kept (the
//! `snapshot` tree), and the [`SnapshotBuilder`] openraft runs to make one.

use std::io::{self, Cursor};
use std::sync::Arc;

use openraft::RaftSnapshotBuilder;
use serde::{Deserialize, Serialize};

use crate::codec::{decode, encode, seal, unseal};
use crate::disk_sync::DiskSync;
use crate::error::{from_json, Error};
use crate::node_db::SNAPSHOT_TREE;
use crate::sm_store::{read_state, AppliedMeta, SharedMeta, SharedState};
use crate::state::{StateParts, StatePartsView};
use crate::types::{LogId, Snapshot, SnapshotData, SnapshotMeta, StoredMembership, TypeConfig};

const META_KEY: &[u8] = b"meta";
const DATA_KEY: &[u8] = b"data";

/// A stored snapshot: its meta and its bytes.
pub(crate) type StoredSnapshot = (SnapshotMeta, Vec<u8>);

/// The bytes of a snapshot: the whole lock state and the log position it is
/// at, in postcard after a marker byte (earlier builds: JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SnapshotPayload {
    /// Last entry whose effects are in `state`.
    pub(crate) last_applied: Option<LogId>,
    /// Last membership applied.
    pub(crate) membership: StoredMembership,
    /// Every record.
    pub(crate) state: StateParts,
}

/// [`SnapshotPayload`] with the state borrowed: what a snapshot is encoded
/// from, under the state's read lock.
#[derive(Serialize)]
struct SnapshotPayloadView<'a> {
    last_applied: Option<LogId>,
    membership: &'a StoredMembership,
    state: StatePartsView<'a>,
}

/// The first byte of snapshot bytes in postcard. Earlier builds wrote
/// snapshots as JSON, whose first byte is `{`; both are read.
const POSTCARD_SNAPSHOT: u8 = 0xB1;

/// Encodes snapshot bytes: [`POSTCARD_SNAPSHOT`], then postcard.
fn encode_payload<T: Serialize>(payload: &T) -> Result<Vec<u8>, Error> {
    let mut out = vec![POSTCARD_SNAPSHOT];
    postcard::to_io(payload, &mut out).map_err(|e| Error::encode("snapshot", e))?;
    Ok(out)
}

impl SnapshotPayload {
    /// The bytes of this snapshot.
    pub(crate) fn encode(&self) -> Result<Vec<u8>, Error> {
        encode_payload(self)
    }

    /// Decodes received or stored snapshot bytes (postcard, or the JSON of
    /// earlier builds), checking they are at the log position `meta` says.
    pub(crate) fn decode(meta: &SnapshotMeta, data: &[u8]) -> Result<Self, Error> {
        let payload: Self = match data.split_first() {
            Some((&POSTCARD_SNAPSHOT, rest)) => {
                postcard::from_bytes(rest).map_err(|e| Error::decode("snapshot", e))?
            }
            Some((b'{', _)) => from_json("snapshot", data)?,
            _ => return Err(Error::corrupt("snapshot", "neither postcard nor JSON")),
        };
        if payload.last_applied != meta.last_log_id {
            return Err(Error::Corrupt(format!(
                "snapshot holds the state at {:?} but its meta says {:?}",
                payload.last_applied, meta.last_log_id
            )));
        }
        Ok(payload)
    }
}

/// The current snapshot in sled. (openraft 0.10 names a snapshot by the
/// log id it is at; the snapshot counter earlier builds kept under
/// `counter` is no longer written or read.)
#[derive(Debug, Clone)]
pub(crate) struct SnapshotStore {
    tree: sled::Tree,
}

impl SnapshotStore {
    pub(crate) fn open(db: &sled::Db) -> Result<Self, Error> {
        Ok(Self {
            tree: db.open_tree(SNAPSHOT_TREE)?,
        })
    }

    /// Stores `meta` and `data` as the current snapshot (one batch). Not
    /// flushed: the caller flushes once everything it changed is written.
    pub(crate) fn store(&self, meta: &SnapshotMeta, data: &[u8]) -> Result<(), Error> {
        let mut batch = sled::Batch::default();
        batch.insert(META_KEY, encode("snapshot meta", meta)?);
        batch.insert(DATA_KEY, seal(data));
        self.tree.apply_batch(batch)?;
        Ok(())
    }

    /// The current snapshot, if one was built or installed.
    pub(crate) fn current(&self) -> Result<Option<StoredSnapshot>, Error> {
        let (meta, data) = match (self.tree.get(META_KEY)?, self.tree.get(DATA_KEY)?) {
            (Some(meta), Some(data)) => (meta, data),
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(Error::corrupt("snapshot", "its meta has no data")),
            (None, Some(_)) => return Err(Error::corrupt("snapshot", "its data has no meta")),
        };
        let meta: SnapshotMeta = decode("snapshot meta", &meta)?;
        let data = unseal(&format!("snapshot at {}", index_of(&meta)), &data)?.to_vec();
        Ok(Some((meta, data)))
    }
}

/// The log index a snapshot is at (0 before any entry).
fn index_of(meta: &SnapshotMeta) -> u64 {
    meta.last_log_id.map_or(0, |l| l.index)
}

/// Builds snapshots of the state machine, possibly while it keeps applying.
#[derive(Clone)]
pub struct SnapshotBuilder {
    pub(crate) sync: Arc<DiskSync>,
    pub(crate) state: SharedState,
    pub(crate) meta: SharedMeta,
    pub(crate) snapshots: SnapshotStore,
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
        let data = encode_payload(&SnapshotPayloadView {
            last_applied: meta.last_applied,
            membership: &meta.membership,
            state: state.parts_view(),
        })?;
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
