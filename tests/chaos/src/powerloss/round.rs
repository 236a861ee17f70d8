//! One power-loss round: load, the cut at the planned moment, restart from
//! the data dirs, checks (a)–(c) and (e), the fence probes. The plan of
//! every round (how long the load runs, which nodes lose power) is drawn
//! from the seed before the first round, so a seed replays the schedule.

use std::collections::BTreeMap;
use std::time::Duration;

use raftlock_client::Client;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::aimed;
use super::calls::Calls;
use super::disk::DataDisk;
use super::findings::Findings;
use super::ledger::{Book, Ledger};
use super::load::Load;
use super::node_logs::NodeLogs;
use super::selection::Selection;
use super::stage::{self, Aim, Stage, Tally};
use super::{probe, restart, verify};
use crate::cluster::Cluster;
use crate::Error;

/// What one round does.
#[derive(Debug, Clone)]
pub struct RoundPlan {
    /// How long the load runs before the cut.
    pub load: Duration,
    /// The nodes that lose power: all three, or two of them.
    pub victims: Vec<u64>,
    /// Where the cut is aimed (`--stage`); none: at the end of the load.
    pub aim: Option<Aim>,
}

/// Draws the plan of `rounds` rounds: the first two cut all nodes once
/// and two nodes once (in a seeded order), later ones either; each aimed
/// at `stage` (drawn apart, so a seed's timed plan stays the same).
pub fn plan(
    seed: u64,
    rounds: u32,
    max_load: Duration,
    ids: &[u64],
    stage: Stage,
) -> Vec<RoundPlan> {
    let mut plans = timed_plan(seed, rounds, max_load, ids);
    let victims: Vec<Vec<u64>> = plans.iter().map(|p| p.victims.clone()).collect();
    for (plan, aim) in plans.iter_mut().zip(stage::draw(seed, stage, &victims)) {
        plan.aim = aim;
    }
    plans
}

/// The plan's load lengths and victims.
fn timed_plan(seed: u64, rounds: u32, max_load: Duration, ids: &[u64]) -> Vec<RoundPlan> {
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
            RoundPlan {
                load,
                victims,
                aim: None,
            }
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
    /// See [`PowerLossConfig::large_every`](super::PowerLossConfig).
    pub large_every: u32,
    pub logs: &'a mut NodeLogs,
    /// Aimed cuts so far, per stage.
    pub aims: &'a mut Tally,
}

/// Runs round number `cut` (1-based; the cut it ends with has the same
/// number). Answers its lines for the summary, and whether the cluster
/// came back (if not, the run cannot go on).
pub async fn run(
    mut ctx: RoundCtx<'_>,
    cut: u32,
    plan: &RoundPlan,
) -> Result<(String, bool), Error> {
    let found_before = ctx.found.counts();
    let (sel, mut line) = load_and_cut(&mut ctx, cut, plan).await?;
    let restarted = restart::restart(ctx.cluster, &plan.victims, cut, ctx.found).await?;
    match restarted {
        Some((leader, took)) => {
            line.push_str(&format!(
                "\n  restart: leader n{leader} after {:.1}s; checked {} locks, {} elections, {} leases",
                took.as_secs_f64(),
                sel.locks.len(),
                sel.elections.len(),
                sel.leases.len()
            ));
            let views = restart::views(ctx.cluster).await;
            line.push_str(&format!("\n  after: {views}"));
            check(&mut ctx, &sel, cut, &mut line).await?;
        }
        None => {
            line.push_str("\n  restart: NO LEADER; the run ends here");
            unanswered(ctx.found, &sel);
        }
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
    Ok((line, restarted.is_some()))
}

/// The load until the planned moment, the kills, the power cut. Answers
/// the selection to check and the round's first lines.
async fn load_and_cut(
    ctx: &mut RoundCtx<'_>,
    cut: u32,
    plan: &RoundPlan,
) -> Result<(Selection, String), Error> {
    let calls = Calls {
        client: Client::connect(ctx.cluster.client_endpoints()).await?,
        ledger: ctx.ledger.clone(),
    };
    let before = answered(&ctx.ledger.book());
    let load = Load::start(&calls, cut - 1, ctx.seed, ctx.large_every);
    tokio::time::sleep(plan.load).await;
    let leader = ctx.cluster.leader().await;
    let views = restart::views(ctx.cluster).await;
    // An aimed cut waits for its point, then kills at once; `upgrade`'s
    // point is armed after this round's ordinary cut.
    let mut aimed = match &plan.aim {
        Some(aim) if aim.stage != Stage::Upgrade => Some(aimed::fire(ctx.disks, aim).await),
        _ => None,
    };
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
    if let (Some(aim), None) = (&plan.aim, &aimed) {
        aimed = Some(aimed::upgrade(ctx.cluster, ctx.disks, aim, &plan.victims).await?);
    }
    let aimed = match (&plan.aim, aimed) {
        (Some(aim), Some((fired, line))) => {
            ctx.aims.add(aim.stage, fired);
            format!("\n  {line}")
        }
        _ => String::new(),
    };
    let who = if plan.victims.len() == ctx.cluster.ids().len() {
        "all"
    } else {
        "two"
    };
    let line = format!(
        "round {cut}: load {:.1}s, {} calls answered, {} cut short; power cut on {} ({who}; leader was {})\n  before: {views}\n  disks: {}{aimed}",
        plan.load.as_secs_f64(),
        answered_now - before.0,
        cut_short - before.1,
        names(&plan.victims),
        leader.map_or("unknown".into(), |l| format!("n{l}")),
        disks.join(", ")
    );
    Ok((sel, line))
}

/// After a restart: check (e)'s read, checks (a) and (c), (e)'s write,
/// the probes of (b).
async fn check(
    ctx: &mut RoundCtx<'_>,
    sel: &Selection,
    cut: u32,
    line: &mut String,
) -> Result<(), Error> {
    // A fresh client: the load's may still point at a node that died.
    let calls = Calls {
        client: Client::connect(ctx.cluster.client_endpoints()).await?,
        ledger: ctx.ledger.clone(),
    };
    eprintln!("raftlock-chaos powerloss: cut {cut}: restarted; checking");
    // Reads first: a lease granted now could reuse the id of a lost one
    // (lease ids are log positions) and hide its loss.
    if !restart::serves_reads(&calls, cut, ctx.found).await {
        // Not serving: every read would only time out.
        unanswered(ctx.found, sel);
        return Ok(());
    }
    verify::check(&calls.client, sel, cut, ctx.found).await;
    if let Some(lease) = restart::serves_writes(&calls, cut, ctx.found).await {
        eprintln!("raftlock-chaos powerloss: cut {cut}: probing fences");
        let lowest = probe::run(&calls, lease, sel, cut, ctx.rng, ctx.found).await;
        line.push_str(&format!(
            "\n  fences: highest acknowledged before the cut {}, lowest granted after {}",
            sel.max_fence,
            lowest.map_or("(none)".into(), |f| f.to_string())
        ));
    }
    Ok(())
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
