//! State is private to the node: after `raftlock serve` ran (writes,
//! snapshots), after `snapshot restore`, and after a dir written with
//! loose modes is opened again, every file in the data dir is 0600 and
//! every dir 0700; a backup file is 0600.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use raftlock_client::Acquire;
use tokio::process::{Child, Command};

use super::{describe, free_addr, serve_command, terminate, wait_exit, BIN};

/// Every entry under `dir` (itself included) whose mode is not private:
/// (path, mode).
fn loose(dir: &Path) -> Vec<(PathBuf, u32)> {
    let mut found = Vec::new();
    let mut count = 0;
    walk(dir, &mut found, &mut count);
    assert!(count > 3, "{} holds only {count} entries", dir.display());
    found
}

fn walk(path: &Path, found: &mut Vec<(PathBuf, u32)>, count: &mut usize) {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    let mode = meta.permissions().mode() & 0o777;
    *count += 1;
    if meta.is_dir() {
        if mode != 0o700 {
            found.push((path.to_path_buf(), mode));
        }
        for entry in std::fs::read_dir(path).expect("list") {
            walk(&entry.expect("entry").path(), found, count);
        }
    } else if meta.is_file() && mode & 0o077 != 0 {
        found.push((path.to_path_buf(), mode));
    }
}

/// `raftlock serve` on `dir` at `(client, peer)`; its client address.
fn serve(dir: &Path, (client, peer): (&str, &str)) -> (Child, String) {
    let client = client.to_string();
    let child = serve_command()
        .args(["--admin-addr", "off", "--snapshot-after", "20"])
        .arg("--data-dir")
        .arg(dir)
        .args(["--client-addr", &client, "--peer-addr", peer])
        .spawn()
        .expect("spawn raftlock serve");
    (child, client)
}

/// Grants, locks and releases enough to make the node snapshot.
async fn work(client_addr: &str) {
    let client =
        raftlock_client::Client::connect_with_retry([client_addr], Duration::from_secs(60))
            .await
            .expect("client");
    let lease = client
        .grant_lease(Duration::from_secs(60))
        .await
        .expect("grant");
    let owner = format!("owner-{lease}");
    for i in 0..60 {
        let name = format!("private/{lease}/{i}");
        client
            .acquire(&Acquire::exclusive(&name, &owner, lease))
            .await
            .expect("acquire")
            .expect("granted");
    }
}

async fn stop(mut child: Child) {
    terminate(&child);
    let exit = wait_exit(&mut child, Duration::from_secs(30)).await;
    assert_eq!(exit.code(), Some(0), "{exit}");
}

/// The data dir after a node ran, a backup, a restored dir and the node
/// it starts, and an old dir whose modes were loosened (as a build before
/// this check left them: `db`, `raftlock.identity` 0644, the dir 0755) once
/// opened again: nothing is readable by group or others. Without
/// `private_dir` in `node_db::open` and `raftlock serve`'s umask the first
/// check lists the dir, `blobs`, `db` and `conf` at 0755/0644 (seen).
#[tokio::test]
async fn every_file_a_node_makes_is_private() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("data");
    let addrs = (free_addr(), free_addr());
    let (child, client) = serve(&dir, (&addrs.0, &addrs.1));
    work(&client).await;

    // A backup while it runs, as an operator on its host takes one.
    let backup = root.path().join("cluster.backup");
    let saved = Command::new(BIN)
        .args(["snapshot", "save"])
        .arg(&backup)
        .arg("--data-dir")
        .arg(&dir)
        .args(["--endpoints", &client])
        .output()
        .await
        .expect("snapshot save");
    assert!(saved.status.success(), "{}", describe(&saved));
    stop(child).await;
    assert_eq!(loose(&dir), Vec::new(), "after the node ran");
    let mode = std::fs::metadata(&backup)
        .expect("backup")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the backup file");

    // Restored, then run.
    let restored = root.path().join("restored");
    let addrs2 = (free_addr(), free_addr());
    let out = Command::new(BIN)
        .args(["snapshot", "restore"])
        .arg(&backup)
        .arg("--data-dir")
        .arg(&restored)
        .args(["--client-addr", &addrs2.0, "--peer-addr", &addrs2.1])
        .output()
        .await
        .expect("snapshot restore");
    assert!(out.status.success(), "{}", describe(&out));
    assert_eq!(loose(&restored), Vec::new(), "after restore");
    let (child, client) = serve(&restored, (&addrs2.0, &addrs2.1));
    work(&client).await;
    stop(child).await;
    assert_eq!(loose(&restored), Vec::new(), "after the restored node ran");

    // A dir left with loose modes is tightened when opened again.
    loosen(&dir);
    assert!(!loose(&dir).is_empty());
    let (child, client) = serve(&dir, (&addrs.0, &addrs.1));
    let c = raftlock_client::Client::connect_with_retry([client.as_str()], Duration::from_secs(60))
        .await
        .expect("client");
    c.grant_lease(Duration::from_secs(5)).await.expect("grant");
    stop(child).await;
    assert_eq!(loose(&dir), Vec::new(), "an old dir opened again");
}

/// Sets every dir under `path` to 0755 and every file to 0644.
fn loosen(path: &Path) {
    let meta = std::fs::symlink_metadata(path).expect("stat");
    if meta.is_dir() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        for entry in std::fs::read_dir(path).expect("list") {
            loosen(&entry.expect("entry").path());
        }
    } else if meta.is_file() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
}
