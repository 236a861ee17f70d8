//! How the CLI fails: bad durations are usage errors (exit 2; 125 for
//! `lock`, whose 2 could be its command's), an unreachable cluster is one
//! line saying what to do (exit 1, or 2 for `locks check`).

use super::{describe, run, stderr_of};
use crate::cluster::TestCluster;

#[tokio::test]
async fn cli_rejects_bad_durations_and_unreachable_clusters() {
    let cluster = TestCluster::new(1).await;
    for args in [
        &["lease", "grant", "10x"][..],
        &["lock", "x", "--ttl", "5x"],
        &["lock", "x", "--timeout", "1.5s"],
        &["elect", "x", "v", "--ttl", "soon"],
    ] {
        let out = run(&cluster, args).await;
        let usage = if args[0] == "lock" { 125 } else { 2 };
        assert_eq!(
            out.status.code(),
            Some(usage),
            "{args:?}: {}",
            describe(&out)
        );
        let err = stderr_of(&out);
        assert!(err.contains("is not a duration"), "{err}");
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

/// Shell completions and the man page come from the same definition as
/// `--help`: every command is in them.
#[tokio::test]
async fn cli_prints_completions_and_a_man_page() {
    let cluster = TestCluster::new(1).await;
    let bash = run(&cluster, &["completions", "bash"]).await;
    assert!(bash.status.success(), "{}", describe(&bash));
    let script = String::from_utf8_lossy(&bash.stdout);
    for command in ["lock", "lease", "elect", "auth", "timetolive"] {
        assert!(script.contains(command), "bash completions lack {command}");
    }
    let man = run(&cluster, &["man"]).await;
    assert!(man.status.success(), "{}", describe(&man));
    let page = String::from_utf8_lossy(&man.stdout);
    assert!(
        page.starts_with(".ie") && page.contains(".TH raftlock 1"),
        "{page}"
    );
    cluster.shutdown().await;
}

/// Messages say each thing once, in words, with the next step: an
/// endpoint without a port, a peer port given as a client endpoint, and a
/// cluster that lost its quorum (which printed a debug dump of the
/// membership, `NodeAddr { peer_addr: ... }`, before).
#[tokio::test]
async fn cli_messages_say_what_to_do_once() {
    let mut cluster = TestCluster::new(3).await;
    let out = run(&cluster, &["lease", "list", "--endpoints", "127.0.0.1"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("has no port") && err.contains("host:port"),
        "{err}"
    );

    let peer = cluster.addrs[&1].1.to_string();
    let out = run(&cluster, &["lease", "list", "--endpoints", &peer]).await;
    let err = stderr_of(&out);
    assert!(
        err.contains("peer port") && !err.contains("Unimplemented"),
        "{err}"
    );

    let leader = cluster.wait_for_leader().await;
    for id in cluster.others(leader) {
        cluster.kill(id).await;
    }
    let client = cluster.addrs[&leader].0.to_string();
    let out = run(
        &cluster,
        &["locks", "describe", "x", "--endpoints", &client],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = stderr_of(&out);
    assert!(
        err.contains("no quorum") && err.contains("majority"),
        "{err}"
    );
    assert!(
        !err.contains("NodeAddr") && !err.contains("voters:"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
