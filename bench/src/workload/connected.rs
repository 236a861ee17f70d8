//! W8: many connected clients. `w8_clients` clients, each with its own
//! connections and its own lease, renew their lease every third of its
//! TTL (as both systems' session keepers do) over their own keep-alive
//! stream, while one probe client does W1 (lock+unlock pairs on a lock of
//! its own). Each round times the probe alone first (idle), then with every
//! client connected (loaded); measured are the nodes' CPU over both probe
//! windows, their memory and open files with every client connected, the
//! keep-alive latency, and whether any client was refused.
//!
//! The clients' renewals are spread evenly over the renewal interval, as
//! independent processes' would be, and the loaded window opens one
//! interval after the last client connected, so every client has renewed
//! at least once in steady state.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{sleep_until, Instant};

use super::pairs::{pairs_between, Outcome};
use super::{Bench, Run};
use crate::breakdown;
use crate::cluster::System;
use crate::driver::{Driver, LeaseId};
use crate::stats::{Latency, Samples};
use crate::Error;

/// Clients connecting (and granting their lease) at once while W8 sets up.
const SETUP_CONCURRENCY: usize = 64;

/// Longest a client's connect, grant and first keep-alive may take before
/// it counts as failed.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// One connected client: its own driver (connections, keep-alive stream)
/// and lease.
struct Connected {
    driver: Driver,
    lease: LeaseId,
}

/// What one client's keep-alive loop saw.
struct Kept {
    client: Connected,
    /// (sent at, latency) of every successful renewal.
    renewals: Vec<(Instant, Duration)>,
    errors: u64,
}

/// One round of W8 on `system`.
pub async fn run(bench: &mut Bench, system: System, round: usize) -> Result<Run, Error> {
    let plan = bench.plan.clone();
    let endpoints = bench.cluster(system).endpoints();
    let admin: Vec<String> = match system {
        System::Raftlock => endpoints
            .iter()
            .filter_map(|a| breakdown::admin_addr(a))
            .collect(),
        System::Etcd => Vec::new(),
    };
    let mut run = Run::new(system, round);
    let mut probe = Probe::connect(system, &endpoints, format!("W8/r{round}/probe")).await?;

    // The probe alone.
    probe.pairs_for(plan.warmup).await;
    let cpu = bench.cluster(system).cpu_seconds();
    let idle = probe.pairs_for(plan.duration).await;
    let idle_cpu = cpu_pct(&cpu, &bench.cluster(system).cpu_seconds(), plan.duration);
    let idle_rss = max_rss_mb(bench, system);
    let refused_before = refused_connections(&admin).await;

    // Every client connects, grants its lease and opens its keep-alive
    // stream with a first renewal.
    let n = plan.w8_clients;
    let began = Instant::now();
    let setups: Vec<Result<Connected, String>> = stream::iter(0..n)
        .map(|_| connect(system, &endpoints, plan.w8_ttl))
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect()
        .await;
    let setup = began.elapsed();
    let mut clients = Vec::new();
    let mut setup_failures = 0u64;
    for s in setups {
        match s {
            Ok(c) => clients.push(c),
            Err(e) => {
                if setup_failures == 0 {
                    eprintln!("  W8 {system}: a client could not connect: {e}");
                }
                setup_failures += 1;
            }
        }
    }
    let interval = plan.w8_ttl / 3;
    let (stop, stopped) = watch::channel(false);
    let t0 = Instant::now();
    let connected = clients.len();
    let keepers: Vec<JoinHandle<Kept>> = clients
        .into_iter()
        .enumerate()
        .map(|(i, client)| {
            let first = t0 + interval.mul_f64(i as f64 / connected.max(1) as f64);
            tokio::spawn(keep(client, first, interval, plan.w8_ttl, stopped.clone()))
        })
        .collect();

    // Steady state, then the probe again.
    tokio::time::sleep(interval).await;
    let fds = max_open_files(bench, system);
    probe.pairs_for(plan.warmup).await;
    let window_from = Instant::now();
    let cpu = bench.cluster(system).cpu_seconds();
    let loaded = probe.pairs_for(plan.duration).await;
    let cpu_end = bench.cluster(system).cpu_seconds();
    let window_to = Instant::now();
    let loaded_cpu = cpu_pct(&cpu, &cpu_end, plan.duration);
    let node_max_cpu = node_max_pct(&cpu, &cpu_end, plan.duration);
    let rss = max_rss_mb(bench, system);
    let hwm = bench
        .cluster(system)
        .memory()
        .iter()
        .flatten()
        .map(|m| mb(m.hwm_kib))
        .fold(0.0, f64::max);
    let refused = match (refused_before, refused_connections(&admin).await) {
        (Some(b), Some(a)) => Some(a - b),
        _ => None,
    };

    let _ = stop.send(true);
    let mut renewals = Samples::default();
    let mut failed_clients = setup_failures;
    let mut keep_alive_errors = 0;
    let mut to_revoke = Vec::new();
    for k in keepers {
        let kept = k.await.map_err(|e| Error::Workload {
            workload: "W8",
            message: format!("a client task failed: {e}"),
        })?;
        for (at, latency) in kept.renewals {
            if at >= window_from && at + latency <= window_to {
                renewals.push(latency);
            }
        }
        if kept.errors > 0 {
            failed_clients += 1;
            keep_alive_errors += kept.errors;
        }
        to_revoke.push(kept.client);
    }
    revoke(to_revoke).await;
    probe.finish().await;

    run.errors = idle.errors + loaded.errors + keep_alive_errors + setup_failures;
    run.set("clients", connected as f64);
    run.set("failed_clients", failed_clients as f64);
    if let Some(r) = refused {
        run.set("refused_connections", r);
    }
    run.set("setup_s", setup.as_secs_f64());
    if let Some(fds) = fds {
        run.set("open_files_max", fds as f64);
    }
    run.set("rss_idle_max_mb", idle_rss);
    run.set("rss_max_mb", rss);
    run.set("hwm_max_mb", hwm);
    run.set("cpu_idle_pct", idle_cpu);
    run.set("cpu_pct", loaded_cpu);
    run.set("cpu_node_max_pct", node_max_cpu);
    let per_s = |pairs: u64| pairs as f64 / plan.duration.as_secs_f64();
    run.set("probe_idle_pairs_per_s", per_s(idle.pairs));
    run.set("probe_pairs_per_s", per_s(loaded.pairs));
    let (idle, loaded) = (idle.samples.summary(), loaded.samples.summary());
    run.set("probe_idle_p50_ms", idle.p50_ms);
    run.set("probe_idle_p99_ms", idle.p99_ms);
    run.set("probe_p50_ms", loaded.p50_ms);
    run.set("probe_p99_ms", loaded.p99_ms);
    if let Some(r) = ratio(&loaded, &idle) {
        run.set("probe_p99_vs_idle", r);
    }
    run.set("errors", run.errors as f64);
    run.set_latency("keep_alive", renewals.summary());
    Ok(run)
}

