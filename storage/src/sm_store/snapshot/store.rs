//! Where the current snapshot is kept: one value in sled's `snapshot`
//! tree, its meta and its bytes together, sealed with a checksum; the
//! two keys of earlier builds are still read. Apart from the snapshot's
//! bytes, which it stores without reading them.

use crate::codec::{decode, encode, seal, unseal};
use crate::error::Error;
use crate::trees::SNAPSHOT_TREE;
use crate::types::SnapshotMeta;

/// The current snapshot: its meta and its bytes in one value (see
/// [`SnapshotStore::store`]).
const SNAPSHOT_KEY: &[u8] = b"current";
/// Where earlier builds kept the meta and the bytes, under two keys; read
/// while no [`SNAPSHOT_KEY`] is stored, removed once one is durable.
const META_KEY: &[u8] = b"meta";
const DATA_KEY: &[u8] = b"data";

/// A stored snapshot: its meta and its bytes.
pub(crate) type StoredSnapshot = (SnapshotMeta, Vec<u8>);

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

    /// Stores `meta` and `data` as the current snapshot, in one value
    /// under one key: after a power cut in the middle of a two-key batch,
    /// sled 0.34 was seen to recover the new meta beside the old data (a
    /// node then refused its dir). Not flushed: the caller flushes once
    /// everything it changed is written. The two keys of earlier builds are
    /// removed once a snapshot under this key is stored, so is durable: the
    /// caller flushes after every store.
    pub(crate) fn store(&self, meta: &SnapshotMeta, data: &[u8]) -> Result<(), Error> {
        if self.tree.contains_key(SNAPSHOT_KEY)? {
            self.tree.remove(META_KEY)?;
            self.tree.remove(DATA_KEY)?;
        }
        let meta = encode("snapshot meta", meta)?;
        let meta_len = u32::try_from(meta.len())
            .map_err(|_| Error::corrupt("snapshot meta", "longer than 4 GiB"))?;
        let mut value = Vec::with_capacity(4 + meta.len() + data.len());
        value.extend_from_slice(&meta_len.to_le_bytes());
        value.extend_from_slice(&meta);
        value.extend_from_slice(data);
        self.tree.insert(SNAPSHOT_KEY, seal(&value))?;
        Ok(())
    }

    /// The current snapshot, if one was built or installed.
    pub(crate) fn current(&self) -> Result<Option<StoredSnapshot>, Error> {
        let Some(value) = self.tree.get(SNAPSHOT_KEY)? else {
            return self.current_of_earlier_builds();
        };
        let value = unseal("snapshot", &value)?;
        let (meta_len, rest) = value
            .split_first_chunk::<4>()
            .ok_or_else(|| Error::corrupt("snapshot", "shorter than its meta's length"))?;
        let meta_len = u32::from_le_bytes(*meta_len) as usize;
        if rest.len() < meta_len {
            return Err(Error::corrupt("snapshot", "shorter than its meta"));
        }
        let (meta, data) = rest.split_at(meta_len);
        let meta: SnapshotMeta = decode("snapshot meta", meta)?;
        Ok(Some((meta, data.to_vec())))
    }

    /// The current snapshot as earlier builds stored it, under two keys.
    fn current_of_earlier_builds(&self) -> Result<Option<StoredSnapshot>, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The current snapshot is one value (meta and bytes together), so no
    /// power cut can leave a new meta beside old bytes, as sled 0.34 was seen to
    /// recover a two-key batch. A snapshot stored by earlier builds under the
    /// two keys `meta` and `data` is still found, and those keys go at the
    /// second store (the first is durable by then).
    #[test]
    fn the_snapshot_is_one_value_and_one_of_earlier_builds_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let store = SnapshotStore::open(&db).unwrap();
        let tree = db.open_tree(SNAPSHOT_TREE).unwrap();
        let keys = || -> Vec<Vec<u8>> { tree.iter().keys().map(|k| k.unwrap().to_vec()).collect() };
        let meta = SnapshotMeta::default();
        let data = b"the snapshot's bytes".to_vec();
        tree.insert(META_KEY, encode("snapshot meta", &meta).unwrap())
            .unwrap();
        tree.insert(DATA_KEY, seal(&data)).unwrap();
        assert_eq!(store.current().unwrap(), Some((meta.clone(), data.clone())));

        store.store(&meta, &data).unwrap();
        assert_eq!(
            keys(),
            [b"current".to_vec(), b"data".to_vec(), b"meta".to_vec()]
        );
        assert_eq!(store.current().unwrap(), Some((meta.clone(), data.clone())));
        store.store(&meta, &data).unwrap();
        assert_eq!(keys(), [b"current".to_vec()], "the earlier keys are gone");
        assert_eq!(store.current().unwrap(), Some((meta, data)));

        // A damaged value is refused, not misread.
        let mut value = tree.get(SNAPSHOT_KEY).unwrap().unwrap().to_vec();
        let last = value.len() - 1;
        value[last] ^= 1;
        tree.insert(SNAPSHOT_KEY, value).unwrap();
        assert!(store.current().is_err());
    }
}
