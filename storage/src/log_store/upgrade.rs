//! Moving the Raft log of a data dir of the earlier layout — entries in
//! sled's `log` tree, vote, committed and last purged ids in its
//! `raft_meta` tree (record format 6, builds before the write-ahead log) —
//! into the write-ahead log, when the dir is opened.
//!
//! The steps, each durable before the next, so that an interruption at any
//! point leaves a dir the next open finishes:
//!
//! 1. the log is written to `wal.upgrading/` and synced (an earlier
//!    `wal.upgrading/` is the leftover of an interrupted upgrade, whose
//!    sled trees are still whole: it is removed and written again);
//! 2. `wal.upgrading/` is renamed to `wal/` and the data dir synced: from
//!    here on the write-ahead log is the node's log;
//! 3. sled's two trees are dropped and sled synced (a dir with both `wal/`
//!    and the trees was interrupted here: the trees are dropped again).
//!
//! The old records are checked as the earlier build checked them (their
//! checksums, each entry under its own index, no gap after the purge
//! point); a log that fails is refused and nothing is changed.

use std::path::Path;

use super::record::Record;
use super::wal::{Wal, WAL_DIR};
use crate::codec::decode;
use crate::disk_sync::{fsync_path, io_error, DiskSync};
use crate::error::Error;
use crate::trees::{LOG_TREE, RAFT_META_TREE};
use crate::types::{Entry, LogId, Vote};

/// Where step 1 writes.
pub const UPGRADING_DIR: &str = "wal.upgrading";

/// How many entries one write carries while moving the log.
const BATCH: usize = 1024;

/// Moves the log of `db` (opened in `dir`) into the write-ahead log, or
/// finishes a move an interruption left; does nothing for a dir of this
/// layout or a new one.
pub(crate) fn move_from_sled(db: &sled::Db, dir: &Path, sync: &DiskSync) -> Result<(), Error> {
    let wal_dir = dir.join(WAL_DIR);
    let upgrading = dir.join(UPGRADING_DIR);
    let has_trees = has_sled_log(db)?;
    if wal_dir.exists() {
        if upgrading.exists() {
            remove_dir(&upgrading, dir)?;
        }
        if has_trees {
            tracing::info!("finishing an interrupted move of the Raft log out of sled");
            drop_trees(db, sync)?;
        }
        return Ok(());
    }
    if !has_trees {
        return Ok(());
    }
    if upgrading.exists() {
        tracing::info!("restarting an interrupted move of the Raft log out of sled");
        remove_dir(&upgrading, dir)?;
    }
    let moved = write_log(db, &upgrading, sync);
    if let Err(e) = moved {
        // Nothing the node relies on changed: sled's trees are whole.
        let _ = std::fs::remove_dir_all(&upgrading);
        return Err(e);
    }
    std::fs::rename(&upgrading, &wal_dir)
        .map_err(|e| io_error(&wal_dir, "rename into place", e))?;
    fsync_path(dir)?;
    drop_trees(db, sync)?;
    tracing::info!("moved the Raft log out of sled into {}", wal_dir.display());
    Ok(())
}

/// Whether sled holds a log of the earlier layout.
fn has_sled_log(db: &sled::Db) -> Result<bool, Error> {
    for name in [LOG_TREE, RAFT_META_TREE] {
        if db.tree_names().iter().any(|n| n == name.as_bytes()) && !db.open_tree(name)?.is_empty() {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Step 1: writes sled's log as a write-ahead log in `to`, durably.
fn write_log(db: &sled::Db, to: &Path, sync: &DiskSync) -> Result<(), Error> {
    let meta = db.open_tree(RAFT_META_TREE)?;
    let read = |key: &str| meta.get(key.as_bytes());
    let vote: Option<Vote> = read("vote")?.map(|b| decode("vote", &b)).transpose()?;
    let committed: Option<Option<LogId>> = read("committed")?
        .map(|b| decode("committed log id", &b))
        .transpose()?;
    let purged: Option<LogId> = read("last_purged")?
        .map(|b| decode("last purged log id", &b))
        .transpose()?;
    let mut wal = Wal::open_dir(to, sync.mode())?;
    let mut head = Vec::new();
    head.extend(vote.map(Record::Vote));
    head.extend(purged.map(Record::Purged));
    wal.write(head)?;
    let log = db.open_tree(LOG_TREE)?;
    let mut batch = Vec::with_capacity(BATCH);
    for item in log.iter() {
        let (key, value) = item?;
        let entry = decode_entry(&key, &value)?;
        if purged.is_some_and(|p| entry.log_id.index <= p.index) {
            continue;
        }
        batch.push(Record::Entry(entry));
        if batch.len() == BATCH {
            wal.write(std::mem::take(&mut batch))?;
        }
    }
    batch.push(Record::Committed(committed.flatten()));
    wal.write(batch)?;
    if let Some((file, path)) = wal.to_sync()? {
        file.sync_data()
            .map_err(|e| io_error(&path, "fdatasync", e))?;
    }
    Ok(())
}

/// Step 3: drops sled's log trees, durably.
fn drop_trees(db: &sled::Db, sync: &DiskSync) -> Result<(), Error> {
    for name in [LOG_TREE, RAFT_META_TREE] {
        db.drop_tree(name)?;
    }
    sync.sync()
}

/// Removes `path` (a directory) and syncs its parent `dir`.
fn remove_dir(path: &Path, dir: &Path) -> Result<(), Error> {
    std::fs::remove_dir_all(path).map_err(|e| io_error(path, "remove", e))?;
    fsync_path(dir)
}

/// Decodes an entry of sled's `log` tree and checks it sits under its own
/// index (a big-endian `u64` key).
fn decode_entry(key: &[u8], value: &[u8]) -> Result<Entry, Error> {
    let index = <[u8; 8]>::try_from(key)
        .map(u64::from_be_bytes)
        .map_err(|_| Error::Corrupt(format!("log key of {} bytes", key.len())))?;
    let entry: Entry = decode(&format!("log entry {index}"), value)?;
    if entry.log_id.index != index {
        return Err(Error::Corrupt(format!(
            "log entry {} stored under index {index}",
            entry.log_id.index
        )));
    }
    Ok(entry)
}
