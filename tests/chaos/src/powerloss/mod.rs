//! The power-loss test (`raftlock-chaos powerloss`): a 3-node cluster whose
//! data dirs sit on disks that can lose power, a load of leases, locks and
//! elections, and rounds of load → power cut (kill -9 of all three nodes or
//! two, then every unsynced write on their disks dropped) → restart →
//! checks. See `docs/powerloss.md`.
//!
//! The checks, each summed over the rounds:
//! - (a) every acknowledged grant not acknowledged-released is still held
//!   by its owner with the same fence, every acknowledged release stays
//!   released, every acknowledged lease is alive;
//! - (b) every grant after a restart has a fence above every fence
//!   acknowledged for that name before the cut;
//! - (c) acknowledged election leaders and values survive unless resigned;
//! - (d) no Raft term has two leaders (every node polled all along);
//! - (e) every node restarts, the cluster elects a leader and serves, and
//!   no node panics.
//!
//! # Layout
//!
//! - this file: [`PowerLossConfig`] and [`run`], the whole run;
//! - `round`: one round and its plan; `stage` and `aimed`: cuts aimed
//!   inside a stage of the Raft log (`--stage`); `restart`: check (e), with
//!   `node_logs` (log tails, panics);
//! - `disk`: [`DataDisk`], plain dir or LazyFs mount;
//! - `load`: the tasks the cut interrupts; `calls`: every call they and the
//!   probes make, entered in `ledger` (elections: `seats`), which records
//!   what was acknowledged;
//!   `answer`: how a call ended;
//! - `selection`: which entries a round checks; `verify`: checks (a) and
//!   (c); `probe`: check (b); `terms`: check (d);
//! - `findings` and `summary`: the totals and the one-screen summary.

mod aimed;
mod answer;
mod calls;
pub mod disk;
mod findings;
mod ledger;
mod load;
mod node_logs;
mod probe;
mod restart;
mod round;
mod seats;
mod selection;
pub mod stage;
mod summary;
mod terms;
mod verify;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clock::now_ns;
use crate::cluster::Cluster;
use crate::Error;
use disk::{DataDisk, DiskKind};
use findings::Findings;
use ledger::Ledger;
use round::RoundCtx;
use terms::TermWatch;

/// Nodes in a power-loss cluster.
pub const NODES: u64 = 3;

/// What a power-loss run does.
#[derive(Debug, Clone)]
pub struct PowerLossConfig {
    /// The node binary (`raftlock`, or the chaos binary, which serves too).
    pub binary: PathBuf,
    /// Extra flags for every node's `serve`.
    pub node_args: Vec<String>,
    pub rounds: u32,
    pub seed: u64,
    /// The longest a round's load runs before its cut (the cut comes
    /// between a third of this and all of it).
    pub max_load: Duration,
    pub disk: DiskKind,
    /// Where the cuts land: at a seeded moment, or inside a stage of the
    /// Raft log (`stage`).
    pub stage: stage::Stage,
    /// The nodes' heartbeat and election timeout in ms.
    pub timing: (u64, u64),
    /// Entries between the nodes' snapshots.
    pub snapshot_after: u64,
    /// Each elect task's first value in a round is 64 KiB, and then one in
    /// this many (0: no more).
    pub large_every: u32,
    /// Node logs and data, summary.txt and violations.txt (all of them;
    /// the summary lists the first few per check).
    pub out: PathBuf,
}

/// What a run found.
#[derive(Debug)]
pub struct PowerLossOutcome {
    pub summary: String,
    pub violations: usize,
}

