//! The storage crate's one error type, and its mapping into openraft's
//! [`StorageError`].

use openraft::{ErrorSubject, ErrorVerb, StorageError, StorageIOError};

use crate::types::NodeId;

/// Everything that can go wrong while keeping raftlock's state on disk.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// sled failed (IO error, corrupted pagecache, ...).
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    /// A stored record (or a received snapshot) did not decode.
    #[error("corrupt {what}: {source}")]
    Decode {
        /// Which record: `"log entry 17"`, `"lock record"`, `"snapshot"`, ...
        what: String,
        /// What serde_json found wrong with it.
        #[source]
        source: serde_json::Error,
    },
    /// A record could not be encoded. Not expected with raftlock's types;
    /// kept as an error rather than a panic all the same.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// Which record.
        what: String,
        /// What serde_json refused.
        #[source]
        source: serde_json::Error,
    },
    /// A record decoded but contradicts where it was found (a log entry under
    /// the wrong index, an unknown key prefix, a truncated key).
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// A thread panicked while holding the in-memory state's lock, so the
    /// state may be half-updated and must not be persisted or served.
    #[error("the in-memory lock state is poisoned by an earlier panic")]
    Poisoned,
    /// A storage step run on the blocking thread pool did not finish (it
    /// panicked, or the runtime is shutting down).
    #[error("storage worker failed: {0}")]
    Worker(String),
}

impl Error {
    /// Wraps this error for openraft, saying what was being done to what.
    pub(crate) fn storage(
        &self,
        subject: ErrorSubject<NodeId>,
        verb: ErrorVerb,
    ) -> StorageError<NodeId> {
        StorageIOError::new(subject, verb, self).into()
    }

    pub(crate) fn decode(what: impl Into<String>, source: serde_json::Error) -> Self {
        Error::Decode {
            what: what.into(),
            source,
        }
    }

    pub(crate) fn encode(what: impl Into<String>, source: serde_json::Error) -> Self {
        Error::Encode {
            what: what.into(),
            source,
        }
    }
}

/// Encodes `value` as JSON, naming `what` on failure.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(
    what: &str,
    value: &T,
) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(value).map_err(|e| Error::encode(what, e))
}

/// Decodes JSON `bytes`, naming `what` on failure.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    bytes: &[u8],
) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::decode(what, e))
}