/// Loaded p99 over idle p99, when both were measured.
fn ratio(loaded: &Latency, idle: &Latency) -> Option<f64> {
    (loaded.count > 0 && idle.count > 0 && idle.p99_ms > 0.0).then(|| loaded.p99_ms / idle.p99_ms)
}

/// A client of `system` with its own connections, a lease of `ttl`, and
/// its keep-alive stream open (the first renewal opens it).
async fn connect(system: System, endpoints: &[String], ttl: Duration) -> Result<Connected, String> {
    let setup = async {
        let mut driver = Driver::connect(system, endpoints).await?;
        let lease = driver.grant(ttl).await?;
        driver.keep_alive(lease).await?;
        Ok::<_, Error>(Connected { driver, lease })
    };
    match tokio::time::timeout(SETUP_TIMEOUT, setup).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no lease and keep-alive within {SETUP_TIMEOUT:?}")),
    }
}

/// Renews `client`'s lease at `first`, then every `interval`, until told to
/// stop. A renewal that takes longer than the TTL counts as an error.
async fn keep(
    mut client: Connected,
    first: Instant,
    interval: Duration,
    ttl: Duration,
    mut stop: watch::Receiver<bool>,
) -> Kept {
    let (mut renewals, mut errors) = (Vec::new(), 0);
    let mut next = first;
    loop {
        tokio::select! {
            _ = sleep_until(next) => {}
            _ = stop.changed() => break,
        }
        let sent = Instant::now();
        match tokio::time::timeout(ttl, client.driver.keep_alive(client.lease)).await {
            Ok(Ok(())) => renewals.push((sent, sent.elapsed())),
            Ok(Err(_)) | Err(_) => errors += 1,
        }
        next = (next + interval).max(Instant::now());
    }
    Kept {
        client,
        renewals,
        errors,
    }
}

