//! A whole benchmark run: install etcd if need be, start both clusters in
//! fresh data dirs, run the workloads, write the results, stop the
//! clusters.

use std::path::PathBuf;
use std::time::Instant;

use crate::cluster::{etcd, raftlock};
use crate::plan::{Plan, WorkloadId};
use crate::report::{Environment, Report, WorkloadReport};
use crate::workload::{run_workload, Bench};
use crate::Error;

/// Where a run puts things and what it runs.
#[derive(Debug, Clone)]
pub struct Setup {
    pub plan: Plan,
    /// The `raftlock` release binary.
    pub raftlock_bin: PathBuf,
    /// This benchmark's binary (W5 runs it as `hold`).
    pub exe: PathBuf,
    /// Data dirs and node logs; emptied first.
    pub work_dir: PathBuf,
    /// Where results.json, results.md and chart.png go.
    pub out_dir: PathBuf,
    /// etcd members use ports from here, raftlock nodes from here + 100.
    pub base_port: u16,
    /// Extra `raftlock serve` flags (experiments only; the targets are
    /// for the defaults).
    pub raftlock_args: Vec<String>,
    /// The command line, for the report.
    pub command: String,
}

/// Runs the benchmark and writes its results; answers the report.
pub async fn run(setup: Setup) -> Result<Report, Error> {
    let began = Instant::now();
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let open_files = raise_open_file_limit();
    let needed = 3 * setup.plan.w8_clients as u64 + 1_000;
    if setup.plan.workloads.contains(&WorkloadId::W8) && open_files.is_some_and(|n| n < needed) {
        eprintln!(
            "warning: the open-file limit is {} (ulimit -n); W8's clients need about {needed}",
            open_files.unwrap_or(0)
        );
    }
    let (etcd_bin, etcd_version) = etcd::ensure_installed()?;
    if setup.work_dir.exists() {
        std::fs::remove_dir_all(&setup.work_dir)
            .map_err(|e| Error::io(format!("cannot empty {}", setup.work_dir.display()), e))?;
    }
    eprintln!("starting a 3-member etcd cluster ({etcd_version}) ...");
    let etcd = etcd::start(&etcd_bin, &setup.work_dir.join("etcd"), setup.base_port).await?;
    eprintln!(
        "starting a 3-node raftlock cluster ({}) ...",
        setup.raftlock_bin.display()
    );
    let raftlock = raftlock::start(
        &setup.raftlock_bin,
        &setup.work_dir.join("raftlock"),
        setup.base_port + 100,
        &setup.raftlock_args,
    )
    .await?;
    let mut bench = Bench {
        etcd,
        raftlock,
        plan: setup.plan.clone(),
        exe: setup.exe.clone(),
    };
    let mut workloads = Vec::new();
    for id in setup.plan.workloads.clone() {
        eprintln!("{id}: {}", id.title());
        let runs = run_workload(id, &mut bench).await?;
        workloads.push(WorkloadReport::new(id, &setup.plan, runs));
    }
    bench.etcd.stop();
    bench.raftlock.stop();
    let report = Report {
        environment: Environment {
            command: setup.command,
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            etcd_version,
            raftlock_bin: setup.raftlock_bin.display().to_string(),
            raftlock_args: setup.raftlock_args.clone(),
            git: git_describe(),
            started_unix,
            open_files_limit: open_files,
        },
        plan: setup.plan,
        total_s: began.elapsed().as_secs_f64(),
        workloads,
    };
    report.write(&setup.out_dir)?;
    Ok(report)
}

/// Raises this process's open-file limit to its hard limit (the node
/// processes it starts inherit it): W8's clients hold thousands of
/// connections, from this process and on the nodes. Answers the limit now
/// in force, if it can be read.
fn raise_open_file_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write only `limit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

fn git_describe() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
