//! `raftlock lock NAME [--ttl D] [--timeout D] [--shared] [-- CMD ARGS...]`:
//! run a command while holding a lock (like `consul lock` or `flock`, but
//! safe across machines).
//!
//! The lock hangs on a lease of its own, granted here and held through a
//! [`LockGuard`](crate::client::LockGuard) on it, which renews the lease in
//! the background while we wait and while CMD runs. CMD sees
//! `RAFTLOCK_LOCK`, `RAFTLOCK_FENCE` and `RAFTLOCK_LEASE`. When the guard
//! reports the lock lost — the lease was revoked or expired, renewals failed
//! past the lease's validity counted from their send time, or its periodic
//! check found the fence no longer holding (force-release) — CMD's process
//! group gets SIGTERM, then SIGKILL after `--grace`. SIGINT/SIGTERM sent to
//! us are forwarded the same way. On every exit the lease is revoked, so a
//! finished command never leaves a lock (or a lease) behind.

use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use super::child_process::{exit_code, ChildProcess};
use super::signals::Interrupts;
use super::{print_json, Endpoints, Output};
use crate::client::{Client, LeaseId, LockGuard};
use crate::duration::{format_duration, parse_duration};
use crate::error::Error;

/// Flags of `raftlock lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    /// Lock name.
    name: String,
    /// Lease TTL: how long the lock outlives this process if it dies.
    #[arg(long, value_name = "D", default_value = "15s", value_parser = parse_duration)]
    ttl: Duration,
    /// Give up when not granted within D (0s: try once). Default: wait.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// Take a shared (read) hold instead of an exclusive one.
    #[arg(long)]
    shared: bool,
    /// After SIGTERM, how long CMD may take to exit before SIGKILL.
    #[arg(long, value_name = "D", default_value = "5s", value_parser = parse_duration)]
    grace: Duration,
    /// Command to run while holding the lock. Without one: print the fence
    /// and hold until interrupted.
    #[arg(last = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What `lock` prints when it holds the lock without a command.
#[derive(Serialize)]
struct Held<'a> {
    name: &'a str,
    fence: u64,
    lease: LeaseId,
}

/// Acquires, runs or holds, and always revokes the lease at the end.
pub async fn run(args: LockArgs) -> Result<ExitCode, String> {
    let mut interrupts = Interrupts::watch()?;
    let client = args.endpoints.connect().await?;
    let lease = client
        .grant_lease(args.ttl)
        .await
        .map_err(|e| args.endpoints.explain(&e))?;
    let outcome = hold(&args, &client.with_lease(lease), lease, &mut interrupts).await;
    revoke(&client, lease).await;
    outcome
}

/// Acquires on `lease` (through `on_lease`, which keeps it alive), then runs
/// CMD or holds until interrupted or lost.
async fn hold(
    args: &LockArgs,
    on_lease: &Client,
    lease: LeaseId,
    interrupts: &mut Interrupts,
) -> Result<ExitCode, String> {
    let guard = tokio::select! {
        r = acquire(args, on_lease) => r?,
        stop = interrupts.recv() => return Ok(ExitCode::from(stop.exit_code())),
    };
    let fence = guard.fence();
    let lost = guard.lost();
    tokio::pin!(lost);

    let code = if args.command.is_empty() {
        print_held(args, fence, lease)?;
        tokio::select! {
            e = &mut lost => return Err(lost_message(args, &e)),
            _ = interrupts.recv() => ExitCode::SUCCESS,
        }
    } else {
        let env = [
            ("RAFTLOCK_LOCK", args.name.clone()),
            ("RAFTLOCK_FENCE", fence.to_string()),
            ("RAFTLOCK_LEASE", lease.to_string()),
        ];
        let mut child = ChildProcess::spawn(&args.command, &env)?;
        tokio::select! {
            status = child.wait() => ExitCode::from(exit_code(status?)),
            stop = interrupts.recv() => {
                ExitCode::from(exit_code(child.stop(stop.name(), args.grace).await?))
            }
            e = &mut lost => {
                eprintln!(
                    "error: {}; stopping the command (SIGTERM, SIGKILL after {})",
                    lost_message(args, &e),
                    format_duration(args.grace)
                );
                let status = child.stop("TERM", args.grace).await?;
                // A command that exits 0 after losing its lock still did not
                // finish under the lock: report failure either way.
                ExitCode::from(exit_code(status).max(1))
            }
        }
    };
    // Releasing a lost lock fails; the lease revoke that follows is what
    // matters either way.
    let _ = guard.release().await;
    Ok(code)
}

/// Waits per `--timeout` (`0s`: try once) for the lock.
async fn acquire(args: &LockArgs, on_lease: &Client) -> Result<LockGuard, String> {
    let owner = format!(
        "raftlock-cli-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    );
    let mut builder = on_lease.lock(args.name.clone()).owner(owner);
    if args.shared {
        builder = builder.shared();
    }
    let result = match args.timeout {
        Some(t) if t.is_zero() => builder.try_acquire().await,
        Some(t) => builder.timeout(t).acquire().await.map(Some),
        None => builder.acquire().await.map(Some),
    };
    result
        .map_err(|e| acquire_error(args, &e))?
        .ok_or_else(|| busy(args))
}

fn lost_message(args: &LockArgs, error: &Error) -> String {
    match error {
        Error::LockLost(why) => format!("lost lock {}: {why}", args.name),
        other => format!("lost lock {}: {other}", args.name),
    }
}

fn busy(args: &LockArgs) -> String {
    format!(
        "lock {0} is held by someone else; wait for it with --timeout D (or no --timeout), \
         or see who holds it with `raftlock locks describe {0}`",
        args.name
    )
}

fn acquire_error(args: &LockArgs, error: &Error) -> String {
    match (error, args.timeout) {
        (Error::Timeout(_), Some(timeout)) => format!(
            "lock {0} is still held by someone else after {1}; raise --timeout, \
             or see who holds it with `raftlock locks describe {0}`",
            args.name,
            format_duration(timeout)
        ),
        _ => args.endpoints.explain(error),
    }
}

fn print_held(args: &LockArgs, fence: u64, lease: LeaseId) -> Result<(), String> {
    let held = Held {
        name: &args.name,
        fence,
        lease,
    };
    match args.endpoints.output {
        Output::Json => print_json(&held)?,
        Output::Table => out!(
            "acquired lock {} with fence {fence} (lease {lease}); holding until interrupted",
            args.name
        ),
    }
    Ok(())
}

/// Ends the lease (and with it the lock, or our place in its queue). A lease
/// that is already gone is fine; any other failure is reported, since the
/// lock then stays until the lease expires.
pub(super) async fn revoke(client: &Client, lease: LeaseId) {
    match tokio::time::timeout(Duration::from_secs(5), client.revoke(lease)).await {
        Ok(Ok(_)) | Ok(Err(Error::LeaseExpired(_))) => {}
        Ok(Err(e)) => eprintln!(
            "warning: could not revoke lease {lease} ({e}); its locks end when it expires"
        ),
        Err(_) => {
            eprintln!("warning: revoking lease {lease} timed out; its locks end when it expires")
        }
    }
}
