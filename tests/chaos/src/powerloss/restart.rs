//! Check (e): the killed nodes restart and answer, a majority runs, the
//! cluster elects a leader, and it serves a read and a write.

use std::time::Duration;

use raftlock_client::Client;
use tokio::time::Instant;

use super::answer::Answer;
use super::calls::Calls;
use super::findings::Findings;
use super::{node_logs, verify};
use crate::cluster::Cluster;
use crate::Error;

/// How long a restarted node may take to answer, and the cluster to
/// elect a leader.
const RESTART_WITHIN: Duration = Duration::from_secs(60);

/// The restarted cluster answers a linearizable read (of a name nobody
/// uses).
pub async fn serves_reads(calls: &Calls, cut: u32, found: &mut Findings) -> bool {
    match verify::read(|| calls.client.describe("pl/serving")).await {
        Answer::Ok(_) => true,
        Answer::Fail(e) | Answer::Unknown(e) => {
            found.restarts.violate(format!(
                "after cut {cut}: the cluster elected a leader but did not serve a read: {e}"
            ));
            false
        }
    }
}

/// And a write (a lease grant, tried a few times). Answers the lease, for
/// the probes.
pub async fn serves_writes(calls: &Calls, cut: u32, found: &mut Findings) -> Option<u64> {
    let mut last = String::new();
    for _ in 0..3 {
        match calls.grant_lease().await {
            Answer::Ok(id) => return Some(id),
            Answer::Fail(e) | Answer::Unknown(e) => last = e,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    found.restarts.violate(format!(
        "after cut {cut}: the cluster elected a leader but did not serve a write: {last}"
    ));
    None
}

/// Restarts `victims`; each must come up and answer, and the
/// cluster must elect a leader. Answers the leader and how long it took.
pub async fn restart(
    cluster: &mut Cluster,
    victims: &[u64],
    cut: u32,
    found: &mut Findings,
) -> Result<Option<(u64, Duration)>, Error> {
    let t = Instant::now();
    for id in victims {
        cluster.start(*id)?;
    }
    found.restarts.add("restarts", victims.len() as u64);
    for id in victims {
        if let Err(why) = wait_answering(cluster, *id, t + RESTART_WITHIN).await {
            let tail = cluster
                .spec(*id)
                .map(|s| node_logs::tail(&s.log))
                .unwrap_or_default();
            found.restarts.violate(format!(
                "after cut {cut}: n{id} {why}; its log ends:\n{tail}"
            ));
        }
    }
    let up = cluster
        .ids()
        .into_iter()
        .filter(|id| cluster.is_up(*id))
        .count();
    if up * 2 <= cluster.ids().len() {
        found.restarts.violate(format!(
            "after cut {cut}: the cluster cannot recover: {up} of {} nodes run",
            cluster.ids().len()
        ));
        return Ok(None);
    }
    match cluster.wait_for_leader(RESTART_WITHIN).await {
        Ok(leader) => Ok(Some((leader, t.elapsed()))),
        Err(e) => {
            found
                .restarts
                .violate(format!("after cut {cut}: the cluster did not recover: {e}"));
            Ok(None)
        }
    }
}

/// Waits until node `id` answers a status call on its own port.
async fn wait_answering(cluster: &mut Cluster, id: u64, until: Instant) -> Result<(), String> {
    let addr = cluster
        .spec(id)
        .map(|s| s.client_addr.to_string())
        .ok_or("is not a node")?;
    let options = raftlock_client::ClientOptions {
        retry_for: Duration::from_millis(100),
        ..Default::default()
    };
    let client = Client::connect_with([addr], options)
        .await
        .map_err(|e| e.to_string())?;
    loop {
        if let Some(status) = cluster.exited(id) {
            return Err(format!("did not restart: it exited ({status})"));
        }
        let answer = tokio::time::timeout(Duration::from_millis(500), client.status()).await;
        if let Ok(Ok(_)) = answer {
            return Ok(());
        }
        if Instant::now() > until {
            return Err(format!("did not answer within {RESTART_WITHIN:?}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Each running node's own view — term, leader, last log index, applied
/// index — for the round's lines: `n1 t3 L1 log 812/812`.
pub async fn views(cluster: &Cluster) -> String {
    let mut parts = Vec::new();
    for id in cluster.ids() {
        let Some(spec) = cluster.spec(id) else {
            continue;
        };
        let options = raftlock_client::ClientOptions {
            retry_for: Duration::from_millis(100),
            ..Default::default()
        };
        let addr = spec.client_addr.to_string();
        let view = match Client::connect_with([addr], options).await {
            Ok(client) => tokio::time::timeout(Duration::from_millis(500), client.status()).await,
            Err(e) => Ok(Err(e)),
        };
        parts.push(match view {
            Ok(Ok(s)) => format!(
                "n{id} t{} L{} log {}/{}",
                s.term, s.leader_id, s.last_log_index, s.applied_index
            ),
            _ => format!("n{id} -"),
        });
    }
    parts.join(", ")
}
