//! sled's own page-table snapshot files in a data dir (`snap.<LSN>`; not
//! raftlock's Raft snapshots, which live in the `snapshot` tree): removing
//! the `snap.<LSN>.generating` files an interrupted sled open leaves
//! behind, and naming the snapshot file when sled refuses its files.
//!
//! sled 0.34.7 writes a snapshot only while it opens
//! (`pagecache/snapshot.rs`, `advance_snapshot` → `write_snapshot`): to
//! `snap.<LSN>.generating`, then `fsync`, then a rename to `snap.<LSN>`,
//! then it deletes the older `snap.*` files. A write that fails (a full
//! disk) returns before the rename and leaves the `.generating` file, often
//! empty. At the next open `read_snapshot` takes every file named `snap.*`
//! (`Config::get_snapshot_files`, which skips only `*.in___motion`), sorts
//! the names and reads the last one, and `snap.<LSN>.generating` sorts
//! after `snap.<LSN>` and after every older snapshot: sled reads the
//! incomplete file and fails with "Read corrupted data", for ever, even
//! once the disk has room again.
//!
//! Removing it is safe: sled never relied on a `.generating` file (the
//! rename is what makes a snapshot count), and the older snapshot it would
//! have replaced is still there, because sled deletes older snapshots only
//! after the rename. With the file gone, the dir is what the interrupted
//! open started from, and sled replays its log from that snapshot (or from
//! the start when there is none) as it did then. docs/decisions.md, "Disk
//! full", has the whole argument. A damaged `snap.<LSN>` (no suffix) is not
//! removed: sled wrote it in full and synced it before the rename, so it is
//! damage on the disk, and replaying the log without it is not shown safe.

use std::fs::File;
use std::path::{Path, PathBuf};

use fs2::FileExt;

use crate::disk_sync::io_error;
use crate::error::Error;

/// The name sled's `write_snapshot` gives a snapshot while it writes it:
/// `snap.`, the stable LSN as 16 upper-case hex digits, `.generating`.
fn is_generating(name: &str) -> bool {
    name.strip_prefix("snap.")
        .and_then(|rest| rest.strip_suffix(".generating"))
        .is_some_and(is_lsn)
}

/// A finished snapshot's name: `snap.` and 16 upper-case hex digits.
fn is_snapshot(name: &str) -> bool {
    name.strip_prefix("snap.").is_some_and(is_lsn)
}

fn is_lsn(hex: &str) -> bool {
    hex.len() == 16
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
}

/// Removes every `snap.<LSN>.generating` file from the sled database in
/// `dir` and returns their paths (with a WARN logged for each).
///
/// Runs only while it holds sled's own lock (an exclusive `flock` on the
/// dir's `db` file, taken as sled takes it), so it never removes a file
/// that another process's sled open is still writing. Does nothing, and
/// returns no paths, when there is no `db` file (no database yet) or the
/// lock is taken (sled's open then refuses the dir as in use).
pub(crate) fn remove_incomplete(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let db_path = dir.join("db");
    let db = match File::open(&db_path) {
        Ok(db) => db,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(&db_path, "open", e)),
    };
    if db.try_lock_exclusive().is_err() {
        return Ok(Vec::new());
    }
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))? {
        let entry = entry.map_err(|e| io_error(dir, "list", e))?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(is_generating) {
            continue;
        }
        let path = entry.path();
        let len = entry.metadata().map_or(0, |m| m.len());
        std::fs::remove_file(&path).map_err(|e| io_error(&path, "remove", e))?;
        tracing::warn!(
            file = %path.display(),
            bytes = len,
            "removed sled's incomplete snapshot file, left by an open that failed \
             (a full disk?); sled replays its log instead"
        );
        removed.push(path);
    }
    if !removed.is_empty() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io_error(dir, "fsync", e))?;
    }
    // Unlocked when `db` closes, before sled opens its own handle.
    Ok(removed)
}

