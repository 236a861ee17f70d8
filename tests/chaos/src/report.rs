//! The one-screen summary of a run.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::checker::Verdict;
use crate::history::{History, Show};
use crate::nemesis::Fault;
use crate::proxy::ProxyStats;

/// Everything the summary shows.
pub struct Report<'a> {
    pub seed: u64,
    pub nodes: u64,
    pub clients: u32,
    pub wall: Duration,
    /// Start of the run on the monotonic clock.
    pub t0: u64,
    pub history: &'a History,
    pub faults: &'a [Fault],
    pub verdicts: &'a [Verdict],
    pub proxy: &'a ProxyStats,
}

impl Report<'_> {
    /// The summary text; the last line is `violations: N`.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "raftlock-chaos  seed={}  nodes={}  clients={}  duration={:.1}s",
            self.seed,
            self.nodes,
            self.clients,
            self.wall.as_secs_f64()
        );
        let mut by_kind: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for o in &self.history.ops {
            *by_kind
                .entry(o.op.kind())
                .or_default()
                .entry(o.outcome_kind())
                .or_default() += 1;
        }
        let _ = writeln!(
            s,
            "operations: {} ({} observed leader changes)",
            self.history.ops.len(),
            self.history.observations.len()
        );
        for (kind, outcomes) in &by_kind {
            let get = |k: &str| outcomes.get(k).copied().unwrap_or(0);
            let _ = writeln!(
                s,
                "  {kind:<15} ok {:>6}  fail {:>5}  info {:>4}",
                get("ok"),
                get("fail"),
                get("info")
            );
        }
        let mut faults: BTreeMap<&str, usize> = BTreeMap::new();
        for f in self.faults {
            *faults.entry(f.kind.label()).or_default() += 1;
        }
        let list: Vec<String> = faults.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(s, "faults: {}  ({})", self.faults.len(), list.join(", "));
        let _ = writeln!(
            s,
            "proxies: {} connections, {} refused, {} cut, {} unattributed",
            self.proxy.accepted.load(Ordering::Relaxed),
            self.proxy.refused.load(Ordering::Relaxed),
            self.proxy.cut.load(Ordering::Relaxed),
            self.proxy.unattributed.load(Ordering::Relaxed)
        );
        let _ = writeln!(s, "checks:");
        for v in self.verdicts {
            let _ = writeln!(
                s,
                "  {:<12} {:<32} {}{}",
                v.word(),
                v.check,
                v.examined,
                if v.violations.is_empty() {
                    String::new()
                } else {
                    format!(", {} violations", v.violations.len())
                }
            );
            if let Some(why) = &v.inconclusive {
                let _ = writeln!(s, "               ({why})");
            }
        }
        let total: usize = self.verdicts.iter().map(|v| v.violations.len()).sum();
        // The first violation of each failed check, earliest ops first.
        for v in self.verdicts {
            let Some(first) = v.violations.first() else {
                continue;
            };
            let _ = writeln!(s, "first violation ({}): {}", v.check, first.what);
            let skip = first.ops.len().saturating_sub(10);
            for op in first.ops.iter().skip(skip) {
                let _ = writeln!(s, "  {}", Show { op, t0: self.t0 });
            }
        }
        let _ = writeln!(s, "violations: {total}");
        s
    }
}
