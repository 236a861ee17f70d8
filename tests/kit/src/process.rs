//! One node process of any program (a `raftlock serve`, an etcd member):
//! start it, kill -9 it, pause and resume it (SIGSTOP/SIGCONT), stop it
//! with SIGTERM, restart it with the same argv and data dir, and read its
//! memory and log. A node is killed when its handle drops, so no node
//! outlives the test or the benchmark that started it.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::Error;

/// A node's memory as `/proc/PID/status` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    /// Variables set in its environment (after the scrub).
    pub env: Vec<(OsString, OsString)>,
    /// Where its stdout and stderr go.
    pub log: PathBuf,
}

/// A node process.
#[derive(Debug)]
pub struct NodeProcess {
    /// 1-based position in its cluster (the raftlock node id).
    pub index: usize,
    /// `host:port` clients talk to.
    pub client_addr: String,
    /// `host:port` peers talk to.
    pub peer_addr: String,
    /// The program, its arguments and environment; the same on every
    /// (re)start.
    program: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    /// Environment variables removed before starting (the node must be
    /// configured by its flags alone).
    env_remove: Vec<OsString>,
    /// stdout and stderr are appended here across restarts.
    log: PathBuf,
    child: Option<Child>,
    /// Stopped with SIGSTOP and not resumed since.
    paused: bool,
    /// Started and not since killed by [`kill`](Self::kill): it should be
    /// running.
    expected: bool,
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: libc::c_int) -> Result<(), Error> {
    let what = || format!("signal {signal} to pid {pid}");
    let pid = libc::pid_t::try_from(pid).map_err(|_| Error::Io {
        what: what(),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    // SAFETY: kill(2) has no memory-safety preconditions.
    let rc = unsafe { libc::kill(pid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Error::Io {
            what: what(),
            source: std::io::Error::last_os_error(),
        })
    }
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
            env: spec.env,
            env_remove,
            log: spec.log,
            child: None,
            paused: false,
            expected: false,
        }
    }

    /// Starts the process (again), appending its output to its log. A
    /// running node is left alone.
    pub fn start(&mut self) -> Result<(), Error> {
        if self.child.is_some() {
            return Ok(());
        }
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(Error::io(format!("open log {}", self.log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("open log {}", self.log.display())))?;
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for k in &self.env_remove {
            cmd.env_remove(k);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        let child = cmd
            .spawn()
            .map_err(Error::io(format!("start {}", self.program.display())))?;
        self.child = Some(child);
        self.paused = false;
        self.expected = true;
        Ok(())
    }

    /// Whether this node was started and has not been killed since.
    pub fn was_started(&self) -> bool {
        self.expected
    }

    /// Sends SIGKILL without waiting (see [`kill`](Self::kill)), so that
    /// several nodes can be cut at once, as by a power cut.
    pub fn start_kill(&mut self) -> Result<(), Error> {
        match self.child.as_mut() {
            Some(child) => child
                .kill()
                .map_err(Error::io(format!("kill node {}", self.index))),
            None => Ok(()),
        }
    }

    /// `kill -9` and reap. A node that is not running is left alone.
    pub fn kill(&mut self) {
        self.expected = false;
        self.paused = false;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `kill -9`, then reaps it within `limit` without blocking the
    /// runtime (a node stuck in a filesystem call may take a while to go);
    /// past `limit` it is left to exit on its own.
    pub async fn kill_within(&mut self, limit: Duration) {
        self.expected = false;
        self.paused = false;
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = child.kill();
        let deadline = tokio::time::Instant::now() + limit;
        while matches!(child.try_wait(), Ok(None)) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// SIGSTOP (`pause = true`) or SIGCONT. A node that is not running is
    /// left alone.
    pub fn pause(&mut self, pause: bool) -> Result<(), Error> {
        if let Some(pid) = self.pid() {
            signal(pid, if pause { libc::SIGSTOP } else { libc::SIGCONT })?;
            self.paused = pause;
        }
        Ok(())
    }

    /// Whether the node is stopped with SIGSTOP.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// SIGCONT and SIGTERM, then SIGKILL if it still runs after `grace`;
    /// reaps it.
    pub async fn terminate(&mut self, grace: Duration) {
        self.expected = false;
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = signal(child.id(), libc::SIGCONT);
        let _ = signal(child.id(), libc::SIGTERM);
        self.paused = false;
        let deadline = tokio::time::Instant::now() + grace;
        while matches!(child.try_wait(), Ok(None)) {
            if tokio::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The pid while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Whether the process is running (paused counts as running; it may
    /// have exited by itself, which this notices).
    pub fn is_running(&mut self) -> bool {
        self.exit_status().is_none() && self.child.is_some()
    }

    /// How the node ended, if it was started and has exited on its own
    /// since; it is reaped and counts as down from then on.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        let status = self.child.as_mut()?.try_wait().ok()??;
        self.child = None;
        self.paused = false;
        Some(status)
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

    /// The file its stdout and stderr are appended to.
    pub fn log(&self) -> &Path {
        &self.log
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

#[cfg(test)]
mod tests {
    use super::*;

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

    fn sleeper(dir: &Path) -> NodeProcess {
        NodeProcess::new(
            NodeSpec {
                index: 1,
                client_addr: String::new(),
                peer_addr: String::new(),
                program: "sleep".into(),
                args: vec!["30".into()],
                env: Vec::new(),
                log: dir.join("log"),
            },
            &[],
            &[],
        )
    }

    #[tokio::test]
    async fn kill_pause_terminate_and_restart() {
        let dir = std::env::temp_dir().join(format!("testkit-proc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut node = sleeper(&dir);
        node.start().expect("start");
        assert!(node.is_running());
        node.pause(true).expect("SIGSTOP");
        assert!(node.is_paused() && node.is_running());
        node.pause(false).expect("SIGCONT");
        node.kill();
        assert!(!node.is_running() && !node.was_started());
        node.start().expect("restart");
        let pid = node.pid().expect("a pid");
        node.pause(true).expect("SIGSTOP");
        // A paused node still stops on SIGTERM: it is resumed first.
        node.terminate(Duration::from_secs(5)).await;
        assert!(node.pid().is_none());
        assert!(signal(pid, 0).is_err(), "pid {pid} still there");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
