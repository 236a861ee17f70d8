//! The shared fixture: a mounted lazy filesystem (or a loud skip) and small
//! helpers for the syncs every test needs.

use std::fs::File;
use std::path::{Path, PathBuf};

use raftlock_lazyfs::{check_available, skip_unless_ci, LazyFs};
use tempfile::TempDir;

/// A lazy filesystem mounted on a fresh temporary directory.
pub struct Mounted {
    /// The mount; declared first so it unmounts before the directory goes.
    pub fs: LazyFs,
    /// Owns the mountpoint.
    _dir: TempDir,
}

impl Mounted {
    /// `name` under the mountpoint.
    pub fn path(&self, name: &str) -> PathBuf {
        self.fs.mountpoint().join(name)
    }

    /// Cuts the power, panicking if the mount is gone.
    pub fn cut(&self) {
        self.fs.cut_power().expect("cut power");
    }
}

/// Mounts a fresh filesystem, or prints `SKIPPED: <reason>` and returns
/// `None` when FUSE is unavailable here (fails under CI: see
/// [`skip_unless_ci`]).
pub fn mount() -> Option<Mounted> {
    if let Err(reason) = check_available() {
        skip_unless_ci("lazyfs test", &reason);
        return None;
    }
    let dir = tempfile::tempdir().expect("temporary mountpoint");
    let fs = LazyFs::mount(dir.path()).expect("mount");
    Some(Mounted { fs, _dir: dir })
}

/// fsync of the directory at `path` (the FUSE `fsyncdir` operation).
pub fn sync_dir(path: &Path) {
    File::open(path)
        .and_then(|dir| dir.sync_all())
        .unwrap_or_else(|e| panic!("fsync directory {}: {e}", path.display()));
}

/// Writes `bytes` to a new file at `path` and fsyncs the file (not its directory).
pub fn write_synced(path: &Path, bytes: &[u8]) {
    use std::io::Write;
    let mut file = File::create(path).expect("create");
    file.write_all(bytes).expect("write");
    file.sync_all().expect("fsync");
}

/// Writes `bytes` to a new file at `path`, fsyncs it and its directory.
pub fn write_durable(path: &Path, bytes: &[u8]) {
    write_synced(path, bytes);
    sync_dir(path.parent().expect("a file has a parent"));
}

/// Fsyncs every file and directory under `root`, children before parents
/// (symlinks have nothing to sync beyond their name).
pub fn sync_tree(root: &Path) {
    for entry in std::fs::read_dir(root).expect("read_dir") {
        let entry = entry.expect("entry");
        let (path, kind) = (entry.path(), entry.file_type().expect("file type"));
        if kind.is_dir() {
            sync_tree(&path);
        } else if kind.is_file() {
            File::open(&path)
                .and_then(|f| f.sync_all())
                .unwrap_or_else(|e| panic!("fsync {}: {e}", path.display()));
        }
    }
    sync_dir(root);
}
