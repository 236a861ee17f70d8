//! Why an Acquire or Campaign gave no grant: replication's refusal, or the
//! wait's own end, each a reason with the lock's name and the times a
//! caller needs. `raftlock::status::wait_status` gives each its gRPC code.

use std::time::Duration;

use raftlock_raft::Error;
use raftlock_storage::EndReason;

/// Why an Acquire gave no grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitError {
    /// Replication (or the state machine) refused or could not answer.
    #[error(transparent)]
    Replica(#[from] Error),
    /// The wait ran past its timeout and its cancel committed: the call
    /// holds nothing.
    #[error("timed out: {}", Waited(name, waited))]
    Timeout {
        /// The lock waited for.
        name: String,
        /// The call's wait timeout.
        waited: Duration,
    },
    /// The wait ended without a grant.
    #[error("wait for {name} ended{why}")]
    Ended {
        /// The lock waited for.
        name: String,
        /// How it ended.
        why: WaitEnd,
    },
    /// The wait ran past its timeout, but its cancel has not settled how
    /// it ended: it may still be queued or granted. Retryable, with a
    /// higher attempt, to learn the outcome.
    #[error("unavailable: {}", Unsettled(name, waited, why))]
    Unsettled {
        /// The lock waited for.
        name: String,
        /// The call's wait timeout.
        waited: Duration,
        /// Why the cancel did not settle it.
        why: Unsettle,
    },
    /// This node stops while the call waits; the caller's retry (same
    /// request id) on another node finds its place in the queue again.
    #[error("unavailable: node is shutting down; retry on another node")]
    Stopping,
}

/// How a wait ended without a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WaitEnd {
    /// The waiter is gone from the queue and holds nothing (the state
    /// was replaced by a snapshot, say).
    #[error(" without a grant")]
    NoGrant,
    /// The state machine ended it.
    #[error(": {}", describe(*.0))]
    Ended(EndReason),
}

/// Why a timed-out wait's cancel did not settle its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsettle {
    /// A later attempt of the request owns the wait now.
    Superseded,
    /// The cancel was not committed (it is retried in the background).
    CancelFailed(Box<Error>),
}

impl WaitError {
    /// The words a client reads after the status code's own.
    pub fn message(&self) -> String {
        match self {
            WaitError::Replica(e) => e.to_string(),
            WaitError::Timeout { name, waited } => Waited(name, waited).to_string(),
            WaitError::Ended { .. } => self.to_string(),
            WaitError::Unsettled { name, waited, why } => Unsettled(name, waited, why).to_string(),
            WaitError::Stopping => "node is shutting down; retry on another node".into(),
        }
    }
}

fn describe(reason: EndReason) -> &'static str {
    match reason {
        EndReason::Released => "cancelled",
        EndReason::LeaseRevoked => "lease revoked",
        EndReason::LeaseExpired => "lease expired",
        EndReason::ForceReleased => "force-released",
    }
}

struct Waited<'a>(&'a String, &'a Duration);

impl std::fmt::Display for Waited<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "waited {:?} for {}", self.1, self.0)
    }
}

struct Unsettled<'a>(&'a String, &'a Duration, &'a Unsettle);

impl std::fmt::Display for Unsettled<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waited = Waited(self.0, self.1);
        match self.2 {
            Unsettle::Superseded => write!(
                f,
                "{waited}; a later attempt of this request now owns the wait, retry with a \
                 higher attempt to learn how it ended"
            ),
            Unsettle::CancelFailed(e) => write!(
                f,
                "{waited}, but could not cancel the wait ({e}): it may still be queued or \
                 granted; retry with a higher attempt to learn how it ended"
            ),
        }
    }
}
