//! How the command line words a failed call: one line saying what went
//! wrong and what to do about it.

use crate::error::Error;

/// `error` for a user who gave `endpoints`, with the next step to take.
pub fn explain(error: &Error, endpoints: &[String]) -> String {
    match error {
        Error::Unavailable(m) if m.contains("no quorum") => format!(
            "the cluster has no quorum ({m}); bring back a majority of its members (restart \
             them, or mend the network), then retry; `raftlock cluster status` shows which \
             members answer"
        ),
        Error::Unavailable(m) => format!(
            "cannot reach a raftlock leader via {} ({m}); start a node with `raftlock serve` \
             or point --endpoints / RAFTLOCK_ENDPOINTS at a running cluster{}",
            endpoints.join(","),
            tls_hint(m)
        ),
        Error::Internal(m) if m.contains("h2 protocol error") => format!(
            "{} did not answer in plain gRPC ({m}); if {} TLS, pass the cluster CA with \
             --cacert (RAFTLOCK_CACERT)",
            nodes_at(endpoints),
            if endpoints.len() == 1 {
                "it serves"
            } else {
                "they serve"
            }
        ),
        Error::Tls(m) => format!("{m}; check --cacert, --cert and --key"),
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
        Error::Unauthenticated(m) => format!(
            "unauthenticated: {m}; pass a token with RAFTLOCK_TOKEN (or --token), or a \
             client certificate with --cert and --key"
        ),
        Error::PermissionDenied(m) => format!(
            "permission denied: {m}; ask an operator for a role that allows it (the node's \
             --auth-file)"
        ),
        other => format!("{other}; see the server's log (RAFTLOCK_LOG=debug for more)"),
    }
}

/// "the node at A" or "the nodes at A,B".
fn nodes_at(endpoints: &[String]) -> String {
    match endpoints {
        [one] => format!("the node at {one}"),
        many => format!("the nodes at {}", many.join(",")),
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
    fn plain_grpc_against_tls_names_one_node_or_several() {
        let e = Error::Internal("Internal: h2 protocol error: http2 error".into());
        let one = explain(&e, &["a:1".into()]);
        assert!(one.starts_with("the node at a:1 did not answer"), "{one}");
        assert!(one.contains("if it serves TLS"), "{one}");
        let two = explain(&e, &["a:1".into(), "b:2".into()]);
        assert!(
            two.starts_with("the nodes at a:1,b:2 did not answer"),
            "{two}"
        );
        assert!(two.contains("if they serve TLS"), "{two}");
    }
}
