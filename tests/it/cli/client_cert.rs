//! A client certificate the nodes refuse: the CLI says the node refused
//! it in the TLS handshake and what to do, not "cannot reach ... start a
//! node".

use super::{describe, run, stderr_of};
use crate::cluster::TestCluster;

/// A client certificate signed by another CA than the cluster's: the
/// node refuses it in the TLS handshake (its log says `BadSignature`).
/// The CLI fails at once (exit 1) with one line saying the node refused
/// the client certificate and that it must come from the cluster's CA.
/// Without reading the node's alert (`connect_failure::refusal_alert`)
/// the call retried for 5 s and printed "cannot reach raftlock at ...
/// (operation was canceled): is `raftlock serve` running there?" (seen;
/// before the dial timeout: "cannot reach a raftlock leader via ...;
/// start a node with `raftlock serve`").
#[tokio::test]
async fn a_client_certificate_from_another_ca_is_named_as_refused() {
    let cluster = TestCluster::with_tls(1, true).await;
    let other = tempfile::tempdir().expect("temp dir");
    raftlock_cli::certs::create_ca(other.path(), false).expect("other CA");
    raftlock_cli::certs::create_client(other.path(), None, "stranger", false).expect("client");
    let (cert, key) = raftlock_cli::certs::client_files(other.path(), "stranger");
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let out = run(&cluster, &["lease", "list", "--cert", &cert, "--key", &key]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("refused the client certificate") && err.contains("CA"),
        "{err}"
    );
    assert!(!err.contains("start a node"), "{err}");
    cluster.shutdown().await;
}
