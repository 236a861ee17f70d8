//! [`TlsError`]: why a node's TLS files cannot be used, naming the setting,
//! the file and the problem, with the library's error as its source. The
//! node does not start.

use std::path::PathBuf;

use raftlock_storage::NodeId;

use crate::error::Source;

/// A TLS certificate, key or CA file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// The file cannot be read.
    #[error("cannot read {setting} {}: {source}", path.display())]
    Read {
        setting: &'static str,
        path: PathBuf,
        source: Source,
    },
    /// The file is not PEM.
    #[error("{setting} {}: bad PEM: {source}", path.display())]
    BadPem {
        setting: &'static str,
        path: PathBuf,
        source: Source,
    },
    /// The PEM file holds no certificate.
    #[error("{setting} {}: no CERTIFICATE in this PEM file", path.display())]
    NoCertificate {
        setting: &'static str,
        path: PathBuf,
    },
    /// The key file holds no key rustls reads.
    #[error(
        "tls_key {}: no usable private key (PEM PKCS#8, PKCS#1 or SEC1): {source}",
        path.display()
    )]
    NoKey { path: PathBuf, source: Source },
    /// The certificate and key do not make a TLS server together.
    #[error(
        "tls_cert {} and tls_key {} cannot be used together (is the key the certificate's?): \
         {source}",
        cert.display(),
        key.display()
    )]
    KeyMismatch {
        cert: PathBuf,
        key: PathBuf,
        source: Source,
    },
    /// The certificate does not parse as X.509.
    #[error("tls_cert {}: not an X.509 certificate: {source}", path.display())]
    NotX509 { path: PathBuf, source: Source },
    /// The CA file's certificate cannot anchor trust.
    #[error("tls_ca {}: not a CA certificate: {source}", path.display())]
    NotCa { path: PathBuf, source: Source },
    /// The certificate does not verify for a node's `role` (server or
    /// client) against the CA.
    #[error(
        "tls_cert {} cannot be used as a node's TLS {role} certificate with tls_ca {}: \
         {source} (signed by another CA, expired, or not a node certificate? \
         `raftlock certs create-node` makes one)",
        cert.display(),
        ca.display()
    )]
    Unverified {
        cert: PathBuf,
        role: &'static str,
        ca: PathBuf,
        source: Source,
    },
    /// The certificate names another node.
    #[error("tls_cert {} is node {named}'s certificate, but this is node {id}", cert.display())]
    OtherNode {
        cert: PathBuf,
        named: NodeId,
        id: NodeId,
    },
    /// The certificate names no node.
    #[error(
        "tls_cert {} does not name node {id} (DNS name {}); create one with \
         `raftlock certs create-node --id {id}`",
        cert.display(),
        dns_name
    )]
    NoNodeName {
        cert: PathBuf,
        id: NodeId,
        /// The DNS name a certificate of node `id` carries.
        dns_name: String,
    },
}
