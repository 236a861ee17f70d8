//! One node process: how to start it, kill it (`kill -9`), restart it with
//! the same argv and data dir, and read its memory use. A node is killed
//! when its handle drops, so no node outlives the benchmark.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::Error;

/// A node's memory as `/proc/PID/status` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Memory {
    /// Resident set size now, in KiB.
    pub rss_kib: u64,
    /// Peak resident set size since the process started, in KiB.
    pub hwm_kib: u64,
}

/// How to run one node.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    /// 1-based position in its cluster.
    pub index: usize,
    /// `host:port` clients talk to.
    pub client_addr: String,
    /// `host:port` peers talk to.
    pub peer_addr: String,
    /// The program to run.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

/// A node process of either system.
#[derive(Debug)]
pub struct NodeProcess {
    /// 1-based position in its cluster (the raftlock node id).
    pub index: usize,
    /// `host:port` clients talk to.
    pub client_addr: String,
    /// `host:port` peers talk to.
    pub peer_addr: String,
    /// The program and its arguments; the same on every (re)start.
    program: PathBuf,
    args: Vec<OsString>,
    /// Environment variables removed before starting (the node must be
    /// configured by its flags alone).
    env_remove: Vec<OsString>,
    /// stdout and stderr are appended here across restarts.
    log: PathBuf,
    child: Option<Child>,
    /// Started and not since killed by [`kill`](Self::kill): it should be
    /// running.
    expected: bool,
}

impl NodeProcess {
    /// A node not yet started. Every variable whose name starts with one of
    /// `scrub_prefixes` is removed from its environment, except those named
    /// in `keep`.
    pub fn new(spec: NodeSpec, scrub_prefixes: &[&str], keep: &[&str]) -> Self {
        let env_remove = std::env::vars_os()
            .filter_map(|(k, _)| {
                let name = k.to_string_lossy();
                let scrub = scrub_prefixes.iter().any(|p| name.starts_with(p))
                    && !keep.iter().any(|k| name == *k);
                scrub.then_some(k)
            })
            .collect();
        NodeProcess {
            index: spec.index,
            client_addr: spec.client_addr,
            peer_addr: spec.peer_addr,
            program: spec.program,
            args: spec.args,
            env_remove,
            log: spec.log,
            child: None,
            expected: false,
        }
    }

    /// Starts the process (again), appending its output to its log.
    pub fn start(&mut self) -> Result<(), Error> {
        if self.child.is_some() {
            return Ok(());
        }
        let log_ctx = || format!("cannot open log {}", self.log.display());
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| Error::io(log_ctx(), e))?;
        let err = out.try_clone().map_err(|e| Error::io(log_ctx(), e))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for k in &self.env_remove {
            cmd.env_remove(k);
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("cannot start {}", self.program.display()), e))?;
        self.child = Some(child);
        self.expected = true;
        Ok(())
    }

    /// Whether the benchmark started this node and has not killed it since.
    pub fn was_started(&self) -> bool {
        self.expected
    }

    /// `kill -9` and reap. A node that is not running is left alone.
    pub fn kill(&mut self) {
        self.expected = false;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The pid while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is still running (it may have exited by itself).
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(_) => {
                self.child = None;
                false
            }
            None => false,
        }
    }

    /// Memory use now, if running.
    pub fn memory(&self) -> Option<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        };
        Some(Memory {
            rss_kib: field("VmRSS:")?,
            hwm_kib: field("VmHWM:")?,
        })
    }

    /// The last lines of the log, for error messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        tail(&text, lines)
    }
}

/// The last `lines` lines of a log. When a Go program (etcd) panicked,
/// the goroutine dump after its `panic:` line is left out: the cause is
/// the log line just before it, and a tail of the dump would hide it.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    let end = all
        .iter()
        .position(|l| l.starts_with("panic: "))
        .map_or(all.len(), |i| i + 1);
    all[end.saturating_sub(lines)..end].join("\n")
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Fails clearly if a TCP port on loopback is taken.
pub fn check_port_free(addr: &str) -> Result<(), Error> {
    TcpListener::bind(addr).map(drop).map_err(|e| {
        Error::Cluster(format!(
            "port {addr} is in use or cannot be bound ({e}); pick another --base-port"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::tail;

    #[test]
    fn a_go_panic_shows_its_cause_not_the_goroutine_dump() {
        let mut log = String::from("{\"level\":\"info\",\"msg\":\"starting\"}\n");
        log.push_str(
            "{\"level\":\"panic\",\"msg\":\"failed to create WAL\",\
             \"error\":\"no space left on device\"}\n",
        );
        log.push_str("panic: failed to create WAL\n\ngoroutine 1 [running]:\n");
        for i in 0..40 {
            log.push_str(&format!("frame {i}\n\tfile.go:{i}\n"));
        }
        let shown = tail(&log, 20);
        assert!(shown.contains("no space left on device"), "{shown}");
        assert!(shown.ends_with("panic: failed to create WAL"), "{shown}");
        assert!(!shown.contains("goroutine"), "{shown}");
    }

    #[test]
    fn without_a_panic_the_last_lines_are_shown() {
        let log: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let shown = tail(&log, 3);
        assert_eq!(shown, "line 27\nline 28\nline 29");
        assert_eq!(tail("", 3), "");
    }
}