/// The snapshot file sled reads first when it opens `dir` (the last
/// `snap.<LSN>` by name), with its length; `None` when there is none.
pub(crate) fn newest_snapshot(dir: &Path) -> Option<(PathBuf, u64)> {
    let mut found: Vec<(String, PathBuf, u64)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            let len = entry.metadata().ok()?.len();
            is_snapshot(&name).then(|| (name, entry.path(), len))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, path, len)| (path, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits until no handle holds sled's lock on `dir`'s `db`: sled's
    /// background threads keep the file (and its lock) a moment after its
    /// last `Db` handle drops.
    fn wait_unlocked(dir: &Path) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let db = File::open(dir.join("db")).expect("open db");
            if db.try_lock_exclusive().is_ok() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sled kept its lock for 10 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn open_sled(dir: &Path) -> sled::Result<sled::Db> {
        wait_unlocked(dir);
        sled::Config::new().path(dir).open()
    }

    #[test]
    fn only_sleds_generating_names_match() {
        assert!(is_generating("snap.00000000004E316A.generating"));
        assert!(!is_generating("snap.00000000004E316A"));
        assert!(!is_generating("snap.00000000004e316a.generating"));
        assert!(!is_generating("snap.4E316A.generating"));
        assert!(!is_generating("snap.00000000004E316A.generating.bak"));
        assert!(!is_generating("db"));
        assert!(is_snapshot("snap.00000000004E316A"));
        assert!(!is_snapshot("snap.00000000004E316A.generating"));
    }

    /// The dir: sled's files beside a 0-byte `.generating` that
    /// sorts after the real snapshot. Without the removal sled refuses it
    /// ("Read corrupted data"); with it, sled opens with every key.
    #[test]
    fn an_empty_generating_file_beside_a_real_db_is_removed_and_sled_opens() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let db = sled::Config::new().path(dir.path()).open().expect("open");
            for i in 0u32..100 {
                db.insert(i.to_be_bytes(), vec![7u8; 100]).expect("insert");
            }
            db.flush().expect("flush");
        }
        // A second open writes sled's first snapshot (the log moved on).
        drop(open_sled(dir.path()).expect("reopen"));
        let (snapshot, _) = newest_snapshot(dir.path()).expect("sled wrote a snapshot");
        let name = snapshot.file_name().and_then(|n| n.to_str()).expect("name");
        let generating = dir.path().join(format!("{name}.generating"));
        std::fs::write(&generating, b"").expect("write");
        let refused = open_sled(dir.path());
        assert!(
            matches!(refused, Err(sled::Error::Corruption { .. })),
            "sled reads the empty file: {refused:?}"
        );

        wait_unlocked(dir.path());
        assert_eq!(
            remove_incomplete(dir.path()).expect("remove"),
            vec![generating.clone()]
        );
        assert!(!generating.exists());
        assert_eq!(newest_snapshot(dir.path()).map(|s| s.0), Some(snapshot));
        let db = open_sled(dir.path()).expect("opens");
        for i in 0u32..100 {
            assert!(db.get(i.to_be_bytes()).expect("get").is_some(), "key {i}");
        }
        drop(db);
        wait_unlocked(dir.path());
        assert!(remove_incomplete(dir.path()).expect("again").is_empty());
    }

    #[test]
    fn nothing_is_removed_while_another_handle_holds_the_lock() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = sled::Config::new().path(dir.path()).open().expect("open");
        let generating = dir.path().join("snap.0000000000000400.generating");
        std::fs::write(&generating, b"").expect("write");
        assert!(remove_incomplete(dir.path()).expect("remove").is_empty());
        assert!(generating.exists());
        drop(db);
        wait_unlocked(dir.path());
        assert_eq!(
            remove_incomplete(dir.path()).expect("remove"),
            vec![generating]
        );
    }

    #[test]
    fn a_dir_without_a_db_is_left_alone() {
        let dir = tempfile::tempdir().expect("temp dir");
        let generating = dir.path().join("snap.0000000000000400.generating");
        std::fs::write(&generating, b"").expect("write");
        assert!(remove_incomplete(dir.path()).expect("remove").is_empty());
        assert!(generating.exists());
    }
}
