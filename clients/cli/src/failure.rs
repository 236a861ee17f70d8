//! How the command line words a failed call: one line saying what went
//! wrong and what to do about it.

use raftlock_client::Error;

/// `error` for a user who gave `endpoints`, with the next step to take.
pub fn explain(error: &Error, endpoints: &[String]) -> String {
    match error {
        Error::Unavailable(m) if m.contains("no quorum") => format!(
            "the cluster has no quorum ({m}); bring back a majority of its members (restart \
             them, or mend the network), then retry; `raftlock cluster status` shows which \
             members answer"
        ),
        // The client's own words already name the address, the cause and
        // the next step.
        Error::Unavailable(m) if m.starts_with("cannot reach raftlock") => m.clone(),
        Error::Unavailable(m) => format!(
            "cannot reach a raftlock leader via {} ({m}); start a node with `raftlock serve` \
             or point --endpoints / RAFTLOCK_ENDPOINTS at a running cluster{}",
            endpoints.join(","),
            tls_hint(m)
        ),
        Error::Tls(m) => m.clone(),
        Error::NotServed(_) => format!(
            "{} does not serve raftlock's client API: is it a peer port? Point --endpoints \
             (RAFTLOCK_ENDPOINTS) at client ports (7379 by default, not 7380)",
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
        // The node's message already says what to give for an admin
        // credential (docs/security.md, "Operator calls").
        Error::Unauthenticated(m) if m.contains("admin credential") => {
            format!("unauthenticated: {m}")
        }
        Error::Unauthenticated(m) => format!(
            "unauthenticated: {m}; pass a token with RAFTLOCK_TOKEN (or --token), or a \
             client certificate with --cert and --key"
        ),
        Error::PermissionDenied(m) if m.contains("operator call") => {
            format!("permission denied: {m}")
        }
        Error::PermissionDenied(m) => format!(
            "permission denied: {m}; ask an operator for a role that allows it (the node's \
             --auth-file)"
        ),
        other => format!("{other}; see the server's log (RAFTLOCK_LOG=debug for more)"),
    }
}

/// What to check when a connection failed in the TLS handshake (or may
/// have: a refused client certificate only shows as a cancelled call).
fn tls_hint(message: &str) -> &'static str {
    if message.contains("certificate") {
        "; the TLS handshake failed: --cacert (RAFTLOCK_CACERT) must be the cluster's CA \
         and the endpoint an address its node certificate names"
    } else if message.contains("InvalidContentType") {
        "; the node does not speak TLS: drop --cacert or use a TLS cluster's endpoints"
    } else if message.contains("canceled") {
        "; a TLS node that requires client certificates ends the connection like this: \
         pass --cert and --key (RAFTLOCK_CERT, RAFTLOCK_KEY)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_unreachable_message_is_said_once() {
        let m = "cannot reach raftlock at a:1 (connection refused): is `raftlock serve` \
                 running there?";
        let e = Error::Unavailable(m.into());
        assert_eq!(explain(&e, &["a:1".into()]), m);
    }
}
