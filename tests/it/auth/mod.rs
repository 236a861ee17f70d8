//! Client authentication, roles and quotas on a real 3-node cluster: every RPC
//! without a known identity is refused `UNAUTHENTICATED`; a client whose
//! roles do not cover a name, or who acts through another identity's lease,
//! or calls an operator RPC without the admin role, is refused
//! `PERMISSION_DENIED` — and none of it changes a lease or a lock, while
//! the honest client keeps being served.
//!
//! The attacker talks to a follower, so forwarded writes and keep-alives
//! carry its identity to the leader. How each test fails without its
//! defence is in its doc comment.

use std::path::PathBuf;
use std::time::Duration;

use raftlock::auth::policy::token_sha256;
use raftlock::pb;
use raftlock::pb::cluster_client::ClusterClient;
use raftlock::pb::election_client::ElectionClient;
use raftlock::pb::lease_client::LeaseClient;
use raftlock::pb::lock_client::LockClient;
use raftlock_client::{Client, ClientOptions, Error};
use raftlock_storage::state::{Lease, Lock};
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Status};

use crate::cluster::{test_config, TestCluster};

mod operator_calls;
mod quotas;
mod raw;
mod sessions;
use raw::{victim, Raw};

const JOBS_TOKEN: &str = "jobs-token-0123456789";
pub(crate) const BILLING_TOKEN: &str = "billing-token-0123456789";
pub(crate) const OPS_TOKEN: &str = "ops-token-0123456789";

/// The auth file of the test clusters: `jobs` may use `jobs/*` and
/// `shared/*`, `billing` may use `billing/*` and `shared/*`, `ops` is an
/// admin, and the TLS cluster's `test` client certificate has `jobs`'s role.
fn auth_file(dir: &std::path::Path) -> PathBuf {
    let text = format!(
        r#"
        [roles.jobs]
        names = ["jobs/*", "shared/*"]

        [roles.billing]
        names = ["billing/*", "shared/*"]

        [[users]]
        name = "jobs"
        token_sha256 = "{}"
        roles = ["jobs"]

        [[users]]
        name = "billing"
        token_sha256 = "{}"
        roles = ["billing"]

        [[users]]
        name = "ops"
        token_sha256 = "{}"
        roles = ["admin"]

        [[users]]
        name = "test"
        roles = ["jobs"]
        "#,
        token_sha256(JOBS_TOKEN),
        token_sha256(BILLING_TOKEN),
        token_sha256(OPS_TOKEN),
    );
    let path = dir.join("auth.toml");
    std::fs::write(&path, text).expect("write the auth file");
    path
}

/// A 3-node cluster that authenticates clients with [`auth_file`].
pub(crate) async fn cluster(dir: &tempfile::TempDir) -> TestCluster {
    let mut base = test_config();
    base.serving.auth_file = Some(auth_file(dir.path()));
    TestCluster::with_config(3, base).await
}

/// An attack's scene on a cluster with [`auth_file`]: `jobs`, a raw
/// client of the leader, holds a lease, a lock and a candidacy (`victim`).
/// Answers the temp dir holding the auth file, the cluster, its leader, a
/// follower, `jobs`, the victim, and the leader's leases and locks then.
async fn attack_scene() -> (
    tempfile::TempDir,
    TestCluster,
    u64,
    u64,
    Raw,
    raw::Victim,
    (Vec<Lease>, Vec<Lock>),
) {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = cluster(&dir).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let jobs = Raw::new(&cluster, leader, Some(JOBS_TOKEN));
    let victim = victim(&jobs).await;
    let before = leases_and_locks(&cluster, leader).await;
    (dir, cluster, leader, follower, jobs, victim, before)
}

/// `client`, with `jobs`'s role, locks `mine` and is refused `theirs`
/// (`PERMISSION_DENIED`); the guard of `mine`.
async fn assert_jobs_role(client: &Client, mine: &str, theirs: &str) -> raftlock_client::LockGuard {
    let guard = client
        .lock(mine)
        .acquire()
        .await
        .unwrap_or_else(|e| panic!("{mine} is within the role: {e}"));
    let err = client
        .lock(theirs)
        .acquire()
        .await
        .expect_err("a name outside the role");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err:?}");
    guard
}

/// The leases and locks on `node`, once it applied everything.
async fn leases_and_locks(cluster: &TestCluster, node: u64) -> (Vec<Lease>, Vec<Lock>) {
    let index = cluster
        .node(cluster.wait_for_leader().await)
        .status()
        .applied_index;
    cluster.wait_applied(node, index).await;
    let parts = cluster.node(node).read_state(|state| state.to_parts());
    (parts.leases, parts.locks)
}

/// Without an identity — no token, an unknown token, a malformed header —
/// every RPC is refused UNAUTHENTICATED and nothing changes. Without the
/// authentication in the services (an auth file ignored), the anonymous
/// caller is answered: it revokes the lease, force-releases the lock and
/// removes node 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_rpc_needs_a_known_identity() {
    let (_dir, cluster, leader, follower, jobs, victim, before) = attack_scene().await;

    for token in [None, Some("not-a-token"), Some("")] {
        let attacker = Raw::new(&cluster, follower, token);
        for (rpc, outcome) in attacker.every_rpc(&victim).await {
            let status = outcome.expect_err(rpc);
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{rpc} with token {token:?}: {status:?}"
            );
        }
    }
    assert_eq!(leases_and_locks(&cluster, leader).await, before);
    assert_eq!(cluster.node(3).status().members.len(), 3);
    // The honest client is still served.
    let check = jobs
        .lock()
        .check(jobs.req(pb::CheckRequest {
            name: victim.lock.clone(),
            fence: victim.fence,
            local: false,
        }))
        .await
        .expect("check");
    assert!(check.into_inner().valid);
    cluster.shutdown().await;
}

