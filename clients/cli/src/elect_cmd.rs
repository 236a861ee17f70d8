//! `raftlock elect NAME VALUE [--ttl D]`: campaign, print a line when
//! elected, hold leadership until interrupted, then resign.
//! `raftlock elect --observe NAME`: print every change of leader (including
//! "no leader") until interrupted.

use std::time::Duration;

use futures::StreamExt;
use serde::Serialize;

use super::lock_cmd::revoke;
use super::signals::Interrupts;
use super::{print_json_line, Endpoints, Output, EXIT_SUCCESS};
use raftlock::duration::parse_duration;
use raftlock_client::Error;
use raftlock_client::{Client, LeaderInfo};

/// Pause before observing again after the cluster was unreachable.
const RESUBSCRIBE_AFTER: Duration = Duration::from_millis(500);

/// Flags of `raftlock elect`.
#[derive(Debug, clap::Args)]
pub struct ElectArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    /// Print leader changes instead of campaigning (`-l`, `--listen` as
    /// etcdctl).
    #[arg(long, short = 'l', visible_alias = "listen", conflicts_with = "leader")]
    observe: bool,
    /// Print the current leader once and exit.
    #[arg(long)]
    leader: bool,
    /// Election name.
    name: String,
    /// Value to publish while leader (e.g. this instance's address).
    #[arg(
        required_unless_present_any = ["observe", "leader"],
        conflicts_with_all = ["observe", "leader"]
    )]
    value: Option<String>,
    /// Lease TTL: how long leadership outlives this process if it dies.
    #[arg(long, value_name = "D", default_value = "15s", value_parser = parse_duration)]
    ttl: Duration,
}

/// One leader as printed (`--output json`: one object per line).
#[derive(Debug, PartialEq, Eq, Serialize)]
struct LeaderLine {
    name: String,
    has_leader: bool,
    value: String,
    owner: String,
    fence: u64,
}

impl LeaderLine {
    fn new(name: &str, leader: Option<&LeaderInfo>) -> Self {
        LeaderLine {
            name: name.to_string(),
            has_leader: leader.is_some(),
            value: leader
                .map(|l| String::from_utf8_lossy(&l.value).into_owned())
                .unwrap_or_default(),
            owner: leader.map(|l| l.owner.clone()).unwrap_or_default(),
            fence: leader.map(|l| l.fence).unwrap_or_default(),
        }
    }

    fn print(&self, output: Output) -> Result<(), String> {
        match output {
            Output::Json => print_json_line(self),
            Output::Table if self.has_leader => {
                out!(
                    "leader of {}: {} (fence {}, owner {})",
                    self.name,
                    self.value,
                    self.fence,
                    self.owner
                );
                Ok(())
            }
            Output::Table => {
                out!("no leader of {}", self.name);
                Ok(())
            }
        }
    }
}

pub async fn run(args: ElectArgs) -> Result<u8, String> {
    let mut interrupts = Interrupts::watch()?;
    let client = args.endpoints.connect().await?;
    if args.leader {
        let leader = client
            .election(args.name.clone())
            .leader()
            .await
            .map_err(|e| args.endpoints.explain(&e))?;
        LeaderLine::new(&args.name, leader.as_ref()).print(args.endpoints.output)?;
        return Ok(EXIT_SUCCESS);
    }
    match &args.value {
        Some(value) if !args.observe => {
            let lease = tokio::select! {
                r = client.grant_lease(args.ttl) => r.map_err(|e| args.endpoints.explain(&e))?,
                _ = interrupts.recv() => return Ok(EXIT_SUCCESS),
            };
            let on_lease = client.with_lease(lease);
            let outcome = campaign(&args, &on_lease, value, &mut interrupts).await;
            revoke(&client, lease).await;
            outcome
        }
        _ => observe(&args, &client, &mut interrupts).await,
    }
}

/// Campaigns on the lease `on_lease` keeps alive; holds until interrupted
/// (then resigns) or lost (then fails).
async fn campaign(
    args: &ElectArgs,
    on_lease: &Client,
    value: &str,
    interrupts: &mut Interrupts,
) -> Result<u8, String> {
    let name = &args.name;
    let election = on_lease.election(name.clone());
    let leadership = tokio::select! {
        r = election.campaign(value.as_bytes()) => r.map_err(|e| args.endpoints.explain(&e))?,
        _ = interrupts.recv() => return Ok(EXIT_SUCCESS),
    };
    let fence = leadership.fence();
    // Granted while paused and gone since? Then never claim to lead.
    leadership
        .ensure_valid()
        .map_err(|e| format!("lost leadership of {name}: {e}"))?;
    match args.endpoints.output {
        Output::Json => print_json_line(&LeaderLine {
            name: name.clone(),
            has_leader: true,
            value: value.to_string(),
            owner: leadership.owner().to_string(),
            fence,
        })?,
        Output::Table => {
            out!("elected leader of {name} with fence {fence}; holding until interrupted")
        }
    }
    tokio::select! {
        e = leadership.lost() => {
            let why = match e {
                Error::LockLost(why) => why,
                other => other.to_string(),
            };
            return Err(format!("lost leadership of {name}: {why}"));
        }
        _ = interrupts.recv() => {}
    }
    leadership
        .resign()
        .await
        .map_err(|e| args.endpoints.explain(&e))?;
    if args.endpoints.output == Output::Table {
        out!("resigned leadership of {name}");
    }
    Ok(EXIT_SUCCESS)
}

/// Prints each change until interrupted. The client's stream already
/// reconnects across node failures and skips repeats; when the whole
/// cluster stays unreachable past its retry budget, observe again.
async fn observe(
    args: &ElectArgs,
    client: &Client,
    interrupts: &mut Interrupts,
) -> Result<u8, String> {
    let election = client.election(args.name.clone());
    let mut last: Option<LeaderLine> = None;
    let watch = async {
        loop {
            let changes = election.observe();
            tokio::pin!(changes);
            while let Some(change) = changes.next().await {
                match change {
                    Ok(leader) => {
                        let line = LeaderLine::new(&args.name, leader.as_ref());
                        if last.as_ref() != Some(&line) {
                            line.print(args.endpoints.output)?;
                            last = Some(line);
                        }
                    }
                    Err(e) if e.is_retryable() => {
                        tracing::warn!("cannot observe {}: {e}; retrying", args.name);
                    }
                    Err(e) => return Err(args.endpoints.explain(&e)),
                }
            }
            tokio::time::sleep(RESUBSCRIBE_AFTER).await;
        }
    };
    tokio::select! {
        r = watch => r,
        _ = interrupts.recv() => Ok(EXIT_SUCCESS),
    }
}
