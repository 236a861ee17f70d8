//! The `raftlock-chaos` command line: a run (the default) or, internally,
//! one client process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use raftlock::duration::parse_duration;

use crate::powerloss::disk::DiskKind;
use crate::powerloss::stage::Stage;
use crate::powerloss::PowerLossConfig;
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
    /// The power-loss test: rounds of load, a power cut (kill -9 of all
    /// three nodes or two, then their unsynced writes dropped), restart
    /// and checks. Exit 0: no violation, 3: violations, 1: the run failed.
    Powerloss(PowerLossArgs),
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
    #[arg(long, default_value = "2m", value_parser = parse_duration)]
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
    /// TLS on both listeners, mutual TLS between peers, and client
    /// authentication: the workload runs with a token whose role covers
    /// only its own lock names.
    #[arg(long)]
    secure: bool,
}

#[derive(Debug, clap::Args)]
struct PowerLossArgs {
    /// The node binary. Default: this binary, which runs the same node code.
    #[arg(long)]
    binary: Option<PathBuf>,
    /// A flag for every node's `serve` (repeatable), after the harness's
    /// own (which it may not repeat: id, addresses, data dir, cluster,
    /// heartbeat, election timeout, snapshot-after).
    #[arg(long = "node-arg", allow_hyphen_values = true)]
    node_args: Vec<String>,
    /// Rounds of load, power cut, restart and checks.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Seed of the round plan and the load. Default: from the clock.
    #[arg(long)]
    seed: Option<u64>,
    /// Longest load before a cut (the cut comes between a third of this and
    /// all of it): e.g. 6s.
    #[arg(long, default_value = "6s", value_parser = parse_duration)]
    load: Duration,
    /// Where the nodes' data dirs live: `lazy` (LazyFs, FUSE; the test
    /// proper) or `plain` (kill -9 only, a control run).
    #[arg(long, value_enum, default_value_t = DiskKind::Lazy)]
    disk: DiskKind,
    /// Where the cuts land: `timed` (a seeded moment of the load), or
    /// inside a stage of the Raft log: `append`, `rotate`, `purge`,
    /// `upgrade`, `any` (the four in turn); see docs/powerloss.md.
    #[arg(long, value_enum, default_value_t = Stage::Timed)]
    stage: Stage,
    /// The nodes' heartbeat in ms (openraft also gives each AppendEntries
    /// this long). Longer than raftlock's 50 ms default, so that entries
    /// with 64 KiB values replicate in a debug build on a busy machine.
    #[arg(long, default_value_t = 200)]
    heartbeat_ms: u64,
    /// The nodes' election timeout in ms.
    #[arg(long, default_value_t = 1000)]
    election_timeout_ms: u64,
    /// Entries between the nodes' snapshots: small, so that every round
    /// builds snapshots (and purges the log) while the power may go, and a
    /// snapshot holding several 64 KiB values takes sled's blob path.
    #[arg(long, default_value_t = 300)]
    snapshot_after: u64,
    /// Each election task's first value in a round is 64 KiB; after it, one
    /// value in N is too (0: none). Many large values wedge a debug build's
    /// replication after restarts (docs/powerloss.md, "Large values").
    #[arg(long, default_value_t = 0)]
    large_every: u32,
    /// Where node logs, data and summary.txt go.
    #[arg(long, default_value = "powerloss-out")]
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
    let Some(runtime) = raftlock_testkit::runtime::multi_thread() else {
        return ExitCode::FAILURE;
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
        Some(Command::Powerloss(a)) => {
            let binary = match a.binary.map_or_else(std::env::current_exe, Ok) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("error: cannot find this binary: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let seed = a.seed.unwrap_or_else(|| crate::clock::now_ns() % 1_000_000);
            let cfg = PowerLossConfig {
                binary,
                node_args: a.node_args,
                rounds: a.rounds,
                seed,
                max_load: a.load,
                disk: a.disk,
                stage: a.stage,
                timing: (a.heartbeat_ms, a.election_timeout_ms),
                snapshot_after: a.snapshot_after,
                large_every: a.large_every,
                out: a.out,
            };
            powerloss_main(&runtime, &cfg)
        }
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
                secure: a.secure,
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

/// Runs the power-loss test and turns its outcome into the exit code.
fn powerloss_main(runtime: &tokio::runtime::Runtime, cfg: &PowerLossConfig) -> ExitCode {
    if let Err(why) = crate::powerloss::disk::check_available(cfg.disk) {
        eprintln!("error: cannot use {} disks here: {why}", cfg.disk.label());
        return ExitCode::FAILURE;
    }
    match runtime.block_on(crate::powerloss::run(cfg)) {
        Ok(outcome) => {
            print!("{}", outcome.summary);
            if outcome.violations == 0 {
                ExitCode::SUCCESS
            } else {
                let node_args: String = cfg
                    .node_args
                    .iter()
                    .map(|a| format!(" --node-arg={a}"))
                    .collect();
                eprintln!(
                    "replay with: raftlock-chaos powerloss --seed {} --rounds {} --load {}ms --disk {} \
                     --stage {} --heartbeat-ms {} --election-timeout-ms {} --snapshot-after {} --large-every {}{node_args}",
                    cfg.seed,
                    cfg.rounds,
                    cfg.max_load.as_millis(),
                    cfg.disk.label(),
                    cfg.stage.label(),
                    cfg.timing.0,
                    cfg.timing.1,
                    cfg.snapshot_after,
                    cfg.large_every
                );
                ExitCode::from(3)
            }
        }
        Err(e) => {
            eprintln!("error: {e} (seed {})", cfg.seed);
            ExitCode::FAILURE
        }
    }
}
