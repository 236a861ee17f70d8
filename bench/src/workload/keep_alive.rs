//! W4: lease keep-alive throughput. Each system gets `w4_leases` leases up
//! front; every round, `clients` clients each renew their share of them in
//! turn, one call in flight per client, as fast as the cluster answers.

use futures::future::try_join_all;
use tokio::time::Instant;

use super::start_line::StartLine;
use super::{secs, Bench, Run};
use crate::cluster::System;
use crate::driver::{Driver, LeaseId};
use crate::stats::Samples;
use crate::Error;

/// The leases of one system, one slice per client.
pub type Shares = Vec<Vec<LeaseId>>;

/// Grants the leases W4 keeps alive (TTL one hour, so none lapses between
/// rounds), `clients` calls at a time.
pub async fn grant_all(bench: &mut Bench, system: System) -> Result<Shares, Error> {
    let endpoints = bench.cluster(system).endpoints();
    let (n, clients) = (bench.plan.w4_leases, bench.plan.clients);
    let per = n.div_ceil(clients);
    let tasks = (0..clients).map(|c| {
        let endpoints = endpoints.clone();
        async move {
            let mut d = Driver::connect(system, &endpoints).await?;
            let mut share = Vec::new();
            for _ in (c * per)..((c + 1) * per).min(n) {
                share.push(d.grant(secs(3600)).await?);
            }
            Ok::<_, Error>(share)
        }
    });
    try_join_all(tasks).await
}

/// Revokes what [`grant_all`] granted, so no expiry work spills into the
/// next workload.
pub async fn revoke_all(bench: &mut Bench, system: System, shares: Shares) -> Result<(), Error> {
    let endpoints = bench.cluster(system).endpoints();
    let tasks = shares.into_iter().map(|share| {
        let endpoints = endpoints.clone();
        async move {
            let mut d = Driver::connect(system, &endpoints).await?;
            for lease in share {
                d.revoke(lease).await?;
            }
            Ok::<_, Error>(())
        }
    });
    try_join_all(tasks).await.map(drop)
}

/// One round of keep-alives on `system`.
pub async fn run(
    bench: &mut Bench,
    system: System,
    shares: &Shares,
    round: usize,
) -> Result<Run, Error> {
    let endpoints = bench.cluster(system).endpoints();
    let (warmup, duration) = (bench.plan.warmup, bench.plan.duration);
    let start_line = StartLine::new(shares.len());
    let mut tasks = Vec::new();
    for share in shares.clone() {
        let mut driver = Driver::connect(system, &endpoints).await?;
        let start_line = start_line.clone();
        tasks.push(tokio::spawn(async move {
            let t0 = start_line.wait().await;
            let (measure_from, end) = (t0 + warmup, t0 + warmup + duration);
            let (mut count, mut errors, mut samples) = (0u64, 0u64, Samples::default());
            for lease in share.iter().cycle() {
                if Instant::now() >= end {
                    break;
                }
                let began = Instant::now();
                match driver.keep_alive(*lease).await {
                    Ok(()) if began >= measure_from && Instant::now() <= end => {
                        count += 1;
                        samples.push(began.elapsed());
                    }
                    Ok(()) => {}
                    Err(_) => errors += 1,
                }
            }
            (count, errors, samples)
        }));
    }
    start_line.open().await;
    let mut run = Run::new(system, round);
    let mut all = Samples::default();
    let mut count = 0;
    for t in tasks {
        let (c, e, s) = t.await.map_err(|e| Error::Workload {
            workload: "W4",
            message: format!("a client task failed: {e}"),
        })?;
        count += c;
        run.errors += e;
        all.extend(s);
    }
    run.set("keep_alives_per_s", count as f64 / duration.as_secs_f64());
    run.set("errors", run.errors as f64);
    run.set_latency("keep_alive", all.summary());
    Ok(run)
}
