//! W1–W3: clients locking and unlocking as fast as they can, each with its
//! own lease — one client on one lock, 32 on 32 locks, 32 on one lock.
//! A pair counts when it starts after the warm-up and ends inside the
//! measured window.

use std::sync::Arc;

use tokio::sync::Barrier;
use tokio::time::Instant;

use super::{secs, Bench, Run};
use crate::breakdown;
use crate::cluster::System;
use crate::driver::Driver;
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

struct Outcome {
    pairs: u64,
    errors: u64,
    samples: Samples,
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
    let mut clients = Vec::new();
    for _ in 0..spec.clients {
        let mut driver = Driver::connect(system, &endpoints).await?;
        let lease = driver.grant(secs(60)).await?;
        clients.push((driver, lease));
    }
    let barrier = Arc::new(Barrier::new(spec.clients + 1));
    let start = Arc::new(std::sync::OnceLock::<Instant>::new());
    let mut tasks = Vec::new();
    for (i, (mut driver, lease)) in clients.into_iter().enumerate() {
        let name = if spec.distinct_locks {
            format!("{}/r{round}/{i}", spec.id)
        } else {
            format!("{}/r{round}", spec.id)
        };
        let (barrier, start) = (barrier.clone(), start.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let t0 = *start
                .get()
                .expect("the start time is set before the barrier opens");
            let (measure_from, end) = (t0 + warmup, t0 + warmup + duration);
            let mut out = Outcome {
                pairs: 0,
                errors: 0,
                samples: Samples::default(),
            };
            while Instant::now() < end {
                let began = Instant::now();
                let held = match driver.lock(&name, lease).await {
                    Ok(h) => h,
                    Err(_) => {
                        out.errors += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
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
            let _ = driver.revoke(lease).await;
            out
        }));
    }
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
    let _ = start.set(Instant::now());
    barrier.wait().await;
    let mut run = Run::new(system, round);
    let mut samples = Samples::default();
    let mut pairs = 0;
    for t in tasks {
        let out = t.await.map_err(|e| Error::Workload {
            workload: "pairs",
            message: format!("a client task failed: {e}"),
        })?;
        pairs += out.pairs;
        run.errors += out.errors;
        samples.extend(out.samples);
    }
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
