//! `raftlock lock`'s exit codes, from the real binary: CMD's status passes
//! through unchanged (3, 124, a signal), raftlock's own outcomes are
//! 121–125, usage errors included, and `--help`, the README and
//! docs/operations.md show one table.
//!
//! With the earlier codes (1 error, 2 usage, 3 busy, 4 timed out, 5
//! unreachable, 6 lost) both tests fail: the first at "busy" (3, the
//! same code as the command's `exit 3` just before), the second because
//! `--help` printed a one-line list, not the table.

use std::time::Duration;

use raftlock_client::Acquire;

use super::{describe, raftlock, run, stderr_of, BIN, TTL};
use crate::cluster::TestCluster;

/// The table `raftlock lock --help` prints.
const TABLE: &str = include_str!("../../../clients/cli/src/lock_exit_codes.txt");

/// Every documented outcome, each asserted by running `raftlock lock`.
#[tokio::test]
async fn cli_lock_passes_the_commands_status_and_keeps_its_own_at_121_to_125() {
    let cluster = TestCluster::new(1).await;
    let client = cluster.client().await;

    // CMD's status, unchanged, and nothing said by raftlock.
    for (script, code) in [
        ("exit 3", 3),
        ("exit 124", 124),
        ("exit 2", 2),
        ("kill -TERM $$", 128 + 15),
    ] {
        let out = run(&cluster, &["lock", "own", "--", "sh", "-c", script]).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{script}: {}",
            describe(&out)
        );
        assert_eq!(stderr_of(&out), "", "{script}: raftlock said something");
    }

    // Busy and timed out, on a lock someone else holds.
    let lease = client.grant_lease(TTL).await.unwrap();
    client
        .acquire(&Acquire::exclusive("held", "someone", lease))
        .await
        .unwrap()
        .unwrap();
    let own = |args: &'static [&'static str], code: i32| (args, code);
    let cases = [
        own(&["lock", "held", "--timeout", "0s", "--", "true"], 123),
        own(&["lock", "held", "--timeout", "300ms", "--", "true"], 124),
        own(
            &["lock", "x", "--endpoints", "127.0.0.1:1", "--", "true"],
            122,
        ),
        // Refused by the cluster (above the lock-delay maximum).
        own(&["lock", "x", "--lock-delay", "61s", "--", "true"], 125),
        // A CA file that does not exist.
        own(
            &["lock", "x", "--cacert", "/nonexistent/ca.crt", "--", "true"],
            125,
        ),
        // Usage errors: a TTL that is no duration, no lock name.
        own(&["lock", "x", "--ttl", "5x", "--", "true"], 125),
        own(&["lock"], 125),
    ];
    for (args, code) in cases {
        let out = run(&cluster, args).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            describe(&out)
        );
        assert!(
            stderr_of(&out).starts_with("error:"),
            "{args:?} says why: {}",
            describe(&out)
        );
    }

    // Lost while CMD ran: CMD revokes the lock's own lease.
    let script = format!("{BIN} lease revoke $RAFTLOCK_LEASE >/dev/null; sleep 30");
    let lost = tokio::time::timeout(
        Duration::from_secs(30),
        raftlock(
            &cluster,
            &["lock", "lost", "--ttl", "3s", "--", "sh", "-c", &script],
        )
        .output(),
    )
    .await
    .expect("the lost lock is noticed within 30 s")
    .expect("run raftlock");
    assert_eq!(lost.status.code(), Some(121), "lost: {}", describe(&lost));
    assert!(
        stderr_of(&lost).contains("lost lock lost"),
        "{}",
        describe(&lost)
    );

    // Other commands keep clap's 2 for usage.
    let out = run(&cluster, &["lease", "grant", "10x"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    cluster.shutdown().await;
}

/// One table: `raftlock lock --help` prints it (exit 0), the README's tour
/// and docs/operations.md show it as printed, and the tour's command,
/// typed as the README shows it, exits with the status the README says.
#[tokio::test]
async fn cli_lock_help_readme_and_operations_show_one_exit_code_table() {
    let cluster = TestCluster::new(1).await;
    let help = run(&cluster, &["lock", "--help"]).await;
    assert_eq!(help.status.code(), Some(0), "{}", describe(&help));
    let printed = String::from_utf8_lossy(&help.stdout);
    assert!(printed.contains(TABLE), "--help lacks the table: {printed}");

    let root = crate::repo_root();
    let root = root.display();
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README");
    let operations =
        std::fs::read_to_string(format!("{root}/docs/operations.md")).expect("operations.md");
    for (file, text) in [("README.md", &readme), ("docs/operations.md", &operations)] {
        assert!(
            text.contains(TABLE),
            "{file} does not show the table as printed"
        );
    }

    // The tour: `$ raftlock lock ...`, its output, `$ echo $?`, the status.
    let tour = &readme[readme.find("## A short tour").expect("the tour")..];
    let mut lines = tour.lines();
    let typed = lines
        .find_map(|l| l.strip_prefix("$ raftlock lock "))
        .map(|rest| format!("raftlock lock {rest}"))
        .expect("the tour runs `raftlock lock`");
    let printed_fence = lines.next().expect("its output");
    assert!(
        lines.next().is_some_and(|l| l.starts_with("$ echo $?")),
        "the tour shows the status"
    );
    let status: i32 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("the status the tour shows");
    let bin_dir = std::path::Path::new(BIN).parent().expect("bin dir");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let endpoints: Vec<String> = cluster.addrs.values().map(|(c, _)| c.to_string()).collect();
    let out = tokio::process::Command::new("sh")
        .args(["-c", &typed])
        .env("PATH", path)
        .env("RAFTLOCK_ENDPOINTS", endpoints.join(","))
        .output()
        .await
        .expect("run the tour's command");
    assert_eq!(
        out.status.code(),
        Some(status),
        "{typed}: {}",
        describe(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let (shown, _) = printed_fence.split_once('=').expect("fence=N");
    assert!(
        stdout
            .trim_end()
            .strip_prefix(&format!("{shown}="))
            .is_some_and(|n| n.parse::<u64>().is_ok()),
        "{typed} printed {stdout:?}, the tour shows {printed_fence:?}"
    );
    cluster.shutdown().await;
}
