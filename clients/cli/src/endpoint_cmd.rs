//! `raftlock endpoint health [--cluster] [--command-timeout D]`: whether
//! each endpoint can serve a linearizable read now, one line per endpoint,
//! as `etcdctl endpoint health` prints them; exit 0 only if every one can.
//!
//! An endpoint is healthy when its node confirms, through the leader, that
//! a quorum still follows that leader and it applied everything committed
//! before the check (the read barrier of every linearizable read, asked
//! with `Status { linearizable }`), within `--command-timeout`. Each node is
//! also asked, without the barrier, for its readiness reason (as `/readyz`
//! gives it), so the line of a node that fails says why.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::cluster_status::{ask_node, first_answer, HEALTH_EXIT_CODES, NODE_TIMEOUT};
use super::{print_json, Endpoints, Output, EXIT_SUCCESS};
use raftlock::duration::parse_duration;
use raftlock_client::ClientOptions;

/// `raftlock endpoint ...`
#[derive(Debug, clap::Args)]
pub struct EndpointArgs {
    #[command(flatten)]
    endpoints: Endpoints,
    #[command(subcommand)]
    command: EndpointCommand,
}

#[derive(Debug, clap::Subcommand)]
enum EndpointCommand {
    /// Check that each endpoint serves a linearizable read through the
    /// leader within --command-timeout; exit 0 only if all do.
    #[command(after_help = HEALTH_EXIT_CODES)]
    Health {
        /// Check every member of the cluster (their client addresses, as
        /// the first endpoint that answers lists them), not only
        /// --endpoints.
        #[arg(long)]
        cluster: bool,
        /// How long each endpoint may take to pass its check.
        #[arg(long, value_name = "D", default_value = "5s", value_parser = parse_duration)]
        command_timeout: Duration,
    },
}

/// How long the plain status asked beside each check may take.
const PLAIN_LIMIT: Duration = Duration::from_secs(1);

/// One endpoint's result.
#[derive(Debug, Serialize)]
struct EndpointHealth {
    endpoint: String,
    health: bool,
    /// How long the check took, in milliseconds.
    took_ms: f64,
    /// The leader the node named, when it passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    leader: Option<u64>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub async fn run(args: EndpointArgs) -> Result<u8, String> {
    let EndpointCommand::Health {
        cluster,
        command_timeout,
    } = args.command;
    let ep = &args.endpoints;
    let options = ep.options().map_err(|e| ep.explain(&e))?;
    let targets = if cluster {
        let first = first_answer(&options, &ep.endpoints, command_timeout.max(NODE_TIMEOUT))
            .await
            .map_err(|errors| match errors.first() {
                Some(e) => format!("cannot list the members: {}", ep.explain(e)),
                None => "no endpoint given".to_string(),
            })?;
        first.members.into_iter().map(|m| m.client_addr).collect()
    } else {
        ep.endpoints.clone()
    };
    let checks = targets
        .iter()
        .map(|addr| check(&options, addr, command_timeout));
    let results = futures::future::join_all(checks).await;
    if ep.output == Output::Json {
        print_json(&results)?;
    } else {
        for r in &results {
            match &r.error {
                None => out!(
                    "{} is healthy: successfully served a linearizable read through leader \
                     {}: took = {:.1}ms",
                    r.endpoint,
                    r.leader.unwrap_or(0),
                    r.took_ms
                ),
                Some(e) => eprintln!(
                    "{} is unhealthy: failed to serve a linearizable read: {e}",
                    r.endpoint
                ),
            }
        }
    }
    let unhealthy = results.iter().filter(|r| !r.health).count();
    if unhealthy == 0 {
        return Ok(EXIT_SUCCESS);
    }
    Err(format!(
        "unhealthy cluster: {unhealthy} of {} endpoints failed their check",
        results.len()
    ))
}

/// Checks endpoint `addr` within `limit`. Its plain status is asked at
/// the same time, so a failed check can say what the node says of itself.
async fn check(options: &ClientOptions, addr: &str, limit: Duration) -> EndpointHealth {
    let start = Instant::now();
    let (answer, plain) = tokio::join!(
        ask_node(options, addr, limit, true),
        ask_node(options, addr, limit.min(PLAIN_LIMIT), false)
    );
    let took_ms = start.elapsed().as_secs_f64() * 1000.0;
    let (leader, error) = match (answer, plain) {
        (Ok(status), _) => (Some(status.leader_id), None),
        (Err(e), Ok(own)) if !own.unready_reason.is_empty() => (
            None,
            Some(format!(
                "node {} answers but is not ready: {} ({e})",
                own.node_id, own.unready_reason
            )),
        ),
        (Err(e), _) => (None, Some(e.to_string())),
    };
    EndpointHealth {
        endpoint: addr.to_string(),
        health: error.is_none(),
        took_ms,
        leader,
        error,
    }
}
