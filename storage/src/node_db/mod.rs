//! One node directory: the Raft log in `wal/` ([`crate::log_store`]) and
//! one sled database, and how a node opens its two stores from them.
//!
//! sled's tree:
//! - `snapshot`: the current snapshot (meta + bytes) and the snapshot
//!   counter. The snapshot is the state machine's only on-disk form: the
//!   state after it is rebuilt from the log (see [`crate::sm_store`]).
//!
//! Beside sled's files, `raftlock.identity` ([`crate::identity`]) names the
//! node and records the least state the dir holds; [`open`] checks the
//! trees against it. Every write is made durable by [`DiskSync`].
//!
//! Earlier builds also kept an `sm` tree with one record per lease, lock and
//! client session; [`open`] refuses a directory that still has one. Builds
//! before the write-ahead log kept the log in sled's `log` and `raft_meta`
//! trees; [`open`] moves it across ([`crate::log_store::upgrade`]).
//!
//! # Layout
//! - this file: [`open`], the sequence that opens a dir.
//! - `held`: what an opened dir holds of Raft and the checks it must pass.
//! - `refusal`: the words and the action of an open that cannot go on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use crate::dir_lock::{lock_holder, LockHolder};
use crate::disk_sync::{DiskSync, SyncMode};
use crate::error::Error;
use crate::event::Applied;
use crate::identity::{Bootstrap, FloorKeeper, Identity, IDENTITY_FILE};
use crate::log_store::{upgrade, LogStore, WAL_DIR};
use crate::sled_snap_files;
use crate::sm_store::StateMachineStore;
use crate::types::NodeId;
use held::{check_identity, Held};
use refusal::{disk_full, disk_full_or, is_disk_full, is_locked, sled_refusal, REJOIN};

mod held;
mod refusal;

/// sled's page cache. Its default (1 GiB) lets a node's memory grow with
/// everything it ever touched; the lock state itself lives in memory
/// ([`crate::state::LockState`]) and the log is read back only for recent
/// entries, so a small cache costs little.
pub const CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// What the node tells its storage about itself when it opens its data dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenOptions {
    /// The node id it runs as (`--id`).
    pub node_id: NodeId,
    /// How it was told to form its cluster.
    pub bootstrap: Bootstrap,
    /// How writes are made durable.
    pub sync: SyncMode,
}

impl OpenOptions {
    /// Options for node `node_id` of a cluster formed as `bootstrap`, with
    /// real syncs.
    pub fn new(node_id: NodeId, bootstrap: Bootstrap) -> Self {
        Self {
            node_id,
            bootstrap,
            sync: SyncMode::Fsync,
        }
    }
}

