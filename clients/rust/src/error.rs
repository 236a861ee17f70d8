//! raftlock's error type, as the client library, the embedded node and the
//! CLI report it. `from_status` is the one place a gRPC status becomes an
//! `Error` again.

use tonic::{Code, Status};

use crate::metadata::{
    LEADER_ADDR_KEY, LEADER_ID_KEY, OUTCOME_KEY, OUTCOME_UNKNOWN, WAIT_GONE, WAIT_KEY,
};

/// Everything that can go wrong talking to raftlock.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The request was malformed; fix it before retrying.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The lease is gone (expired or revoked): its locks are released.
    #[error("lease expired or revoked: {0}")]
    LeaseExpired(String),
    /// The caller does not hold the lock (or the name is used differently).
    #[error("not held: {0}")]
    NotHeld(String),
    /// A wait ran out of time; the server cancelled it.
    #[error("timed out: {0}")]
    Timeout(String),
    /// A wait ended without a grant (cancelled, lease ended, force-released).
    #[error("wait ended: {0}")]
    WaitEnded(String),
    /// Too many waiters on a lock, or too many leases.
    #[error("limit reached: {0}")]
    LimitReached(String),
    /// A lock, permit or leadership can no longer be trusted: its lease
    /// ended (expired, revoked, or keep-alives failed past the safety
    /// margin) or it was force-released. Stop acting as its holder.
    #[error("lock lost: {0}")]
    LockLost(String),
    /// A write to a [`Fenced`](crate::Fenced) resource carried an
    /// older fencing token than one it already accepted: the writer's lock
    /// was lost and someone else has held it since.
    #[error("stale fencing token {presented}: token {highest} was already accepted")]
    StaleFence { presented: u64, highest: u64 },
    /// The cluster no longer remembers this request's reply, so it may or
    /// may not have been applied: a retry came after its reply was
    /// forgotten, or this client's session expired (it had no live lease of
    /// its own and was forgotten to make room for other clients). The call
    /// is not re-sent. If it was an acquire or campaign, the owner may hold
    /// the lock: release or cancel it, or revoke the lease, to be sure. The
    /// client continues with a new client id.
    #[error("outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// The call proved no identity the cluster knows: no token or
    /// certificate, or an unknown one.
    #[error("unauthenticated: {0}")]
    Unauthenticated(String),
    /// The caller's identity may not do this: another identity's lease, a
    /// name outside its roles, or an admin call without the admin role.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The endpoint does not serve this raftlock call: not a raftlock client
    /// port (a peer port, another service), or an older server.
    #[error("the endpoint does not serve this call ({0}): is it a raftlock client port?")]
    NotServed(String),
    /// No node could serve the call in time; retrying later may work.
    /// When no endpoint could be reached, the message names each address
    /// tried and why (connection refused, timed out).
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// A node could not start.
    #[error("cannot start node: {0}")]
    Startup(String),
    /// A certificate, key or CA file cannot be read, written or used; or
    /// no TLS connection could be made with them: a certificate expired or
    /// not yet valid (the client's or a node's), one from another CA, TLS
    /// on one side only. The message names the file or node, the dates
    /// where known, and the next step. Retrying does not help.
    #[error("TLS: {0}")]
    Tls(String),
    /// A bug or a broken disk on the server side.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// Whether a retry of the same request (same request id) may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}

/// The leader named by a not-leader status: (node id, client address).
pub fn leader_hint(status: &Status) -> Option<(u64, String)> {
    let id = status
        .metadata()
        .get(LEADER_ID_KEY)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    let addr = status
        .metadata()
        .get(LEADER_ADDR_KEY)?
        .to_str()
        .ok()?
        .to_string();
    Some((id, addr))
}

/// Whether a status says its request may or may not have been applied.
fn outcome_unknown(status: &Status) -> bool {
    status
        .metadata()
        .get(OUTCOME_KEY)
        .is_some_and(|v| v.as_bytes() == OUTCOME_UNKNOWN.as_bytes())
}

/// Whether `status` answers a wait that found nothing left under its
/// request (no place in the queue, no hold): an earlier attempt's wait was
/// cancelled when the client gave that attempt up, and nothing was
/// granted, so the call may ask again under a new request id.
pub(crate) fn wait_gone(status: &Status) -> bool {
    status.code() == Code::Aborted
        && status
            .metadata()
            .get(WAIT_KEY)
            .is_some_and(|v| v.as_bytes() == WAIT_GONE.as_bytes())
}

/// Whether `status` is tonic's for an HTTP/2 connection that broke under
/// the call (a node stopping or removed sends GOAWAY or resets its
/// streams): tonic reports most HTTP/2 reasons as `Internal` "h2 protocol
/// error", which is the connection's failure, not the server's answer, so
/// the call is tried on the next endpoint under its request id.
fn connection_broke(status: &Status) -> bool {
    status.message().starts_with("h2 protocol error")
}

/// Maps a status from a raftlock server back to an [`Error`].
pub fn from_status(status: &Status) -> Error {
    let msg = status.message().to_string();
    match status.code() {
        Code::InvalidArgument => Error::InvalidArgument(msg),
        Code::NotFound => Error::LeaseExpired(msg),
        Code::FailedPrecondition if outcome_unknown(status) => Error::OutcomeUnknown(msg),
        Code::FailedPrecondition => Error::NotHeld(msg),
        Code::DeadlineExceeded => Error::Timeout(msg),
        Code::Aborted => Error::WaitEnded(msg),
        Code::ResourceExhausted => Error::LimitReached(msg),
        Code::Unauthenticated => Error::Unauthenticated(msg),
        Code::PermissionDenied => Error::PermissionDenied(msg),
        Code::Unavailable | Code::Unknown | Code::Cancelled => Error::Unavailable(msg),
        Code::Internal if connection_broke(status) => Error::Unavailable(msg),
        Code::Unimplemented => Error::NotServed(msg),
        _ => Error::Internal(format!("{:?}: {msg}", status.code())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only an ABORTED answer marked gone tells the client to ask again.
    #[test]
    fn only_a_marked_aborted_answer_is_a_wait_gone() {
        let mut gone = Status::aborted("wait for a ended without a grant");
        gone.metadata_mut().insert(
            WAIT_KEY,
            tonic::metadata::MetadataValue::from_static(WAIT_GONE),
        );
        assert!(wait_gone(&gone));
        assert!(!wait_gone(&Status::aborted(
            "wait for a ended: lease expired"
        )));
        let mut unavailable = Status::unavailable("x");
        unavailable.metadata_mut().insert(
            WAIT_KEY,
            tonic::metadata::MetadataValue::from_static(WAIT_GONE),
        );
        assert!(!wait_gone(&unavailable));
    }

    /// A connection that broke under a call (tonic's `Internal` "h2
    /// protocol error", seen when a removed node exits mid-call) is a
    /// failure to reach the node, retried on the next endpoint; a
    /// server's own `Internal` answer is not. Before, the broken
    /// connection was `Internal`, and one `raftlock lock` in the selftest's
    /// membership changes failed with it.
    #[test]
    fn a_broken_connection_is_unavailable_and_a_servers_internal_error_is_not() {
        let broke = Status::internal("h2 protocol error: http2 error");
        assert!(matches!(from_status(&broke), Error::Unavailable(_)));
        let answered = Status::internal("apply failed");
        assert!(matches!(from_status(&answered), Error::Internal(_)));
    }
}
