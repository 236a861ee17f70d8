//! W6: `kill -9` of the leader. A client with a lease locks and unlocks
//! a name until the leader is killed; from the kill it tries to lock a
//! fresh name, each attempt bounded to 1 s and retried 20 ms after a
//! failure (the same loop for both systems). Measured: time from the kill
//! until that lock is granted. The killed node is then restarted and the
//! cluster left to settle before anything else runs.

use std::time::Duration;

use tokio::time::{timeout, Instant};

use super::{secs, Bench, Run};
use crate::cluster::System;
use crate::driver::Driver;
use crate::Error;

/// How long one acquire attempt may take before it is retried.
const ATTEMPT: Duration = Duration::from_secs(1);
/// How long the whole recovery may take before the round fails.
const GIVE_UP: Duration = Duration::from_secs(60);

/// One round of W6 on `system`.
pub async fn run(bench: &mut Bench, system: System, round: usize) -> Result<Run, Error> {
    let cluster = bench.cluster(system);
    cluster.wait_healthy(secs(30)).await?;
    let endpoints = cluster.endpoints();
    let mut driver = Driver::connect(system, &endpoints).await?;
    let lease = driver.grant(secs(30)).await?;
    // Warm connections to every node the client might use.
    for i in 0..20 {
        let held = driver
            .lock(&format!("W6/r{round}/warm{}", i % 4), lease)
            .await?;
        driver.unlock(held).await?;
    }
    let leader = cluster.leader().await?;
    let killed_at = Instant::now();
    cluster.kill(leader);
    let name = format!("W6/r{round}/after");
    let mut errors = 0;
    let granted = loop {
        cluster.check_running()?;
        if killed_at.elapsed() > GIVE_UP {
            return Err(Error::Workload {
                workload: "W6",
                message: format!("no acquire succeeded within {GIVE_UP:?} of the leader kill"),
            });
        }
        match timeout(ATTEMPT, driver.lock(&name, lease)).await {
            Ok(Ok(held)) => break held,
            _ => {
                errors += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    let recovered = killed_at.elapsed();
    let _ = driver.unlock(granted).await;
    let _ = driver.revoke(lease).await;
    cluster.restart(leader)?;
    cluster.wait_healthy(secs(60)).await?;
    let mut run = Run::new(system, round);
    run.set("next_acquire_ms", recovered.as_secs_f64() * 1000.0);
    run.errors = errors;
    Ok(run)
}
