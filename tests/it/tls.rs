//! TLS clusters: a 3-node cluster with certificates from `raftlock certs`
//! elects and serves locks; clients without the CA, plain-text clients and
//! peers without a node certificate from the cluster CA are refused, and a
//! node's outbound channel refuses a server that is another node.
//!
//! The peer-port attacks dial the port directly with tonic, and the
//! outbound check uses the node's own channel settings
//! (`NodeTls::peer_client_config`), so each test fails when the defence it
//! names is taken out of `raft/src/tls.rs` or `raft/src/node.rs`.

use std::time::Duration;

use raftlock::{Config, Node};
use raftlock_client::{Client, ClientOptions, ClientTls, Error};
use raftlock_raft::pb::peer_client::PeerClient;
use raftlock_raft::pb::Blob;
use raftlock_raft::NodeTls;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};
use tonic::Code;

use crate::cluster::{test_config, TestCluster};

/// How long a call that must be refused may keep retrying.
const REFUSED_WITHIN: Duration = Duration::from_secs(2);

/// Reads a file of the cluster's certs dir.
fn pem(cluster: &TestCluster, file: &str) -> Vec<u8> {
    let dir = cluster.certs.as_ref().expect("a TLS cluster");
    std::fs::read(dir.join(file)).unwrap_or_else(|e| panic!("read {file}: {e}"))
}

/// A client of every node with `tls` and a short retry budget.
async fn client_with(cluster: &TestCluster, tls: Option<ClientTls>) -> Client {
    let eps: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let options = ClientOptions {
        tls,
        retry_for: REFUSED_WITHIN,
        ..ClientOptions::default()
    };
    Client::connect_with(eps, options).await.expect("client")
}

/// One Identify call on node `id`'s peer port with `tls`: a call that got
/// through TLS and the identity check answers with the node's id.
async fn dial_peer(
    cluster: &TestCluster,
    id: u64,
    tls: ClientTlsConfig,
) -> Result<u64, tonic::Status> {
    identify_over_tls(cluster.addrs[&id].1, tls).await
}

/// One Identify call to `addr` with `tls`, bounded to 2 s to connect and
/// 5 s to answer; answers the id of the node that answered.
pub(crate) async fn identify_over_tls(
    addr: impl std::fmt::Display,
    tls: ClientTlsConfig,
) -> Result<u64, tonic::Status> {
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .expect("endpoint")
        .tls_config(tls)
        .expect("TLS settings")
        .connect_timeout(Duration::from_secs(2))
        .connect_lazy();
    let mut req = tonic::Request::new(Blob::default());
    req.set_timeout(Duration::from_secs(5));
    PeerClient::new(channel)
        .identify(req)
        .await
        .map(|reply| reply.into_inner().from)
}

/// The call never reached the peer service: refused in the TLS handshake.
fn assert_refused_in_handshake(what: &str, result: Result<u64, tonic::Status>) {
    let status = match result {
        Ok(id) => panic!("{what}: the peer port answered as node {id}"),
        Err(status) => status,
    };
    assert!(
        !matches!(
            status.code(),
            Code::InvalidArgument | Code::Unauthenticated | Code::PermissionDenied | Code::Ok
        ),
        "{what}: reached the peer service: {status:?}"
    );
}

/// A 3-node TLS cluster elects a leader (its peers speak mutual TLS) and
/// serves locks to a client that trusts the cluster CA, through every
/// node (followers forward over the TLS peer channels).
///
/// The nodes wait up to 30 s for a leader that answers before they say
/// `unavailable`: on a starved CI machine (this test once took 25 times its
/// usual time there) a forward to a leader that is slow to commit may need
/// more than the fixture's 5 s, and what is tested here is that TLS
/// forwarding works, not how long a slow leader takes.
#[tokio::test]
async fn tls_cluster_elects_a_leader_and_serves_locks() {
    let mut base = test_config();
    base.replication.leader_wait = Duration::from_secs(30);
    let cluster = TestCluster::with_tls_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    for id in 1..=3 {
        assert!(cluster.node(id).tls_enabled(), "node {id}");
        let client = cluster.client_of(id).await;
        let guard = client
            .lock(format!("tls/{id}"))
            .acquire()
            .await
            .unwrap_or_else(|e| panic!("lock through node {id} (leader {leader}): {e}"));
        assert!(guard.fence() > 0);
        guard.release().await.expect("release");
    }
    // The embedded client of a node trusts its CA and checks its name.
    let local = Client::for_node(cluster.node(2).access())
        .await
        .expect("local client");
    local
        .grant_lease(Duration::from_secs(5))
        .await
        .expect("grant");
    cluster.shutdown().await;
}

