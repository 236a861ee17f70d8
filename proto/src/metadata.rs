//! The gRPC metadata keys of `raftlock.v1` answers: the server sets them
//! (`raftlock::status`), the client reads them back
//! (`raftlock_client::error::from_status`).

/// Metadata key naming the leader's node id in a not-leader answer.
pub const LEADER_ID_KEY: &str = "raftlock-leader-id";
/// Metadata key naming the leader's client address in a not-leader answer.
pub const LEADER_ADDR_KEY: &str = "raftlock-leader-addr";
/// Metadata key set to [`OUTCOME_UNKNOWN`] on a FAILED_PRECONDITION whose
/// request may or may not have been applied: the cluster no longer
/// remembers its reply (a stale retry, or a client whose session expired).
pub const OUTCOME_KEY: &str = "raftlock-outcome";
/// The value of [`OUTCOME_KEY`].
pub const OUTCOME_UNKNOWN: &str = "unknown";
