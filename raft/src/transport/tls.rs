//! TLS for a node: the certificate files named in [`Config`], read and
//! checked once at start; the rustls settings of the peer listener (mutual
//! TLS), of peer channels and of the client listener (the listeners'
//! handshakes are in [`crate::transport::tls_acceptor`]); and the names a certificate
//! carries to say which node or client it belongs to.
//!
//! # Certificate names
//!
//! - A node's certificate carries the DNS name `node-ID.raftlock`
//!   ([`node_dns_name`]) beside the hosts it serves on. A peer channel to
//!   node N checks the server's certificate against `node-N.raftlock`, so
//!   rustls itself refuses a certificate of another node: no custom
//!   verifier. The peer listener learns who dialled it from the same name
//!   in the client certificate (`peer_node_id`).
//! - A client's certificate carries the URI `raftlock:client:NAME`
//!   ([`client_uri`]) and the common name `NAME`, for an authorisation
//!   layer to map to roles ([`cert_identity`]).

use std::path::Path;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
use webpki::{EndEntityCert, KeyUsage};

use raftlock_storage::NodeId;

use crate::error::dial_error::DialError;
use crate::error::Source;

use crate::config::Config;
use crate::transport::tls_acceptor::{TlsAcceptor, HANDSHAKE_TIMEOUT};

pub use crate::transport::tls_error::TlsError;

/// The DNS name under which node certificates name their node.
const NODE_NAME_SUFFIX: &str = ".raftlock";
/// Prefix of a node's DNS name.
const NODE_NAME_PREFIX: &str = "node-";
/// Prefix of the URI that names a client in its certificate.
pub const CLIENT_URI_PREFIX: &str = "raftlock:client:";

/// Where to dial member `target` at its peer address `addr`: `https` with
/// `tls` (this node's certificate presented, `target`'s name checked),
/// else `http`. The caller adds its timeouts.
pub fn member_endpoint(
    tls: Option<&NodeTls>,
    target: NodeId,
    addr: &str,
) -> Result<Endpoint, DialError> {
    let scheme = if tls.is_some() { "https" } else { "http" };
    let endpoint =
        Endpoint::from_shared(format!("{scheme}://{addr}")).map_err(|e| DialError::BadAddress {
            addr: addr.to_owned(),
            source: Source::new(e),
        })?;
    match tls {
        None => Ok(endpoint),
        Some(tls) => endpoint
            .tls_config(tls.peer_client_config(target))
            .map_err(|e| DialError::Tls {
                target,
                addr: addr.to_owned(),
                source: Source::new(e),
            }),
    }
}

/// The DNS name a certificate of node `id` carries: `node-ID.raftlock`.
pub fn node_dns_name(id: NodeId) -> String {
    format!("{NODE_NAME_PREFIX}{id}{NODE_NAME_SUFFIX}")
}

/// The node a DNS name `node-ID.raftlock` names. Only the canonical
/// spelling counts (no leading zeros, no id 0), so one node has one name.
pub fn node_id_of_dns_name(name: &str) -> Option<NodeId> {
    let digits = name
        .strip_prefix(NODE_NAME_PREFIX)?
        .strip_suffix(NODE_NAME_SUFFIX)?;
    let id: NodeId = digits.parse().ok()?;
    (id != 0 && id.to_string() == digits).then_some(id)
}

/// The URI a certificate of client `name` carries: `raftlock:client:NAME`.
pub fn client_uri(name: &str) -> String {
    format!("{CLIENT_URI_PREFIX}{name}")
}

/// Whom a certificate names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertIdentity {
    /// A node certificate: exactly one `node-ID.raftlock` DNS name.
    Node(NodeId),
    /// A client certificate: exactly one `raftlock:client:NAME` URI.
    Client(String),
}

/// Whom a certificate names, if it names exactly one node or one client and
/// not both. The certificate must already be verified (by the handshake):
/// this only reads its names.
pub fn cert_identity(der: &CertificateDer<'_>) -> Option<CertIdentity> {
    let cert = EndEntityCert::try_from(der).ok()?;
    let mut nodes: Vec<NodeId> = cert
        .valid_dns_names()
        .filter_map(node_id_of_dns_name)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut clients: Vec<&str> = cert
        .valid_uri_names()
        .filter_map(|u| u.strip_prefix(CLIENT_URI_PREFIX))
        .collect();
    clients.sort_unstable();
    clients.dedup();
    match (nodes.as_slice(), clients.as_slice()) {
        ([id], []) => Some(CertIdentity::Node(*id)),
        ([], [name]) if !name.is_empty() => Some(CertIdentity::Client(name.to_string())),
        _ => None,
    }
}

