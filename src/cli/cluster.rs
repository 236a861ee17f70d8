//! `raftlock cluster status|add-learner|promote|remove`.

use std::time::Duration;

use serde::Serialize;

use super::admin_args::AdminArgs;
use super::{Endpoints, Output, EXIT_SUCCESS};
use crate::client::{Client, ClientOptions};
use crate::pb;

/// `raftlock cluster ...`
#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: ClusterCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ClusterCommand {
    /// Members, leader, term, and each node's last log / applied index.
    Status,
    /// Add a non-voting member; it starts catching up at once.
    AddLearner {
        /// New node's id.
        id: u64,
        /// Its peer address (host:port).
        peer_addr: String,
        /// Its client address (host:port).
        client_addr: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Make a caught-up learner a voter.
    Promote {
        id: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove a member (voter or learner).
    Remove {
        id: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

/// One node's row in `cluster status`.
#[derive(Debug, Serialize)]
struct NodeRow {
    id: u64,
    client_addr: String,
    peer_addr: String,
    voter: bool,
    /// "leader", "follower", ... or "unreachable".
    role: String,
    term: Option<u64>,
    last_log_index: Option<u64>,
    applied_index: Option<u64>,
}

#[derive(Debug, Serialize)]
struct ClusterView {
    leader: Option<u64>,
    term: u64,
    nodes: Vec<NodeRow>,
}

pub async fn run(args: ClusterArgs) -> Result<u8, String> {
    let client = match &args.command {
        ClusterCommand::Status => args.endpoints.connect().await?,
        ClusterCommand::AddLearner { admin, .. }
        | ClusterCommand::Promote { admin, .. }
        | ClusterCommand::Remove { admin, .. } => admin.connect(&args.endpoints).await?,
    };
    let output = args.endpoints.output;
    let members = match args.command {
        ClusterCommand::Status => {
            let view = status(&client).await?;
            print_status(&view, output)?;
            return Ok(EXIT_SUCCESS);
        }
        ClusterCommand::AddLearner {
            id,
            peer_addr,
            client_addr,
            ..
        } => client.add_learner(id, &peer_addr, &client_addr).await,
        ClusterCommand::Promote { id, .. } => client.promote(id).await,
        ClusterCommand::Remove { id, .. } => client.remove_member(id).await,
    }
    .map_err(|e| format!("{e} (check `raftlock cluster status`)"))?;
    print_members(&members, output)?;
    Ok(EXIT_SUCCESS)
}

/// Asks one node for the members, then every member for its own figures.
async fn status(client: &Client) -> Result<ClusterView, String> {
    let first = client
        .status()
        .await
        .map_err(|e| super::failure::explain(&e, client.endpoints()))?;
    let mut nodes = Vec::new();
    for m in &first.members {
        let own = node_status(client, &m.client_addr).await;
        nodes.push(NodeRow {
            id: m.id,
            client_addr: m.client_addr.clone(),
            peer_addr: m.peer_addr.clone(),
            voter: m.voter,
            role: own
                .as_ref()
                .map(|s| s.role.clone())
                .unwrap_or_else(|| "unreachable".into()),
            term: own.as_ref().map(|s| s.term),
            last_log_index: own.as_ref().map(|s| s.last_log_index),
            applied_index: own.as_ref().map(|s| s.applied_index),
        });
    }
    Ok(ClusterView {
        leader: (first.leader_id != 0).then_some(first.leader_id),
        term: first.term,
        nodes,
    })
}

/// One node's own figures, asked with `client`'s settings (TLS included).
async fn node_status(client: &Client, addr: &str) -> Option<pb::StatusResponse> {
    let options = ClientOptions {
        retry_for: Duration::from_millis(500),
        ..client.options().clone()
    };
    let client = Client::connect_with([addr.to_string()], options)
        .await
        .ok()?;
    tokio::time::timeout(Duration::from_secs(2), client.status())
        .await
        .ok()?
        .ok()
}

fn print_status(view: &ClusterView, output: Output) -> Result<(), String> {
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
    out!("leader: {leader}  term: {}", view.term);
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
