//! `raftlock locks list [PREFIX] | describe NAME | check NAME FENCE |
//! force-release NAME`: look at locks, check a fencing token, and the
//! operator's override.

use serde::Serialize;

use super::admin_args::AdminArgs;
use super::lock_view::{print_describe, print_list, LockView};
use super::{print_json, Endpoints, Output, EXIT_FAILURE, EXIT_SUCCESS};

/// `raftlock locks ...`
#[derive(Debug, clap::Args)]
pub struct LocksArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: LocksCommand,
}

#[derive(Debug, clap::Subcommand)]
enum LocksCommand {
    /// Locks (held or waited for) whose name starts with PREFIX.
    List {
        /// Name prefix; all locks when absent.
        #[arg(default_value = "")]
        prefix: String,
        /// Show at most this many (the server caps it at 1000).
        #[arg(long, default_value_t = 1000)]
        limit: u32,
    },
    /// Holders (with fences and hold times) and waiters in queue order.
    Describe { name: String },
    /// Exit 0 if FENCE still holds NAME, 1 if not, 2 if it cannot tell
    /// (cluster unreachable, bad input).
    Check { name: String, fence: u64 },
    /// End every hold on NAME now (operators; holders learn on their next
    /// check). Waiters are granted in order.
    ForceRelease {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

pub async fn run(args: LocksArgs) -> Result<u8, String> {
    let ep = &args.endpoints;
    let client = match &args.command {
        LocksCommand::ForceRelease { admin, .. } => admin.connect(ep).await?,
        _ => ep.connect().await?,
    };
    let explain = |e| ep.explain(&e);
    match args.command {
        LocksCommand::List { prefix, limit } => {
            let locks: Vec<LockView> = client
                .list(&prefix, limit)
                .await
                .map_err(explain)?
                .into_iter()
                .map(Into::into)
                .collect();
            match ep.output {
                Output::Json => print_json(&locks)?,
                Output::Table => print_list(&locks),
            }
        }
        LocksCommand::Describe { name } => {
            let lock = client.describe(&name).await.map_err(explain)?;
            // A free lock is described as one with nobody in it.
            let view = lock.map(LockView::from).unwrap_or_else(|| LockView {
                name: name.clone(),
                semaphore_limit: 0,
                holders: Vec::new(),
                waiters: Vec::new(),
                lock_delay_ms: 0,
                delayed_ms: 0,
            });
            match ep.output {
                Output::Json => print_json(&view)?,
                Output::Table
                    if view.holders.is_empty()
                        && view.waiters.is_empty()
                        && view.lock_delay_ms == 0 =>
                {
                    out!("lock {name} is free: nobody holds or waits for it");
                }
                Output::Table => print_describe(&view),
            }
        }
        LocksCommand::Check { name, fence } => {
            let valid = match client.check(&name, fence).await {
                Ok(valid) => valid,
                // Like grep: 2 means "could not tell", distinct from "no".
                Err(e) => {
                    eprintln!("error: {}", ep.explain(&e));
                    return Ok(2);
                }
            };
            #[derive(Serialize)]
            struct Checked<'a> {
                name: &'a str,
                fence: u64,
                valid: bool,
            }
            match ep.output {
                Output::Json => print_json(&Checked {
                    name: &name,
                    fence,
                    valid,
                })?,
                Output::Table if valid => out!("valid: fence {fence} holds lock {name}"),
                Output::Table => out!("not valid: fence {fence} does not hold lock {name}"),
            }
            if !valid {
                return Ok(EXIT_FAILURE);
            }
        }
        LocksCommand::ForceRelease { name, .. } => {
            let holders = client.force_release(&name).await.map_err(explain)?;
            #[derive(Serialize)]
            struct Released<'a> {
                name: &'a str,
                holders: u32,
            }
            match ep.output {
                Output::Json => print_json(&Released {
                    name: &name,
                    holders,
                })?,
                Output::Table => out!("lock {name}: released {holders} holder(s)"),
            }
        }
    }
    Ok(EXIT_SUCCESS)
}
