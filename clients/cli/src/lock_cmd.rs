//! `raftlock lock NAME [--ttl D] [--timeout D] [--shared] [-- CMD ARGS...]`:
//! run a command while holding a lock (like `consul lock` or `flock`, but
//! safe across machines).
//!
//! The lock hangs on a lease of its own, granted here and held through a
//! [`LockGuard`](raftlock_client::LockGuard) on it, which renews the lease in
//! the background while we wait and while CMD runs. CMD sees
//! `RAFTLOCK_LOCK`, `RAFTLOCK_FENCE` and `RAFTLOCK_LEASE`. When the guard
//! reports the lock lost — the lease was revoked or expired, renewals failed
//! past the lease's validity counted from their send time, or its periodic
//! check found the fence no longer holding (force-release) — CMD's process
//! group gets SIGTERM, then SIGKILL after `--grace`. SIGINT/SIGTERM sent to
//! us are forwarded the same way. On every exit the lease is revoked, so a
//! finished or interrupted command never leaves a lock (or a lease)
//! behind: a SIGINT/SIGTERM during the lease's grant revokes the lease if
//! the grant went through, one during the acquire revokes the lease under
//! it. After SIGKILL nothing cleans up here: a queued wait ends when its
//! call's connection does (the server cancels it), and a hold when the
//! lease's TTL (`--ttl`) runs out.
//!
//! # Exit codes
//!
//! CMD's exit status passes through unchanged, so raftlock's own outcomes
//! keep out of the codes commands use: they sit at 121–125, where GNU
//! `timeout` put 124 (timed out) and 125 (its own failure); 126 and 127
//! mean what shells make them mean (docs/decisions.md, "Command line").
//! Usage errors of `raftlock lock` exit 125 too (`cli::run`). The table,
//! which `raftlock lock --help`, the README and docs/operations.md show
//! as it is here:
//!
//! ```text
#![doc = include_str!("lock_exit_codes.txt")]
//! ```

use std::time::Duration;

use serde::Serialize;

use super::child_process::{exit_code, ChildProcess};
use super::signals::Interrupts;
use super::{print_json, Endpoints, Output, EXIT_SUCCESS};
use raftlock::duration::{format_duration, parse_duration};
use raftlock_client::Error;
use raftlock_client::{Client, LeaseId, LockGuard};

/// The exit codes, as `raftlock lock --help` lists them (the module doc
/// shows the same file).
pub const EXIT_CODES_HELP: &str = include_str!("lock_exit_codes.txt");

/// Exit code: the lock was lost.
pub const EXIT_LOST: u8 = 121;
/// Exit code: no node of the cluster answered.
pub const EXIT_UNREACHABLE: u8 = 122;
/// Exit code: `--timeout 0s` found the lock held.
pub const EXIT_BUSY: u8 = 123;
/// Exit code: not granted within `--timeout` (GNU `timeout`'s 124).
pub const EXIT_TIMED_OUT: u8 = 124;
/// Exit code: raftlock itself failed: bad flags, a refusal by the
/// cluster, unreadable TLS files, ... (GNU `timeout`'s 125).
pub const EXIT_ERROR: u8 = 125;
/// Exit code: CMD exists but cannot be run (as shells answer).
pub const EXIT_CANNOT_RUN: u8 = 126;
/// Exit code: CMD was not found (as shells answer).
pub const EXIT_NOT_FOUND: u8 = 127;

