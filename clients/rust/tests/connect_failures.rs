//! What the client says when it cannot reach or speak to a node, against
//! real listeners on loopback: nothing listening, an expired certificate
//! on either side, a CA mismatch, and TLS on one side only. Each test
//! fails on a client without the classification in `connect_failure/`
//! (the message was tonic's `tcp connect error`, `transport error`,
//! `received corrupt message` or `h2 protocol error`, after retrying for
//! the whole 15 s budget) or without the deadline in `endpoints.rs` (a
//! call with a 1 s timeout took 14.7 s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use raftlock_client::{Client, ClientOptions, ClientTls, Error};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// A test CA that signs node and client certificates.
struct Pki {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
}

/// A certificate and its key, PEM.
struct Leaf {
    cert: String,
    key: String,
}

/// Validity: from `from` to `until` (years), or rcgen's default (valid now).
type Years = Option<(i32, i32)>;

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "test CA");
        let key = KeyPair::generate().expect("key");
        let ca_pem = params.self_signed(&key).expect("CA").pem();
        Pki {
            issuer: Issuer::new(params, key),
            ca_pem,
        }
    }

    fn leaf(&self, common_name: &str, years: Years) -> Leaf {
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("leaf params");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        if let Some((from, until)) = years {
            params.not_before = rcgen::date_time_ymd(from, 1, 1);
            params.not_after = rcgen::date_time_ymd(until, 1, 1);
        }
        let key = KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// A node's TLS listener: it completes (or refuses) handshakes and then
/// closes; nothing here needs a call to succeed.
async fn tls_listener(pki: &Pki, node: &Leaf, client_certs: bool) -> String {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = if client_certs {
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(pki.ca_pem.as_bytes()).expect("CA der"))
            .expect("root");
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .expect("verifier");
        builder.with_client_cert_verifier(verifier)
    } else {
        builder.with_no_client_auth()
    };
    let chain = vec![CertificateDer::from_pem_slice(node.cert.as_bytes()).expect("cert der")];
    let key = PrivateKeyDer::from_pem_slice(node.key.as_bytes()).expect("key der");
    let mut config = builder.with_single_cert(chain, key).expect("server config");
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = TlsAcceptor::from(Arc::new(config));
    serve(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            if let Ok(mut tls) = acceptor.accept(stream).await {
                let _ = tls.read(&mut [0; 1024]).await;
            }
        }
    })
    .await
}

/// A plain-text HTTP/2 listener: it sends the server's first SETTINGS
/// frame, as a node without TLS does, and reads whatever comes.
async fn plain_listener() -> String {
    serve(|mut stream| async move {
        let _ = stream.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await;
        let _ = stream.read(&mut [0; 1024]).await;
    })
    .await
}

/// Accepts connections on a free loopback port, each handled by `handle`.
async fn serve<F, Fut>(handle: F) -> String
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(handle(stream));
        }
    });
    addr
}

/// An address nothing listens on.
async fn dead_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("addr").to_string()
}

async fn client(addr: &str, tls: Option<ClientTls>) -> Client {
    let options = ClientOptions {
        tls,
        retry_for: Duration::from_secs(3),
        ..ClientOptions::default()
    };
    Client::connect_with([addr], options).await.expect("client")
}

fn tls(pki: &Pki, identity: Option<&Leaf>) -> Option<ClientTls> {
    Some(ClientTls {
        ca_pem: Some(pki.ca_pem.clone().into_bytes()),
        identity: identity.map(|l| (l.cert.clone().into_bytes(), l.key.clone().into_bytes())),
        server_name: None,
    })
}

async fn grant_fails(client: &Client) -> Error {
    client
        .grant_lease(Duration::from_secs(10))
        .await
        .expect_err("the call succeeded")
}

#[tokio::test]
async fn an_unreachable_node_is_named_with_the_reason_and_the_next_step() {
    let dead = dead_address().await;
    let e = grant_fails(&client(&dead, None).await).await;
    let Error::Unavailable(m) = &e else {
        panic!("not Unavailable: {e:?}");
    };
    assert_eq!(
        m,
        &format!(
            "cannot reach raftlock at {dead} (connection refused): is `raftlock serve` running \
             there? Point --endpoints (or RAFTLOCK_ENDPOINTS) at the client addresses of \
             running nodes"
        )
    );
}

