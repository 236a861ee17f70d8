//! Quotas per identity on a cluster with authentication: one identity
//! flooding leases is refused at its quota while another is served, and
//! an admin revokes every lease of the flooder at once.

use raftlock_client::LeaseAccount;

use super::*;

/// `billing` grants leases through a follower until refused: the refusal
/// is RESOURCE_EXHAUSTED naming the quota, the identity and the limit, and
/// `jobs` still gets a lease and a lock. `billing` may not revoke `jobs`'s
/// leases in bulk; `ops` (admin) revokes all of `billing`'s at once, after
/// which `billing` is served again. Without the lease quota every grant of
/// `billing` succeeds (at full scale it fills what every identity shares);
/// without the admin check `billing` revokes `jobs`'s lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_identity_cannot_take_every_lease_and_an_admin_revokes_its_leases() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut base = test_config();
    base.serving.auth_file = Some(auth_file(dir.path()));
    base.serving.quota_leases = 25;
    let cluster = TestCluster::with_config(3, base).await;
    let leader = cluster.wait_for_leader().await;
    let follower = cluster.others(leader)[0];
    let billing = Raw::new(&cluster, follower, Some(BILLING_TOKEN));
    let (mut granted, mut refused) = (0, None);
    for _ in 0..40 {
        match billing.grant().await {
            Ok(_) => granted += 1,
            Err(status) => {
                refused.get_or_insert(status);
            }
        }
    }
    assert_eq!(granted, 25);
    let refused = refused.expect("billing is refused at its quota");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused
            .message()
            .starts_with("identity billing holds 25 leases (limit 25"),
        "{refused:?}"
    );

    let jobs = Raw::new(&cluster, leader, Some(JOBS_TOKEN));
    let lease = jobs.grant().await.expect("jobs is served");
    jobs.acquire("jobs/after-flood", "jobs-task", lease)
        .await
        .expect("jobs locks");

    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let as_user = |token: &str| ClientOptions {
        token: Some(token.to_string()),
        retry_for: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let billing_client = Client::connect_with(endpoints.clone(), as_user(BILLING_TOKEN))
        .await
        .expect("client");
    let err = billing_client
        .revoke_all(&LeaseAccount::Identity("jobs".into()))
        .await
        .expect_err("billing is no admin");
    assert!(matches!(err, Error::PermissionDenied(_)), "{err:?}");
    let ops = Client::connect_with(endpoints, as_user(OPS_TOKEN))
        .await
        .expect("client");
    let done = ops
        .revoke_all(&LeaseAccount::Identity("billing".into()))
        .await
        .expect("an admin revokes billing's leases");
    assert_eq!(done.revoked, 25);
    let (leases, _) = leases_and_locks(&cluster, leader).await;
    let owners: Vec<_> = leases.iter().map(|l| l.identity.as_deref()).collect();
    assert_eq!(owners, [Some("jobs")], "only jobs's lease is left");
    billing.grant().await.expect("billing is served again");
    cluster.shutdown().await;
}
