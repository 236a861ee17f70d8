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
/// Metadata key set to [`WAIT_GONE`] on the ABORTED answer to a wait that
/// found neither its place in the queue nor a hold under its request: an
/// earlier attempt of the request was given up by the client (no answer
/// from its node in time) and its node cancelled the wait it made, so
/// nothing was granted under the request and the client may ask again
/// under a new one.
pub const WAIT_KEY: &str = "raftlock-wait";
/// The value of [`WAIT_KEY`].
pub const WAIT_GONE: &str = "gone";