#[tokio::test]
async fn a_timeout_bounds_connecting_and_retrying() {
    let dead = dead_address().await;
    // The retry budget (15 s by default) is far longer than the timeout.
    let client = Client::connect([dead.as_str()]).await.expect("client");
    let started = Instant::now();
    let e = client
        .lock("x")
        .timeout(Duration::from_secs(1))
        .acquire()
        .await
        .expect_err("acquired from nowhere");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(
        e.to_string()
            .contains(&format!("cannot reach raftlock at {dead}")),
        "{e}"
    );
}

#[tokio::test]
async fn an_expired_client_certificate_is_named_with_its_dates() {
    let pki = Pki::new();
    let node = pki.leaf("node-1", None);
    let addr = tls_listener(&pki, &node, true).await;
    let expired = pki.leaf("client-app", Some((2020, 2021)));
    let started = Instant::now();
    let e = grant_fails(&client(&addr, tls(&pki, Some(&expired))).await).await;
    let Error::Tls(m) = &e else {
        panic!("not a TLS error: {e:?}");
    };
    assert!(
        m.starts_with(
            "the client certificate CN=client-app (--cert, valid 2020-01-01T00:00:00Z to \
             2021-01-01T00:00:00Z) has expired (this machine's clock says "
        ),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "so the node at {addr} refused it: make a new one with `raftlock certs \
             create-client` and pass it with --cert and --key"
        )),
        "{m}"
    );
    // Not retried for the whole budget: it cannot mend itself.
    assert!(started.elapsed() < Duration::from_secs(3), "retried");
}

#[tokio::test]
async fn a_client_certificate_not_yet_valid_says_so() {
    let pki = Pki::new();
    let node = pki.leaf("node-1", None);
    let addr = tls_listener(&pki, &node, true).await;
    let early = pki.leaf("client-app", Some((2999, 3000)));
    let e = grant_fails(&client(&addr, tls(&pki, Some(&early))).await).await;
    assert!(
        e.to_string().contains(
            "the client certificate CN=client-app (--cert, valid 2999-01-01T00:00:00Z to \
             3000-01-01T00:00:00Z) is not valid yet"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn an_expired_node_certificate_is_reported_with_its_end() {
    let pki = Pki::new();
    let node = pki.leaf("node-1", Some((2020, 2021)));
    let addr = tls_listener(&pki, &node, false).await;
    let e = grant_fails(&client(&addr, tls(&pki, None)).await).await;
    let Error::Tls(m) = &e else {
        panic!("not a TLS error: {e:?}");
    };
    assert!(
        m.starts_with(&format!(
            "the certificate of the node at {addr} expired at 2021-01-01T00:00:00Z (this \
             machine's clock says "
        )),
        "{m}"
    );
    assert!(
        m.ends_with(
            "give the node a new one (`raftlock certs create-node`) and restart it, or check \
             the clocks"
        ),
        "{m}"
    );
}

#[tokio::test]
async fn a_plain_text_client_at_a_tls_node_is_told_to_pass_the_ca() {
    let pki = Pki::new();
    let node = pki.leaf("node-1", None);
    let addr = tls_listener(&pki, &node, false).await;
    let e = grant_fails(&client(&addr, None).await).await;
    assert_eq!(
        e,
        Error::Tls(format!(
            "the node at {addr} serves TLS and this client speaks plain text: pass the \
             cluster's CA certificate, --cacert ca.crt"
        ))
    );
}

#[tokio::test]
async fn a_tls_client_at_a_plain_text_node_is_told_so() {
    let pki = Pki::new();
    let addr = plain_listener().await;
    let e = grant_fails(&client(&addr, tls(&pki, None)).await).await;
    let Error::Tls(m) = &e else {
        panic!("not a TLS error: {e:?}");
    };
    assert!(
        m.starts_with(&format!(
            "the node at {addr} answered in plain text, but this client speaks TLS to it"
        )),
        "{m}"
    );
}

#[tokio::test]
async fn a_node_certificate_from_another_ca_names_the_ca_setting() {
    let (ours, theirs) = (Pki::new(), Pki::new());
    let node = theirs.leaf("node-1", None);
    let addr = tls_listener(&theirs, &node, false).await;
    let e = grant_fails(&client(&addr, tls(&ours, None)).await).await;
    let Error::Tls(m) = &e else {
        panic!("not a TLS error: {e:?}");
    };
    assert!(m.contains("certificate"), "{m}");
    assert!(
        m.contains("--cacert must be the CA that signed the nodes' certificates"),
        "{m}"
    );
}
