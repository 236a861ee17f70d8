//! W7: many leases, each holding one lock, whose clients all vanish at
//! once. Every lease is granted with the TTL that makes it end at one
//! common deadline, so the whole set expires together; measured are the
//! nodes' memory with everything live, and how long after the (latest)
//! deadline the last lock is gone.
//!
//! The common deadline must leave time to create everything: a small
//! calibration batch measures this system's lease+lock rate first.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::try_join_all;
use tokio::time::Instant;

use super::{secs, Bench, Run};
use crate::cluster::System;
use crate::driver::{etcd_ttl_secs, Driver, LeaseId};
use crate::Error;

/// How often the remaining locks are counted while they expire.
const POLL: Duration = Duration::from_millis(50);

/// What creating a batch of lease+lock pairs produced.
struct Created {
    leases: Vec<(usize, LeaseId)>,
    /// The latest deadline any lease was given (client clock, from just
    /// before its grant was sent: the server's is never earlier).
    latest_deadline: Instant,
    errors: u64,
}

/// One round of W7 on `system`.
pub async fn run(bench: &mut Bench, system: System, round: usize) -> Result<Run, Error> {
    let endpoints = bench.cluster(system).endpoints();
    let (n, clients) = (bench.plan.w7_leases, bench.plan.clients);

    // Calibrate: this system's rate of lease+lock pairs, then revoke them.
    // Either system can slow down as leases pile up or the machine gets busy
    // (2x seen here), so the budget is 2.5 times the calibrated time; a lease
    // that still ends late is reported as deadline spread.
    let cal_n = (n / 20).clamp(100, 5_000);
    let began = Instant::now();
    let cal = create(
        system,
        &endpoints,
        &format!("W7cal/r{round}/"),
        cal_n,
        clients,
        None,
    )
    .await?;
    let rate = cal_n as f64 / began.elapsed().as_secs_f64();
    revoke(system, &endpoints, cal.leases, clients).await?;

    let budget = Duration::from_secs_f64(n as f64 / rate * 2.5) + bench.plan.w7_slack;
    let deadline = Instant::now() + budget;
    eprintln!(
        "  W7 {system}: ~{rate:.0} lease+lock pairs/s; creating {n}, all to expire in {:.1} s",
        budget.as_secs_f64()
    );
    let prefix = format!("W7/r{round}/");
    let began = Instant::now();
    let created = create(system, &endpoints, &prefix, n, clients, Some(deadline)).await?;
    let setup = began.elapsed();
    let memory = bench.cluster(system).memory();
    let live = created.leases.len();

    let mut watcher = Driver::connect(system, &endpoints).await?;
    let give_up = created.latest_deadline + bench.plan.w7_expiry_wait;
    let (done_at, left) = loop {
        let left = watcher.locks_left(&prefix).await.unwrap_or(u64::MAX);
        let now = Instant::now();
        if left == 0 || now > give_up {
            break (now, left);
        }
        tokio::time::sleep(POLL).await;
    };

    let mut run = Run::new(system, round);
    run.errors = created.errors;
    run.set("leases", live as f64);
    run.set("setup_per_s", live as f64 / setup.as_secs_f64());
    let mb = |kib: u64| kib as f64 * 1024.0 / 1e6;
    let rss = memory
        .iter()
        .flatten()
        .map(|m| m.rss_kib)
        .max()
        .unwrap_or(0);
    let hwm = memory
        .iter()
        .flatten()
        .map(|m| m.hwm_kib)
        .max()
        .unwrap_or(0);
    run.set("rss_max_mb", mb(rss));
    run.set("hwm_max_mb", mb(hwm));
    let after = done_at.saturating_duration_since(created.latest_deadline);
    // How much later than planned the last lease ends: 0 (etcd: < 1 s, it
    // counts whole seconds) when creation kept to the budget.
    let spread = created.latest_deadline.saturating_duration_since(deadline);
    run.set("deadline_spread_s", spread.as_secs_f64());
    run.set("expired_after_deadline_s", after.as_secs_f64());
    run.set("expiry_complete", if left == 0 { 1.0 } else { 0.0 });
    if left != 0 {
        eprintln!(
            "  W7 {system}: locks still held {:.0} s after the deadline; stopped waiting",
            after.as_secs_f64()
        );
    }
    run.set("errors", run.errors as f64);
    Ok(run)
}

/// Creates `n` lease+lock pairs named `prefix<i>`, `clients` at a time.
/// With a deadline, each lease's TTL is the time left until it (at least
/// the system's smallest TTL); without, ten minutes.
async fn create(
    system: System,
    endpoints: &[String],
    prefix: &str,
    n: usize,
    clients: usize,
    deadline: Option<Instant>,
) -> Result<Created, Error> {
    let next = Arc::new(AtomicU64::new(0));
    let latest = Arc::new(Mutex::new(Instant::now()));
    let tasks = (0..clients).map(|_| {
        let (next, latest) = (next.clone(), latest.clone());
        async move {
            let mut d = Driver::connect(system, endpoints).await?;
            let (mut leases, mut errors) = (Vec::new(), 0u64);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                if i >= n {
                    break;
                }
                let now = Instant::now();
                let ttl = effective_ttl(
                    system,
                    deadline.map_or(secs(600), |d| d.saturating_duration_since(now)),
                );
                let lease = match d.grant(ttl).await {
                    Ok(l) => l,
                    Err(_) => {
                        errors += 1;
                        continue;
                    }
                };
                {
                    let mut l = latest.lock().unwrap_or_else(|e| e.into_inner());
                    *l = (*l).max(now + ttl);
                }
                match d.lock(&format!("{prefix}{i}"), lease).await {
                    Ok(_) => leases.push((i, lease)),
                    Err(_) => errors += 1,
                }
            }
            Ok::<_, Error>((leases, errors))
        }
    });
    let parts = try_join_all(tasks).await?;
    let latest_deadline = *latest.lock().unwrap_or_else(|e| e.into_inner());
    let mut created = Created {
        leases: Vec::new(),
        latest_deadline,
        errors: 0,
    };
    for (leases, errors) in parts {
        created.leases.extend(leases);
        created.errors += errors;
    }
    Ok(created)
}

/// The TTL `system` actually gives a lease asked for `want`: etcd rounds
/// up to whole seconds and raises anything under 2 s (its minimum with
/// default timings); raftlock takes milliseconds from 100 ms.
fn effective_ttl(system: System, want: Duration) -> Duration {
    match system {
        System::Etcd => secs(etcd_ttl_secs(want).max(2) as u64),
        System::Raftlock => Duration::from_millis(want.as_millis().max(100) as u64),
    }
}

async fn revoke(
    system: System,
    endpoints: &[String],
    leases: Vec<(usize, LeaseId)>,
    clients: usize,
) -> Result<(), Error> {
    let chunk = leases.len().div_ceil(clients).max(1);
    let tasks = leases.chunks(chunk).map(|part| async move {
        let mut d = Driver::connect(system, endpoints).await?;
        for (_, lease) in part {
            d.revoke(*lease).await?;
        }
        Ok::<_, Error>(())
    });
    try_join_all(tasks).await.map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_follow_each_systems_rules() {
        let ms = Duration::from_millis;
        assert_eq!(effective_ttl(System::Etcd, ms(500)), secs(2));
        assert_eq!(effective_ttl(System::Etcd, ms(4_200)), secs(5));
        assert_eq!(effective_ttl(System::Raftlock, ms(20)), ms(100));
        assert_eq!(effective_ttl(System::Raftlock, ms(4_200)), ms(4_200));
    }
}
