//! The power-loss summary: seed, one line per round, calls by kind and
//! outcome, each check's verdict with what it examined, the violations,
//! and last `violations: N` — the same shape as the chaos summary.

use std::fmt::Write;
use std::time::Duration;

use super::ledger::Book;
use super::PowerLossConfig;
use crate::checker::Verdict;

/// Violations listed per check (all of them are counted).
const SHOWN: usize = 8;

/// Everything the summary shows.
pub struct Facts<'a> {
    pub cfg: &'a PowerLossConfig,
    pub wall: Duration,
    pub rounds: &'a [String],
    /// Aimed cuts per stage, fired or not (`--stage`).
    pub aims: Option<String>,
    /// Raft terms with two leaders (allowed by openraft's leader ids).
    pub shared_terms: &'a [String],
    pub book: &'a Book,
    pub verdicts: &'a [Verdict],
}

/// The summary text.
pub fn render(f: &Facts<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "raftlock-chaos powerloss  seed={}  nodes=3  rounds={}  disk={}  stage={}  duration={:.1}s",
        f.cfg.seed,
        f.cfg.rounds,
        f.cfg.disk.label(),
        f.cfg.stage.label(),
        f.wall.as_secs_f64()
    );
    let _ = writeln!(
        s,
        "nodes: heartbeat {} ms, election timeout {} ms, snapshot after {}; large-every {}; node args: {}",
        f.cfg.timing.0,
        f.cfg.timing.1,
        f.cfg.snapshot_after,
        f.cfg.large_every,
        if f.cfg.node_args.is_empty() {
            "none".to_string()
        } else {
            f.cfg.node_args.join(" ")
        }
    );
    for line in f.rounds {
        let _ = writeln!(s, "{line}");
    }
    if let Some(line) = &f.aims {
        let _ = writeln!(s, "{line}");
    }
    let total: u64 = f.book.tally.values().map(|t| t.begun).sum();
    let _ = writeln!(
        s,
        "calls: {total} ({} locks, {} elections, {} leases in the ledger; {} names and {} leases \
         set aside after a violation)",
        f.book.locks.len(),
        f.book.elections.len(),
        f.book.leases.len(),
        f.book.tainted.len(),
        f.book.lost_leases.len()
    );
    for (kind, t) in &f.book.tally {
        let _ = writeln!(
            s,
            "  {kind:<12} ok {:>6}  fail {:>5}  unknown {:>4}  cut short {:>4}",
            t.ok,
            t.fail,
            t.unknown,
            t.cut()
        );
    }
    let _ = writeln!(s, "checks:");
    for v in f.verdicts {
        let tail = if v.violations.is_empty() {
            String::new()
        } else {
            format!(", {} violations", v.violations.len())
        };
        let _ = writeln!(s, "  {:<12} {:<29} {}{tail}", v.word(), v.check, v.examined);
        if let Some(why) = &v.inconclusive {
            let _ = writeln!(s, "               ({why})");
        }
    }
    for line in f.shared_terms.iter().take(3) {
        let _ = writeln!(s, "  (two Raft leaders in {line})");
    }
    for v in f.verdicts.iter().filter(|v| !v.violations.is_empty()) {
        let _ = writeln!(s, "violations ({}):", v.check);
        for x in v.violations.iter().take(SHOWN) {
            let _ = writeln!(s, "  {}", x.what);
        }
        if v.violations.len() > SHOWN {
            let _ = writeln!(s, "  ... and {} more", v.violations.len() - SHOWN);
        }
    }
    let total: usize = f.verdicts.iter().map(|v| v.violations.len()).sum();
    let _ = writeln!(s, "violations: {total}");
    s
}
