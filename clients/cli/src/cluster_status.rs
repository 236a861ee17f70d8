//! `raftlock cluster status`: every member's own view, and a verdict on
//! the cluster's health that sets the exit code.
//!
//! Every endpoint is asked at once, each with its own bound, and the
//! members come from the first that answers: a stopped (SIGSTOPped) node
//! that accepts connections and never answers costs [`NODE_TIMEOUT`], not
//! the whole command. Then every member is asked for its own figures, at
//! once. The cluster is healthy when a quorum of voters answers and the
//! leader they name answers and is ready (it heard a quorum lately, as
//! `/readyz` says); an unreachable minority is a warning.

use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use serde::Serialize;

use raftlock::pb;
use raftlock_client::{Client, ClientOptions};

/// The exit codes of `cluster status` and `endpoint health`, as their
/// `--help` (and so the man pages) list them.
pub const HEALTH_EXIT_CODES: &str = "\
Exit codes:
  0   healthy: a quorum of voters answers and the leader is ready
      (endpoint health: every endpoint served a linearizable read)
  1   unhealthy or unreachable: no quorum, no leader, a leader that has
      not heard a quorum lately, an endpoint that failed its check, or no
      node answered; what is wrong is printed on stderr (and what is known
      on stdout)
  2   bad usage (unknown flag, bad value)";

/// How long one member may take to answer `cluster status`.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(2);

/// One node's row in `cluster status`.
#[derive(Debug, Serialize)]
pub struct NodeRow {
    pub id: u64,
    pub client_addr: String,
    pub peer_addr: String,
    pub voter: bool,
    /// "leader", "follower", ... or "unreachable".
    pub role: String,
    pub term: Option<u64>,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// Why the node is not ready (its `/readyz` reason); `None` when it
    /// is ready or did not answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unready: Option<String>,
}

/// What `cluster status` prints.
#[derive(Debug, Serialize)]
pub struct ClusterView {
    pub leader: Option<u64>,
    pub term: u64,
    pub nodes: Vec<NodeRow>,
    /// Whether the cluster can serve: see [`verdict`].
    pub healthy: bool,
    /// What makes it unhealthy (empty when healthy).
    pub problems: Vec<String>,
    /// What is wrong that does not stop it serving (a minority down).
    pub warnings: Vec<String>,
}

/// Client settings for asking one node once: a short retry budget, so an
/// answer or an error comes back within about `limit`.
fn one_node_options(options: &ClientOptions, limit: Duration) -> ClientOptions {
    ClientOptions {
        retry_for: limit,
        ..options.clone()
    }
}

/// Node `addr`'s own status, within `limit`; `linearizable` asks it to
/// pass a read barrier through the leader first.
pub async fn ask_node(
    options: &ClientOptions,
    addr: &str,
    limit: Duration,
    linearizable: bool,
) -> Result<pb::StatusResponse, raftlock_client::Error> {
    let client = Client::connect_with([addr.to_string()], one_node_options(options, limit)).await?;
    let call = async {
        if linearizable {
            client.linearizable_status().await
        } else {
            client.status().await
        }
    };
    tokio::time::timeout(limit, call).await.unwrap_or_else(|_| {
        Err(raftlock_client::Error::Unavailable(format!(
            "no answer from {addr} within {limit:?} (is the process stopped, or overloaded?)"
        )))
    })
}

/// The first status any of `endpoints` answers that names a leader among
/// its members (a node that just joined may know neither, one cut off no
/// leader), or else the first answer of any; each endpoint is asked at once for up to `limit`. If none
/// answers: every endpoint's error, first endpoint first.
pub async fn first_answer(
    options: &ClientOptions,
    endpoints: &[String],
    limit: Duration,
) -> Result<pb::StatusResponse, Vec<raftlock_client::Error>> {
    let mut asks: FuturesUnordered<_> = endpoints
        .iter()
        .enumerate()
        .map(|(i, addr)| async move { (i, ask_node(options, addr, limit, false).await) })
        .collect();
    let mut errors = Vec::new();
    let mut leaderless = None;
    while let Some((i, answer)) = asks.next().await {
        match answer {
            Ok(status) if status.members.iter().any(|m| m.id == status.leader_id) => {
                return Ok(status)
            }
            Ok(status) => leaderless = leaderless.or(Some(status)),
            Err(e) => errors.push((i, e)),
        }
    }
    if let Some(status) = leaderless {
        return Ok(status);
    }
    errors.sort_by_key(|(i, _)| *i);
    Err(errors.into_iter().map(|(_, e)| e).collect())
}

