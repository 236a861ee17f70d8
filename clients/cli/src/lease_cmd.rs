//! `raftlock lease grant TTL | keepalive ID [--once] | revoke ID | revoke
//! --identity NAME | revoke --source IP | ttl ID | list`.

use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use super::admin_args::AdminArgs;
use super::signals::Interrupts;
use super::{print_json, print_json_line, Endpoints, Output, EXIT_SUCCESS};
use raftlock::duration::{format_duration, parse_duration};
use raftlock_client::{Client, LeaseAccount, LeaseId};

/// `raftlock lease ...`
#[derive(Debug, clap::Args)]
pub struct LeaseArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: LeaseCommand,
}

#[derive(Debug, clap::Subcommand)]
enum LeaseCommand {
    /// Grant a lease with TTL (10s, 1m30s, or bare seconds as etcdctl:
    /// 10); prints `lease ID granted with TTL D`, as etcdctl does
    /// (`--output json` prints {"id": ID, "ttl_ms": MS} for scripts).
    Grant {
        #[arg(value_parser = parse_duration)]
        ttl: Duration,
    },
    /// Renew a lease every third of its TTL until interrupted.
    #[command(visible_alias = "keep-alive")]
    Keepalive {
        id: LeaseId,
        /// Renew once and exit.
        #[arg(long)]
        once: bool,
    },
    /// Revoke a lease, releasing every lock it holds; or, with --identity
    /// or --source (admin role), every lease of one identity or source
    /// address, printing how many.
    #[command(group(clap::ArgGroup::new("whose").required(true).args(["id", "identity", "source"])))]
    Revoke {
        id: Option<LeaseId>,
        /// Every lease granted by this identity (a user of the auth file).
        #[arg(long)]
        identity: Option<String>,
        /// Every lease granted from this IP address, on a cluster without
        /// authentication (where quotas count per source address).
        #[arg(long)]
        source: Option<std::net::IpAddr>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Give a lease a new TTL from now (shorter or longer; replicated, so
    /// a new leader keeps it): extends a lock held on its own lease.
    SetTtl {
        id: LeaseId,
        #[arg(value_parser = parse_duration)]
        ttl: Duration,
    },
    /// A lease's TTL, time left, and the locks it holds or waits for.
    #[command(visible_alias = "timetolive")]
    Ttl { id: LeaseId },
    /// Every live lease.
    List,
}

/// A lease as `grant`, `keepalive` and `list` print it.
#[derive(Serialize)]
struct LeaseRow {
    id: LeaseId,
    ttl_ms: u64,
}

pub async fn run(args: LeaseArgs) -> Result<u8, String> {
    let ep = &args.endpoints;
    let client = match &args.command {
        LeaseCommand::Revoke { admin, .. } => admin.connect(ep).await?,
        _ => ep.connect().await?,
    };
    let explain = |e| ep.explain(&e);
    match args.command {
        LeaseCommand::Grant { ttl } => {
            let id = client.grant_lease(ttl).await.map_err(explain)?;
            match ep.output {
                Output::Json => print_json(&LeaseRow {
                    id,
                    ttl_ms: ttl.as_millis() as u64,
                })?,
                Output::Table => out!("lease {id} granted with TTL {}", format_duration(ttl)),
            }
        }
        LeaseCommand::Keepalive { id, once } => keep_alive(&client, ep, id, once).await?,
        LeaseCommand::Revoke {
            id: None,
            identity,
            source,
            ..
        } => {
            let account = match (identity, source) {
                (Some(name), _) => LeaseAccount::Identity(name),
                (None, Some(addr)) => LeaseAccount::Source(addr),
                (None, None) => unreachable!("clap requires an id, --identity or --source"),
            };
            revoke_all(&client, ep, &account).await?;
        }
        LeaseCommand::Revoke { id: Some(id), .. } => {
            let released = client.revoke(id).await.map_err(explain)?;
            #[derive(Serialize)]
            struct Revoked {
                id: LeaseId,
                released: u32,
            }
            match ep.output {
                Output::Json => print_json(&Revoked { id, released })?,
                Output::Table => out!("lease {id} revoked; {released} hold(s) released"),
            }
        }
        LeaseCommand::SetTtl { id, ttl } => {
            let ttl = client.set_lease_ttl(id, ttl).await.map_err(explain)?;
            match ep.output {
                Output::Json => print_json(&LeaseRow {
                    id,
                    ttl_ms: ttl.as_millis() as u64,
                })?,
                Output::Table => out!("lease {id} now ends {} from now", format_duration(ttl)),
            }
        }
        LeaseCommand::Ttl { id } => {
            let ttl = client.time_to_live(id).await.map_err(explain)?;
            print_ttl(id, &ttl, ep.output)?;
        }
        LeaseCommand::List => {
            let rows: Vec<LeaseRow> = client
                .leases()
                .await
                .map_err(explain)?
                .into_iter()
                .map(|(id, ttl)| LeaseRow {
                    id,
                    ttl_ms: ttl.as_millis() as u64,
                })
                .collect();
            match ep.output {
                Output::Json => print_json(&rows)?,
                Output::Table => {
                    out!("{:<20} {:>10}", "ID", "TTL");
                    for r in rows {
                        let ttl = format_duration(Duration::from_millis(r.ttl_ms));
                        out!("{:<20} {:>10}", r.id, ttl);
                    }
                }
            }
        }
    }
    Ok(EXIT_SUCCESS)
}

/// Revokes every lease of `account` and prints how many.
async fn revoke_all(client: &Client, ep: &Endpoints, account: &LeaseAccount) -> Result<(), String> {
    let done = client
        .revoke_all(account)
        .await
        .map_err(|e| ep.explain(&e))?;
    let whose = match account {
        LeaseAccount::Identity(name) => format!("identity {name}"),
        LeaseAccount::Source(addr) => format!("source {addr}"),
    };
    #[derive(Serialize)]
    struct Revoked<'a> {
        whose: &'a str,
        revoked: u64,
        released: u64,
    }
    match ep.output {
        Output::Json => print_json(&Revoked {
            whose: &whose,
            revoked: done.revoked,
            released: done.released,
        })?,
        Output::Table => out!(
            "{} lease(s) of {whose} revoked; {} hold(s) released",
            done.revoked,
            done.released
        ),
    }
    Ok(())
}

/// Renews until interrupted (or once), one line per renewal.
async fn keep_alive(
    client: &Client,
    ep: &Endpoints,
    id: LeaseId,
    once: bool,
) -> Result<(), String> {
    let mut interrupts = Interrupts::watch()?;
    loop {
        let ttl = client.keep_alive(id).await.map_err(|e| ep.explain(&e))?;
        let row = LeaseRow {
            id,
            ttl_ms: ttl.as_millis() as u64,
        };
        match ep.output {
            Output::Json => print_json_line(&row)?,
            Output::Table => out!("lease {id} kept alive; TTL {}", format_duration(ttl)),
        }
        if once {
            return Ok(());
        }
        let next = Instant::now() + ttl / 3;
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = interrupts.recv() => return Ok(()),
        }
    }
}

