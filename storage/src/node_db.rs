//! One sled database per node directory: which trees it holds and how a node
//! opens its two stores from it.
//!
//! Trees:
//! - `log`: the Raft log, big-endian `u64` index → JSON [`openraft::Entry`];
//! - `raft_meta`: vote, committed log id, last purged log id;
//! - `snapshot`: the current snapshot (meta + bytes) and the snapshot
//!   counter. The snapshot is the state machine's only on-disk form: the
//!   state after it is rebuilt from the log (see [`crate::sm_store`]).
//!
//! Earlier builds also kept an `sm` tree with one record per lease, lock and
//! client session; [`open`] refuses a directory that still has one.

use std::path::Path;

use tokio::sync::mpsc::UnboundedSender;

use crate::error::Error;
use crate::event::Applied;
use crate::log_store::LogStore;
use crate::sm_store::StateMachineStore;

/// Name of the Raft log tree.
pub(crate) const LOG_TREE: &str = "log";
/// Name of the tree holding vote, committed and last purged log ids.
pub(crate) const RAFT_META_TREE: &str = "raft_meta";
/// Name of the per-record state machine tree of earlier builds.
pub(crate) const LEGACY_SM_TREE: &str = "sm";
/// Name of the tree holding the current snapshot.
pub(crate) const SNAPSHOT_TREE: &str = "snapshot";

/// sled's page cache. Its default (1 GiB) lets a node's memory grow with
/// everything it ever touched; the lock state itself lives in memory
/// ([`crate::state::LockState`]) and the log is read back only for recent
/// entries, so a small cache costs little.
pub const CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Makes every write to `db` so far durable, on tokio's blocking pool.
///
/// Not sled's `flush_async`: that runs the flush on sled's own thread pool,
/// whose queue wakes *every* idle worker (seven by default) for each job.
/// With one flush per Raft append that herd was about a third of a node's
/// CPU under a single client (`bench/profile.sh W1 raftlock`, the `sled-io-*`
/// threads) and forty futex calls per write. The blocking pool wakes one
/// thread.
pub(crate) async fn flush(db: &sled::Db) -> Result<(), Error> {
    let db = db.clone();
    tokio::task::spawn_blocking(move || db.flush())
        .await
        .map_err(|e| Error::Worker(e.to_string()))??;
    Ok(())
}

/// Opens (or creates) the node's sled database in `dir` and loads both
/// stores from it.
///
/// Synchronous: sled opens its files and replays its log with blocking IO,
/// and the current snapshot is decoded into memory here. Call it
/// before starting Raft (or inside `tokio::task::spawn_blocking`).
///
/// `events` receives one [`Applied`] per applied entry that changed the lock
/// state, and one per installed snapshot; a closed receiver is ignored.
///
/// Only one open per directory at a time: sled locks the directory, so every
/// clone of the returned stores must be dropped before opening it again.
pub fn open(
    dir: &Path,
    events: UnboundedSender<Applied>,
) -> Result<(LogStore, StateMachineStore), Error> {
    let db = sled::Config::new()
        .path(dir)
        .cache_capacity(CACHE_BYTES)
        .open()?;
    let log = LogStore::open(&db)?;
    let sm = StateMachineStore::open(&db, events)?;
    Ok((log, sm))
}