/// Revokes every client's lease, so no expiry work spills into the next
/// round; a failure here is not W8's to report.
async fn revoke(clients: Vec<Connected>) {
    stream::iter(clients)
        .for_each_concurrent(SETUP_CONCURRENCY, |mut c| async move {
            let _ = c.driver.revoke(c.lease).await;
        })
        .await;
}

/// The W1 client: lock+unlock pairs on a lock of its own, on a lease of its
/// own.
struct Probe {
    driver: Driver,
    lease: LeaseId,
    name: String,
}

impl Probe {
    async fn connect(system: System, endpoints: &[String], name: String) -> Result<Probe, Error> {
        let mut driver = Driver::connect(system, endpoints).await?;
        let lease = driver.grant(Duration::from_secs(60)).await?;
        Ok(Probe {
            driver,
            lease,
            name,
        })
    }

    /// Lock+unlock pairs for `window`; a pair counts if it ends inside it.
    async fn pairs_for(&mut self, window: Duration) -> Outcome {
        let now = Instant::now();
        pairs_between(&mut self.driver, self.lease, &self.name, now, now + window).await
    }

    async fn finish(mut self) {
        let _ = self.driver.revoke(self.lease).await;
    }
}

fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

/// RSS of the largest node now, in MB.
fn max_rss_mb(bench: &mut Bench, system: System) -> f64 {
    bench
        .cluster(system)
        .memory()
        .iter()
        .flatten()
        .map(|m| mb(m.rss_kib))
        .fold(0.0, f64::max)
}

/// Open files (connections included) of the node that has most, from
/// `/proc/PID/fd`.
fn max_open_files(bench: &mut Bench, system: System) -> Option<usize> {
    bench
        .cluster(system)
        .nodes
        .iter()
        .filter_map(|n| std::fs::read_dir(format!("/proc/{}/fd", n.pid()?)).ok())
        .map(|dir| dir.count())
        .max()
}

/// CPU of all nodes together between two readings `window` apart, in % of
/// one core.
fn cpu_pct(before: &[Option<f64>], after: &[Option<f64>], window: Duration) -> f64 {
    per_node_pct(before, after, window).sum()
}

/// CPU of the busiest node between two readings, in % of one core.
fn node_max_pct(before: &[Option<f64>], after: &[Option<f64>], window: Duration) -> f64 {
    per_node_pct(before, after, window).fold(0.0, f64::max)
}

fn per_node_pct<'a>(
    before: &'a [Option<f64>],
    after: &'a [Option<f64>],
    window: Duration,
) -> impl Iterator<Item = f64> + 'a {
    before
        .iter()
        .zip(after)
        .filter_map(move |(b, a)| Some((a.as_ref()? - b.as_ref()?) / window.as_secs_f64() * 100.0))
}

/// Client connections the raftlock nodes closed at accept (a cap reached),
/// all nodes together; `None` without admin addresses (etcd) or if a node
/// does not answer.
async fn refused_connections(admin: &[String]) -> Option<f64> {
    if admin.is_empty() {
        return None;
    }
    let texts = breakdown::scrape_all(admin).await?;
    Some(
        texts
            .iter()
            .map(|t| {
                breakdown::total(
                    t,
                    "raftlock_connections_refused_total",
                    "listener=\"client\"",
                )
            })
            .sum(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_counted_per_node_over_the_window() {
        let before = [Some(1.0), Some(2.0), None];
        let after = [Some(1.5), Some(2.1), Some(9.0)];
        let w = Duration::from_secs(2);
        assert!((cpu_pct(&before, &after, w) - 30.0).abs() < 1e-9);
        assert!((node_max_pct(&before, &after, w) - 25.0).abs() < 1e-9);
    }

    #[test]
    fn the_ratio_needs_both_windows() {
        let l = |p99_ms: f64, count| Latency {
            p99_ms,
            count,
            ..Latency::default()
        };
        assert_eq!(ratio(&l(4.0, 10), &l(2.0, 10)), Some(2.0));
        assert_eq!(ratio(&l(4.0, 10), &l(2.0, 0)), None);
    }
}
