//! Making sled's writes durable: sled's flush, then `fsync` of the blob
//! files it created and `fdatasync` of its data file.
//!
//! sled 0.34's `flush` writes its IO buffers and calls
//! `sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER)`. That starts and waits
//! for the writeback of those pages, but flushes neither the device's write
//! cache nor the file's metadata (a grown file size), so a power loss can
//! take back what it "flushed". Values too large for sled's log (a leaf
//! node or record above a quarter segment) go to `blobs/N` files that sled
//! writes and closes without any sync. `DiskSync::sync` adds what is
//! missing, in an order that keeps a synced log from pointing at an unsynced
//! blob:
//!
//! 1. `db.flush()`: sled writes everything inserted so far;
//! 2. every blob file not yet synced at its current length gets `fsync`,
//!    then the `blobs` directory (new names) gets `fsync`;
//! 3. `fdatasync` of sled's `db` file.
//!
//! Files sled creates only when it opens (`conf`, `snap.*`, the `blobs`
//! directory) are synced once, with their directories, by
//! `DiskSync::sync_all_files`.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::error::Error;

/// How writes are made durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SyncMode {
    /// sled's flush, then `fsync`/`fdatasync` (see the module docs). The
    /// only mode a real node should run.
    #[default]
    Fsync,
    /// sled's flush only (`sync_file_range`): what raftlock did before it
    /// synced for real. An acknowledged write can be lost on power loss.
    /// For tests and the power-loss demonstration only.
    UnsafeSledFlushOnly,
}

/// Syncs one node's sled database. Shared by the log and state machine
/// stores; each sync covers every write made before it started.
#[derive(Debug)]
pub struct DiskSync {
    db: sled::Db,
    mode: SyncMode,
    /// sled's data file, kept open for `fdatasync`.
    data_file: File,
    /// Its path, for errors.
    data_path: PathBuf,
    /// The `blobs` directory.
    blobs_dir: PathBuf,
    /// Blob file → the length it had when last synced. A blob is written
    /// once, sequentially; a length that changed since means it was still
    /// being written then, and is synced again.
    synced_blobs: Mutex<HashMap<OsString, u64>>,
    /// Set once the database was abandoned (see [`DiskSync::abandon`]).
    abandoned: std::sync::atomic::AtomicBool,
}

impl DiskSync {
    /// Prepares to sync the sled database `db` opened in `dir`.
    pub(crate) fn new(db: sled::Db, dir: &Path, mode: SyncMode) -> Result<Self, Error> {
        let data_path = dir.join("db");
        let data_file = File::open(&data_path).map_err(|e| io_error(&data_path, "open", e))?;
        Ok(Self {
            db,
            mode,
            data_file,
            data_path,
            blobs_dir: dir.join("blobs"),
            synced_blobs: Mutex::default(),
            abandoned: Default::default(),
        })
    }

    /// Gives up on the database after a failed write: it stays open, and
    /// its directory locked, until the process exits. sled flushes each
    /// tree when its last handle drops, and after a failed write (a full
    /// disk) that flush waits for ever; keeping one handle alive means no
    /// drop ever runs it, so a failed node can still stop and exit.
    pub fn abandon(&self) {
        use std::sync::atomic::Ordering;
        if !self.abandoned.swap(true, Ordering::SeqCst) {
            std::mem::forget(self.db.clone());
        }
    }

    /// The mode this node syncs in.
    pub fn mode(&self) -> SyncMode {
        self.mode
    }

    /// Makes every write to the database so far durable. Blocking.
    pub(crate) fn sync(&self) -> Result<(), Error> {
        self.db.flush()?;
        if self.mode == SyncMode::UnsafeSledFlushOnly {
            return Ok(());
        }
        self.sync_new_blobs()?;
        self.data_file
            .sync_data()
            .map_err(|e| io_error(&self.data_path, "fdatasync", e))
    }

    /// `DiskSync::sync` on tokio's blocking pool.
    ///
    /// Not sled's `flush_async`: that runs the flush on sled's own thread
    /// pool, whose queue wakes *every* idle worker (seven by default) for
    /// each job. With one sync per Raft append that herd was about a third
    /// of a node's CPU under a single client (`bench/profile.sh W1
    /// raftlock`, the `sled-io-*` threads). The blocking pool wakes one
    /// thread.
    pub(crate) async fn sync_async(self: &Arc<Self>) -> Result<(), Error> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.sync())
            .await
            .map_err(|e| Error::Worker(e.to_string()))?
    }

    /// Syncs every file in `dir` and in its `blobs` directory, both
    /// directories, and `dir`'s parent (which holds `dir`'s own name when it
    /// was just created). Run once at open, after sled wrote `conf` and its
    /// `snap.*` file. Blocking.
    pub(crate) fn sync_all_files(&self, dir: &Path) -> Result<(), Error> {
        self.sync()?;
        if self.mode == SyncMode::UnsafeSledFlushOnly {
            return Ok(());
        }
        for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))? {
            let path = entry.map_err(|e| io_error(dir, "list", e))?.path();
            if path.is_file() {
                fsync_path(&path)?;
            }
        }
        fsync_path(dir)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            fsync_path(parent)?;
        }
        Ok(())
    }

    /// Step 2 of `DiskSync::sync`: `fsync` each blob file that is new or
    /// has grown since it was last synced, then the directory.
    fn sync_new_blobs(&self) -> Result<(), Error> {
        let entries = match std::fs::read_dir(&self.blobs_dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&self.blobs_dir, "list", e)),
        };
        let mut synced = self.synced_blobs.lock().map_err(|_| Error::Poisoned)?;
        let mut seen = HashMap::with_capacity(synced.len());
        let mut changed = false;
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.blobs_dir, "list", e))?;
            let name = entry.file_name();
            let len = match entry.metadata() {
                Ok(m) => m.len(),
                // sled removed it meanwhile (garbage collection).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(&entry.path(), "stat", e)),
            };
            if synced.get(&name) != Some(&len) {
                match fsync_path(&entry.path()) {
                    Ok(()) => {}
                    Err(Error::Io {
                        kind: std::io::ErrorKind::NotFound,
                        ..
                    }) => continue,
                    Err(e) => return Err(e),
                }
                changed = true;
            }
            seen.insert(name, len);
        }
        if changed || seen.len() != synced.len() {
            fsync_path(&self.blobs_dir)?;
        }
        *synced = seen;
        Ok(())
    }
}

/// Writes a small file durably: a temporary file, `fsync`, rename over
/// `path`, `fsync` of the directory.
pub(crate) fn write_file_durably(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(crate::private_dir::FILE_MODE)
        .open(&tmp)
        .map_err(|e| io_error(&tmp, "create", e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| io_error(&tmp, "write", e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| io_error(path, "rename into place", e))?;
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => fsync_path(dir),
        None => fsync_path(Path::new(".")),
    }
}

/// `fsync` of a file or directory by path.
pub(crate) fn fsync_path(path: &Path) -> Result<(), Error> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_error(path, "fsync", e))
}

/// An [`Error::Io`] for `doing` something to `path`.
pub(crate) fn io_error(path: &Path, doing: &'static str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        doing,
        kind: source.kind(),
        source,
    }
}
