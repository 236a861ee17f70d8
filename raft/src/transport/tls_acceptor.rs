//! The TLS handshake of both listeners: the server settings a listener
//! serves with ([`TlsAcceptor`]) and the handshakes of the connections
//! the bounded listener admits ([`tls_incoming`]).
//!
//! raftlock shakes hands itself instead of through tonic's `tls_config`
//! so that a refused certificate is reported. tonic drops a failed
//! handshake with a DEBUG line naming neither the peer nor the
//! certificate: a client whose certificate had expired saw "transport
//! error" and the node's log said nothing. Now a connection whose
//! certificate the node refuses — expired, not valid yet, not from the
//! cluster CA — gets rustls' alert as before (`certificate_expired`, ...),
//! and the node logs a WARN naming the listener, the peer's address, the
//! certificate's subject and validity, the problem and what to do. At most
//! one such line per listener and kind of problem every 10 s, with a count
//! of those left out. Other failed handshakes (plain text, a port scanner,
//! no certificate where one is required) stay at DEBUG.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{
    self, CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig,
    SignatureScheme,
};
use tokio_rustls::server::TlsStream;
use tonic::transport::server::Connected;

use crate::error::Source;
use crate::transport::bounded_listener::BoundedConn;

/// How long a TLS handshake may take before the connection is dropped.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// At most one warning per listener and kind of refusal in this time.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// The ALPN protocol gRPC runs on.
const ALPN_H2: &[u8] = b"h2";

/// The TLS server settings of one listener.
#[derive(Clone)]
pub struct TlsAcceptor {
    config: Arc<ServerConfig>,
}

impl std::fmt::Debug for TlsAcceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsAcceptor").finish_non_exhaustive()
    }
}

impl TlsAcceptor {
    /// Serves `chain` with `key`, asks every client for a certificate from
    /// one of `cas`, and requires one when `require_client_cert`. Fails
    /// when a CA is unusable or the key is not the certificate's.
    pub(crate) fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        cas: &[CertificateDer<'static>],
        require_client_cert: bool,
    ) -> Result<Self, Source> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = RootCertStore::empty();
        for ca in cas {
            roots.add(ca.clone()).map_err(Source::new)?;
        }
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider.clone());
        let verifier = if require_client_cert {
            verifier
        } else {
            verifier.allow_unauthenticated()
        }
        .build()
        .map_err(Source::new)?;
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(Source::new)?
            .with_client_cert_verifier(Arc::new(NamingVerifier { inner: verifier }))
            .with_single_cert(chain, key)
            .map_err(Source::new)?;
        config.alpn_protocols = vec![ALPN_H2.to_vec()];
        Ok(TlsAcceptor {
            config: Arc::new(config),
        })
    }
}

/// The connections of `incoming` that completed the TLS handshake of
/// `acceptor`, for `tonic::transport::Server::serve_with_incoming_shutdown`.
/// Handshakes run concurrently, each in a task owned by the stream (dropped
/// with it); `listener` ("client" or "peer") labels log lines.
pub fn tls_incoming<S>(
    incoming: S,
    acceptor: TlsAcceptor,
    listener: &'static str,
) -> impl Stream<Item = Result<TlsStream<BoundedConn>, Infallible>>
where
    S: Stream<Item = Result<BoundedConn, Infallible>> + Send + 'static,
{
    let refusals = Arc::new(Refusals::new(listener));
    let state = (Box::pin(incoming), JoinSet::new());
    futures::stream::unfold(state, move |(mut incoming, mut handshakes)| {
        let acceptor = acceptor.clone();
        let refusals = refusals.clone();
        async move {
            loop {
                tokio::select! {
                    conn = incoming.next() => match conn {
                        Some(Ok(conn)) => {
                            handshakes.spawn(handshake(acceptor.clone(), conn, refusals.clone()));
                        }
                        Some(Err(never)) => match never {},
                        None => return None,
                    },
                    Some(done) = handshakes.join_next() => {
                        if let Ok(Some(stream)) = done {
                            return Some((Ok(stream), (incoming, handshakes)));
                        }
                    }
                }
            }
        }
    })
}

/// One connection's handshake; `None` when it failed (reported).
async fn handshake(
    acceptor: TlsAcceptor,
    conn: BoundedConn,
    refusals: Arc<Refusals>,
) -> Option<TlsStream<BoundedConn>> {
    let peer = conn.connect_info().remote_addr();
    let refused = Arc::new(Mutex::new(None));
    let accept = tokio_rustls::TlsAcceptor::from(acceptor.config).accept(conn);
    let accept = REFUSED_CERT.scope(refused.clone(), accept);
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, accept).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            let cert = lock(&refused).take();
            refusals.report(peer, &e, cert);
            None
        }
        Err(_) => {
            tracing::debug!(
                listener = refusals.listener,
                "TLS handshake from {} timed out",
                peer_text(peer)
            );
            None
        }
    }
}