/// A failure with its exit code and message.
struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    fn new(code: u8, message: String) -> Self {
        Failure { code, message }
    }

    /// A client error, worded for this command line, with its code.
    fn client(endpoints: &Endpoints, error: &Error) -> Self {
        let code = match error {
            Error::Unavailable(_) => EXIT_UNREACHABLE,
            Error::Timeout(_) => EXIT_TIMED_OUT,
            Error::LockLost(_) => EXIT_LOST,
            _ => EXIT_ERROR,
        };
        Failure::new(code, endpoints.explain(error))
    }

    /// Prints the message and answers the code.
    fn report(self) -> u8 {
        eprintln!("error: {}", self.message);
        self.code
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Failure::new(EXIT_ERROR, message)
    }
}

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
    #[arg(long, conflicts_with = "limit")]
    shared: bool,
    /// A semaphore: up to N holders at once (as `consul lock -n N`). Every
    /// user of the name must give the same N.
    #[arg(short = 'n', long = "limit", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    limit: u32,
    /// The owner token to hold the lock under (default: a fresh one per
    /// run). Reusing a token re-enters a hold it already has.
    #[arg(long, value_name = "TOKEN")]
    owner: Option<String>,
    /// Lock-delay (as `consul lock`'s session lock-delay): if this hold is
    /// lost — this process paused or cut off past its TTL, or an operator's
    /// force-release — nobody else gets the lock for D, so CMD's writes in
    /// flight land first. Never after a clean release. Default: the
    /// server's (0 unless set); at most 60s.
    #[arg(long, value_name = "D", value_parser = parse_duration)]
    lock_delay: Option<Duration>,
    /// After SIGTERM, how long CMD may take to exit before SIGKILL.
    #[arg(long, value_name = "D", default_value = "5s", value_parser = parse_duration)]
    grace: Duration,
    /// Command to run while holding the lock, with its arguments (after
    /// `--`, or directly: everything after the name and raftlock's own
    /// flags goes to the command). A flag raftlock does not know, before
    /// the command, is refused (exit 125), never run: a command that
    /// starts with `-` goes after `--`. Without one: print the fence and
    /// hold until interrupted.
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What `lock` prints when it holds the lock without a command.
#[derive(Serialize)]
struct Held<'a> {
    name: &'a str,
    fence: u64,
    lease: LeaseId,
}

/// Acquires, runs or holds, and always revokes the lease at the end. The
/// exit code says how it ended (see the module doc); every failure is
/// reported here, with its code, so the answer is always `Ok`.
pub async fn run(args: LockArgs) -> Result<u8, String> {
    Ok(lock(args).await.unwrap_or_else(Failure::report))
}

async fn lock(args: LockArgs) -> Result<u8, Failure> {
    let mut interrupts = Interrupts::watch()?;
    let client = connect(&args.endpoints).await?;
    // SIGINT/SIGTERM are honoured at every point, this wait included.
    let granted = tokio::select! {
        r = client.grant_lease(args.ttl) => r,
        stop = interrupts.recv() => {
            // The grant may have been applied: the client revokes it in the
            // background (`Client::close` waits for that).
            let _ = tokio::time::timeout(REVOKE_WAIT, client.close()).await;
            return Ok(stop.exit_code());
        }
    };
    let lease = granted.map_err(|e| Failure::client(&args.endpoints, &e))?;
    let outcome = hold(&args, &client.with_lease(lease), lease, &mut interrupts).await;
    revoke(&client, lease).await;
    outcome
}

/// A client of `endpoints`, its failure classified like a call's (the
/// client connects lazily, so an unreachable cluster shows at the first
/// call rather than here).
async fn connect(endpoints: &Endpoints) -> Result<Client, Failure> {
    let options = endpoints
        .options()
        .map_err(|e| Failure::client(endpoints, &e))?;
    Client::connect_with(endpoints.endpoints.clone(), options)
        .await
        .map_err(|e| Failure::client(endpoints, &e))
}

