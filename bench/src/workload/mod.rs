//! W1–W8. Each workload runs one system once per call and answers a
//! [`Run`]; [`run_workload`] alternates the systems round by round
//! (etcd, raftlock, then raftlock, etcd, …) so drift in the machine's speed
//! falls on both alike.

mod connected;
mod crash_handoff;
mod keep_alive;
mod leader_kill;
pub mod pairs;
mod scale;
mod start_line;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::cluster::{Cluster, System};
use crate::plan::{Plan, WorkloadId};
use crate::stats::Latency;
use crate::Error;

pub use crash_handoff::key as handoff_key;

/// One system's measurements from one round of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    pub system: System,
    pub round: usize,
    /// Metric name → value; names are listed by [`metrics`].
    pub values: BTreeMap<String, f64>,
    /// Acquire (or keep-alive) latency, where the workload has one.
    pub latency: Option<Latency>,
    /// Calls that failed.
    pub errors: u64,
}

impl Run {
    fn new(system: System, round: usize) -> Run {
        Run {
            system,
            round,
            values: BTreeMap::new(),
            latency: None,
            errors: 0,
        }
    }

    fn set(&mut self, key: impl Into<String>, value: f64) {
        self.values.insert(key.into(), value);
    }

    /// Records a latency distribution and its p50/p99/max as metrics.
    fn set_latency(&mut self, prefix: &str, latency: Latency) {
        self.set(format!("{prefix}_p50_ms"), latency.p50_ms);
        self.set(format!("{prefix}_p99_ms"), latency.p99_ms);
        self.set(format!("{prefix}_max_ms"), latency.max_ms);
        self.latency = Some(latency);
    }
}

/// Whether more of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Higher,
    Lower,
}

/// A metric a workload reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    /// Key in [`Run::values`].
    pub key: String,
    /// What the table calls it.
    pub label: String,
    pub better: Better,
}

fn metric(key: impl Into<String>, label: impl Into<String>, better: Better) -> Metric {
    Metric {
        key: key.into(),
        label: label.into(),
        better,
    }
}

fn latency_metrics(prefix: &str, what: &str) -> Vec<Metric> {
    ["p50", "p99", "max"]
        .into_iter()
        .map(|q| {
            metric(
                format!("{prefix}_{q}_ms"),
                format!("{what} {q} (ms)"),
                Better::Lower,
            )
        })
        .collect()
}

/// The metrics workload `id` reports under `plan`, in table order.
pub fn metrics(id: WorkloadId, plan: &Plan) -> Vec<Metric> {
    let mut m = Vec::new();
    match id {
        WorkloadId::W1 | WorkloadId::W2 | WorkloadId::W3 => {
            m.push(metric("pairs_per_s", "lock+unlock pairs/s", Better::Higher));
            m.extend(latency_metrics("acquire", "acquire"));
            m.push(metric("errors", "errors", Better::Lower));
        }
        WorkloadId::W4 => {
            m.push(metric("keep_alives_per_s", "keep-alives/s", Better::Higher));
            m.extend(latency_metrics("keep_alive", "keep-alive"));
            m.push(metric("errors", "errors", Better::Lower));
        }
        WorkloadId::W5 => {
            for ttl in &plan.w5_ttls {
                m.push(metric(
                    crash_handoff::key(*ttl),
                    format!(
                        "kill → next waiter granted, TTL {} s (ms)",
                        ttl.as_secs_f64()
                    ),
                    Better::Lower,
                ));
            }
        }
        WorkloadId::W6 => {
            m.push(metric(
                "next_acquire_ms",
                "kill -9 leader → next acquire (ms)",
                Better::Lower,
            ));
        }
        WorkloadId::W7 => {
            m.push(metric(
                "setup_per_s",
                "setup: lease+lock pairs/s",
                Better::Higher,
            ));
            m.push(metric(
                "rss_max_mb",
                "RSS, largest node (MB)",
                Better::Lower,
            ));
            m.push(metric(
                "deadline_spread_s",
                "leases ending after the common deadline, by up to (s)",
                Better::Lower,
            ));
            m.push(metric(
                "expired_after_deadline_s",
                "all expired, after the (latest) deadline (s)",
                Better::Lower,
            ));
        }
        WorkloadId::W8 => {
            let n = plan.w8_clients;
            m.push(metric(
                "clients",
                format!("clients connected (of {n})"),
                Better::Higher,
            ));
            m.push(metric(
                "failed_clients",
                "clients refused or failing",
                Better::Lower,
            ));
            m.push(metric(
                "refused_connections",
                "connections refused at accept",
                Better::Lower,
            ));
            m.push(metric(
                "rss_max_mb",
                "RSS, largest node, clients connected (MB)",
                Better::Lower,
            ));
            m.push(metric(
                "rss_idle_max_mb",
                "RSS, largest node, before (MB)",
                Better::Lower,
            ));
            m.push(metric(
                "open_files_max",
                "open files, node with most",
                Better::Lower,
            ));
            m.push(metric(
                "cpu_pct",
                "node CPU, 3 nodes, clients connected (% of a core)",
                Better::Lower,
            ));
            m.push(metric(
                "cpu_idle_pct",
                "node CPU, 3 nodes, probe alone (% of a core)",
                Better::Lower,
            ));
            m.push(metric(
                "cpu_node_max_pct",
                "node CPU, busiest node, clients connected (%)",
                Better::Lower,
            ));
            m.extend(latency_metrics("keep_alive", "keep-alive"));
            m.push(metric(
                "probe_idle_p50_ms",
                "probe acquire p50, alone (ms)",
                Better::Lower,
            ));
            m.push(metric(
                "probe_idle_p99_ms",
                "probe acquire p99, alone (ms)",
                Better::Lower,
            ));
            m.push(metric(
                "probe_p50_ms",
                "probe acquire p50, clients connected (ms)",
                Better::Lower,
            ));
            m.push(metric(
                "probe_p99_ms",
                "probe acquire p99, clients connected (ms)",
                Better::Lower,
            ));
            m.push(metric(
                "probe_p99_vs_idle",
                "probe p99, connected / alone",
                Better::Lower,
            ));
            m.push(metric(
                "probe_pairs_per_s",
                "probe pairs/s, clients connected",
                Better::Higher,
            ));
            m.push(metric(
                "probe_idle_pairs_per_s",
                "probe pairs/s, alone",
                Better::Higher,
            ));
            m.push(metric(
                "setup_s",
                "time to connect every client (s)",
                Better::Lower,
            ));
        }
    }
    m
}

