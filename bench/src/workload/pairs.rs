//! W1–W3: clients locking and unlocking as fast as they can, each with its
//! own lease — one client on one lock, 32 on 32 locks, 32 on one lock.
//! A pair counts when it starts after the warm-up and ends inside the
//! measured window.

use std::time::Duration;

use tokio::time::Instant;

use super::start_line::StartLine;
use super::{secs, Bench, Run};
use crate::breakdown;
use crate::cluster::System;
use crate::driver::{Driver, LeaseId};
use crate::plan::WorkloadId;
use crate::stats::Samples;
use crate::Error;

/// The shape of a lock/unlock workload.
#[derive(Debug, Clone)]
pub struct Spec {
    pub id: WorkloadId,
    pub clients: usize,
    /// Each client its own lock, or all on one.
    pub distinct_locks: bool,
}

impl Spec {
    /// W1, W2 or W3 with `clients` clients for W2 and W3.
    pub fn of(id: WorkloadId, clients: usize) -> Spec {
        match id {
            WorkloadId::W1 => Spec {
                id,
                clients: 1,
                distinct_locks: true,
            },
            WorkloadId::W2 => Spec {
                id,
                clients,
                distinct_locks: true,
            },
            _ => Spec {
                id,
                clients,
                distinct_locks: false,
            },
        }
    }
}

/// What the clients of one run did inside the measured window.
#[derive(Debug, Default)]
pub struct Outcome {
    pub pairs: u64,
    pub errors: u64,
    pub samples: Samples,
}

/// The clients of one run, connected, each with its lease, waiting at a
/// barrier for [`Load::run`].
pub struct Load {
    tasks: Vec<tokio::task::JoinHandle<Outcome>>,
    start_line: StartLine,
}

impl Load {
    /// Connects `spec.clients` clients of `system` to `endpoints`, each
    /// granting its own lease; client `i` locks `{tag}/{i}` (distinct
    /// locks) or `tag`. They lock and unlock from [`run`](Self::run) for
    /// `warmup + duration`.
    pub async fn connect(
        system: System,
        endpoints: &[String],
        spec: &Spec,
        tag: &str,
        warmup: Duration,
        duration: Duration,
    ) -> Result<Load, Error> {
        let mut clients = Vec::new();
        for _ in 0..spec.clients {
            let mut driver = Driver::connect(system, endpoints).await?;
            let lease = driver.grant(secs(60)).await?;
            clients.push((driver, lease));
        }
        let start_line = StartLine::new(spec.clients);
        let mut tasks = Vec::new();
        for (i, (driver, lease)) in clients.into_iter().enumerate() {
            let name = if spec.distinct_locks {
                format!("{tag}/{i}")
            } else {
                tag.to_string()
            };
            let start_line = start_line.clone();
            tasks.push(tokio::spawn(async move {
                let t0 = start_line.wait().await;
                pairs_until(driver, lease, &name, t0 + warmup, t0 + warmup + duration).await
            }));
        }
        Ok(Load { tasks, start_line })
    }

    /// Opens the barrier now and answers what every client did.
    pub async fn run(self) -> Result<Outcome, Error> {
        self.start_line.open().await;
        let mut total = Outcome::default();
        for t in self.tasks {
            let out = t.await.map_err(|e| Error::Workload {
                workload: "pairs",
                message: format!("a client task failed: {e}"),
            })?;
            total.pairs += out.pairs;
            total.errors += out.errors;
            total.samples.extend(out.samples);
        }
        Ok(total)
    }
}

/// One client locking and unlocking `name` until `end`; a pair counts when
/// it starts at or after `measure_from` and ends by `end`.
async fn pairs_until(
    mut driver: Driver,
    lease: LeaseId,
    name: &str,
    measure_from: Instant,
    end: Instant,
) -> Outcome {
    let out = pairs_between(&mut driver, lease, name, measure_from, end).await;
    let _ = driver.revoke(lease).await;
    out
}

/// Lock+unlock pairs of `name` on `lease` until `end`; a pair counts when
/// it starts at or after `measure_from` and ends by `end`.
pub(super) async fn pairs_between(
    driver: &mut Driver,
    lease: LeaseId,
    name: &str,
    measure_from: Instant,
    end: Instant,
) -> Outcome {
    let mut out = Outcome::default();
    while Instant::now() < end {
        let began = Instant::now();
        let held = match driver.lock(name, lease).await {
            Ok(h) => h,
            Err(_) => {
                out.errors += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let acquired = began.elapsed();
        if driver.unlock(held).await.is_err() {
            out.errors += 1;
            continue;
        }
        if began >= measure_from && Instant::now() <= end {
            out.pairs += 1;
            out.samples.push(acquired);
        }
    }
    out
}

/// One round of `spec` on `system`.
pub async fn run(
    bench: &mut Bench,
    system: System,
    spec: &Spec,
    round: usize,
) -> Result<Run, Error> {
    let endpoints = bench.cluster(system).endpoints();
    let (warmup, duration) = (bench.plan.warmup, bench.plan.duration);
    let tag = format!("{}/r{round}", spec.id);
    let load = Load::connect(system, &endpoints, spec, &tag, warmup, duration).await?;
    // raftlock's own timings of each stage of a write, over this run.
    let admin: Vec<String> = endpoints
        .iter()
        .filter_map(|a| breakdown::admin_addr(a))
        .collect();
    let before = match system {
        System::Raftlock => breakdown::scrape_all(&admin).await,
        System::Etcd => None,
    };
    let leader = bench.cluster(system).leader().await.ok();
    let out = load.run().await?;
    let mut run = Run::new(system, round);
    let (pairs, samples) = (out.pairs, out.samples);
    run.errors = out.errors;
    if let (Some(before), Some(leader)) = (before, leader) {
        let after = breakdown::scrape_all(&admin).await;
        let still = bench.cluster(system).leader().await.ok();
        // A leader change in between mixes two leaders' timings: none.
        if let (Some(after), true) = (after, still == Some(leader)) {
            for (key, value) in breakdown::stages(&before, &after, leader) {
                run.set(key, value);
            }
            if pairs > 0 {
                let per_call = spec.clients as f64 * duration.as_secs_f64() / (2 * pairs) as f64;
                run.set("stage_client_ms", per_call * 1000.0);
            }
        }
    }
    run.set("pairs_per_s", pairs as f64 / duration.as_secs_f64());
    run.set("errors", run.errors as f64);
    run.set_latency("acquire", samples.summary());
    Ok(run)
}
