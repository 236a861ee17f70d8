//! One chaos run: cluster up, register up, clients started, nemesis until
//! the end, everything healed and stopped, history checked, report
//! written.

use std::path::PathBuf;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokio::time::Instant;

use crate::checker::{self, Verdict};
use crate::clients::{ClientPlan, ClientProcs};
use crate::clock::now_ns;
use crate::cluster::Cluster;
use crate::history::History;
use crate::nemesis::{Fault, Nemesis};
use crate::register::RegisterServer;
use crate::report::Report;
use crate::secure::Secure;
use crate::Error;

/// What a run does.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The node binary (`raftlock`, or this binary).
    pub binary: PathBuf,
    /// This binary, for the client processes.
    pub exe: PathBuf,
    pub duration: Duration,
    pub nodes: u64,
    pub clients: u32,
    pub seed: u64,
    /// Clients' lease TTL.
    pub ttl: Duration,
    pub out: PathBuf,
    /// TLS on both listeners, mutual TLS between peers and client
    /// authentication (see [`crate::secure`]).
    pub secure: bool,
}

/// What a run found.
pub struct RunOutcome {
    pub summary: String,
    pub violations: usize,
    pub verdicts: Vec<Verdict>,
}

/// Quiet time at the end (no faults) so operations can finish cleanly.
const COOL_DOWN: Duration = Duration::from_secs(8);

/// Runs the whole thing.
pub async fn run(cfg: &RunConfig) -> Result<RunOutcome, Error> {
    std::fs::create_dir_all(&cfg.out)
        .map_err(Error::io(format!("create {}", cfg.out.display())))?;
    let nodes_dir = cfg.out.join("nodes");
    if nodes_dir.exists() {
        std::fs::remove_dir_all(&nodes_dir).map_err(Error::io("clear old node dirs"))?;
    }
    eprintln!(
        "raftlock-chaos: seed {} ({} nodes, {} clients, {:?}{})",
        cfg.seed,
        cfg.nodes,
        cfg.clients,
        cfg.duration,
        if cfg.secure { ", TLS + auth" } else { "" }
    );
    let t0 = now_ns();
    let mut cluster = Cluster::new(&cfg.binary, &nodes_dir, cfg.nodes).await?;
    let mut client_env = Vec::new();
    if cfg.secure {
        let secure = Secure::create(&nodes_dir.join("certs"), cfg.nodes)?;
        client_env = secure.client_env();
        cluster.set_secure(secure);
    }
    cluster.start_all()?;
    let leader = cluster.wait_for_leader(Duration::from_secs(60)).await?;
    eprintln!("raftlock-chaos: cluster up, leader {leader}");
    let register = RegisterServer::start().await?;
    let endpoints = cluster.client_endpoints();
    let clients = ClientProcs::spawn(&ClientPlan {
        exe: &cfg.exe,
        count: cfg.clients,
        endpoints: &endpoints,
        register: register.addr,
        seed: cfg.seed,
        duration: cfg.duration,
        ttl: cfg.ttl,
        dir: &cfg.out,
        env: &client_env,
    })?;
    let started = Instant::now();
    let faults: Vec<Fault> = {
        let rng = ChaCha8Rng::seed_from_u64(cfg.seed);
        let mut nemesis = Nemesis::new(&mut cluster, &clients, rng, cfg.ttl);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let until = started + cfg.duration.saturating_sub(COOL_DOWN);
        let result = nemesis.run(until).await;
        let healed = nemesis.heal_all().await;
        result.and(healed)?;
        nemesis.faults
    };
    eprintln!(
        "raftlock-chaos: {} faults injected; waiting for clients",
        faults.len()
    );
    let events = clients.finish(Duration::from_secs(30)).await;
    let wall = Duration::from_nanos(now_ns() - t0);
    cluster.stop_all().await;
    let history = History::from_events(events);
    write_history(cfg, &history, &faults)?;
    let cells = register.cells();
    let cells_json = serde_json::to_vec(&cells).map_err(|e| Error::Setup(e.to_string()))?;
    std::fs::write(cfg.out.join("registers.json"), cells_json)
        .map_err(Error::io("write registers.json"))?;
    eprintln!("raftlock-chaos: checking {} operations", history.ops.len());
    let verdicts = checker::check_all(&history, &cells);
    let report = Report {
        seed: cfg.seed,
        nodes: cfg.nodes,
        clients: cfg.clients,
        wall,
        t0,
        history: &history,
        faults: &faults,
        verdicts: &verdicts,
        proxy: &cluster.net.stats,
    };
    let summary = report.summary();
    std::fs::write(cfg.out.join("summary.txt"), &summary)
        .map_err(Error::io("write summary.txt"))?;
    if let Err(e) = crate::timeline::draw(
        &cfg.out.join("timeline.png"),
        &history,
        &faults,
        &verdicts,
        t0,
    ) {
        eprintln!("raftlock-chaos: no timeline: {e}");
    }
    let violations = verdicts.iter().map(|v| v.violations.len()).sum();
    Ok(RunOutcome {
        summary,
        violations,
        verdicts,
    })
}