/// Both clusters, and what a workload needs to start helper processes.
#[derive(Debug)]
pub struct Bench {
    pub etcd: Cluster,
    pub raftlock: Cluster,
    pub plan: Plan,
    /// This benchmark's own binary, run as `hold` by W5.
    pub exe: PathBuf,
}

impl Bench {
    /// The cluster of `system`.
    pub fn cluster(&mut self, system: System) -> &mut Cluster {
        match system {
            System::Etcd => &mut self.etcd,
            System::Raftlock => &mut self.raftlock,
        }
    }
}

/// The planned systems in the order round `round` runs them.
fn order(plan: &Plan, round: usize) -> Vec<System> {
    let both = if round % 2 == 0 {
        [System::Etcd, System::Raftlock]
    } else {
        [System::Raftlock, System::Etcd]
    };
    both.into_iter()
        .filter(|s| plan.systems.contains(s))
        .collect()
}

/// Runs every round of workload `id` on both systems.
pub async fn run_workload(id: WorkloadId, bench: &mut Bench) -> Result<Vec<Run>, Error> {
    let runs = run_rounds(id, bench).await?;
    bench.etcd.check_running()?;
    bench.raftlock.check_running()?;
    Ok(runs)
}

async fn run_rounds(id: WorkloadId, bench: &mut Bench) -> Result<Vec<Run>, Error> {
    let mut runs = Vec::new();
    match id {
        WorkloadId::W1 | WorkloadId::W2 | WorkloadId::W3 => {
            let spec = pairs::Spec::of(id, bench.plan.clients);
            for round in 0..bench.plan.rounds {
                for system in order(&bench.plan, round) {
                    let r = pairs::run(bench, system, &spec, round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
        }
        WorkloadId::W4 => {
            let mut leases = BTreeMap::new();
            for system in bench.plan.systems.clone() {
                leases.insert(system, keep_alive::grant_all(bench, system).await?);
            }
            for round in 0..bench.plan.rounds {
                for system in order(&bench.plan, round) {
                    let r = keep_alive::run(bench, system, &leases[&system], round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
            for (system, leases) in leases {
                keep_alive::revoke_all(bench, system, leases).await?;
            }
        }
        WorkloadId::W5 => {
            for round in 0..bench.plan.fault_rounds {
                for system in order(&bench.plan, round) {
                    let r = crash_handoff::run(bench, system, round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
        }
        WorkloadId::W6 => {
            for round in 0..bench.plan.fault_rounds {
                for system in order(&bench.plan, round) {
                    let r = leader_kill::run(bench, system, round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
        }
        WorkloadId::W7 => {
            for round in 0..bench.plan.w7_rounds {
                for system in order(&bench.plan, round) {
                    let r = scale::run(bench, system, round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
        }
        WorkloadId::W8 => {
            for round in 0..bench.plan.w8_rounds {
                for system in order(&bench.plan, round) {
                    let r = connected::run(bench, system, round).await?;
                    progress(id, &r);
                    runs.push(r);
                }
            }
        }
    }
    Ok(runs)
}

fn progress(id: WorkloadId, run: &Run) {
    let values: Vec<String> = run
        .values
        .iter()
        .map(|(k, v)| format!("{k}={v:.2}"))
        .collect();
    eprintln!(
        "  {id} round {} {:<8} {} errors={}",
        run.round + 1,
        run.system.name(),
        values.join(" "),
        run.errors
    );
}

/// Seconds as a `Duration`, for short literals.
fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