/// An authenticated client outside its rights: `billing` may use
/// `shared/*` names but not `jobs`'s lease, its hold, its candidacy or the
/// operator calls. Every call touching them is PERMISSION_DENIED with a
/// message naming the missing right; calls within its rights (its own
/// lease, Check and Describe of a shared name, Status) are served, and List
/// shows none of `jobs`'s leases. Nothing of `jobs`'s changes. Without the
/// state machine's lease check (`state::authority`), `billing` releases
/// `jobs`'s lock and revokes its lease; without the keep-alive check it
/// renews `jobs`'s lease; without the edge checks it force-releases and
/// removes node 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_cannot_act_beyond_its_roles() {
    let (_dir, cluster, leader, follower, jobs, victim, before) = attack_scene().await;

    let billing = Raw::new(&cluster, follower, Some(BILLING_TOKEN));
    let allowed = [
        "Lease.Grant",
        "Lease.List",
        "Lock.Check",
        "Lock.Describe",
        "Lock.List",
        "Election.Leader",
        "Election.Observe",
        "Cluster.Status",
    ];
    for (rpc, outcome) in billing.every_rpc(&victim).await {
        if allowed.contains(&rpc) {
            outcome.unwrap_or_else(|e| panic!("{rpc} within billing's rights: {e:?}"));
            continue;
        }
        let status = outcome.expect_err(rpc);
        assert_eq!(status.code(), Code::PermissionDenied, "{rpc}: {status:?}");
        let message = status.message();
        assert!(
            message.contains("billing")
                && (message.contains("belongs to jobs")
                    || message.contains("admin role")
                    || message.contains("jobs/")),
            "{rpc}: the refusal names the missing right: {message}"
        );
    }
    // Names outside its roles are refused even for reads.
    let read = billing
        .lock()
        .describe(billing.req(pb::DescribeRequest {
            name: "jobs/secret".into(),
            local: false,
        }))
        .await
        .expect_err("describe outside billing's names");
    assert_eq!(read.code(), Code::PermissionDenied, "{read:?}");
    let leases = billing
        .lease()
        .list(billing.req(pb::LeaseListRequest { local: false }))
        .await
        .expect("list")
        .into_inner()
        .leases;
    assert!(
        leases.iter().all(|l| l.id != victim.lease),
        "billing sees jobs's lease: {leases:?}"
    );

    // Nothing of jobs's changed (billing's own new leases aside).
    let (leases_after, locks_after) = leases_and_locks(&cluster, leader).await;
    let jobs_leases: Vec<_> = leases_after
        .into_iter()
        .filter(|l| l.identity.as_deref() == Some("jobs"))
        .collect();
    assert_eq!(jobs_leases, before.0);
    assert_eq!(locks_after, before.1);
    assert_eq!(cluster.node(3).status().members.len(), 3);

    // The owner and an admin are served.
    jobs.lock()
        .release(jobs.req(pb::ReleaseRequest {
            request_id: None,
            name: victim.lock.clone(),
            owner: victim.owner.clone(),
        }))
        .await
        .expect("jobs releases its own lock");
    let ops = Raw::new(&cluster, follower, Some(OPS_TOKEN));
    ops.lease()
        .revoke(ops.req(pb::LeaseRevokeRequest {
            request_id: None,
            id: victim.lease,
        }))
        .await
        .expect("an admin revokes any lease");
    cluster.shutdown().await;
}

/// The Rust client's token option, and the error kinds it maps refusals
/// to. Without `ClientOptions::token` reaching the interceptor, the client
/// is refused as unauthenticated.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_client_authenticates_with_its_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cluster = cluster(&dir).await;
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let with = |token: Option<&str>| ClientOptions {
        token: token.map(str::to_string),
        retry_for: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let jobs = Client::connect_with(endpoints.clone(), with(Some(JOBS_TOKEN)))
        .await
        .expect("client");
    let guard = assert_jobs_role(&jobs, "jobs/nightly", "billing/invoices").await;
    let anonymous = Client::connect_with(endpoints, with(None))
        .await
        .expect("client");
    let err = anonymous
        .grant_lease(Duration::from_secs(5))
        .await
        .expect_err("no token");
    assert!(matches!(err, Error::Unauthenticated(_)), "{err:?}");
    guard.release().await.expect("release");
    cluster.shutdown().await;
}

/// With TLS, a client certificate is an identity: `test` (the fixture's
/// client certificate) is listed with `jobs`'s role, so it may lock
/// `jobs/*` but not `billing/*`; a node's own client
/// (`Client::for_node(node.access())`, which presents the node
/// certificate) is an admin. Without the certificate half of
/// `Auth::authenticate`, both are refused as unauthenticated.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_certificate_is_an_identity() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut base = test_config();
    base.serving.auth_file = Some(auth_file(dir.path()));
    let cluster = TestCluster::with_tls_config(3, base).await;
    let client = cluster.client().await;
    let guard = assert_jobs_role(&client, "jobs/cert", "billing/cert").await;
    let node_client = Client::for_node(cluster.node(1).access())
        .await
        .expect("node client");
    let released = node_client
        .force_release("jobs/cert")
        .await
        .expect("a node's own client is an admin");
    assert_eq!(released, 1);
    drop(guard);
    cluster.shutdown().await;
}
