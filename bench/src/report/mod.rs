//! The results of a run: per workload the medians of both systems, their
//! ratio, and the targets; written as JSON ([`Report`] serialized), a
//! markdown table ([`markdown`]) and a PNG chart ([`chart`]).

pub mod chart;
pub mod markdown;
mod targets;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::cluster::System;
use crate::plan::{Plan, WorkloadId};
use crate::stats::{median, CURVE_QUANTILES};
use crate::workload::{metrics, Better, Run};
use crate::Error;

pub use targets::TargetResult;

/// Where and with what a run happened.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    /// The command line, as run.
    pub command: String,
    /// CPUs the machine has.
    pub cpus: usize,
    /// `etcd --version`'s first line.
    pub etcd_version: String,
    /// The raftlock binary the cluster ran.
    pub raftlock_bin: String,
    /// Flags added to `raftlock serve` (none: defaults).
    pub raftlock_args: Vec<String>,
    /// `git describe` of the tree, if there is one.
    pub git: Option<String>,
    /// Seconds since the epoch when the run started.
    pub started_unix: u64,
    /// The open-file limit the benchmark and its nodes ran with (raised
    /// to the hard limit), if it could be read.
    pub open_files_limit: Option<u64>,
}

/// Everything a run produced.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub environment: Environment,
    pub plan: Plan,
    /// Wall time of the whole run, cluster starts included.
    pub total_s: f64,
    pub workloads: Vec<WorkloadReport>,
}

/// One workload's results.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    pub id: WorkloadId,
    pub title: String,
    /// Median per metric and system, and raftlock / etcd.
    pub metrics: Vec<MetricRow>,
    pub targets: Vec<TargetResult>,
    /// Median latency at each of `curve_quantiles`, per system.
    pub curve_quantiles: Vec<f64>,
    pub curves_ms: BTreeMap<System, Vec<f64>>,
    /// Every round of both systems.
    pub runs: Vec<Run>,
}

/// One metric's medians.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub key: String,
    pub label: String,
    pub better: Better,
    pub etcd: Option<f64>,
    pub raftlock: Option<f64>,
    /// raftlock / etcd.
    pub ratio: Option<f64>,
}

impl WorkloadReport {
    /// Summarizes the rounds of workload `id`.
    pub fn new(id: WorkloadId, plan: &Plan, runs: Vec<Run>) -> WorkloadReport {
        let med = |system: System, key: &str| {
            median(
                runs.iter()
                    .filter(|r| r.system == system)
                    .filter_map(|r| r.values.get(key).copied()),
            )
        };
        let rows: Vec<MetricRow> = metrics(id, plan)
            .into_iter()
            .map(|m| {
                let etcd = med(System::Etcd, &m.key);
                let raftlock = med(System::Raftlock, &m.key);
                let ratio = match (raftlock, etcd) {
                    (Some(r), Some(e)) if e != 0.0 => Some(r / e),
                    _ => None,
                };
                MetricRow {
                    key: m.key,
                    label: m.label,
                    better: m.better,
                    etcd,
                    raftlock,
                    ratio,
                }
            })
            .collect();
        let mut curves_ms = BTreeMap::new();
        for system in System::ALL {
            let curves: Vec<&Vec<f64>> = runs
                .iter()
                .filter(|r| r.system == system)
                .filter_map(|r| r.latency.as_ref().map(|l| &l.curve_ms))
                .collect();
            if curves.is_empty() {
                continue;
            }
            let curve = (0..CURVE_QUANTILES.len())
                .map(|q| median(curves.iter().filter_map(|c| c.get(q).copied())).unwrap_or(0.0))
                .collect();
            curves_ms.insert(system, curve);
        }
        let targets = targets::judge(id, plan, &rows, &runs);
        WorkloadReport {
            id,
            title: id.title().to_string(),
            metrics: rows,
            targets,
            curve_quantiles: CURVE_QUANTILES.to_vec(),
            curves_ms,
            runs,
        }
    }

    /// The row of metric `key`.
    pub fn row(&self, key: &str) -> Option<&MetricRow> {
        self.metrics.iter().find(|m| m.key == key)
    }
}

impl Report {
    /// Writes `results.json`, `results.md` and `chart.png` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), Error> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Report(format!("cannot encode the results: {e}")))?;
        write_file(&dir.join("results.json"), json.as_bytes())?;
        write_file(&dir.join("results.md"), markdown::render(self).as_bytes())?;
        chart::draw(self, &dir.join("chart.png"))
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes)
        .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))
}
