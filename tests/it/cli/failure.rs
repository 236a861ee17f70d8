//! How the CLI fails: bad durations are usage errors (exit 2), an
//! unreachable cluster is one line saying what to do (exit 1, or 2 for
//! `locks check`).

use super::{describe, run, stderr_of};
use crate::cluster::TestCluster;

#[tokio::test]
async fn cli_rejects_bad_durations_and_unreachable_clusters() {
    let cluster = TestCluster::new(1).await;
    for args in [
        &["lease", "grant", "10x"][..],
        &["lock", "x", "--ttl", "5"],
        &["lock", "x", "--timeout", "1.5s"],
        &["elect", "x", "v", "--ttl", "soon"],
    ] {
        let out = run(&cluster, args).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
        let err = stderr_of(&out);
        assert!(
            err.contains("500ms, 10s, 2m") || err.contains("no unit"),
            "{err}"
        );
    }

    let out = run(&cluster, &["lease", "list", "--endpoints", "127.0.0.1:1"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach") && err.contains("--endpoints"),
        "{err}"
    );

    // `locks check` keeps 1 for "not valid": "cannot tell" is 2.
    let out = run(
        &cluster,
        &["locks", "check", "x", "1", "--endpoints", "127.0.0.1:1"],
    )
    .await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    cluster.shutdown().await;
}
