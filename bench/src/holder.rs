//! `raftlock-bench hold`: a lock holder in its own process, so W5 can
//! `kill -9` it like a crashed application. It grants a lease, locks a
//! name, prints `HELD`, then renews the lease every TTL/3 (as etcd's and
//! raftlock's clients do) and prints `KA` after each renewal. Each line
//! ends with the time in microseconds since the epoch.

use std::io::Write;
use std::time::Duration;

use crate::cluster::System;
use crate::driver::Driver;
use crate::Error;

/// What to hold.
#[derive(Debug, Clone, clap::Args)]
pub struct HoldArgs {
    /// etcd or raftlock.
    #[arg(long)]
    pub system: System,
    /// Client endpoints, comma-separated host:port.
    #[arg(long, value_delimiter = ',', required = true)]
    pub endpoints: Vec<String>,
    /// Lock name.
    #[arg(long)]
    pub name: String,
    /// Lease TTL in milliseconds.
    #[arg(long)]
    pub ttl_ms: u64,
}

/// Holds until killed (or until a call fails).
pub async fn hold(args: HoldArgs) -> Result<(), Error> {
    let ttl = Duration::from_millis(args.ttl_ms);
    let mut driver = Driver::connect(args.system, &args.endpoints).await?;
    let lease = driver.grant(ttl).await?;
    driver.lock(&args.name, lease).await?;
    say("HELD")?;
    loop {
        tokio::time::sleep(ttl / 3).await;
        driver.keep_alive(lease).await?;
        say("KA")?;
    }
}

/// Microseconds since the Unix epoch (0 if the clock is before it).
pub fn epoch_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn say(what: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{what} {}", epoch_micros())
        .and_then(|_| out.flush())
        .map_err(|e| Error::io("cannot write to stdout", e))
}