/// Defence: the client listener serves TLS only. A client with another
/// CA, and a plain-text client, get no answer; nothing is granted.
/// Without TLS on the client listener (`serve_clients` given no TLS
/// settings) the plain-text client is served and the test fails.
#[tokio::test]
async fn clients_without_the_cluster_ca_or_in_plain_text_are_refused() {
    let cluster = TestCluster::with_tls(1, false).await;
    let other = tempfile::tempdir().expect("temp dir");
    raftlock_cli::certs::create_ca(other.path(), false).expect("other CA");
    let foreign = ClientTls {
        ca_pem: Some(std::fs::read(other.path().join("ca.crt")).expect("read")),
        ..ClientTls::default()
    };
    let e = client_with(&cluster, Some(foreign))
        .await
        .grant_lease(Duration::from_secs(5))
        .await
        .expect_err("a client trusting another CA was served");
    assert!(e.to_string().contains("certificate"), "{e}");

    let e = client_with(&cluster, None)
        .await
        .grant_lease(Duration::from_secs(5))
        .await
        .expect_err("a plain-text client was served");
    assert!(!matches!(e, Error::InvalidArgument(_)), "{e}");

    let leases = cluster.client().await.leases().await.expect("list leases");
    assert!(leases.is_empty(), "refused clients granted {leases:?}");
    cluster.shutdown().await;
}

/// Defence: the peer listener requires a client certificate signed by the
/// cluster CA (`NodeTls::peer_server_config`). A connection with no
/// certificate, or with a node certificate from another CA, is refused in
/// the handshake; the cluster's own node certificate gets through.
/// With the optional settings there (`client_server_config(false)`, whose
/// verifier allows no certificate), the dial without a certificate passes
/// the handshake (the interceptor still answers UNAUTHENTICATED) and
/// the test fails.
#[tokio::test]
async fn peer_port_refuses_no_certificate_and_another_cas_certificate() {
    let cluster = TestCluster::with_tls(3, false).await;
    let ca = Certificate::from_pem(pem(&cluster, "ca.crt"));
    let node1 = Identity::from_pem(pem(&cluster, "node-1.crt"), pem(&cluster, "node-1.key"));
    let to_node2 = || {
        ClientTlsConfig::new()
            .ca_certificate(ca.clone())
            .domain_name("node-2.raftlock")
    };

    let no_cert = dial_peer(&cluster, 2, to_node2()).await;
    assert_refused_in_handshake("no client certificate", no_cert);

    let other = tempfile::tempdir().expect("temp dir");
    raftlock_cli::certs::create_ca(other.path(), false).expect("other CA");
    raftlock_cli::certs::create_node(other.path(), None, 1, &["127.0.0.1".into()], false)
        .expect("other node 1");
    let forged = Identity::from_pem(
        std::fs::read(other.path().join("node-1.crt")).expect("read"),
        std::fs::read(other.path().join("node-1.key")).expect("read"),
    );
    let other_ca = dial_peer(&cluster, 2, to_node2().identity(forged)).await;
    assert_refused_in_handshake("node 1 certificate from another CA", other_ca);

    let honest = dial_peer(&cluster, 2, to_node2().identity(node1)).await;
    assert_eq!(
        honest.expect("the cluster's own node certificate must get through"),
        2
    );
    cluster.shutdown().await;
}

/// Defence: a peer channel to node 3 accepts only a server certificate
/// naming `node-3.raftlock` (`peer_client_config` sets the TLS name).
/// Node 2's port serves node 2's valid certificate; dialled as node 3 with
/// node 1's own channel settings, the handshake refuses it; dialled as
/// node 2 it is accepted. Without `.domain_name(..)` there, the name
/// checked is the address's host (127.0.0.1, which every node certificate
/// lists) and the test fails.
#[tokio::test]
async fn peer_channel_refuses_another_nodes_certificate() {
    let cluster = TestCluster::with_tls(3, false).await;
    let node1 = NodeTls::load(&cluster.config(1).replication)
        .expect("node 1's files")
        .expect("TLS on");
    let as_node3 = dial_peer(&cluster, 2, node1.peer_client_config(3)).await;
    assert_refused_in_handshake("node 2's certificate taken for node 3", as_node3);
    let as_node2 = dial_peer(&cluster, 2, node1.peer_client_config(2)).await;
    assert_eq!(
        as_node2.expect("node 2 dialled as node 2 must get through"),
        2
    );
    cluster.shutdown().await;
}

/// Defence: every peer call must carry a certificate that names a node
/// (`serve_peers`' interceptor). A client certificate from the cluster CA
/// passes the handshake but is refused UNAUTHENTICATED. Without the
/// interceptor the Identify call is answered and the test fails.
#[tokio::test]
async fn peer_port_refuses_a_client_certificate() {
    let cluster = TestCluster::with_tls(1, false).await;
    let client = Identity::from_pem(
        pem(&cluster, "client-test.crt"),
        pem(&cluster, "client-test.key"),
    );
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(pem(&cluster, "ca.crt")))
        .domain_name("node-1.raftlock")
        .identity(client);
    let status = dial_peer(&cluster, 1, tls)
        .await
        .expect_err("a client certificate spoke to the peer port");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    assert!(status.message().contains("node certificate"), "{status:?}");
    cluster.shutdown().await;
}

