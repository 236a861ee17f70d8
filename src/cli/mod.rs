//! The `raftlock` command line. Every command is library code so tests can
//! run it; `main.rs` only calls [`main`].

mod cluster;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// raftlock: replicated locks, leases and elections.
#[derive(Debug, Parser)]
#[command(name = "raftlock", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a node. Without flags: a ready one-node cluster in ./raftlock-data.
    Serve(serve::ServeArgs),
    /// Inspect and change cluster membership.
    Cluster(cluster::ClusterArgs),
}

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Output {
    #[default]
    Table,
    Json,
}

/// Where to reach the cluster.
#[derive(Debug, Clone, clap::Args)]
pub struct Endpoints {
    /// Client endpoints, comma-separated host:port.
    #[arg(
        long,
        env = "RAFTLOCK_ENDPOINTS",
        value_delimiter = ',',
        default_value = "127.0.0.1:7379"
    )]
    pub endpoints: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAFTLOCK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,openraft=warn,sled=warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
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
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Cluster(args) => cluster::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
