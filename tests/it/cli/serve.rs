//! `raftlock serve` with no flags: a ready one-node cluster on the default
//! port, with its data in the working directory.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::process::Command;

use super::{describe, terminate, wait_exit, BIN};

#[tokio::test]
async fn cli_serve_without_flags_is_a_ready_one_node_cluster() {
    let cwd = tempfile::tempdir().expect("temp dir");
    if std::net::TcpListener::bind("127.0.0.1:7379").is_err() {
        panic!("port 127.0.0.1:7379 is taken; `raftlock serve` without flags needs it");
    }
    let mut serve = Command::new(BIN)
        .arg("serve")
        .current_dir(cwd.path())
        .env_remove("RAFTLOCK_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn raftlock serve");

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let out = Command::new(BIN)
            .args(["cluster", "status", "--output", "json"])
            .env_remove("RAFTLOCK_ENDPOINTS")
            .output()
            .await
            .expect("run cluster status");
        if out.status.success() {
            let status: Value = serde_json::from_slice(&out.stdout).expect("status json");
            // The listener answers a moment before the cluster is formed.
            if !status["leader"].is_null() {
                break status;
            }
        }
        assert!(Instant::now() < deadline, "no answer: {}", describe(&out));
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(status["leader"], 1, "{status}");
    assert_eq!(status["nodes"][0]["client_addr"], "127.0.0.1:7379");
    assert_eq!(status["nodes"][0]["role"], "leader");
    assert!(cwd.path().join("raftlock-data").is_dir());

    terminate(&serve);
    let exit = wait_exit(&mut serve, Duration::from_secs(15)).await;
    assert_eq!(exit.code(), Some(0), "{exit}");
}