/// Defence: with `client_cert_auth` the client listener requires a client
/// certificate from the cluster CA. A client with the CA but no
/// certificate is refused; with the `test` certificate it is served.
/// With `client_server_config(true)` answering the optional settings
/// (`allow_unauthenticated` in `TlsAcceptor::new`) the first client is
/// served and the test fails.
#[tokio::test]
async fn client_cert_auth_refuses_a_client_without_a_certificate() {
    let cluster = TestCluster::with_tls(1, true).await;
    let ca_only = ClientTls {
        ca_pem: Some(pem(&cluster, "ca.crt")),
        ..ClientTls::default()
    };
    let e = client_with(&cluster, Some(ca_only))
        .await
        .grant_lease(Duration::from_secs(5))
        .await
        .expect_err("a client without a certificate was served");
    assert!(matches!(e, Error::Unavailable(_)), "{e}");
    cluster
        .client()
        .await
        .grant_lease(Duration::from_secs(5))
        .await
        .expect("the client with a certificate is served");
    cluster.shutdown().await;
}

/// A node does not start with certificate files that cannot work, and the
/// error names the file: another node's certificate, a key that is not
/// the certificate's, a CA that did not sign it.
#[tokio::test]
async fn a_node_with_unusable_certificates_does_not_start() {
    let cluster = TestCluster::with_tls(1, false).await;
    let certs = cluster.certs.clone().expect("certs dir");
    let other = tempfile::tempdir().expect("temp dir");
    raftlock_cli::certs::create_ca(other.path(), false).expect("other CA");
    let data = tempfile::tempdir().expect("temp dir");
    let start = |cert: &str, key: &str, ca: std::path::PathBuf| {
        Node::start({
            let mut config = Config::default();
            config.replication.id = 2;
            config.replication.data_dir = data.path().join("n2");
            config.replication.client_addr = "127.0.0.1:0".into();
            config.replication.peer_addr = "127.0.0.1:0".into();
            config.replication.tls_cert = Some(certs.join(cert));
            config.replication.tls_key = Some(certs.join(key));
            config.replication.tls_ca = Some(ca);
            config
        })
    };
    let cases = [
        (
            start("node-1.crt", "node-1.key", certs.join("ca.crt")).await,
            "node 1's certificate",
        ),
        (
            start("node-2.crt", "node-1.key", certs.join("ca.crt")).await,
            "node-1.key",
        ),
        (
            start("node-2.crt", "node-2.key", other.path().join("ca.crt")).await,
            "node-2.crt",
        ),
        (
            start("node-2.crt", "missing.key", certs.join("ca.crt")).await,
            "missing.key",
        ),
    ];
    for (result, named) in cases {
        let e = result
            .err()
            .expect("a node started with unusable certificates");
        assert!(e.to_string().contains(named), "{e} should name {named}");
    }
    assert!(!data.path().join("n2").exists(), "the data dir was touched");
    cluster.shutdown().await;
}

/// Defence: with TLS, a peer message is accepted only as the node its
/// certificate names. Node 2's own certificate, sending a vote that claims
/// to come from node 3, is refused by node 1; without the comparison in
/// `PeerService::admit` the envelope alone would let it through.
#[tokio::test]
async fn a_node_certificate_cannot_speak_as_another_node() {
    let cluster = TestCluster::with_tls(3, false).await;
    let leader = cluster.wait_for_leader().await;
    let (target, impostor, claimed) = match leader {
        1 => (1, 2, 3),
        2 => (2, 3, 1),
        _ => (3, 1, 2),
    };
    let identity = Identity::from_pem(
        pem(&cluster, &format!("node-{impostor}.crt")),
        pem(&cluster, &format!("node-{impostor}.key")),
    );
    let tls = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(pem(&cluster, "ca.crt")))
        .domain_name(format!("node-{target}.raftlock"))
        .identity(identity);
    let addr = cluster.addrs[&target].1;
    let channel = Endpoint::from_shared(format!("https://{addr}"))
        .expect("endpoint")
        .tls_config(tls)
        .expect("TLS settings")
        .connect_lazy();
    let term = cluster.node(target).status().term;
    let rpc = openraft::raft::VoteRequest::<raftlock_storage::TypeConfig>::new(
        raftlock_storage::Vote::new(term + 1, claimed),
        None,
    );
    let blob = Blob {
        data: raftlock_raft::peer::payload::encode(&rpc).unwrap(),
        cluster_id: cluster
            .node(target)
            .cluster_id()
            .map(|c| c.to_string())
            .unwrap_or_default(),
        from: claimed,
        to: target,
        boot: 1_000,
        incarnation: uuid::Uuid::new_v4().as_bytes().to_vec(),
        mac: Vec::new(),
        sent_at_ms: crate::peer_attacks::now_ms(),
    };
    let status = PeerClient::new(channel)
        .vote(blob)
        .await
        .expect_err("node 2's certificate spoke as another node");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("certificate names node"),
        "{status:?}"
    );
    assert_eq!(
        cluster.node(target).status().term,
        term,
        "the vote moved the term"
    );
    cluster.shutdown().await;
}
