//! The `raftlock` command line. Every command is library code so tests can
//! run it; `main.rs` only calls [`main`].
//!
//! One file per command group: `serve` (and `serve_options`, its
//! settings for a node another program starts), `certs`, `auth_cmd`, `cluster`
//! (with `cluster_status`, its health verdict, and `learner_wait`),
//! `endpoint_cmd` (`endpoint health`), `lease_cmd`,
//! `locks_cmd`, `lock_cmd` (run a command under a lock), `elect_cmd`.
//! Shared pieces: [`raftlock::duration`] (`500ms`, `10s`, `2m`), `failure` (how errors
//! are worded), `signals`, `child_process` (the supervised command) and
//! `lock_view` (how a lock is printed). Holding a lock or a leadership goes
//! through the client's guards (`LockGuard`, `Leadership`) and their
//! `lost()`.

/// `println!` for command output: a reader that went away (`raftlock ... |
/// head`) is not an error, so a closed pipe is ignored instead of
/// panicking; other write failures are reported once on stderr.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_line(format_args!($($arg)*))
    };
}

mod admin_args;
mod auth_cmd;
pub mod certs;
mod certs_cmd;
mod child_process;
mod cluster;
mod cluster_status;
mod docs_cmd;
mod elect_cmd;
mod endpoint_cmd;
mod exit_codes;
mod failure;
mod learner_wait;
mod lease_cmd;
mod lock_cmd;
mod lock_view;
mod locks_cmd;
mod open_file_limit;
mod serve;
mod serve_options;
mod signals;
mod snapshot_cmd;

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use serde::Serialize;

use std::path::PathBuf;

use raftlock_client::{Client, ClientOptions, ClientTls};

pub use raftlock::duration::{format_duration, parse_duration};
pub use serve_options::{serve_config, serve_options, ServeOption};

/// Exit code: the command did what was asked.
const EXIT_SUCCESS: u8 = 0;
/// Exit code: the command failed (its message is on stderr).
const EXIT_FAILURE: u8 = 1;

/// How long a CLI call keeps retrying an unreachable cluster.
const CONNECT_RETRY: Duration = Duration::from_secs(5);

/// raftlock: replicated locks, leases and elections.
#[derive(Debug, Parser)]
#[command(name = "raftlock", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// How log lines are written to stderr: text, or json (one object a
    /// line, fields flattened, for log shippers).
    #[arg(
        long,
        global = true,
        env = "RAFTLOCK_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum LogFormat {
    /// Human-readable lines (colored on a terminal).
    #[default]
    Text,
    /// One JSON object a line: timestamp, level, target, message and fields.
    Json,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node. Without flags: a ready one-node cluster in ./raftlock-data.
    Serve(Box<serve::ServeArgs>),
    /// Inspect and change cluster membership.
    Cluster(cluster::ClusterArgs),
    /// Check endpoints' health (like `etcdctl endpoint health`).
    Endpoint(endpoint_cmd::EndpointArgs),
    /// Grant, renew, revoke and inspect leases.
    Lease(lease_cmd::LeaseArgs),
    /// Inspect locks, check fencing tokens, force-release (operators).
    Locks(locks_cmd::LocksArgs),
    /// Hold a lock while a command runs (or until interrupted).
    #[command(after_help = lock_cmd::EXIT_CODES_HELP)]
    Lock(lock_cmd::LockArgs),
    /// Campaign in an election and hold leadership, or observe one.
    Elect(elect_cmd::ElectArgs),
    /// Back up a cluster's lock state to a file, restore a new cluster
    /// from one, or inspect one.
    Snapshot(snapshot_cmd::SnapshotArgs),
    /// Create a cluster CA and node and client certificates for TLS.
    Certs(certs_cmd::CertsArgs),
    /// Create client tokens and check auth files.
    Auth(auth_cmd::AuthArgs),
    /// Print shell completions (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): raftlock(1), or a command's (`raftlock man
    /// lock`); `--dir DIR` writes every page.
    Man(docs_cmd::ManArgs),
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Output {
    #[default]
    Table,
    Json,
}