/// How long an open waits for this process's own earlier handle on the
/// dir to finish closing.
const OWN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens (or creates) the node's log and sled database in `dir` (moving
/// the log of an earlier layout out of sled first), checks that they hold
/// at least the state the node acknowledged, and loads both stores.
///
/// Refuses (with [`Error::DataDir`], naming the file, the problem and what
/// to do) a dir whose records fail their checksums or do not decode, whose
/// log has a gap or ends below its committed index, whose purged log is not
/// covered by a snapshot, that lost state its identity file says it held,
/// that holds state but no identity file, or that belongs to another node
/// id or another cluster formation than `options` say. A new dir gets its
/// identity file; a dir is never silently started as a new empty node once
/// it held one. Before sled opens, the `snap.<LSN>.generating` files an
/// earlier open left when it failed (a full disk) are removed, as sled
/// would otherwise refuse them as corrupt: see `sled_snap_files`.
///
/// Synchronous: sled opens its files and replays its log with blocking IO,
/// and every log entry and the current snapshot are read and checked here.
/// Call it before starting Raft (or inside `tokio::task::spawn_blocking`).
///
/// `events` receives one [`Applied`] per applied entry that changed the lock
/// state, and one per installed snapshot; a closed receiver is ignored.
///
/// Only one open per directory at a time: sled locks the directory, so every
/// clone of the returned stores must be dropped before opening it again. A
/// dir open elsewhere is refused with [`Error::InUse`], naming the process
/// that holds it where the system says, before anything in it is written.
pub fn open(
    dir: &Path,
    options: &OpenOptions,
    events: UnboundedSender<Applied>,
) -> Result<(LogStore, StateMachineStore), Error> {
    let refuse = |path: PathBuf, problem: String| Error::DataDir {
        path,
        problem,
        action: REJOIN.to_string(),
    };
    // Private before anything is read or written: a dir of an earlier
    // build (files 0644) is tightened here.
    crate::private_dir::create_private(dir)?;
    let identity_path = dir.join(IDENTITY_FILE);
    let recorded = Identity::read(dir).map_err(|e| refuse(identity_path.clone(), e.to_string()))?;
    let db_path = dir.join("db");
    let in_use = |holder| Error::InUse {
        path: dir.to_path_buf(),
        holder,
    };
    // A dir another process has open is refused before sled touches it
    // (sled may create files before it tries its lock).
    // This process's own lock is a handle of an earlier open that is
    // still being dropped (sled's threads close it a moment after the last
    // store is gone): wait for it, briefly.
    let own = |h: &LockHolder| h.pid == std::process::id();
    let waited = std::time::Instant::now();
    loop {
        match lock_holder(&db_path) {
            Some(holder) if !own(&holder) => return Err(in_use(Some(holder))),
            Some(_) if waited.elapsed() < OWN_LOCK_WAIT => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => break,
        }
    }
    // An open that failed on a full disk leaves a `.generating` file that
    // sled would read as its newest snapshot: see [`sled_snap_files`].
    sled_snap_files::remove_incomplete(dir)?;
    // sled 0.34 can panic, instead of answering an error, on files it
    // cannot recover after a crash ("cannot find pid N in view_for_key",
    // spacejam/sled#1443): its open and the first reads of the dir run where
    // such a panic becomes the refusal of a damaged dir.
    let (sync, log, sm, held) = refuse_on_panic(&db_path, || {
        let db = sled::Config::new()
            .path(dir)
            .cache_capacity(CACHE_BYTES)
            .open()
            .map_err(|e| {
                if is_locked(&e) {
                    // Opened by another process since the check above, or on a
                    // system without a lock table: not damage either way.
                    in_use(lock_holder(&db_path))
                } else if matches!(&e, sled::Error::Io(io) if is_disk_full(io.kind())) {
                    disk_full(dir, &e)
                } else {
                    refuse(db_path.clone(), sled_refusal(dir, &e))
                }
            })?;
        let sync = Arc::new(DiskSync::new(db.clone(), dir, options.sync)?);
        let wal_path = dir.join(WAL_DIR);
        upgrade::move_from_sled(&db, dir, &sync).map_err(|e| match e {
            Error::Io { kind, .. } if is_disk_full(kind) => disk_full(dir, &e),
            e => refuse(
                db_path.clone(),
                format!("cannot move the Raft log out of sled: {e}"),
            ),
        })?;
        let log = LogStore::open(dir, sync.clone()).map_err(|e| match e {
            Error::Io { kind, .. } if is_disk_full(kind) => disk_full(dir, &e),
            e => refuse(wal_path.clone(), e.to_string()),
        })?;
        let sm = StateMachineStore::open(&db, sync.clone(), events)
            .map_err(|e| refuse(db_path.clone(), e.to_string()))?;
        let held = Held::read(&log, &sm).map_err(|e| refuse(db_path.clone(), e.to_string()))?;
        held.check_consistent()
            .map_err(|p| refuse(db_path.clone(), p))?;
        Ok((sync, log, sm, held))
    })?;
    let mut identity = match recorded {
        Some(identity) => {
            check_identity(&identity, options).map_err(|p| refuse(identity_path.clone(), p))?;
            held.check_floor(&identity.floor)
                .map_err(|p| refuse(db_path.clone(), p))?;
            identity
        }
        None if held.has_state() => {
            return Err(refuse(
                identity_path,
                format!(
                    "the dir holds Raft state (last log index {}) but no {IDENTITY_FILE}: \
                     it was written by an earlier raftlock build or the file was removed",
                    held.last_log.unwrap_or(0)
                ),
            ))
        }
        None => Identity::new(options.node_id, options.bootstrap.clone()),
    };
    sync.sync_all_files(dir).map_err(|e| disk_full_or(dir, e))?;
    // Running from here: a floor from a clean shutdown no longer describes
    // the dir once the node writes again.
    identity.floor.clean_shutdown = false;
    identity.floor.last_log_at_shutdown = 0;
    identity.floor.vote_term = identity.floor.vote_term.max(held.vote_term.unwrap_or(0));
    identity.boots += 1;
    identity.write(dir).map_err(|e| disk_full_or(dir, e))?;
    // And what sled created with the process's umask.
    crate::private_dir::make_private(dir)?;
    let own_id = identity.node_id;
    let log = log.with_floor(Arc::new(FloorKeeper::new(dir, identity)), own_id);
    Ok((log, sm))
}

/// Runs `open`; a panic inside it (sled's, on files it cannot recover)
/// becomes the refusal of `db_path` as damaged, with the way to rebuild the
/// node, instead of ending the process with sled's internal message.
fn refuse_on_panic<T>(db_path: &Path, open: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(open)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::DataDir {
            path: db_path.to_path_buf(),
            problem: format!(
                "sled cannot recover its files (it failed with \"{message}\"); \
                 after a power loss this is sled 0.34's known recovery bug, \
                 spacejam/sled#1443"
            ),
            action: REJOIN.to_string(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic while sled opens or first reads a dir (as sled 0.34's
    /// "cannot find pid N in view_for_key" after a crash) is the refusal of
    /// a damaged dir with the way to rebuild the node, not a crash of the
    /// process; without `refuse_on_panic` the panic ends the caller (seen).
    #[test]
    fn a_panic_while_opening_is_the_refusal_of_a_damaged_dir() {
        let db = Path::new("/data/raftlock/db");
        let refused = refuse_on_panic::<()>(db, || {
            panic!("cannot find pid 5 in view_for_key, looking for key [0, 63] in tree")
        });
        let Err(Error::DataDir {
            path,
            problem,
            action,
        }) = refused
        else {
            panic!("not refused as a damaged dir: {refused:?}");
        };
        assert_eq!(path, db);
        assert!(problem.contains("cannot find pid 5"), "{problem}");
        assert!(problem.contains("spacejam/sled#1443"), "{problem}");
        assert_eq!(action, REJOIN);
        assert!(matches!(refuse_on_panic(db, || Ok(7)), Ok(7)));
    }
}
