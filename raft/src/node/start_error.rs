//! [`StartError`]: why a replica did not start, with what caused it. Each
//! message names the setting, file or dir and, where there is one, the
//! way forward; the cause is kept as the error's source.

use std::io;
use std::path::PathBuf;

use raftlock_storage::NodeId;

use crate::config::ConfigError;
use crate::node::rollback::RolledBack;
use crate::peer::auth::KeyError;
use crate::peer::guard::Refusal;
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
    /// Another live process answers as this node at the peer address
    /// the cluster records for it: this dir is a copy of a running node's.
    #[error(
        "node {id} is already running at {at} (cluster {cluster_id}, boot {boot}), the \
         address the cluster records for it; this process ({own}) would be a second \
         node {id}. Is {} a copy of that node's data dir? Stop one of them; to move \
         the node, stop the old process first",
        data_dir.display()
    )]
    AlreadyRunning {
        /// This node's id.
        id: NodeId,
        /// The peer address the cluster records, where the other answers.
        at: String,
        /// The cluster the other process serves.
        cluster_id: String,
        /// The other process's start number.
        boot: u64,
        /// This process's own peer address.
        own: String,
        /// This process's data dir.
        data_dir: PathBuf,
    },
    /// The data dir is older than what a peer saw of this node.
    #[error(transparent)]
    RolledBack(#[from] RolledBack),
    /// The new cluster's id could not be created and saved.
    #[error(transparent)]
    ClusterId(Refusal),
    /// A file or socket operation failed.
    #[error("cannot {doing}: {source}")]
    Io {
        /// What was being done, with its path or address.
        doing: StartIo,
        /// The operating system's error.
        source: io::Error,
    },
    /// openraft refused to start or to initialize the cluster.
    #[error("internal error: cannot {doing}: {source}")]
    Raft {
        /// "start raft" or "initialize cluster".
        doing: &'static str,
        /// openraft's error.
        source: Box<dyn std::error::Error + Send + Sync>,
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

/// The file or socket operation a [`StartError::Io`] failed in.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StartIo {
    /// Creating the data dir.
    #[error("create data dir {}", .0.display())]
    CreateDataDir(PathBuf),
    /// Binding the peer listener to this address.
    #[error("listen on {0}")]
    ListenPeer(String),
    /// Reading the bound peer listener's address.
    #[error("read the peer listener's address")]
    PeerListenerAddr,
}