/// Asks `endpoints` for the members, then every member for its own view;
/// judges the cluster's health.
pub async fn gather(
    options: &ClientOptions,
    endpoints: &[String],
    retry_for: Duration,
) -> Result<ClusterView, Vec<raftlock_client::Error>> {
    let first = first_answer(options, endpoints, retry_for.max(NODE_TIMEOUT)).await?;
    let asks = first.members.iter().map(|m| async move {
        ask_node(options, &m.client_addr, NODE_TIMEOUT, false)
            .await
            .ok()
    });
    let answers = futures::future::join_all(asks).await;
    Ok(view(&first, &answers))
}

/// The view built from `first` (whose members are shown) and each
/// member's own answer (`None`: it did not answer), in member order.
fn view(first: &pb::StatusResponse, answers: &[Option<pb::StatusResponse>]) -> ClusterView {
    let nodes: Vec<NodeRow> = first
        .members
        .iter()
        .zip(answers)
        .map(|(m, own)| NodeRow {
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
            unready: own
                .as_ref()
                .map(|s| s.unready_reason.clone())
                .filter(|r| !r.is_empty()),
        })
        .collect();
    // The leader named in the highest term any answer knows.
    let (term, leader) = std::iter::once(first)
        .chain(answers.iter().flatten())
        .filter(|s| s.leader_id != 0)
        .map(|s| (s.term, s.leader_id))
        .max()
        .map(|(term, leader)| (term, Some(leader)))
        .unwrap_or((first.term, None));
    let (problems, warnings) = verdict(&nodes, leader);
    ClusterView {
        leader,
        term,
        healthy: problems.is_empty(),
        nodes,
        problems,
        warnings,
    }
}

/// What keeps the cluster from serving, and what does not: a quorum of
/// voters must answer, a leader must be known, answer, and be ready.
pub fn verdict(nodes: &[NodeRow], leader: Option<u64>) -> (Vec<String>, Vec<String>) {
    let voters: Vec<&NodeRow> = nodes.iter().filter(|n| n.voter).collect();
    let answering = voters.iter().filter(|n| n.term.is_some()).count();
    let quorum = voters.len() / 2 + 1;
    let silent: Vec<String> = nodes
        .iter()
        .filter(|n| n.term.is_none())
        .map(|n| format!("node {} ({})", n.id, n.client_addr))
        .collect();
    let mut problems = Vec::new();
    let mut warnings = Vec::new();
    if answering < quorum {
        problems.push(format!(
            "no quorum: {answering} of {} voters answer ({} needed); not answering: {}",
            voters.len(),
            quorum,
            silent.join(", ")
        ));
    } else if !silent.is_empty() {
        warnings.push(format!("not answering: {}", silent.join(", ")));
    }
    match leader.map(|id| (id, nodes.iter().find(|n| n.id == id))) {
        None => problems.push(
            "no leader: no member that answers knows one (an election is under way, or the \
             voters cannot reach each other)"
                .to_string(),
        ),
        Some((id, None)) => problems.push(format!("leader {id} is not a member")),
        Some((id, Some(row))) if row.term.is_none() => {
            problems.push(format!("leader {id} does not answer"))
        }
        Some((id, Some(row))) => {
            if let Some(reason) = &row.unready {
                problems.push(format!("leader {id} is not ready: {reason}"));
            }
        }
    }
    (problems, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u64, voter: bool, answers: bool, unready: Option<&str>) -> NodeRow {
        NodeRow {
            id,
            client_addr: format!("127.0.0.1:{}", 7000 + id),
            peer_addr: String::new(),
            voter,
            role: if answers { "follower" } else { "unreachable" }.into(),
            term: answers.then_some(3),
            last_log_index: None,
            applied_index: None,
            unready: unready.map(str::to_string),
        }
    }

    #[test]
    fn a_quorum_and_a_ready_leader_is_healthy_and_a_silent_minority_a_warning() {
        let nodes = [
            row(1, true, true, None),
            row(2, true, true, None),
            row(3, true, false, None),
        ];
        let (problems, warnings) = verdict(&nodes, Some(1));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(warnings, ["not answering: node 3 (127.0.0.1:7003)"]);
    }

    #[test]
    fn each_way_of_being_unhealthy_is_named() {
        let stopped = [
            row(
                1,
                true,
                true,
                Some("leader has not heard from a quorum for 900 ms"),
            ),
            row(2, true, false, None),
            row(3, true, false, None),
            row(4, false, true, None),
        ];
        let (problems, _) = verdict(&stopped, Some(1));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with("no quorum: 1 of 3 voters answer (2 needed)"));
        assert!(problems[1].contains("leader 1 is not ready: leader has not heard"));
        let healthy = [row(1, true, true, None), row(2, true, true, None)];
        assert!(verdict(&healthy, None).0[0].starts_with("no leader"));
        assert!(verdict(&healthy, Some(9)).0[0].contains("leader 9 is not a member"));
        let leader_down = [
            row(1, true, false, None),
            row(2, true, true, None),
            row(3, true, true, None),
        ];
        assert_eq!(
            verdict(&leader_down, Some(1)).0,
            ["leader 1 does not answer"]
        );
    }
}
