//! `raftlock-bench`: raftlock against etcd 3.4 on this machine.
//!
//! ```text
//! raftlock-bench --smoke          # every workload, tiny counts, < 2 minutes
//! raftlock-bench --full           # the counts the targets are stated for
//! raftlock-bench hold ...         # (internal) a lock holder for W5 to kill
//! raftlock-bench pairs ...        # W1–W3's clients on a running cluster (bench/python_pairs.py)
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use raftlock_bench::cluster::System;
use raftlock_bench::holder::{hold, HoldArgs};
use raftlock_bench::pairs_client::{pairs, PairsArgs};
use raftlock_bench::plan::{Mode, Plan, WorkloadId};
use raftlock_bench::report::markdown;
use raftlock_bench::run::{run, Setup};

/// Benchmark raftlock against etcd 3.4, side by side on this machine.
#[derive(Debug, Parser)]
#[command(name = "raftlock-bench", about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    bench: BenchArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Hold a lock and keep its lease alive until killed (used by W5).
    Hold(HoldArgs),
    /// Lock+unlock pairs (W1–W3's clients) against a running raftlock
    /// cluster; prints one JSON line (used by bench/python_pairs.py).
    Pairs(PairsArgs),
}

#[derive(Debug, Args)]
#[group(id = "mode", required = false, multiple = false)]
struct ModeArgs {
    /// Every workload with tiny counts (< 2 minutes); what CI runs.
    #[arg(long)]
    smoke: bool,
    /// The full benchmark (about 20 minutes).
    #[arg(long)]
    full: bool,
}

#[derive(Debug, Args)]
struct BenchArgs {
    #[command(flatten)]
    mode: ModeArgs,
    /// Only these workloads (comma-separated, e.g. W1,W3).
    #[arg(long, value_delimiter = ',')]
    only: Vec<WorkloadId>,
    /// Only these systems (etcd, raftlock), e.g. to profile one alone.
    #[arg(long, value_delimiter = ',')]
    systems: Vec<System>,
    /// A/B rounds of W1–W4 (and of W5/W6/W8, at most 5) instead of the mode's.
    #[arg(long)]
    rounds: Option<usize>,
    /// W8's connected clients instead of the mode's (2 000 in --full).
    #[arg(long)]
    w8_clients: Option<usize>,
    /// The raftlock binary; default: `raftlock` next to this binary.
    #[arg(long, env = "RAFTLOCK_BIN")]
    raftlock_bin: Option<PathBuf>,
    /// Data dirs and node logs (emptied first).
    #[arg(long, default_value = "target/raftlock-bench/work")]
    work_dir: PathBuf,
    /// Where results.json, results.md and chart.png go; default
    /// target/raftlock-bench/<mode>.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Extra flag for every `raftlock serve` (repeatable), e.g.
    /// `--raftlock-arg=--election-timeout-ms=250`. For experiments: the
    /// targets are stated for the defaults.
    #[arg(long, allow_hyphen_values = true)]
    raftlock_arg: Vec<String>,
    /// First port: etcd members use BASE+11..BASE+32, raftlock nodes
    /// BASE+111..BASE+132.
    #[arg(long, default_value_t = 32000)]
    base_port: u16,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(runtime) = raftlock_testkit::runtime::multi_thread() else {
        return ExitCode::FAILURE;
    };
    let result = match cli.command {
        Some(Command::Hold(args)) => runtime.block_on(hold(args)).map(drop),
        Some(Command::Pairs(args)) => runtime.block_on(pairs(args)),
        None => match setup(cli.bench) {
            Ok(setup) => {
                let out = setup.out_dir.clone();
                runtime.block_on(async {
                    tokio::select! {
                        r = run(setup) => r.map(|report| {
                            println!("{}", markdown::render(&report));
                            eprintln!("results in {}", out.display());
                        }),
                        _ = tokio::signal::ctrl_c() => {
                            eprintln!("interrupted; stopping the clusters");
                            Ok(())
                        }
                    }
                })
            }
            Err(message) => {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn setup(args: BenchArgs) -> Result<Setup, String> {
    let mode = match (args.mode.smoke, args.mode.full) {
        (true, false) => Mode::Smoke,
        (false, true) => Mode::Full,
        _ => return Err("choose --smoke or --full (see --help)".into()),
    };
    let mut plan = Plan::new(mode);
    if !args.only.is_empty() {
        plan.workloads = args.only;
        plan.workloads.sort();
        plan.workloads.dedup();
    }
    if !args.systems.is_empty() {
        plan.systems = args.systems;
        plan.systems.sort();
        plan.systems.dedup();
    }
    if let Some(r) = args.rounds {
        plan.rounds = r.max(1);
        plan.fault_rounds = r.clamp(1, 5);
        plan.w8_rounds = r.clamp(1, 5);
    }
    if let Some(n) = args.w8_clients {
        plan.w8_clients = n.max(1);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let raftlock_bin = match args.raftlock_bin {
        Some(b) => b,
        None => exe.with_file_name("raftlock"),
    };
    let out_dir = args.out.unwrap_or_else(|| {
        PathBuf::from("target/raftlock-bench").join(match mode {
            Mode::Smoke => "smoke",
            Mode::Full => "full",
        })
    });
    Ok(Setup {
        plan,
        raftlock_bin,
        exe,
        work_dir: args.work_dir,
        out_dir,
        base_port: args.base_port,
        raftlock_args: args.raftlock_arg,
        command: std::env::args().collect::<Vec<_>>().join(" "),
    })
}
