//! The crate's error type: what can go wrong mounting, cutting power or unmounting.

use std::path::PathBuf;

/// Why a [`LazyFs`](crate::LazyFs) operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The mountpoint could not be inspected (missing, unreadable, ...).
    #[error("mountpoint {path}: {source}")]
    Mountpoint {
        /// The mountpoint as given.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The mountpoint is not an empty directory: mounting over files would hide them.
    #[error("mountpoint {0} is not an empty directory")]
    MountpointNotEmpty(PathBuf),
    /// The FUSE mount itself failed (no `/dev/fuse`, no permission, ...).
    #[error("mounting FUSE at {path} failed: {source}")]
    Mount {
        /// The mountpoint.
        path: PathBuf,
        /// What the mount call said.
        #[source]
        source: std::io::Error,
    },
    /// The filesystem is no longer served (unmounted from outside, or its
    /// threads stopped), so cutting its power means nothing.
    #[error("the lazy filesystem at {0} is no longer mounted")]
    NotMounted(PathBuf),
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every variant names the path it is about, so a failing test says where.
    #[test]
    fn every_variant_names_its_path() {
        let path = PathBuf::from("/mnt/x");
        let io = || std::io::Error::from(std::io::ErrorKind::NotFound);
        let all = [
            Error::Mountpoint {
                path: path.clone(),
                source: io(),
            },
            Error::MountpointNotEmpty(path.clone()),
            Error::Mount {
                path: path.clone(),
                source: io(),
            },
            Error::NotMounted(path.clone()),
        ];
        for error in all {
            match &error {
                Error::Mountpoint { .. }
                | Error::MountpointNotEmpty(_)
                | Error::Mount { .. }
                | Error::NotMounted(_) => {
                    assert!(error.to_string().contains("/mnt/x"), "{error}");
                }
            }
        }
    }
}
