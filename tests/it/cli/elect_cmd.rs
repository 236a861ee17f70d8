//! `raftlock elect`: campaigning, handing over on SIGTERM, and
//! `elect --observe` following the changes.

use std::time::Duration;

use serde_json::Value;

use super::{describe, next_line, run, spawn, terminate, wait_exit};
use crate::cluster::TestCluster;

#[tokio::test]
async fn cli_elect_and_observe() {
    let cluster = TestCluster::new(3).await;
    let (mut observer, mut changes) =
        spawn(&cluster, &["elect", "-l", "scheduler", "--output", "json"]);
    let change = |line: String| -> Value { serde_json::from_str(&line).expect("json line") };
    assert_eq!(change(next_line(&mut changes).await)["has_leader"], false);

    let args = |value| {
        [
            "elect",
            "scheduler",
            value,
            "--ttl",
            "3s",
            "--output",
            "json",
        ]
    };
    let (mut alpha, mut alpha_out) = spawn(&cluster, &args("alpha"));
    let elected = change(next_line(&mut alpha_out).await);
    assert_eq!(elected["value"], "alpha");
    let seen = change(next_line(&mut changes).await);
    assert_eq!(seen["value"], "alpha");
    assert_eq!(seen["fence"], elected["fence"]);
    // One-shot `--leader` prints the same leader and exits.
    let once = run(
        &cluster,
        &["elect", "scheduler", "--leader", "--output", "json"],
    )
    .await;
    assert!(once.status.success(), "{}", describe(&once));
    let once = change(String::from_utf8_lossy(&once.stdout).trim().to_string());
    assert_eq!(once["fence"], elected["fence"]);

    // A second candidate waits until the first resigns.
    let (mut beta, mut beta_out) = spawn(&cluster, &args("beta"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    terminate(&alpha);
    assert!(wait_exit(&mut alpha, Duration::from_secs(10))
        .await
        .success());
    let elected = change(next_line(&mut beta_out).await);
    assert_eq!(elected["value"], "beta");
    let mut seen = change(next_line(&mut changes).await);
    if seen["has_leader"] == false {
        // The gap between resign and the next grant may show as its own
        // change.
        seen = change(next_line(&mut changes).await);
    }
    assert_eq!(seen["value"], "beta");

    terminate(&beta);
    assert!(wait_exit(&mut beta, Duration::from_secs(10))
        .await
        .success());
    assert_eq!(change(next_line(&mut changes).await)["has_leader"], false);

    terminate(&observer);
    assert!(wait_exit(&mut observer, Duration::from_secs(10))
        .await
        .success());
    cluster.shutdown().await;
}