/// Where to reach the cluster. `global` so the flags may also follow a
/// subcommand (`raftlock lease list --endpoints ...`).
#[derive(Debug, Clone, clap::Args)]
pub struct Endpoints {
    /// Client endpoints, comma-separated host:port.
    #[arg(
        long,
        global = true,
        env = "RAFTLOCK_ENDPOINTS",
        value_delimiter = ',',
        default_value = "127.0.0.1:7379"
    )]
    pub endpoints: Vec<String>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// CA certificate (PEM) the nodes' certificates must chain to; turns
    /// TLS on (so do https:// endpoints).
    #[arg(long, global = true, env = "RAFTLOCK_CACERT")]
    pub cacert: Option<PathBuf>,
    /// Client certificate (PEM), for nodes that require one.
    #[arg(long, global = true, env = "RAFTLOCK_CERT", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, global = true, env = "RAFTLOCK_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Bearer token for clusters that authenticate clients (`raftlock auth
    /// create-token`). Prefer the environment variable: a flag shows in
    /// the process list.
    #[arg(long, global = true, env = "RAFTLOCK_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// How long each endpoint may take to connect and answer before the
    /// next one is tried (`500ms`, `2s`; a bare number is seconds): a
    /// paused or silent node costs a call about this long.
    #[arg(
        long,
        global = true,
        env = "RAFTLOCK_DIAL_TIMEOUT",
        value_parser = raftlock::duration::parse_duration_or_seconds,
        default_value = "1s"
    )]
    pub dial_timeout: Duration,
}

impl Endpoints {
    /// A client over these endpoints; calls retry for a few seconds.
    pub async fn connect(&self) -> Result<Client, String> {
        self.connect_with_token(None).await
    }

    /// Like [`connect`](Self::connect), sending `token` instead of
    /// `--token` when there is one (an operator's admin credential).
    pub async fn connect_with_token(&self, token: Option<String>) -> Result<Client, String> {
        let mut options = self
            .options()
            .map_err(|e| failure::explain(&e, &self.endpoints))?;
        if token.is_some() {
            options.token = token;
        }
        Client::connect_with(self.endpoints.clone(), options)
            .await
            .map_err(|e| failure::explain(&e, &self.endpoints))
    }

    /// The client settings these flags describe.
    fn options(&self) -> Result<ClientOptions, raftlock_client::Error> {
        let tls = if self.cacert.is_some() || self.cert.is_some() || self.key.is_some() {
            Some(ClientTls::from_files(
                self.cacert.as_deref(),
                self.cert.as_deref(),
                self.key.as_deref(),
            )?)
        } else {
            None
        };
        Ok(ClientOptions {
            retry_for: CONNECT_RETRY,
            dial_timeout: self.dial_timeout,
            tls,
            token: self.token.clone(),
            ..ClientOptions::default()
        })
    }

    /// Words a client error for this command line (see `failure`).
    pub fn explain(&self, error: &raftlock_client::Error) -> String {
        failure::explain(error, &self.endpoints)
    }
}

/// Writes one line of output (see `out!`).
fn write_line(line: std::fmt::Arguments) {
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let mut stdout = std::io::stdout().lock();
    let result = stdout
        .write_fmt(line)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(e) = result {
        if e.kind() != std::io::ErrorKind::BrokenPipe && !REPORTED.swap(true, Ordering::Relaxed) {
            let _ = writeln!(std::io::stderr(), "warning: cannot write output: {e}");
        }
    }
}

/// Prints `value` as pretty JSON on stdout.
fn print_json(value: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| format!("cannot encode the answer as JSON: {e}"))?;
    out!("{text}");
    Ok(())
}

