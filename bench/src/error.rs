//! The benchmark's one error type.

/// Anything that stops a benchmark run.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// etcd is not installed and could not be installed.
    #[error("cannot install etcd: {0}")]
    Install(String),
    /// A cluster could not be started, reached or restarted.
    #[error("cluster: {0}")]
    Cluster(String),
    /// The test kit could not start a node process.
    #[error("cluster: {0}")]
    Launch(#[from] raftlock_testkit::Error),
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// An etcd call failed.
    #[error("etcd: {0}")]
    Etcd(#[from] tonic::Status),
    /// A raftlock call failed.
    #[error("raftlock: {0}")]
    Raftlock(#[from] raftlock_client::Error),
    /// A workload could not run as planned.
    #[error("workload {workload}: {message}")]
    Workload {
        workload: &'static str,
        message: String,
    },
    /// The results could not be written.
    #[error("report: {0}")]
    Report(String),
}

impl Error {
    /// An [`Error::Io`] with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}
