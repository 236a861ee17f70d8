//! What a fatal storage error carries, and how a node's last words word
//! it. openraft stops a node on any storage error and keeps only the
//! error's source (this crate's type config makes that a
//! [`StorageFailure`]); openraft's own text for it is a debug dump of the
//! log id (`when Write Log(LogId { leader_id: … })`). So the source keeps
//! what the operator needs, read off the error chain while it is still
//! typed: the message, and whether the disk was full (ENOSPC), for
//! [`crate::fatal_report`] to name the data dir, the free space and the fix.

use std::error::Error as StdError;
use std::fmt;

use openraft::error::ErrorSource;
use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
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

    #[test]
    fn the_wire_shape_is_openrafts() {
        let failure = StorageFailure::from_string("boom");
        let json = serde_json::to_string(&failure).expect("encode");
        let any: openraft::AnyError = serde_json::from_str(&json).expect("AnyError reads it");
        assert_eq!(any.to_string(), "boom");
        let back: StorageFailure = serde_json::from_str(&json).expect("decode");
        assert_eq!(back.to_string(), "boom");
    }
}