/// Acquires on `lease` (through `on_lease`, which keeps it alive), then runs
/// CMD or holds until interrupted or lost.
async fn hold(
    args: &LockArgs,
    on_lease: &Client,
    lease: LeaseId,
    interrupts: &mut Interrupts,
) -> Result<u8, Failure> {
    let guard = tokio::select! {
        r = acquire(args, on_lease) => r?,
        stop = interrupts.recv() => return Ok(stop.exit_code()),
    };
    let fence = guard.fence();
    let lost = guard.lost();
    tokio::pin!(lost);
    // The grant may have arrived while this process was paused, after its
    // lease ran out: never start (or report holding) on a grant whose
    // lease the cluster has not confirmed recently enough.
    guard
        .ensure_valid()
        .map_err(|e| Failure::new(EXIT_LOST, lost_message(args, &e)))?;

    let code = if args.command.is_empty() {
        print_held(args, fence, lease)?;
        tokio::select! {
            e = &mut lost => return Err(Failure::new(EXIT_LOST, lost_message(args, &e))),
            _ = interrupts.recv() => EXIT_SUCCESS,
        }
    } else {
        let env = [
            ("RAFTLOCK_LOCK", args.name.clone()),
            ("RAFTLOCK_FENCE", fence.to_string()),
            ("RAFTLOCK_LEASE", lease.to_string()),
        ];
        let mut child = ChildProcess::spawn(&args.command, &env).map_err(|e| {
            let code = match e.kind {
                std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                // Not executable, not an executable format, ...: the
                // shell's "found but cannot be run".
                _ => EXIT_CANNOT_RUN,
            };
            Failure::new(code, e.message)
        })?;
        tokio::select! {
            status = child.wait() => exit_code(status?),
            stop = interrupts.recv() => {
                exit_code(child.stop(stop.name(), args.grace).await?)
            }
            e = &mut lost => {
                eprintln!(
                    "error: {}; stopping the command (SIGTERM, SIGKILL after {})",
                    lost_message(args, &e),
                    format_duration(args.grace)
                );
                // A command that exits 0 after losing its lock still did not
                // finish under the lock: the code says "lost" either way.
                child.stop("TERM", args.grace).await?;
                EXIT_LOST
            }
        }
    };
    // Releasing a lost lock fails; the lease revoke that follows is what
    // matters either way. Both are bounded, so a cluster without a quorum
    // costs the caller at most 5 s after the command ended (the lease then
    // ends the hold when it expires).
    let _ = tokio::time::timeout(RELEASE_WAIT, guard.release()).await;
    Ok(code)
}

/// Waits per `--timeout` (`0s`: try once) for the lock.
async fn acquire(args: &LockArgs, on_lease: &Client) -> Result<LockGuard, Failure> {
    let owner = args.owner.clone().unwrap_or_else(|| {
        format!(
            "raftlock-cli-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        )
    });
    let builder = if args.limit > 1 {
        on_lease.semaphore(args.name.clone(), args.limit).builder(1)
    } else {
        on_lease.lock(args.name.clone())
    };
    let mut builder = builder.owner(owner);
    if let Some(delay) = args.lock_delay {
        builder = builder.lock_delay(delay);
    }
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
        .ok_or_else(|| Failure::new(EXIT_BUSY, busy(args)))
}

fn lost_message(args: &LockArgs, error: &Error) -> String {
    match error {
        // The guard names the lock first; say it once.
        Error::LockLost(why) => {
            let why = why
                .strip_prefix(&format!("{:?}: ", args.name))
                .unwrap_or(why);
            format!("lost lock {}: {why}", args.name)
        }
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

fn acquire_error(args: &LockArgs, error: &Error) -> Failure {
    match (error, args.timeout) {
        (Error::Timeout(_), Some(timeout)) => Failure::new(
            EXIT_TIMED_OUT,
            format!(
                "lock {0} is still held by someone else after {1}; raise --timeout, \
                 or see who holds it with `raftlock locks describe {0}`",
                args.name,
                format_duration(timeout)
            ),
        ),
        _ => Failure::client(&args.endpoints, error),
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
/// How long the release at the end may take.
const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// How long the lease revoke at the end may take.
const REVOKE_WAIT: Duration = Duration::from_secs(3);

pub(super) async fn revoke(client: &Client, lease: LeaseId) {
    match tokio::time::timeout(REVOKE_WAIT, client.revoke(lease)).await {
        Ok(Ok(_)) | Ok(Err(Error::LeaseExpired(_))) => {}
        Ok(Err(e)) => eprintln!(
            "warning: could not revoke lease {lease} ({e}); its locks end when it expires"
        ),
        Err(_) => {
            eprintln!("warning: revoking lease {lease} timed out; its locks end when it expires")
        }
    }
}