/// Runs the whole test.
pub async fn run(cfg: &PowerLossConfig) -> Result<PowerLossOutcome, Error> {
    check_stage(cfg)?;
    std::fs::create_dir_all(&cfg.out)
        .map_err(Error::io(format!("create {}", cfg.out.display())))?;
    let nodes_dir = cfg.out.join("nodes");
    if nodes_dir.exists() {
        std::fs::remove_dir_all(&nodes_dir).map_err(Error::io("clear old node dirs"))?;
    }
    let t0 = now_ns();
    // No proxies: nothing here cuts links, and a debug build's proxy carried
    // only ~4 MB/s of peer traffic (see docs/powerloss.md, "Large values").
    let mut cluster = Cluster::new_direct(&cfg.binary, &nodes_dir, NODES).await?;
    cluster.set_node_args(cfg.node_args.clone());
    cluster.set_timing(cfg.timing.0, cfg.timing.1);
    cluster.set_snapshot_after(cfg.snapshot_after);
    let mut disks = BTreeMap::new();
    for id in cluster.ids() {
        let disk = DataDisk::create(cfg.disk, &nodes_dir.join(format!("n{id}")).join("disk"))?;
        cluster.set_data_dir(id, disk.data_dir())?;
        disks.insert(id, disk);
    }
    let plans = round::plan(
        cfg.seed,
        cfg.rounds,
        cfg.max_load,
        &cluster.ids(),
        cfg.stage,
    );
    eprintln!(
        "raftlock-chaos powerloss: seed {} ({} rounds, {} disks, cuts {})",
        cfg.seed,
        cfg.rounds,
        cfg.disk.label(),
        cfg.stage.label()
    );
    let ledger = Arc::new(Ledger::default());
    let mut found = Findings::default();
    let mut aims = stage::Tally::default();
    let mut lines = Vec::new();
    let result = async {
        cluster.start_all()?;
        let nodes: Vec<(u64, String)> = cluster
            .ids()
            .into_iter()
            .filter_map(|id| Some((id, cluster.spec(id)?.client_addr.to_string())))
            .collect();
        let watch = TermWatch::start(&nodes, t0).await?;
        let rounds = async {
            first_leader(&mut cluster).await?;
            let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed ^ 0x5eed_5a3e);
            let mut logs = node_logs::NodeLogs::default();
            for (i, plan) in plans.iter().enumerate() {
                let ctx = RoundCtx {
                    cluster: &mut cluster,
                    disks: &disks,
                    ledger: &ledger,
                    found: &mut found,
                    rng: &mut rng,
                    seed: cfg.seed,
                    large_every: cfg.large_every,
                    logs: &mut logs,
                    aims: &mut aims,
                };
                let (line, recovered) = round::run(ctx, i as u32 + 1, plan).await?;
                eprintln!("raftlock-chaos powerloss: {line}");
                lines.push(line);
                if !recovered {
                    break;
                }
            }
            Ok::<_, Error>(())
        }
        .await;
        let terms = watch.stop().await;
        rounds.map(|()| terms)
    }
    .await;
    // The nodes go before their disks: a mount cannot go while in use.
    cluster.stop_all().await;
    drop(disks);
    let terms = result?;
    let verdicts = found.verdicts(terms::verdict(&terms));
    let summary = summary::render(&summary::Facts {
        cfg,
        wall: Duration::from_nanos(now_ns() - t0),
        rounds: &lines,
        aims: aims.line(),
        shared_terms: &terms::shared_terms(&terms),
        book: &ledger.book(),
        verdicts: &verdicts,
    });
    std::fs::write(cfg.out.join("summary.txt"), &summary)
        .map_err(Error::io("write summary.txt"))?;
    let all: String = verdicts
        .iter()
        .flat_map(|v| {
            v.violations
                .iter()
                .map(move |x| format!("{}: {}\n", v.check, x.what))
        })
        .collect();
    std::fs::write(cfg.out.join("violations.txt"), all)
        .map_err(Error::io("write violations.txt"))?;
    let violations = verdicts.iter().map(|v| v.violations.len()).sum();
    Ok(PowerLossOutcome {
        summary,
        violations,
    })
}

/// Refuses a stage this run cannot aim at: aimed cuts need LazyFs disks,
/// `upgrade` the format-6 writer.
fn check_stage(cfg: &PowerLossConfig) -> Result<(), Error> {
    use stage::Stage;
    if cfg.stage != Stage::Timed && cfg.disk != DiskKind::Lazy {
        return Err(Error::Setup(format!(
            "--stage {} needs --disk lazy: cut points live in LazyFs",
            cfg.stage.label()
        )));
    }
    let upgrade = matches!(cfg.stage, Stage::Upgrade | Stage::Any);
    if upgrade && !cfg!(feature = "small-wal-segments") {
        return Err(Error::Setup(stage::NEEDS_FEATURE.into()));
    }
    Ok(())
}

/// Waits for the first leader; fails at once when a node exits (e.g. it
/// refused a `--node-arg`), with the tail of its log.
async fn first_leader(cluster: &mut Cluster) -> Result<u64, Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let mut why = String::new();
        for id in cluster.ids() {
            if let Some(status) = cluster.exited(id) {
                let tail = cluster.spec(id).map(|s| node_logs::tail(&s.log));
                let tail = tail.unwrap_or_default();
                why.push_str(&format!("\nn{id} exited ({status}); its log ends:\n{tail}"));
            }
        }
        if !why.is_empty() {
            return Err(Error::Setup(format!("a node did not start:{why}")));
        }
        if let Some(id) = cluster.leader().await {
            return Ok(id);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(Error::Setup(
                "no leader within 60s; see the node logs".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
