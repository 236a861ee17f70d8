//! [`StartError`]: why a replica did not start, with what caused it. Each
//! message names the setting, file or dir and, where there is one, the
//! way forward; the cause is kept as the error's source.

use std::io;
use std::path::PathBuf;

use crate::config::ConfigError;
use crate::peer::auth::KeyError;
use crate::transport::tls::TlsError;

/// Why [`RaftNode::start`](super::RaftNode::start) failed. Nothing was
/// started; the data dir was not touched when the settings, the TLS files
/// or the peer secret were at fault.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The settings do not fit together.
    #[error("invalid argument: {0}")]
    Config(#[from] ConfigError),
    /// A TLS certificate, key or CA file cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// Peer authentication cannot be set up as configured (no join token
    /// for a cluster of several nodes, another cluster's token, an
    /// unreadable token file).
    #[error(transparent)]
    PeerAuth(#[from] KeyError),
    /// The data dir cannot be used (damaged, lost state, another node's or
    /// cluster's, in use): the message says what to do.
    #[error(transparent)]
    DataDir(raftlock_storage::Error),
    /// The data dir could not be opened for another reason.
    #[error("cannot open data dir {}: {source}", dir.display())]
    Open {
        /// The data dir.
        dir: PathBuf,
        /// What sled or the stores said.
        source: raftlock_storage::Error,
    },
    /// A check before Raft starts refused: another live process with this
    /// node's id, or a data dir older than what a peer saw.
    #[error("{0}")]
    Refused(String),
    /// A file or socket operation failed.
    #[error("cannot {doing}: {source}")]
    Io {
        /// What was being done, with its path or address.
        doing: String,
        /// The operating system's error.
        source: io::Error,
    },
    /// openraft refused to start or to initialize the cluster.
    #[error("internal error: cannot {doing}: {reason}")]
    Raft {
        /// "start raft" or "initialize cluster".
        doing: &'static str,
        /// openraft's error, in its words.
        reason: String,
    },
    /// A start-up task ended without an answer.
    #[error("internal error: {doing} did not finish: {source}")]
    Task {
        /// Which task.
        doing: &'static str,
        /// How it ended.
        source: tokio::task::JoinError,
    },
}
