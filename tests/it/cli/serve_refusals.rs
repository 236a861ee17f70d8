//! What a real `raftlock serve` says when it refuses something: a data
//! dir another process has open (it does not start, names the holder's
//! pid and writes nothing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::{describe, terminate, wait_exit, BIN};

/// A `raftlock serve` process and the lines of its stderr.
struct Serve {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    /// Every line read so far, for failure messages.
    seen: Vec<String>,
}

impl Serve {
    /// Starts `raftlock serve` on free loopback ports with `args`
    /// (no admin listener) and waits until it serves clients.
    async fn start(args: &[&str]) -> Serve {
        let (client_addr, peer_addr) = (free_addr(), free_addr());
        let mut child = Command::new(BIN)
            .arg("serve")
            .args(["--client-addr", &client_addr, "--peer-addr", &peer_addr])
            .args(["--admin-addr", "off"])
            .args(args)
            .env_remove("RAFTLOCK_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn raftlock serve");
        let stderr = child.stderr.take().expect("piped stderr");
        let (tx, lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = stderr.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut serve = Serve {
            child,
            lines,
            seen: Vec::new(),
        };
        serve.wait_for(&["serving clients on"]).await;
        serve
    }

    /// The next stderr line holding every one of `needles`, within 20 s.
    async fn wait_for(&mut self, needles: &[&str]) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no line with {needles:?} within 20 s; stderr:\n{}",
                        self.seen.join("\n")
                    )
                })
                .unwrap_or_else(|| {
                    panic!(
                        "stderr closed before a line with {needles:?}:\n{}",
                        self.seen.join("\n")
                    )
                });
            self.seen.push(line.clone());
            if needles.iter().all(|n| line.contains(n)) {
                return line;
            }
        }
    }

    async fn stop(mut self) {
        terminate(&self.child);
        let status = wait_exit(&mut self.child, Duration::from_secs(20)).await;
        assert!(status.success(), "{status}");
    }
}

/// A loopback address with a port free a moment ago.
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").to_string()
}

/// Every file under `dir` with its bytes and modification time.
fn files(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut found = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            let meta = std::fs::metadata(&path).expect("stat");
            if meta.is_dir() {
                todo.push(path.clone());
            }
            let bytes = if meta.is_file() {
                std::fs::read(&path).expect("read")
            } else {
                Vec::new()
            };
            found.insert(path, (bytes, meta.modified().expect("mtime")));
        }
    }
    found
}

/// Sends SIGSTOP / SIGCONT.
fn signal(pid: u32, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok, "kill -{name} {pid}");
}

/// Two servers on one data dir (other ports): the second refuses to start,
/// names the dir and the first one's pid, and writes nothing there. The
/// first is stopped (SIGSTOP, its lock still held) while the second runs,
/// so nothing else changes the dir. Before the check it printed sled's
/// `Io error: could not acquire lock on ".../db": ... WouldBlock`, and
/// the assertion on the message failed (seen).
#[tokio::test]
async fn cli_serve_refuses_a_data_dir_another_process_has_open() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("n1");
    let data_arg = data.display().to_string();
    let first = Serve::start(&["--data-dir", &data_arg]).await;
    let pid = first.child.id().expect("running");
    signal(pid, "STOP");
    let before = files(&data);
    let second = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(BIN)
            .arg("serve")
            .args(["--data-dir", &data_arg, "--admin-addr", "off"])
            .args(["--client-addr", &free_addr(), "--peer-addr", &free_addr()])
            .env_remove("RAFTLOCK_LOG")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("the second server gives up within 30 s")
    .expect("run raftlock serve");
    let after = files(&data);
    signal(pid, "CONT");

    assert!(!second.status.success(), "{}", describe(&second));
    let said = String::from_utf8_lossy(&second.stderr);
    let expected =
        format!("data dir {data_arg} is in use by another process (pid {pid}, raftlock)");
    assert!(said.contains(&expected), "{expected:?} not in: {said}");
    assert!(said.contains("stop that process first"), "{said}");
    assert!(!said.contains("WouldBlock"), "{said}");
    assert!(before == after, "the refused server changed the data dir");
    first.stop().await;
}
