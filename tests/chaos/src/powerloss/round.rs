//! One power-loss round: load, the cut at the planned moment, restart from
//! the data dirs, checks (a)–(c) and (e), the fence probes. The plan of
//! every round (how long the load runs, which nodes lose power) is drawn
//! from the seed before the first round, so a seed replays the schedule.

use std::collections::BTreeMap;
use std::time::Duration;

use raftlock::Client;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;

use super::answer::Answer;
use super::calls::Calls;
use super::disk::DataDisk;
use super::findings::Findings;
use super::ledger::{Book, Ledger};
use super::load::Load;
use super::node_logs::NodeLogs;
use super::selection::Selection;
use super::{node_logs, probe, verify};
use crate::cluster::Cluster;
use crate::Error;

/// How long a restarted node may take to answer, and the cluster to
/// elect a leader.
const RESTART_WITHIN: Duration = Duration::from_secs(60);

/// What one round does.
#[derive(Debug, Clone)]
pub struct RoundPlan {
    /// How long the load runs before the cut.
    pub load: Duration,
    /// The nodes that lose power: all three, or two of them.
    pub victims: Vec<u64>,
}

/// Draws the plan of `rounds` rounds: the first two cut all nodes once
/// and two nodes once (in a seeded order), later ones either.
pub fn plan(seed: u64, rounds: u32, max_load: Duration, ids: &[u64]) -> Vec<RoundPlan> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let first_all = rng.gen_bool(0.5);
    (0..rounds)
        .map(|r| {
            let all = match r {
                0 => first_all,
                1 => !first_all,
                _ => rng.gen_bool(0.5),
            };
            let mut victims: Vec<u64> = if all {
                ids.to_vec()
            } else {
                ids.choose_multiple(&mut rng, 2).copied().collect()
            };
            victims.sort_unstable();
            let ms = max_load.as_millis() as u64;
            let load = Duration::from_millis(rng.gen_range(ms / 3..=ms.max(1)));
            RoundPlan { load, victims }
        })
        .collect()
}

/// What a round needs from the run.
pub struct RoundCtx<'a> {
    pub cluster: &'a mut Cluster,
    pub disks: &'a BTreeMap<u64, DataDisk>,
    pub ledger: &'a std::sync::Arc<Ledger>,
    pub found: &'a mut Findings,
    /// For samples (not the plan: its draws depend on timing).
    pub rng: &'a mut ChaCha8Rng,
    pub seed: u64,
    pub logs: &'a mut NodeLogs,
}

/// Runs round number `cut` (1-based; the cut it ends with has the same
/// number). Answers its line for the summary, and whether the cluster
/// came back (if not, the run cannot go on).
pub async fn run(ctx: RoundCtx<'_>, cut: u32, plan: &RoundPlan) -> Result<(String, bool), Error> {
    let calls = Calls {
        client: Client::connect(ctx.cluster.client_endpoints()).await?,
        ledger: ctx.ledger.clone(),
    };
    let before = answered(&ctx.ledger.book());
    let load = Load::start(&calls, cut - 1, ctx.seed);
    tokio::time::sleep(plan.load).await;
    let leader = ctx.cluster.leader().await;
    ctx.cluster.kill_many(&plan.victims).await?;
    load.stop().await;
    let sel = {
        let book = ctx.ledger.book();
        Selection::take(&book, ctx.rng)
    };
    ctx.ledger.cut();
    let (answered_now, cut_short) = answered(&ctx.ledger.book());
    let mut disks = Vec::new();
    for id in &plan.victims {
        if let Some(disk) = ctx.disks.get(id) {
            disk.cut_power()?;
            disks.push(format!("n{id}: {}", disk.describe()));
        }
    }
    let who = if plan.victims.len() == ctx.cluster.ids().len() {
        "all"
    } else {
        "two"
    };
    let mut line = format!(
        "round {cut}: load {:.1}s, {} calls answered, {} cut short; power cut on {} ({who}; leader was {})\n  disks: {}",
        plan.load.as_secs_f64(),
        answered_now - before.0,
        cut_short - before.1,
        names(&plan.victims),
        leader.map_or("unknown".into(), |l| format!("n{l}")),
        disks.join(", ")
    );
    let found_before = ctx.found.counts();
    let Some((leader, took)) = restart(ctx.cluster, &plan.victims, cut, ctx.found).await? else {
        line.push_str("\n  restart: NO LEADER; the run ends here");
        unanswered(ctx.found, &sel);
        return Ok((line, false));
    };
    line.push_str(&format!(
        "\n  restart: leader n{leader} after {:.1}s; checked {} locks, {} elections, {} leases",
        took.as_secs_f64(),
        sel.locks.len(),
        sel.elections.len(),
        sel.leases.len()
    ));
    // A fresh client: the load's may still point at a node that died.
    let calls = Calls {
        client: Client::connect(ctx.cluster.client_endpoints()).await?,
        ..calls
    };
    eprintln!("raftlock-chaos powerloss: cut {cut}: restarted; checking");
    if let Some(lease) = serves(&calls, cut, ctx.found).await {
        verify::check(&calls.client, &sel, cut, ctx.found).await;
        eprintln!("raftlock-chaos powerloss: cut {cut}: probing fences");
        let lowest = probe::run(&calls, lease, &sel, cut, ctx.rng, ctx.found).await;
        line.push_str(&format!(
            "\n  fences: highest acknowledged before the cut {}, lowest granted after {}",
            sel.max_fence,
            lowest.map_or("(none)".into(), |f| f.to_string())
        ));
    } else {
        // Not serving: every read would only time out.
        unanswered(ctx.found, &sel);
    }
    for (id, panic) in ctx.logs.new_panics(ctx.cluster) {
        ctx.found
            .restarts
            .violate(format!("by cut {cut}: n{id} panicked: {panic}"));
    }
    ctx.ledger.taint(ctx.found.take_taint());
    let now = ctx.found.counts();
    let new: Vec<usize> = (0..now.len()).map(|i| now[i] - found_before[i]).collect();
    line.push_str(&format!(
        "\n  violations: holds {}, leases {}, fences {}, leaders {}, restarts {}",
        new[0], new[1], new[2], new[3], new[4]
    ));
    Ok((line, true))
}

/// Counts every read of `sel` as unanswered: the cluster cannot serve.
fn unanswered(found: &mut Findings, sel: &Selection) {
    found.holds.unanswered += sel.locks.len() as u64;
    found.elections.unanswered += sel.elections.len() as u64;
    found.leases.unanswered += sel.leases.len() as u64;
}

/// Calls answered so far, and calls that never were.
fn answered(book: &Book) -> (u64, u64) {
    book.tally.values().fold((0, 0), |(a, c), t| {
        (a + t.ok + t.fail + t.unknown, c + t.cut())
    })
}

fn names(ids: &[u64]) -> String {
    ids.iter()
        .map(|id| format!("n{id}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Check (e), second half: the restarted cluster serves a write (a lease
/// grant, tried a few times). Answers the lease, for the probes.
async fn serves(calls: &Calls, cut: u32, found: &mut Findings) -> Option<u64> {
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

/// Check (e): restarts `victims`; each must come up and answer, and the
/// cluster must elect a leader. Answers the leader and how long it took.
async fn restart(
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
    let options = raftlock::client::ClientOptions {
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
