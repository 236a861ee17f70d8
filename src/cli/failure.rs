//! How the command line words a failed call: one line saying what went
//! wrong and what to do about it.

use crate::error::Error;

/// `error` for a user who gave `endpoints`, with the next step to take.
pub fn explain(error: &Error, endpoints: &[String]) -> String {
    match error {
        Error::Unavailable(m) => format!(
            "cannot reach a raftlock leader via {} ({m}); start a node with `raftlock serve` \
             or point --endpoints / RAFTLOCK_ENDPOINTS at a running cluster",
            endpoints.join(",")
        ),
        Error::InvalidArgument(m) => format!("invalid argument: {m}; fix it and run again"),
        Error::LeaseExpired(m) => format!(
            "lease expired or revoked ({m}); grant a new one with `raftlock lease grant TTL`"
        ),
        Error::NotHeld(m) => {
            format!("not held: {m}; see who holds it with `raftlock locks describe NAME`")
        }
        Error::Timeout(m) => format!("timed out: {m}; retry with a longer --timeout"),
        Error::LimitReached(m) => {
            format!("limit reached: {m}; release locks or revoke leases first, or retry later")
        }
        Error::LockLost(m) => format!("lock lost: {m}; acquire it again before acting"),
        Error::OutcomeUnknown(m) => format!(
            "outcome unknown: {m}; check with `raftlock locks describe NAME` or \
             `raftlock lease list` before running again"
        ),
        other => format!("{other}; see the server's log (RAFTLOCK_LOG=debug for more)"),
    }
}
