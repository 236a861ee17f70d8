//! What the power-loss checks found, summed over the rounds: per check, what
//! it examined (named counts) and every violation, then one
//! [`Verdict`] per check for the summary.

use crate::checker::Verdict;

/// One check's totals.
#[derive(Debug, Default)]
pub struct Totals {
    /// What was examined, e.g. "holds" → 812, in first-counted order.
    pub counts: Vec<(&'static str, u64)>,
    pub violations: Vec<String>,
    /// Reads that got no answer even after retries.
    pub unanswered: u64,
    /// Extra facts for the summary line (e.g. the fence high-water marks).
    pub notes: Vec<String>,
}

impl Totals {
    /// Adds `n` to count `what`.
    pub fn add(&mut self, what: &'static str, n: u64) {
        match self.counts.iter_mut().find(|(w, _)| *w == what) {
            Some((_, c)) => *c += n,
            None => self.counts.push((what, n)),
        }
    }

    /// Adds everything `other` counted and found.
    pub fn merge(&mut self, other: Totals) {
        for (what, n) in other.counts {
            self.add(what, n);
        }
        self.violations.extend(other.violations);
        self.unanswered += other.unanswered;
        self.notes.extend(other.notes);
    }

    /// Records a violation.
    pub fn violate(&mut self, what: String) {
        self.violations.push(what);
    }

    fn verdict(&self, check: &'static str) -> Verdict {
        let mut examined: Vec<String> = self
            .counts
            .iter()
            .map(|(what, n)| format!("{n} {what}"))
            .collect();
        examined.extend(self.notes.iter().cloned());
        let mut v = Verdict::new(check, examined.join(", "));
        for what in &self.violations {
            v.violate(what.clone(), Vec::new());
        }
        if self.unanswered > 0 {
            v.inconclusive = Some(format!("{} reads got no answer", self.unanswered));
        }
        v
    }
}

/// Every check's totals.
#[derive(Debug, Default)]
pub struct Findings {
    /// (a) acknowledged holds are held, acknowledged releases stay so.
    pub holds: Totals,
    /// (a) acknowledged leases are alive.
    pub leases: Totals,
    /// (b) a grant after a restart has a fence above all before.
    pub fences: Totals,
    /// (c) acknowledged leaders and values survive.
    pub elections: Totals,
    /// (e) every node restarts and the cluster elects a leader.
    pub restarts: Totals,
}

impl Findings {
    /// One verdict per check, in the order of the summary; `terms` is
    /// check (d)'s, made from the watcher's log.
    pub fn verdicts(&self, terms: Verdict) -> Vec<Verdict> {
        vec![
            self.holds.verdict("acknowledged holds survive"),
            self.leases.verdict("acknowledged leases survive"),
            self.fences.verdict("fences never go back"),
            self.elections.verdict("acknowledged leaders survive"),
            terms,
            self.restarts.verdict("every node restarts"),
        ]
    }
}
