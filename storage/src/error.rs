//! The storage crate's one error type. openraft 0.10's storage traits take
//! `std::io::Error`; [`From<Error> for std::io::Error`] keeps the message and
//! the source, so openraft's fatal storage error still names what failed.

/// Any error, boxed: the decoders and encoders behind [`Error::Decode`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
        /// Which record: `"log entry 17"`, `"vote"`, `"snapshot"`, ...
        what: String,
        /// What the decoder found wrong with it.
        #[source]
        source: BoxError,
    },
    /// A record could not be encoded. Not expected with raftlock's types;
    /// kept as an error rather than a panic all the same.
    #[error("cannot encode {what}: {source}")]
    Encode {
        /// Which record.
        what: String,
        /// What the encoder refused.
        #[source]
        source: BoxError,
    },
    /// A stored record's checksum does not match its bytes: the disk (or
    /// something else) changed it after it was written.
    #[error(
        "corrupt {what}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
    )]
    Checksum {
        /// Which record.
        what: String,
        /// The CRC32C stored with the record.
        stored: u32,
        /// The CRC32C of the bytes found.
        computed: u32,
    },
    /// A stored record is in a format this build does not read.
    #[error(
        "{what} is in record format {found}, this build reads format {reads}: \
         the data dir was written by another raftlock version{}",
        upgrade_hint(*found, *reads)
    )]
    Format {
        /// Which record.
        what: String,
        /// Its first byte.
        found: u8,
        /// The format this build reads (`codec::FORMAT`).
        reads: u8,
    },
    /// A file operation in the data dir failed.
    #[error("cannot {doing} {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What was being done: `"fsync"`, `"open"`, ...
        doing: &'static str,
        /// `source.kind()`, for matching.
        kind: std::io::ErrorKind,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The data dir cannot be trusted; the node must not start on it.
    #[error("refusing to start on data dir {}: {problem}. {action}", path.display())]
    DataDir {
        /// The file or directory at fault.
        path: std::path::PathBuf,
        /// What is wrong with it.
        problem: String,
        /// What the operator can do.
        action: String,
    },
    /// Another process has the data dir open (sled's lock on its `db`
    /// file is taken): this one must not start on it.
    #[error(
        "data dir {} is in use by another process ({}); stop that process first, \
         or give this node a data dir of its own",
        path.display(),
        holder.as_ref().map_or_else(|| "its pid is unknown".to_string(), |h| h.to_string())
    )]
    InUse {
        /// The data dir.
        path: std::path::PathBuf,
        /// The process holding the lock, if the system says.
        holder: Option<crate::dir_lock::LockHolder>,
    },
    /// A record decoded but contradicts where it was found (a log entry under
    /// the wrong index, an unknown key prefix, a truncated key).
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// A thread panicked while holding the in-memory state's lock, so the
    /// state may be half-updated and must not be persisted or served.
    #[error("the in-memory lock state is poisoned by an earlier panic")]
    Poisoned,
    /// A peer offered a cluster id that is not the one the data dir records.
    #[error("the data dir belongs to cluster {recorded}, not {offered}")]
    ClusterMismatch {
        /// The id the identity file holds.
        recorded: uuid::Uuid,
        /// The id that was to be recorded.
        offered: uuid::Uuid,
    },
    /// A storage step run on the blocking thread pool did not finish (it
    /// panicked, or the runtime is shutting down).
    #[error("storage worker failed: {0}")]
    Worker(String),
    /// A backup cannot be restored as asked (see [`crate::backup`]).
    #[error("cannot restore: {0}")]
    Restore(String),
}

impl Error {
    pub(crate) fn decode(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Decode {
            what: what.into(),
            source: Box::new(source),
        }
    }

    pub(crate) fn encode(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Error::Encode {
            what: what.into(),
            source: Box::new(source),
        }
    }

    pub(crate) fn corrupt(what: &str, reason: impl std::fmt::Display) -> Self {
        Error::Corrupt(format!("{what}: {reason}"))
    }
}

/// Decodes JSON `bytes`, naming `what` on failure.
/// The way forward from a data dir of the format before this build's.
fn upgrade_hint(found: u8, reads: u8) -> &'static str {
    if found.checked_add(1) == Some(reads) {
        " (to carry its state over: `raftlock snapshot save` with that version, then \
         `raftlock snapshot restore` with this one, which reads its backups)"
    } else {
        ""
    }
}

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    bytes: &[u8],
) -> Result<T, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::decode(what, e))
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::other(e)
    }
}

impl Error {
    /// This error as an `io::Error` of its own text, for a result that is
    /// handed to several waiters: of kind `StorageFull` when it is a full
    /// disk (so [`crate::storage_failure`] still sees it), else `Other`.
    pub fn to_io(&self) -> std::io::Error {
        let kind = if crate::storage_failure::is_disk_full(self) {
            std::io::ErrorKind::StorageFull
        } else {
            std::io::ErrorKind::Other
        };
        std::io::Error::new(kind, self.to_string())
    }
}