fn print_ttl(id: LeaseId, ttl: &raftlock_client::LeaseTtl, output: Output) -> Result<(), String> {
    #[derive(Serialize)]
    struct Attachment<'a> {
        name: &'a str,
        owner: &'a str,
        held: bool,
    }
    #[derive(Serialize)]
    struct Ttl<'a> {
        id: LeaseId,
        granted_ttl_ms: u64,
        remaining_ms: Option<u64>,
        attachments: Vec<Attachment<'a>>,
    }
    let view = Ttl {
        id,
        granted_ttl_ms: ttl.granted_ttl.as_millis() as u64,
        remaining_ms: ttl.remaining.map(|r| r.as_millis() as u64),
        attachments: ttl
            .attachments
            .iter()
            .map(|(name, owner, held)| Attachment {
                name,
                owner,
                held: *held,
            })
            .collect(),
    };
    if output == Output::Json {
        return print_json(&view);
    }
    let remaining = ttl
        .remaining
        .map(|r| format!("{} ms left", r.as_millis()))
        .unwrap_or_else(|| "time left unknown".into());
    out!(
        "lease {id}: TTL {}, {remaining}",
        format_duration(ttl.granted_ttl)
    );
    for a in &view.attachments {
        let role = if a.held { "holds" } else { "waits for" };
        out!("  {role} lock {} as {}", a.name, a.owner);
    }
    Ok(())
}