fn write_history(cfg: &RunConfig, history: &History, faults: &[Fault]) -> Result<(), Error> {
    use std::io::Write;
    let path = cfg.out.join("history.jsonl");
    let file =
        std::fs::File::create(&path).map_err(Error::io(format!("create {}", path.display())))?;
    let mut w = std::io::BufWriter::new(file);
    let mut line = |value: serde_json::Value| -> Result<(), Error> {
        writeln!(w, "{value}").map_err(Error::io("write history"))
    };
    for op in &history.ops {
        line(serde_json::json!({ "operation": op }))?;
    }
    for ob in &history.observations {
        line(serde_json::json!({ "observed": ob }))?;
    }
    for f in faults {
        line(serde_json::json!({ "fault": f }))?;
    }
    w.flush().map_err(Error::io("flush history"))
}

/// Re-checks a finished run from the files it left in `dir`
/// (`history.jsonl`, `registers.json`), e.g. after changing the checker.
pub fn recheck(dir: &std::path::Path) -> Result<RunOutcome, Error> {
    let path = dir.join("history.jsonl");
    let text =
        std::fs::read_to_string(&path).map_err(Error::io(format!("read {}", path.display())))?;
    let mut history = History::default();
    let mut faults = Vec::new();
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| Error::Setup(format!("{}: {e}", path.display())))?;
        let bad = |e: serde_json::Error| Error::Setup(format!("{}: {e}", path.display()));
        if let Some(op) = value.get("operation") {
            history
                .ops
                .push(serde_json::from_value(op.clone()).map_err(bad)?);
        } else if let Some(ob) = value.get("observed") {
            history
                .observations
                .push(serde_json::from_value(ob.clone()).map_err(bad)?);
        } else if let Some(f) = value.get("fault") {
            faults.push(serde_json::from_value(f.clone()).map_err(bad)?);
        }
    }
    let cells = match std::fs::read(dir.join("registers.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| Error::Setup(format!("registers.json: {e}")))?,
        Err(_) => Default::default(),
    };
    let t0 = history.ops.iter().map(|o| o.invoke).min().unwrap_or(0);
    let end = history
        .ops
        .iter()
        .filter_map(|o| o.complete)
        .max()
        .unwrap_or(t0);
    let verdicts = checker::check_all(&history, &cells);
    let stats = crate::proxy::ProxyStats::default();
    let report = Report {
        seed: 0,
        nodes: 0,
        clients: history.ops.iter().map(|o| o.id.client).max().unwrap_or(0),
        wall: Duration::from_nanos(end - t0),
        t0,
        history: &history,
        faults: &faults,
        verdicts: &verdicts,
        proxy: &stats,
    };
    let violations = verdicts.iter().map(|v| v.violations.len()).sum();
    Ok(RunOutcome {
        summary: report.summary(),
        violations,
        verdicts,
    })
}
