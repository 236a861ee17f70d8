//! How an open that cannot go on is told: what is wrong, in words that
//! name the file, and what to do — free space on a full disk, rebuild the
//! node from its peers when its dir cannot be trusted. Apart from the open
//! itself so that the sequence reads without the wording, and the wording
//! is one place.

use std::path::Path;

use crate::error::Error;
use crate::sled_snap_files;

/// What to do when the data dir's disk is full.
const FREE_SPACE: &str = "Free space on the disk that holds the data dir, then start the \
    node again: an open stopped by a full disk changes nothing the node relies on, \
    and no acknowledged write is lost";

/// What to do about a data dir that cannot be trusted.
pub(super) const REJOIN: &str = "If the other members are healthy, move this directory aside, \
    remove the node from the cluster (`raftlock cluster remove ID`), start it again \
    on an empty data dir with a new id and --join, and add it back \
    (`raftlock cluster add-learner`, then `raftlock cluster promote`). \
    If no member has intact data, restore the cluster from a backup";

/// What is wrong when sled refuses its files: sled's error, and for
/// corruption the snapshot file sled read first (it cannot say which file
/// failed its checks). A damaged `snap.*` is not repaired here: see
/// [`sled_snap_files`].
pub(super) fn sled_refusal(dir: &Path, e: &sled::Error) -> String {
    let snapshot = match (e, sled_snap_files::newest_snapshot(dir)) {
        (sled::Error::Corruption { .. }, Some((path, bytes))) => format!(
            " (sled read its snapshot file {} of {bytes} bytes and its log `db`; \
             sled finishes and syncs a snapshot before giving it that name, \
             so a damaged one is damage on the disk, not an interrupted write)",
            path.display()
        ),
        _ => String::new(),
    };
    format!("sled cannot open its files: {e}{snapshot}")
}

/// ENOSPC: the data dir's disk (or its file system) has no room left.
pub(super) fn is_disk_full(kind: std::io::ErrorKind) -> bool {
    kind == std::io::ErrorKind::StorageFull
}

/// The refusal for an open that failed because the disk is full: the dir
/// is not damaged, so the action is to free space, not to rebuild the node.
pub(super) fn disk_full(dir: &Path, e: &dyn std::fmt::Display) -> Error {
    Error::DataDir {
        path: dir.to_path_buf(),
        problem: format!("its disk is full ({e})"),
        action: FREE_SPACE.to_string(),
    }
}

/// `e`, or the disk-full refusal when it is a write that found no room.
pub(super) fn disk_full_or(dir: &Path, e: Error) -> Error {
    match &e {
        Error::Io { kind, .. } if is_disk_full(*kind) => disk_full(dir, &e),
        _ => e,
    }
}

/// Whether sled failed to open because another process holds the dir's
/// lock (sled reports it only as an IO error with this text).
pub(super) fn is_locked(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().contains("could not acquire lock"))
}