/// The node named by the verified client certificate of an inbound peer
/// request; `None` without TLS or when the certificate names no single
/// node. The peer listener refuses such requests when TLS is on; with TLS
/// off there is no identity to compare a claimed sender with.
pub(crate) fn peer_node_id<T>(req: &tonic::Request<T>) -> Option<NodeId> {
    let certs = req.peer_certs()?;
    match cert_identity(certs.first()?)? {
        CertIdentity::Node(id) => Some(id),
        CertIdentity::Client(_) => None,
    }
}

/// A node's certificate, key and cluster CA, read from the files
/// [`Config`] names and checked to fit together.
#[derive(Clone)]
pub struct NodeTls {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    ca_pem: Vec<u8>,
    /// The listeners' settings: client certificate required (the peer
    /// listener; the client listener with `client_cert_auth`) or optional.
    required: TlsAcceptor,
    optional: TlsAcceptor,
}

impl std::fmt::Debug for NodeTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("NodeTls").finish_non_exhaustive()
    }
}

impl NodeTls {
    /// Reads the TLS files of `config`; `None` when TLS is off. Fails,
    /// naming the file, when one cannot be read or parsed, when the
    /// certificate is not signed by the CA, is not valid now, does not name
    /// this node, or does not match the key.
    pub fn load(config: &Config) -> Result<Option<NodeTls>, TlsError> {
        let (Some(cert), Some(key), Some(ca)) = (&config.tls_cert, &config.tls_key, &config.tls_ca)
        else {
            return Ok(None);
        };
        let cert_pem = read("tls_cert", cert)?;
        let key_pem = read("tls_key", key)?;
        let ca_pem = read("tls_ca", ca)?;
        let chain = certs("tls_cert", cert, &cert_pem)?;
        let cas = certs("tls_ca", ca, &ca_pem)?;
        let key_der = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::NoKey {
            path: key.clone(),
            source: Source::new(e),
        })?;
        check_node_cert(config.id, cert, &chain, ca, &cas)?;
        let acceptor = |required| {
            TlsAcceptor::new(chain.clone(), key_der.clone_key(), &cas, required).map_err(|e| {
                TlsError::KeyMismatch {
                    cert: cert.clone(),
                    key: key.clone(),
                    source: e,
                }
            })
        };
        let tls = NodeTls {
            required: acceptor(true)?,
            optional: acceptor(false)?,
            cert_pem,
            key_pem,
            ca_pem,
        };
        Ok(Some(tls))
    }

    fn identity(&self) -> Identity {
        Identity::from_pem(&self.cert_pem, &self.key_pem)
    }

    fn ca(&self) -> Certificate {
        Certificate::from_pem(&self.ca_pem)
    }

    /// The peer listener: this node's certificate, and a client certificate
    /// signed by the cluster CA required of every connection.
    pub fn peer_server_config(&self) -> TlsAcceptor {
        self.required.clone()
    }

    /// The client listener: this node's certificate. A client may present
    /// a certificate signed by the cluster CA (its name is then an identity
    /// for the auth file); with `require_client_cert` it must.
    pub fn client_server_config(&self, require_client_cert: bool) -> TlsAcceptor {
        if require_client_cert {
            self.required.clone()
        } else {
            self.optional.clone()
        }
    }

    /// A channel to node `target`: presents this node's certificate and
    /// accepts only a server certificate signed by the cluster CA that
    /// names `node-TARGET.raftlock`.
    pub fn peer_client_config(&self, target: NodeId) -> ClientTlsConfig {
        ClientTlsConfig::new()
            .ca_certificate(self.ca())
            .identity(self.identity())
            .domain_name(node_dns_name(target))
            .timeout(HANDSHAKE_TIMEOUT)
    }

    /// The cluster CA (PEM), for clients of this node.
    pub fn ca_pem(&self) -> &[u8] {
        &self.ca_pem
    }

    /// This node's certificate (PEM).
    pub fn cert_pem(&self) -> &[u8] {
        &self.cert_pem
    }

    /// This node's private key (PEM).
    pub fn key_pem(&self) -> &[u8] {
        &self.key_pem
    }
}

