//! What a program needs to reach a node that runs in its own process: the
//! address to dial, the TLS material to trust and present, the admin
//! credential. A `raftlock::Node` hands it out (`Node::access`), a client
//! is made from it (`raftlock_client::Client::for_node`), and neither
//! crate depends on the other.

/// How to reach one node as the application that embeds it: an admin of
/// its cluster (its certificate, or the cluster's admin credential).
/// Its `Debug` never shows the key or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeAccess {
    /// `host:port` of the node's client listener (loopback when it is
    /// bound to every interface).
    pub endpoint: String,
    /// Set when the node speaks TLS.
    pub tls: Option<NodeAccessTls>,
    /// The cluster's admin credential as a bearer token; `None` when peers
    /// use mutual TLS (the node certificate is the admin identity then) or
    /// the cluster runs `--insecure`.
    pub token: Option<String>,
}

/// The TLS side of a [`NodeAccess`]: trust the cluster CA, expect the
/// node's certificate name, present the node's own certificate.
#[derive(Clone, PartialEq, Eq)]
pub struct NodeAccessTls {
    /// The cluster CA (PEM).
    pub ca_pem: Vec<u8>,
    /// The node's certificate (PEM), presented as the client's.
    pub cert_pem: Vec<u8>,
    /// Its private key (PEM).
    pub key_pem: Vec<u8>,
    /// The name the node's certificate carries (`node-ID.raftlock`).
    pub server_name: String,
}

impl std::fmt::Debug for NodeAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeAccess")
            .field("endpoint", &self.endpoint)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl std::fmt::Debug for NodeAccessTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("NodeAccessTls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key and the token stay out of logs: without the hand-written
    /// `Debug` impls (a derived one) both would print.
    #[test]
    fn debug_shows_no_key_and_no_token() {
        let access = NodeAccess {
            endpoint: "127.0.0.1:7379".into(),
            tls: Some(NodeAccessTls {
                ca_pem: b"CA".to_vec(),
                cert_pem: b"CERT".to_vec(),
                key_pem: b"SECRET-KEY".to_vec(),
                server_name: "node-1.raftlock".into(),
            }),
            token: Some("SECRET-TOKEN".into()),
        };
        let shown = format!("{access:?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("node-1.raftlock"), "{shown}");
    }
}
