//! Operator calls on the default cluster of several nodes (a join token,
//! no auth file): membership, force-release, bulk revoke and backups need
//! the cluster's admin credential (derived from its secret) or a node
//! certificate; lock, lease and election calls stay open.

use std::time::Duration;

use raftlock::{AdminCredential, ClusterKey};
use raftlock_client::{Acquire, Client, ClientOptions, Error, LeaseAccount};

use crate::cluster::TestCluster;

const TTL: Duration = Duration::from_secs(30);

/// A client of every node of `cluster` sending `token`.
async fn client_with(cluster: &TestCluster, token: Option<String>) -> Client {
    let options = ClientOptions {
        token,
        ..cluster.client_options()
    };
    Client::connect_with(cluster.endpoints(), options)
        .await
        .expect("client")
}

/// Each operator call of a caller without a credential, and of one with
/// another cluster's, is refused (`PERMISSION_DENIED` naming `--data-dir`,
/// `UNAUTHENTICATED`) and changes nothing: the lock stays held, the lease
/// lives, the membership is the same; no message carries the secret. The
/// credential read from a member's data dir, as docs/security.md says an
/// operator gives it, is accepted, and lock, lease and election calls
/// need none. Without the admin gate (`Principal::check_admin` answering
/// Ok for an unauthenticated caller, as before) the first force-release
/// succeeds and the test fails there (seen).
#[tokio::test]
async fn operator_calls_need_the_clusters_admin_credential() {
    let cluster = TestCluster::new(3).await;
    let key = cluster.key().expect("a join token");
    let secret_hex = key.to_token().trim_start_matches("rlj1-").to_string();
    let open = cluster.client().await;
    // Lock, lease and election calls are open, as before.
    let lease = open.grant_lease(TTL).await.expect("grant");
    let held = open
        .acquire(&Acquire::exclusive("res", "owner", lease))
        .await
        .expect("acquire")
        .expect("granted");
    let fence = open
        .campaign("boss", "me", lease, b"v", None)
        .await
        .expect("campaign");
    assert!(fence > 0);
    let members_before = open.status().await.expect("status").members.len();

    let wrong = AdminCredential::derive(&ClusterKey::generate()).to_bearer();
    // The raw join token is not a credential either: it is never sent.
    for (who, token) in [
        ("no credential", None),
        ("another cluster's credential", Some(wrong)),
        ("the raw join token", Some(key.to_token())),
    ] {
        let attacker = client_with(&cluster, token.clone()).await;
        let refusals = [
            attacker.force_release("res").await.map(|_| ()),
            attacker
                .revoke_all(&LeaseAccount::Source("127.0.0.1".parse().unwrap()))
                .await
                .map(|_| ()),
            attacker
                .add_learner(9, "127.0.0.1:1", "127.0.0.1:2")
                .await
                .map(|_| ()),
            attacker.promote(2).await.map(|_| ()),
            attacker.remove_member(3).await.map(|_| ()),
            attacker.backup(false).await.map(|_| ()),
        ];
        for (i, refusal) in refusals.into_iter().enumerate() {
            let err = refusal.expect_err(&format!("{who}: call {i} must be refused"));
            let message = err.to_string();
            if token
                .as_deref()
                .is_some_and(AdminCredential::is_admin_bearer)
            {
                assert!(matches!(err, Error::Unauthenticated(_)), "{who}: {err:?}");
                assert!(message.contains("not this cluster's"), "{who}: {message}");
            } else {
                assert!(matches!(err, Error::PermissionDenied(_)), "{who}: {err:?}");
                assert!(message.contains("--data-dir"), "{who}: {message}");
            }
            assert!(
                !message.contains(&secret_hex[..16]),
                "{who}: a secret in {message}"
            );
        }
        // Nothing changed.
        let lock = open.describe("res").await.unwrap().expect("still held");
        assert_eq!(lock.holders[0].fence, held.fence, "{who}");
        assert!(open.time_to_live(lease).await.is_ok(), "{who}: lease lives");
        let members = open.status().await.expect("status").members.len();
        assert_eq!(members, members_before, "{who}");
    }

    // The credential as an operator reads it: from a member's data dir.
    let dir = cluster.config(2).replication.data_dir;
    let credential = AdminCredential::read(&dir).expect("read the data dir's key");
    let admin = client_with(&cluster, Some(credential.to_bearer())).await;
    assert_eq!(admin.force_release("res").await.expect("admin"), 1);
    let revoked = admin
        .revoke_all(&LeaseAccount::Source("127.0.0.1".parse().unwrap()))
        .await
        .expect("bulk revoke as admin");
    assert_eq!(revoked.revoked, 1);
    assert!(!admin.backup(false).await.expect("backup").is_empty());
    // An admin client is still an ordinary client for the rest.
    let lease = admin.grant_lease(TTL).await.expect("grant as admin");
    admin
        .acquire(&Acquire::exclusive("res", "admin", lease))
        .await
        .expect("acquire as admin")
        .expect("granted");
    // An embedding application's own client is an operator too.
    let own = Client::for_node(cluster.node(3).access())
        .await
        .expect("node client");
    assert_eq!(own.force_release("res").await.expect("node's client"), 1);
    cluster.shutdown().await;
}

/// In a TLS cluster without an auth file the admin identity is a node
/// certificate: a client certificate is refused operator calls, a node's
/// certificate is accepted. Without the gate the client certificate's
/// force-release succeeds (seen).
#[tokio::test]
async fn in_a_tls_cluster_a_node_certificate_is_the_admin_identity() {
    let cluster = TestCluster::with_tls(3, false).await;
    let client = cluster.client().await;
    let lease = client.grant_lease(TTL).await.expect("grant");
    client
        .acquire(&Acquire::exclusive("res", "owner", lease))
        .await
        .expect("acquire")
        .expect("granted");
    let err = client.force_release("res").await.expect_err("not an admin");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err:?}");
    assert!(err.to_string().contains("node certificate"), "{err}");
    assert!(client.describe("res").await.unwrap().is_some());
    let admin = cluster.admin_client().await;
    assert_eq!(admin.force_release("res").await.expect("node cert"), 1);
    cluster.shutdown().await;
}
