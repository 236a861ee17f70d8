//! The `raftlock-chaos` command line: a run (the default) or, internally,
//! one client process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use raftlock::duration::parse_duration_or_seconds;

use crate::run::{run, RunConfig};
use crate::workload::{self, ClientConfig};

/// Fault-injection suite for raftlock: runs a real cluster under a seeded
/// nemesis and checks that locks and fencing stayed safe.
#[derive(Debug, Parser)]
#[command(name = "raftlock-chaos", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// One client process (started by the harness; prints JSON events).
    #[command(hide = true)]
    Client(ClientArgs),
    /// Check a finished run again from its output dir (history.jsonl and
    /// registers.json); seed, node count and proxy counters show as 0.
    Check {
        /// The run's --out dir.
        dir: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The node binary: a `raftlock` build (e.g. target/release/raftlock).
    /// Default: this binary, which runs the same node code.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// How long to run: e.g. 90s, 10m, 1h.
    #[arg(long, default_value = "2m", value_parser = parse_duration_or_seconds)]
    duration: Duration,
    /// Cluster size: 3 or 5.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(3..=5))]
    nodes: u64,
    /// Seed of the fault schedule and the workload. Default: from the clock.
    #[arg(long)]
    seed: Option<u64>,
    /// Client processes.
    #[arg(long, default_value_t = 4)]
    clients: u32,
    /// Clients' lease TTL in ms.
    #[arg(long, default_value_t = 2000)]
    ttl_ms: u64,
    /// Where node data, logs, the history, summary.txt and timeline.png go.
    #[arg(long, default_value = "chaos-out")]
    out: PathBuf,
}

#[derive(Debug, clap::Args)]
struct ClientArgs {
    #[arg(long)]
    id: u32,
    #[arg(long, value_delimiter = ',')]
    endpoints: Vec<String>,
    #[arg(long)]
    register: SocketAddr,
    #[arg(long)]
    seed: u64,
    #[arg(long)]
    duration_ms: u64,
    #[arg(long)]
    ttl_ms: u64,
}

/// Runs the command line; exit code 0 only when no violation was found.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Some(Command::Check { dir }) => match crate::run::recheck(&dir) {
            Ok(outcome) => {
                print!("{}", outcome.summary);
                if outcome.violations == 0 {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(3)
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        },
        Some(Command::Client(a)) => {
            let cfg = ClientConfig {
                id: a.id,
                endpoints: a.endpoints,
                register: a.register,
                seed: a.seed,
                duration: Duration::from_millis(a.duration_ms),
                ttl: Duration::from_millis(a.ttl_ms),
            };
            match runtime.block_on(workload::run(cfg)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        None => {
            let exe = match std::env::current_exe() {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: cannot find this binary: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let a = cli.run;
            let seed = a.seed.unwrap_or_else(|| crate::clock::now_ns() % 1_000_000);
            let cfg = RunConfig {
                binary: a.binary.unwrap_or_else(|| exe.clone()),
                exe,
                duration: a.duration,
                nodes: a.nodes,
                clients: a.clients,
                seed,
                ttl: Duration::from_millis(a.ttl_ms),
                out: a.out,
            };
            match runtime.block_on(run(&cfg)) {
                Ok(outcome) => {
                    print!("{}", outcome.summary);
                    if outcome.violations == 0 {
                        ExitCode::SUCCESS
                    } else {
                        eprintln!(
                            "replay with: raftlock-chaos --seed {seed} --nodes {} --duration {}s",
                            cfg.nodes,
                            cfg.duration.as_secs()
                        );
                        ExitCode::from(3)
                    }
                }
                Err(e) => {
                    eprintln!("error: {e} (seed {seed})");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