/// Prints `value` as one line of JSON (for streams of events).
fn print_json_line(value: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string(value)
        .map_err(|e| format!("cannot encode the answer as JSON: {e}"))?;
    out!("{text}");
    Ok(())
}

/// Runs this process's command line; returns its exit code.
pub fn main() -> ExitCode {
    ExitCode::from(run(std::env::args_os()))
}

/// Runs the command line `args` (the program's name first, as in
/// `std::env::args_os`) and answers the process exit code. The Python
/// package's `raftlock` command calls this with its `sys.argv`, so the same
/// code runs whichever way the command was installed. Anything written to
/// stdout is flushed before it returns: a host process other than a Rust
/// `main` does not flush Rust's stdout when it exits.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let code = run_args(&args);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    code
}

/// [`run`] on the collected arguments.
fn run_args(args: &[OsString]) -> u8 {
    // The matches as well as the parsed flags: `serve --print-config` tells
    // a flag from a RAFTLOCK_* variable by them.
    let matches = match <Cli as clap::CommandFactory>::command().try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return parse_failure(&e, args),
    };
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e, args),
    };
    init_logs(
        cli.log_format,
        match cli.command {
            // openraft logs every unreachable peer at ERROR many times a
            // second; raftlock logs leadership changes itself. Raft
            // internals: RAFTLOCK_LOG=info,openraft=info.
            Command::Serve(_) => "info,openraft=off,sled=warn",
            // Client commands speak through their output; logs only on
            // request (RAFTLOCK_LOG=debug).
            _ => "warn,openraft=off,sled=warn",
        },
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return EXIT_FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(*args, matches.subcommand_matches("serve")).await,
            Command::Cluster(args) => cluster::run(args).await,
            Command::Endpoint(args) => endpoint_cmd::run(args).await,
            Command::Lease(args) => lease_cmd::run(args).await,
            Command::Locks(args) => locks_cmd::run(args).await,
            Command::Lock(args) => lock_cmd::run(args).await,
            Command::Elect(args) => elect_cmd::run(args).await,
            Command::Snapshot(args) => snapshot_cmd::run(args).await,
            Command::Certs(args) => certs_cmd::run(args),
            Command::Auth(args) => auth_cmd::run(args),
            Command::Completions { shell } => docs_cmd::completions(shell),
            Command::Man(args) => docs_cmd::man(args),
        }
    });
    // Do not wait for stray tasks (a dropped waiting call, a keep-alive).
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            EXIT_FAILURE
        }
    }
}

/// Sends log lines to stderr, filtered by `RAFTLOCK_LOG` or else by
/// `default_filter` (an `EnvFilter` directive such as `warn,openraft=off`).
/// `try_init`: a host process that runs a second command line, or set its
/// own subscriber, keeps the subscriber it has instead of panicking.
pub fn init_logs(format: LogFormat, default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAFTLOCK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => logs.json().flatten_event(true).try_init(),
    };
}

/// Prints what the argument parser said (a usage error, or `--help` /
/// `--version`) and answers its exit code: clap's 2 for a usage error,
/// except under `raftlock lock`, whose 2 could be CMD's own: there it is
/// [`lock_cmd::EXIT_ERROR`], like every other failure of raftlock's.
fn parse_failure(e: &clap::Error, args: &[OsString]) -> u8 {
    let _ = e.print();
    if e.use_stderr() && subcommand_given(args).as_deref() == Some("lock") {
        return lock_cmd::EXIT_ERROR;
    }
    u8::try_from(e.exit_code()).unwrap_or(2)
}

/// The subcommand on the command line `args`, read by the same parser with
/// its errors ignored (so it is found even when its flags are wrong).
fn subcommand_given(args: &[OsString]) -> Option<String> {
    <Cli as clap::CommandFactory>::command()
        .ignore_errors(true)
        .try_get_matches_from(args)
        .ok()?
        .subcommand_name()
        .map(str::to_owned)
}
