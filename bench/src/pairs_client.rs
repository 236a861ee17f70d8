//! `raftlock-bench pairs`: the lock+unlock clients of W1–W3 against a
//! raftlock cluster started by someone else, so another driver (the Python
//! one, `bench/python_pairs.py`) can run the Rust client's column on its
//! own cluster, in its own rounds. Prints one JSON object: pairs/s,
//! acquire p50/p99/max, errors, and this process's CPU per pair over the
//! measured window.

use std::io::Write;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::System;
use crate::plan::WorkloadId;
use crate::workload::pairs::{Load, Spec};
use crate::Error;

/// What to run, and where.
#[derive(Debug, Clone, clap::Args)]
pub struct PairsArgs {
    /// Client endpoints, comma-separated host:port.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// W1, W2 or W3.
    #[arg(long, default_value = "W2")]
    pub workload: WorkloadId,
    /// Clients (W2, W3).
    #[arg(long, default_value_t = 32)]
    pub clients: usize,
    /// Lock names start with this (distinct per run, so runs never meet).
    #[arg(long, default_value = "rust")]
    pub tag: String,
    /// Seconds of load before the measured window.
    #[arg(long, default_value_t = 1.0)]
    pub warmup: f64,
    /// Seconds measured.
    #[arg(long, default_value_t = 8.0)]
    pub duration: f64,
}

/// One run's figures, as `bench/python_pairs.py` reads them.
#[derive(Debug, Serialize)]
struct PairsReport {
    pairs_per_s: f64,
    acquire_p50_ms: f64,
    acquire_p99_ms: f64,
    acquire_max_ms: f64,
    errors: u64,
    /// This process's CPU time (user + system) per pair in the window.
    cpu_ms_per_pair: Option<f64>,
}

/// Runs the clients once and prints the report.
pub async fn pairs(args: PairsArgs) -> Result<(), Error> {
    if !matches!(
        args.workload,
        WorkloadId::W1 | WorkloadId::W2 | WorkloadId::W3
    ) {
        return Err(Error::Workload {
            workload: "pairs",
            message: format!(
                "{} is not a lock+unlock workload (W1, W2, W3)",
                args.workload
            ),
        });
    }
    let seconds = |s: f64, what: &str| {
        Duration::try_from_secs_f64(s).map_err(|e| Error::Workload {
            workload: "pairs",
            message: format!("--{what} {s}: {e}"),
        })
    };
    let (warmup, duration) = (
        seconds(args.warmup, "warmup")?,
        seconds(args.duration, "duration")?,
    );
    let spec = Spec::of(args.workload, args.clients);
    let tag = format!("{}/{}", args.tag, args.workload);
    let load = Load::connect(
        System::Raftlock,
        &args.endpoints,
        &spec,
        &tag,
        warmup,
        duration,
    )
    .await?;
    // The window's CPU: read after the warm-up, and when the clients end.
    let window_cpu = tokio::spawn(async move {
        tokio::time::sleep(warmup).await;
        let from = process_cpu();
        tokio::time::sleep(duration).await;
        from.zip(process_cpu()).map(|(a, b)| b - a)
    });
    let out = load.run().await?;
    let cpu = window_cpu.await.ok().flatten();
    let latency = out.samples.summary();
    let report = PairsReport {
        pairs_per_s: out.pairs as f64 / duration.as_secs_f64(),
        acquire_p50_ms: latency.p50_ms,
        acquire_p99_ms: latency.p99_ms,
        acquire_max_ms: latency.max_ms,
        errors: out.errors,
        cpu_ms_per_pair: cpu
            .filter(|_| out.pairs > 0)
            .map(|cpu| cpu.as_secs_f64() * 1000.0 / out.pairs as f64),
    };
    let line = serde_json::to_string(&report).map_err(|e| Error::Report(e.to_string()))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").map_err(|e| Error::io("cannot write to stdout", e))
}

/// This process's CPU time so far (user + system), from `/proc/self/stat`
/// in the kernel's fixed USER_HZ of 100 ticks a second.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) and its ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    // utime and stime are the 14th and 15th fields; the 3rd is fields[0].
    Some(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_is_readable() {
        assert!(process_cpu().is_some());
    }
}
