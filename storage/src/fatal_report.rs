//! A node's last words when its Raft core stops on a storage error: for
//! a full disk, the data dir, its file system's free space, what the dir
//! holds and the fix; for another error, what failed, without openraft's
//! debug dump of where. Reads the [`StorageFailure`] the error carries.

use std::error::Error as StdError;
use std::path::Path;

use openraft::error::Fatal;

use crate::storage_failure::StorageFailure;
use crate::types::TypeConfig;

/// A node's last words for `fatal`, the reason its Raft core stopped:
/// for a full disk, the data dir, its file system's free space, what the
/// dir holds and what to do; for another storage error, what failed
/// without openraft's debug dump of where.
pub fn describe_fatal(fatal: &Fatal<TypeConfig>, data_dir: &Path) -> String {
    let Fatal::StorageError(storage) = fatal else {
        return fatal.to_string();
    };
    let failure = storage
        .source()
        .and_then(|s| s.downcast_ref::<StorageFailure>());
    match failure {
        Some(f) if f.is_disk_full() => disk_full(data_dir, f),
        Some(f) => format!(
            "data dir {}: a write or read failed: {f}; the node stopped so that \
             nothing is acknowledged that is not on disk",
            data_dir.display()
        ),
        None => format!("data dir {}: {storage}", data_dir.display()),
    }
}

/// The disk-full words: which dir, how much is free, how much it holds,
/// and the fix.
fn disk_full(data_dir: &Path, failure: &StorageFailure) -> String {
    let space = match (fs2::available_space(data_dir), fs2::total_space(data_dir)) {
        (Ok(free), Ok(total)) => format!(
            "; {} free of {} on its file system",
            bytes(free),
            bytes(total)
        ),
        _ => String::new(),
    };
    let used = dir_bytes(data_dir)
        .map(|used| format!(", the data dir holds {}", bytes(used)))
        .unwrap_or_default();
    format!(
        "the disk of data dir {} is full (ENOSPC: {failure}){space}{used}. Free space \
         on that file system, or move the data dir to a larger one, leaving at least \
         as much free as the data dir holds (its next snapshot is written beside \
         the last), then start the node again: every write it acknowledged is on \
         disk",
        data_dir.display()
    )
}

/// The bytes of the files under `dir` (not following links); `None` when
/// it cannot be read.
fn dir_bytes(dir: &Path) -> Option<u64> {
    let mut total = 0u64;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).ok()? {
            let entry = entry.ok()?;
            let meta = entry.metadata().ok()?;
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                total = total.saturating_add(meta.len());
            }
        }
    }
    Some(total)
}

/// `n` bytes for a person: `512 B`, `3.2 MiB`, `1.5 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use openraft::error::ErrorSource;
    use openraft::vote::RaftLeaderId;

    use super::*;

    /// The fatal error's words name the dir, the free space and the fix,
    /// and carry no debug dump.
    #[test]
    fn a_full_disk_is_described_with_the_dir_and_the_fix() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("db"), vec![0u8; 2048]).expect("write");
        let source =
            StorageFailure::from_error(&std::io::Error::from(std::io::ErrorKind::StorageFull));
        let log_id = crate::types::LogId::new(crate::types::CommittedLeaderId::new(1, 1), 7);
        let fatal = Fatal::StorageError(openraft::StorageError::write_log_entry(log_id, source));
        let text = describe_fatal(&fatal, dir.path());
        assert!(text.contains(&dir.path().display().to_string()), "{text}");
        assert!(text.contains("is full (ENOSPC"), "{text}");
        assert!(text.contains(" free of "), "{text}");
        assert!(text.contains("holds 2.0 KiB"), "{text}");
        assert!(text.contains("Free space"), "{text}");
        assert!(!text.contains("LogId"), "{text}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(bytes(8 * 1024 * 1024), "8.0 MiB");
    }
}
