//! The command `raftlock lock` runs: started in its own process group so a
//! lost lock stops it and everything it started, signalled with SIGTERM
//! first and SIGKILL after a grace period.
//!
//! Signals are sent with the system's `kill` utility rather than through
//! `libc`, which keeps this crate free of `unsafe`; if `kill` is missing,
//! only the SIGKILL fallback (std's `Child::start_kill`, which reaches the
//! command itself but not its children) remains.

use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::{Child, Command};

/// A running command in its own process group.
pub struct ChildProcess {
    child: Child,
    /// Process group id (= the command's pid).
    group: u32,
    /// For messages: the program name.
    program: String,
}

/// Why a command could not be started: the OS error's kind (for the exit
/// code) and a message.
#[derive(Debug)]
pub struct SpawnError {
    pub kind: std::io::ErrorKind,
    pub message: String,
}

impl ChildProcess {
    /// Starts `argv` with `env` added to ours, inheriting stdio.
    pub fn spawn(argv: &[String], env: &[(&str, String)]) -> Result<ChildProcess, SpawnError> {
        let (program, args) = argv.split_first().ok_or_else(|| SpawnError {
            kind: std::io::ErrorKind::InvalidInput,
            message: "no command given after `--`".to_string(),
        })?;
        let mut command = Command::new(program);
        command
            .args(args)
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .process_group(0)
            // Should this process die of a bug, the command still stops.
            .kill_on_drop(true);
        let child = command.spawn().map_err(|e| SpawnError {
            kind: e.kind(),
            message: format!("cannot run {program:?}: {e}; check the command and PATH"),
        })?;
        let group = child.id().ok_or_else(|| SpawnError {
            kind: std::io::ErrorKind::Other,
            message: format!("{program:?} exited before it could be watched"),
        })?;
        Ok(ChildProcess {
            child,
            group,
            program: program.clone(),
        })
    }

    /// Waits for the command to exit.
    pub async fn wait(&mut self) -> Result<ExitStatus, String> {
        self.child
            .wait()
            .await
            .map_err(|e| format!("cannot wait for {:?}: {e}", self.program))
    }

    /// Sends `signal` (a `kill -s` name) to the command's process group,
    /// then SIGKILL if it has not exited after `grace`; answers its status.
    pub async fn stop(&mut self, signal: &str, grace: Duration) -> Result<ExitStatus, String> {
        self.signal_group(signal).await;
        if let Ok(status) = tokio::time::timeout(grace, self.wait()).await {
            return status;
        }
        tracing::warn!(
            "{:?} still running {} ms after SIG{signal}; sending SIGKILL",
            self.program,
            grace.as_millis()
        );
        if !self.signal_group("KILL").await {
            let _ = self.child.start_kill();
        }
        self.wait().await
    }

    /// Signals the whole process group; answers whether that worked.
    async fn signal_group(&self, signal: &str) -> bool {
        let target = format!("-{}", self.group);
        match Command::new("kill")
            .args(["-s", signal, "--", &target])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
        {
            Ok(status) => status.success(),
            Err(e) => {
                tracing::warn!("cannot run `kill -s {signal}`: {e}");
                false
            }
        }
    }
}

/// The exit code a shell would report for `status`: the code, or 128 plus
/// the signal that ended the process.
pub fn exit_code(status: ExitStatus) -> u8 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code.clamp(0, 255) as u8,
        (None, Some(signal)) => (128 + signal).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}