/// An error and its sources, `: `-separated (tonic's transport errors say
/// only "transport error" themselves).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        setting,
        path: path.to_path_buf(),
        source: Source::new(e),
    })
}

/// The certificates in a PEM file; at least one.
fn certs(
    setting: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadPem {
            setting,
            path: path.to_path_buf(),
            source: Source::new(e),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            setting,
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// Checks, as a peer will, that `chain` is signed by the CA, valid now for
/// both TLS roles, and names node `id`.
fn check_node_cert(
    id: NodeId,
    cert_path: &Path,
    chain: &[CertificateDer<'static>],
    ca_path: &Path,
    cas: &[CertificateDer<'static>],
) -> Result<(), TlsError> {
    let cert = EndEntityCert::try_from(&chain[0]).map_err(|e| TlsError::NotX509 {
        path: cert_path.to_path_buf(),
        source: Source::new(e),
    })?;
    let anchors = cas
        .iter()
        .map(|c| webpki::anchor_from_trusted_cert(c).map(|a| a.to_owned()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::NotCa {
            path: ca_path.to_path_buf(),
            source: Source::new(e),
        })?;
    let now = UnixTime::now();
    for (role, usage) in [
        ("server", KeyUsage::server_auth()),
        ("client", KeyUsage::client_auth()),
    ] {
        cert.verify_for_usage(
            webpki::ALL_VERIFICATION_ALGS,
            &anchors,
            &chain[1..],
            now,
            usage,
            None,
            None,
        )
        .map_err(|e| TlsError::Unverified {
            cert: cert_path.to_path_buf(),
            role,
            ca: ca_path.to_path_buf(),
            source: Source::new(e),
        })?;
    }
    match cert_identity(&chain[0]) {
        Some(CertIdentity::Node(named)) if named == id => Ok(()),
        Some(CertIdentity::Node(named)) => Err(TlsError::OtherNode {
            cert: cert_path.to_path_buf(),
            named,
            id,
        }),
        _ => Err(TlsError::NoNodeName {
            cert: cert_path.to_path_buf(),
            id,
            dns_name: node_dns_name(id),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_round_trip_and_only_canonical_ones_count() {
        assert_eq!(node_dns_name(7), "node-7.raftlock");
        assert_eq!(node_id_of_dns_name("node-7.raftlock"), Some(7));
        assert_eq!(
            node_id_of_dns_name(&node_dns_name(u64::MAX)),
            Some(u64::MAX)
        );
        for bad in [
            "node-0.raftlock",
            "node-07.raftlock",
            "node-+7.raftlock",
            "node-.raftlock",
            "node-7.raftlock.example",
            "xnode-7.raftlock",
            "node-7",
            "localhost",
        ] {
            assert_eq!(node_id_of_dns_name(bad), None, "{bad}");
        }
        assert_eq!(client_uri("ops"), "raftlock:client:ops");
    }

    #[test]
    fn without_tls_settings_nothing_is_loaded() {
        assert!(NodeTls::load(&Config::default()).unwrap().is_none());
    }

    #[test]
    fn a_missing_file_is_named() {
        let config = Config {
            tls_cert: Some("/nonexistent/node-1.crt".into()),
            tls_key: Some("/nonexistent/node-1.key".into()),
            tls_ca: Some("/nonexistent/ca.crt".into()),
            ..Config::default()
        };
        let e = NodeTls::load(&config).unwrap_err().to_string();
        assert!(e.contains("tls_cert /nonexistent/node-1.crt"), "{e}");
    }

    #[test]
    fn a_file_without_certificates_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate").unwrap();
        let config = Config {
            tls_cert: Some(junk.clone()),
            tls_key: Some(junk.clone()),
            tls_ca: Some(junk.clone()),
            ..Config::default()
        };
        let e = NodeTls::load(&config).unwrap_err().to_string();
        assert!(e.contains("no CERTIFICATE"), "{e}");
        assert!(e.contains(&junk.display().to_string()), "{e}");
    }
}
