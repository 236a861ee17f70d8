//! What a fatal storage error carries, and how a node's last words word
//! it. openraft stops a node on any storage error and keeps only the
//! error's source (this crate's type config makes that a
//! [`StorageFailure`]); openraft's own text for it is a debug dump of the
//! log id (`when Write Log(LogId { leader_id: … })`). So the source keeps
//! what the operator needs, read off the error chain while it is still
//! typed: the message, and whether the disk was full (ENOSPC), for
//! [`describe_fatal`] to name the data dir, the free space and the fix.

use std::error::Error as StdError;
use std::fmt;
use std::path::Path;

use openraft::error::{ErrorSource, Fatal};
use serde::{Deserialize, Serialize};

use crate::types::TypeConfig;

/// The source of a storage error openraft keeps: what failed, and
/// whether it was a full disk. On the wire (a peer's fatal reply) it is
/// openraft's usual `AnyError` shape, so peers of other builds read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "WireSource", into = "WireSource")]
pub struct StorageFailure {
    /// The error and its sources, as text.
    message: String,
    /// The disk (or file system) holding the data dir had no room left.
    disk_full: bool,
}

impl StorageFailure {
    /// Whether the failure was a write that found the disk full.
    pub fn is_disk_full(&self) -> bool {
        self.disk_full
    }
}

impl fmt::Display for StorageFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for StorageFailure {}

impl ErrorSource for StorageFailure {
    fn from_error<E: StdError + 'static>(error: &E) -> Self {
        StorageFailure {
            message: chain_text(error),
            disk_full: is_disk_full(error),
        }
    }

    fn from_string(msg: impl ToString) -> Self {
        StorageFailure {
            message: msg.to_string(),
            disk_full: false,
        }
    }
}

/// openraft's `AnyError` fields, as it serializes them.
#[derive(Serialize, Deserialize)]
struct WireSource {
    typ: Option<String>,
    msg: String,
    source: Option<Box<WireSource>>,
    context: Vec<String>,
    backtrace: Option<String>,
}

impl From<StorageFailure> for WireSource {
    fn from(f: StorageFailure) -> Self {
        WireSource {
            typ: None,
            msg: f.message,
            source: None,
            context: Vec::new(),
            backtrace: None,
        }
    }
}

impl From<WireSource> for StorageFailure {
    fn from(w: WireSource) -> Self {
        let mut message = w.msg;
        let mut next = w.source;
        while let Some(source) = next {
            message.push_str(&format!(": {}", source.msg));
            next = source.source;
        }
        StorageFailure {
            message,
            disk_full: false,
        }
    }
}

/// `error` and each source it names, joined with `: `, a source left out
/// when the text so far already says it.
fn chain_text(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(source) = next {
        let said = source.to_string();
        if !text.contains(&said) {
            text.push_str(&format!(": {said}"));
        }
        next = source.source();
    }
    text
}

/// Whether anything in `error`'s chain is a write that found no room:
/// an `io::Error` of kind `StorageFull`, inside this crate's error, sled's,
/// or another `io::Error`.
pub(crate) fn is_disk_full(error: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::StorageFull {
                return true;
            }
            if let Some(inner) = io.get_ref() {
                if is_disk_full(inner) {
                    return true;
                }
            }
        }
        if let Some(sled::Error::Io(io)) = e.downcast_ref::<sled::Error>() {
            if io.kind() == std::io::ErrorKind::StorageFull {
                return true;
            }
        }
        next = e.source();
    }
    false
}

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
    use openraft::vote::RaftLeaderId;

    use super::*;

    /// ENOSPC is found wherever the storage layer wrapped it: bare, in
    /// sled's error, in this crate's, in an `io::Error` around those.
    #[test]
    fn a_full_disk_is_found_through_every_wrapper() {
        let enospc = || std::io::Error::from(std::io::ErrorKind::StorageFull);
        let sled_error = sled::Error::Io(enospc());
        let ours = crate::Error::Sled(sled::Error::Io(enospc()));
        let wrapped = std::io::Error::other(crate::Error::Sled(sled::Error::Io(enospc())));
        assert!(StorageFailure::from_error(&enospc()).is_disk_full());
        assert!(StorageFailure::from_error(&sled_error).is_disk_full());
        assert!(StorageFailure::from_error(&ours).is_disk_full());
        assert!(StorageFailure::from_error(&wrapped).is_disk_full());
        let other = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(!StorageFailure::from_error(&other).is_disk_full());
        assert!(!StorageFailure::from_string("no space").is_disk_full());
    }

    /// The log's sync thread hands each waiting append a copy of its
    /// error (`Error::to_io`, then `io::Error::new(kind, text)`): a full
    /// disk stays one through both copies. With `io::Error::other(text)`,
    /// as before, the kind was lost and this failed.
    #[test]
    fn a_full_disk_survives_the_copies_the_log_hands_out() {
        let full = crate::Error::Sled(sled::Error::Io(std::io::Error::from(
            std::io::ErrorKind::StorageFull,
        )));
        let copy = full.to_io();
        let copy = std::io::Error::new(copy.kind(), copy.to_string());
        assert!(StorageFailure::from_error(&copy).is_disk_full());
        let other = crate::Error::Corrupt("x".into()).to_io();
        assert!(!StorageFailure::from_error(&other).is_disk_full());
    }

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
    fn the_wire_shape_is_openrafts() {
        let failure = StorageFailure::from_string("boom");
        let json = serde_json::to_string(&failure).expect("encode");
        let any: openraft::AnyError = serde_json::from_str(&json).expect("AnyError reads it");
        assert_eq!(any.to_string(), "boom");
        let back: StorageFailure = serde_json::from_str(&json).expect("decode");
        assert_eq!(back.to_string(), "boom");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(2048), "2.0 KiB");
        assert_eq!(bytes(8 * 1024 * 1024), "8.0 MiB");
    }
}
