//! `raftlock cluster status|add-learner|promote|remove`: the commands and
//! how their answers are printed. The status gathering and its health
//! verdict live in `cluster_status`, the wait for a learner to catch up in
//! `learner_wait`.

use std::time::Duration;

use tokio::time::Instant;

use serde::Serialize;

use super::admin_args::AdminArgs;
use super::cluster_status::{self, HEALTH_EXIT_CODES, NODE_TIMEOUT};
use super::learner_wait::{wait_caught_up, Learner};
use super::{Endpoints, Output, EXIT_SUCCESS};
use raftlock::duration::parse_duration;
use raftlock::pb;
use raftlock_client::Client;

/// `raftlock cluster ...`
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: ClusterCommand,
}

/// How long `add-learner` and `promote` wait for a learner to catch up
/// by default.
const CATCH_UP_TIMEOUT: &str = "5m";

#[derive(Debug, clap::Subcommand)]
enum ClusterCommand {
    /// Members, leader, term, each node's last log / applied index, and
    /// the cluster's health: exits 1 without a quorum or a ready leader,
    /// saying what is wrong.
    #[command(after_help = HEALTH_EXIT_CODES)]
    Status,
    /// Add a non-voting member; returns once it has caught up (it holds
    /// what the leader held when it was added), printing its progress on
    /// stderr during a long catch-up.
    #[command(after_help = MEMBERSHIP_EXIT_CODES)]
    AddLearner {
        /// New node's id.
        id: u64,
        /// Its peer address (host:port).
        peer_addr: String,
        /// Its client address (host:port).
        client_addr: String,
        /// How long to wait for it to catch up. On timeout it stays a
        /// learner and keeps catching up; the command exits 1 saying so.
        #[arg(long, value_name = "D", default_value = CATCH_UP_TIMEOUT, value_parser = parse_duration)]
        timeout: Duration,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Make a learner a voter, once it has caught up with the leader
    /// (waited for, with progress on stderr, up to --timeout).
    #[command(after_help = MEMBERSHIP_EXIT_CODES)]
    Promote {
        id: u64,
        /// How long to wait for a lagging learner to catch up first.
        #[arg(long, value_name = "D", default_value = CATCH_UP_TIMEOUT, value_parser = parse_duration)]
        timeout: Duration,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove a member (voter or learner).
    #[command(after_help = MEMBERSHIP_EXIT_CODES)]
    Remove {
        id: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// The exit codes of `add-learner`, `promote` and `remove`.
pub(super) const MEMBERSHIP_EXIT_CODES: &str = "\
Exit codes:
  0   done (add-learner, promote: the learner caught up)
  1   refused, failed, or the learner still catching up at --timeout
      (the message on stderr says which, and what to do)
  2   bad usage (unknown flag, bad value)";

pub async fn run(args: ClusterArgs) -> Result<u8, String> {
    let start = Instant::now();
    let output = args.endpoints.output;
    let (client, timeout) = match &args.command {
        ClusterCommand::Status => return status(&args.endpoints).await,
        ClusterCommand::AddLearner { admin, timeout, .. }
        | ClusterCommand::Promote { admin, timeout, .. } => {
            (admin.connect(&args.endpoints).await?, (start, *timeout))
        }
        ClusterCommand::Remove { admin, .. } => (
            admin.connect(&args.endpoints).await?,
            (start, Duration::ZERO),
        ),
    };
    let check = |e: raftlock_client::Error| format!("{e} (check `raftlock cluster status`)");
    let members = match args.command {
        ClusterCommand::Status => unreachable!("answered above"),
        ClusterCommand::AddLearner {
            id,
            peer_addr,
            client_addr,
            ..
        } => {
            let members = client
                .add_learner(id, &peer_addr, &client_addr)
                .await
                .map_err(check)?;
            // Everything the leader holds now, the entry that added the
            // learner included.
            if let Some(target) = leader_last_index(&client).await {
                let learner = Learner {
                    id,
                    client_addr: &client_addr,
                };
                wait_caught_up(client.options(), &learner, target, timeout).await?;
            }
            members
        }
        ClusterCommand::Promote { id, .. } => {
            wait_before_promote(&client, id, timeout).await?;
            client.promote(id).await.map_err(check)?
        }
        ClusterCommand::Remove { id, .. } => client.remove_member(id).await.map_err(check)?,
    };
    print_members(&members, output)?;
    Ok(EXIT_SUCCESS)
}

/// `cluster status`: prints what is known, then fails if the cluster is
/// unhealthy (see `cluster_status`).
async fn status(endpoints: &Endpoints) -> Result<u8, String> {
    let options = endpoints.options().map_err(|e| endpoints.explain(&e))?;
    let view = cluster_status::gather(&options, &endpoints.endpoints, options.retry_for)
        .await
        .map_err(|errors| unreachable_message(endpoints, &errors))?;
    print_status(&view, endpoints.output)?;
    for warning in &view.warnings {
        eprintln!("warning: {warning}");
    }
    if view.healthy {
        return Ok(EXIT_SUCCESS);
    }
    Err(format!(
        "the cluster is unhealthy: {}; bring back a majority of the voters (restart or \
         resume them, or mend the network), then check again",
        view.problems.join("; ")
    ))
}

/// What to say when no endpoint answered: the first endpoint's error,
/// worded for the command line.
fn unreachable_message(endpoints: &Endpoints, errors: &[raftlock_client::Error]) -> String {
    match errors.first() {
        Some(e) => endpoints.explain(e),
        None => "no endpoint given".to_string(),
    }
}

/// The leader's last log index, asked of the leader itself (`None`: no
/// leader known or it does not answer; the caller then does not wait).
async fn leader_last_index(client: &Client) -> Option<u64> {
    let options = client.options();
    let first = cluster_status::first_answer(options, client.endpoints(), NODE_TIMEOUT)
        .await
        .ok()?;
    if first.leader_id == first.node_id {
        return Some(first.last_log_index);
    }
    let leader = first.members.iter().find(|m| m.id == first.leader_id)?;
    cluster_status::ask_node(options, &leader.client_addr, NODE_TIMEOUT, false)
        .await
        .ok()
        .map(|s| s.last_log_index)
}

/// Before promoting learner `id`: waits until it holds what the leader
/// holds now, until `timeout` (from the command's start) ends. A node that
/// is not a learner, or does not answer, is not waited for: the promotion
/// itself says what is wrong.
async fn wait_before_promote(
    client: &Client,
    id: u64,
    timeout: (Instant, Duration),
) -> Result<(), String> {
    let Ok(first) =
        cluster_status::first_answer(client.options(), client.endpoints(), NODE_TIMEOUT).await
    else {
        return Ok(());
    };
    let Some(member) = first.members.iter().find(|m| m.id == id && !m.voter) else {
        return Ok(());
    };
    // A learner that does not answer is left to the leader, which knows
    // when it last heard from it (and refuses one that looks down).
    if cluster_status::ask_node(client.options(), &member.client_addr, NODE_TIMEOUT, false)
        .await
        .is_err()
    {
        return Ok(());
    }
    let Some(target) = leader_last_index(client).await else {
        return Ok(());
    };
    let learner = Learner {
        id,
        client_addr: &member.client_addr,
    };
    wait_caught_up(client.options(), &learner, target, timeout).await
}

fn print_status(view: &cluster_status::ClusterView, output: Output) -> Result<(), String> {
    if output == Output::Json {
        out!(
            "{}",
            serde_json::to_string_pretty(view).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let leader = view
        .leader
        .map(|l| l.to_string())
        .unwrap_or_else(|| "none".into());
    let health = if view.healthy { "healthy" } else { "unhealthy" };
    out!("leader: {leader}  term: {}  {health}", view.term);
    out!(
        "{:<4} {:<22} {:<22} {:<8} {:<11} {:>6} {:>9} {:>9}",
        "ID",
        "CLIENT",
        "PEER",
        "VOTER",
        "ROLE",
        "TERM",
        "LAST_LOG",
        "APPLIED"
    );
    let show = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
    for n in &view.nodes {
        out!(
            "{:<4} {:<22} {:<22} {:<8} {:<11} {:>6} {:>9} {:>9}",
            n.id,
            n.client_addr,
            n.peer_addr,
            n.voter,
            n.role,
            show(n.term),
            show(n.last_log_index),
            show(n.applied_index)
        );
    }
    Ok(())
}

fn print_members(members: &[pb::Member], output: Output) -> Result<(), String> {
    #[derive(Serialize)]
    struct Row<'a> {
        id: u64,
        client_addr: &'a str,
        peer_addr: &'a str,
        voter: bool,
    }
    let rows: Vec<Row> = members
        .iter()
        .map(|m| Row {
            id: m.id,
            client_addr: &m.client_addr,
            peer_addr: &m.peer_addr,
            voter: m.voter,
        })
        .collect();
    if output == Output::Json {
        out!(
            "{}",
            serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    out!("{:<4} {:<22} {:<22} {:<8}", "ID", "CLIENT", "PEER", "VOTER");
    for r in rows {
        out!(
            "{:<4} {:<22} {:<22} {:<8}",
            r.id,
            r.client_addr,
            r.peer_addr,
            r.voter
        );
    }
    Ok(())
}
