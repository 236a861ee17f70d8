//! W5: a lock holder's process dies. A `hold` process locks a name and
//! keeps its lease alive; a waiter queues behind it; right after a
//! keep-alive the holder is killed with `kill -9`. Measured: time from the
//! kill until the waiter is granted, for each TTL — the TTL itself plus
//! however late the system notices the lease lapsed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};
use tokio::time::{timeout, Instant};

use super::{secs, Bench, Run};
use crate::cluster::System;
use crate::driver::Driver;
use crate::holder::epoch_micros;
use crate::Error;

/// The metric key for `ttl`.
pub fn key(ttl: Duration) -> String {
    format!("handoff_ms_ttl_{}ms", ttl.as_millis())
}

fn fail(message: impl Into<String>) -> Error {
    Error::Workload {
        workload: "W5",
        message: message.into(),
    }
}

/// One round of W5 on `system`: every TTL of the plan once.
pub async fn run(bench: &mut Bench, system: System, round: usize) -> Result<Run, Error> {
    let mut run = Run::new(system, round);
    let endpoints = bench.cluster(system).endpoints();
    for ttl in bench.plan.w5_ttls.clone() {
        let name = format!("W5/r{round}/ttl{}", ttl.as_millis());
        let ms = handoff(&bench.exe, system, &endpoints, &name, ttl).await?;
        run.set(key(ttl), ms);
    }
    Ok(run)
}

/// Milliseconds from killing the holder of `name` to the waiter's grant.
async fn handoff(
    exe: &Path,
    system: System,
    endpoints: &[String],
    name: &str,
    ttl: Duration,
) -> Result<f64, Error> {
    let mut child = Command::new(exe)
        .arg("hold")
        .arg("--system")
        .arg(system.name())
        .arg("--endpoints")
        .arg(endpoints.join(","))
        .arg("--name")
        .arg(name)
        .arg("--ttl-ms")
        .arg(ttl.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {} hold", exe.display()), e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| fail("the holder has no stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    expect_line(&mut lines, "HELD", secs(30)).await?;
    // The waiter queues behind the holder.
    let mut waiter = Driver::connect(system, endpoints).await?;
    let lease = waiter.grant(secs(60)).await?;
    let wait_name = name.to_string();
    let granted = tokio::spawn(async move {
        let held = waiter.lock(&wait_name, lease).await;
        (Instant::now(), held, waiter)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    if granted.is_finished() {
        return Err(fail(
            "the waiter was granted while the holder still held the lock",
        ));
    }
    // Kill right after a renewal (not one already waiting in the pipe): the
    // lease then has a whole TTL left.
    loop {
        let at = expect_line(&mut lines, "KA", ttl + secs(5)).await?;
        if epoch_micros().saturating_sub(at) < 50_000 {
            break;
        }
    }
    let killed_at = Instant::now();
    child
        .start_kill()
        .map_err(|e| Error::io("cannot kill the holder", e))?;
    let _ = child.wait().await;
    let (granted_at, held, mut waiter) = timeout(ttl + secs(60), granted)
        .await
        .map_err(|_| fail("the waiter was not granted within TTL + 60 s"))?
        .map_err(|e| fail(format!("the waiter task failed: {e}")))?;
    let held = held?;
    let _ = waiter.unlock(held).await;
    let _ = waiter.revoke(lease).await;
    Ok(granted_at.duration_since(killed_at).as_secs_f64() * 1000.0)
}

/// Reads the holder's next line, which must be `want` followed by a
/// timestamp in microseconds since the epoch; answers the timestamp.
async fn expect_line(
    lines: &mut Lines<BufReader<ChildStdout>>,
    want: &str,
    within: Duration,
) -> Result<u64, Error> {
    let line = timeout(within, lines.next_line())
        .await
        .map_err(|_| fail(format!("the holder did not print {want} within {within:?}")))?
        .map_err(|e| Error::io("cannot read the holder's output", e))?;
    match line {
        Some(l) if l.split_whitespace().next() == Some(want) => Ok(l
            .split_whitespace()
            .nth(1)
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)),
        Some(l) => Err(fail(format!("the holder printed {l:?}, expected {want}"))),
        None => Err(fail(format!("the holder exited before printing {want}"))),
    }
}