tokio::task_local! {
    /// Where the verifier leaves the certificate it refused, for the
    /// handshake task that presented it (rustls verifies inside the
    /// handshake future's poll, so inside this task's scope).
    static REFUSED_CERT: Arc<Mutex<Option<CertSummary>>>;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a log line says about a refused certificate.
#[derive(Debug, Clone)]
struct CertSummary {
    /// `O=raftlock, CN=ops`.
    subject: String,
    /// `not before ..., not after ...`.
    validity: String,
}

impl CertSummary {
    fn of(der: &CertificateDer<'_>) -> CertSummary {
        match x509_parser::parse_x509_certificate(der) {
            Ok((_, cert)) => CertSummary {
                subject: cert.subject().to_string(),
                validity: format!(
                    "valid from {} until {}",
                    cert.validity().not_before,
                    cert.validity().not_after
                ),
            },
            Err(e) => CertSummary {
                subject: format!("unreadable: {e}"),
                validity: "validity unknown".to_string(),
            },
        }
    }
}

/// The cluster CA's client-certificate check (webpki), which also leaves
/// a refused certificate's subject for the handshake's log line.
#[derive(Debug)]
struct NamingVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for NamingVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let verdict = self
            .inner
            .verify_client_cert(end_entity, intermediates, now);
        if verdict.is_err() {
            // Outside a handshake task (none today) there is nobody to tell.
            let _ = REFUSED_CERT.try_with(|slot| *lock(slot) = Some(CertSummary::of(end_entity)));
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }
}

/// Why a certificate was refused, as far as the warning's wording goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    Expired,
    NotYetValid,
    Other,
}

impl Refusal {
    fn of(problem: &CertificateError) -> Refusal {
        match problem {
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => Refusal::Expired,
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                Refusal::NotYetValid
            }
            _ => Refusal::Other,
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// The warnings one listener has given: when each kind was last logged
/// and how many were left out since.
struct Refusals {
    listener: &'static str,
    slots: Mutex<[(Option<Instant>, u64); 3]>,
}

impl Refusals {
    fn new(listener: &'static str) -> Self {
        Refusals {
            listener,
            slots: Mutex::new([(None, 0); 3]),
        }
    }

    /// Logs a failed handshake: a WARN for a refused certificate (at most
    /// one per kind every [`WARN_EVERY`]), DEBUG for anything else.
    fn report(&self, peer: Option<SocketAddr>, error: &std::io::Error, cert: Option<CertSummary>) {
        let refused = error
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>());
        let (Some(rustls::Error::InvalidCertificate(problem)), Some(cert)) = (refused, cert) else {
            tracing::debug!(
                listener = self.listener,
                "TLS handshake from {} failed: {error}",
                peer_text(peer)
            );
            return;
        };
        let kind = Refusal::of(problem);
        let left_out = {
            let mut slots = lock(&self.slots);
            let (last, left_out) = &mut slots[kind.slot()];
            let now = Instant::now();
            if last.is_some_and(|at| now.duration_since(at) < WARN_EVERY) {
                *left_out += 1;
                return;
            }
            *last = Some(now);
            std::mem::take(left_out)
        };
        let what = match kind {
            Refusal::Expired => "has expired".to_string(),
            Refusal::NotYetValid => "is not valid yet".to_string(),
            Refusal::Other => format!("was refused ({problem})"),
        };
        let (who, command) = match self.listener {
            "peer" => ("that node", "raftlock certs create-node"),
            _ => ("that client", "raftlock certs create-client"),
        };
        let next = match kind {
            Refusal::Expired => format!("give {who} a new certificate (`{command}`)"),
            Refusal::NotYetValid => format!(
                "check the clocks of this node and of the machine that issued it, or give \
                 {who} a new certificate (`{command}`)"
            ),
            Refusal::Other => format!(
                "{who} needs a certificate signed by the cluster CA (--tls-ca) for this use \
                 (`{command}`)"
            ),
        };
        let earlier = if left_out > 0 {
            format!(" ({left_out} more like it since the last such warning)")
        } else {
            String::new()
        };
        tracing::warn!(
            listener = self.listener,
            peer = %peer_text(peer),
            subject = %cert.subject,
            "{} listener refused a TLS connection from {}: its certificate ({}; {}) {what}; \
             {next}{earlier}",
            self.listener,
            peer_text(peer),
            cert.subject,
            cert.validity,
        );
    }
}

fn peer_text(peer: Option<SocketAddr>) -> String {
    peer.map_or_else(|| "an unknown address".to_string(), |p| p.to_string())
}
