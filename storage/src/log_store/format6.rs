//! Test builds only (feature `format6-writer`): puts a data dir's Raft log
//! back into the layout of record format 6 — entries in sled's `log` tree,
//! vote, committed and last purged ids in its `raft_meta` tree, no `wal/` —
//! so that the power-loss test can cut the power while the next open moves
//! it across again (`upgrade`). The real format-6 dir the upgrade is proven
//! on is `tests/fixtures/format6-dir.tar.gz`, made by the released build;
//! this writes the same keys and values (`storage/tests/upgrade.rs` checks
//! a dir it wrote opens like the fixture).

use std::path::Path;
use std::time::{Duration, Instant};

use super::reader;
use super::wal::{Wal, WAL_DIR};
use crate::codec::encode;
use crate::disk_sync::{fsync_path, io_error, DiskSync, SyncMode};
use crate::error::Error;
use crate::trees::{LOG_TREE, RAFT_META_TREE};

/// How long to wait for sled to let go of the dir after it is closed.
const RELEASE_WAIT: Duration = Duration::from_secs(30);

/// Moves the log of the (closed) data dir `dir` from `wal/` into sled's
/// trees, durably: the trees are written and synced before `wal/` is
/// removed and the dir synced. Returns the number of entries moved, once
/// sled has released the dir (so a node can open it at once).
pub fn move_into_sled(dir: &Path) -> Result<usize, Error> {
    let wal = Wal::open(dir, SyncMode::Fsync)?;
    let moved = {
        let db = sled::Config::new().path(dir).open()?;
        let sync = DiskSync::new(db.clone(), dir, SyncMode::Fsync)?;
        let state = &wal.state;
        let meta = db.open_tree(RAFT_META_TREE)?;
        if let Some(vote) = &state.vote {
            meta.insert("vote", encode("vote", vote)?)?;
        }
        meta.insert("committed", encode("committed log id", &state.committed)?)?;
        if let Some(purged) = &state.purged {
            meta.insert("last_purged", encode("last purged log id", purged)?)?;
        }
        let log = db.open_tree(LOG_TREE)?;
        let mut moved = 0;
        if let (Some(first), Some(last)) = (state.entries.front(), state.entries.back()) {
            let entries = reader::read(&wal.locate(first.log_id.index, last.log_id.index))?;
            for entry in &entries {
                let value = encode("log entry", entry)?;
                log.insert(entry.log_id.index.to_be_bytes(), value)?;
            }
            moved = entries.len();
        }
        sync.sync_all_files(dir)?;
        moved
    };
    drop(wal);
    let wal_dir = dir.join(WAL_DIR);
    std::fs::remove_dir_all(&wal_dir).map_err(|e| io_error(&wal_dir, "remove", e))?;
    fsync_path(dir)?;
    wait_released(&dir.join("db"))?;
    Ok(moved)
}

/// Waits until no handle holds sled's lock on `db` (its threads close the
/// file a moment after the last handle is dropped).
fn wait_released(db: &Path) -> Result<(), Error> {
    let file = std::fs::File::open(db).map_err(|e| io_error(db, "open", e))?;
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return file.unlock().map_err(|e| io_error(db, "unlock", e)),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                return Err(Error::Corrupt(format!(
                    "sled still holds {} after it was closed: {e}",
                    db.display()
                )))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log_store::record::Record;
    use crate::log_store::tests::{entry, log_id};
    use crate::log_store::upgrade;
    use crate::types::Vote;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// A log put back into sled has no `wal/` left, and the next open's
    /// move across brings back the same vote, committed and purged ids and
    /// entries. Without `move_into_sled` writing the trees, the move finds
    /// nothing and the log opens empty.
    #[test]
    fn a_log_put_back_in_sled_moves_across_again() -> TestResult {
        let dir = tempfile::tempdir()?;
        let vote = Vote::new_committed(3, 2);
        {
            let mut wal = Wal::open(dir.path(), SyncMode::Fsync)?;
            wal.write(vec![Record::Vote(vote)])?;
            for i in 1..=20 {
                wal.write(vec![Record::Entry(entry(i, 10))])?;
            }
            wal.write(vec![
                Record::Purged(log_id(5)),
                Record::Committed(Some(log_id(18))),
            ])?;
        }
        assert_eq!(move_into_sled(dir.path())?, 15);
        assert!(!dir.path().join(WAL_DIR).exists());
        {
            let db = sled::Config::new().path(dir.path()).open()?;
            let sync = DiskSync::new(db.clone(), dir.path(), SyncMode::Fsync)?;
            upgrade::move_from_sled(&db, dir.path(), &sync)?;
        }
        wait_released(&dir.path().join("db"))?;
        let wal = Wal::open(dir.path(), SyncMode::Fsync)?;
        assert_eq!(wal.state.vote, Some(vote));
        assert_eq!(wal.state.committed, Some(log_id(18)));
        assert_eq!(wal.state.purged, Some(log_id(5)));
        let indexes: Vec<u64> = wal.state.entries.iter().map(|l| l.log_id.index).collect();
        assert_eq!(indexes, (6..=20).collect::<Vec<_>>());
        Ok(())
    }
}
