//! A data dir is private to its node: the dir and every dir under it are
//! mode 0700, every file 0600 — sled's `db`, `conf`, blobs and snapshot
//! files, the Raft log, `raftlock.identity`, `raftlock.key`. They hold every
//! lock's owner tokens and the cluster's secret.
//!
//! sled creates its files with the process's umask (0644 under the usual
//! 022), so the node tightens the whole dir when it opens it, before and
//! after sled did (a dir written by an earlier build, or restored, is
//! tightened too); `raftlock serve` also sets its umask to 077, so files
//! sled makes while the node runs are private from the start. In an
//! embedding application, whose umask is its own, the 0700 dir keeps
//! other users away from files made after the open.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use crate::error::Error;

/// Mode of the data dir and the dirs in it.
pub const DIR_MODE: u32 = 0o700;
/// Mode of every file in the data dir.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) and makes it and what it holds
/// private.
pub fn create_private(dir: &Path) -> Result<(), Error> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
        .map_err(|e| io_error(dir, "create", e))?;
    make_private(dir)
}

/// Sets `dir` and every dir under it to 0700 and every regular file under
/// it to 0600 (symbolic links are left alone, and not followed). A mode
/// already as tight is left as it is.
pub fn make_private(dir: &Path) -> Result<(), Error> {
    tighten(dir, DIR_MODE)?;
    let entries = std::fs::read_dir(dir).map_err(|e| io_error(dir, "list", e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error(dir, "list", e))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|e| io_error(&path, "read the type of", e))?;
        if kind.is_dir() {
            make_private(&path)?;
        } else if kind.is_file() {
            tighten(&path, FILE_MODE)?;
        }
    }
    Ok(())
}

/// An IO failure on `path` while `doing` it.
fn io_error(path: &Path, doing: &'static str, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        doing,
        kind: source.kind(),
        source,
    }
}

/// Clears the bits of `path`'s mode that `mode` does not have.
fn tighten(path: &Path, mode: u32) -> Result<(), Error> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // Gone since it was listed (sled removes old snapshot files).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error(path, "read the mode of", e)),
    };
    let current = meta.permissions().mode() & 0o7777;
    if current & !mode == 0 {
        return Ok(());
    }
    match std::fs::set_permissions(path, std::fs::Permissions::from_mode(current & mode)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error(path, "make private (chmod)", e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_dir_and_everything_in_it_become_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        std::fs::create_dir_all(dir.join("blobs/deep")).unwrap();
        for (file, m) in [
            ("db", 0o644),
            ("conf", 0o666),
            ("blobs/1", 0o644),
            ("blobs/deep/2", 0o400),
        ] {
            let path = dir.join(file);
            std::fs::write(&path, b"x").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(m)).unwrap();
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let outside = root.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        make_private(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("blobs")), 0o700);
        assert_eq!(mode(&dir.join("blobs/deep")), 0o700);
        for file in ["db", "conf", "blobs/1"] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
        // Tighter than 0600 stays as it is; the link's target is untouched.
        assert_eq!(mode(&dir.join("blobs/deep/2")), 0o400);
        assert_eq!(mode(&outside), 0o644);
        let fresh = root.path().join("a/b/fresh");
        create_private(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
    }
}
