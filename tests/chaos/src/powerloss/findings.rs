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
    /// Names and leases found violated: later rounds leave them out, so a
    /// loss is reported once, not again after every cut.
    pub taint: Vec<Taint>,
}

/// Something a check found violated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taint {
    Name(String),
    Lease(u64),
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
        self.taint.extend(other.taint);
    }

    /// Records a violation.
    pub fn violate(&mut self, what: String) {
        self.violations.push(what);
    }

    /// Takes the taints out, for the ledger.
    pub fn take_taint(&mut self) -> Vec<Taint> {
        std::mem::take(&mut self.taint)
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
    /// (e) every node restarts, the cluster elects a leader and serves,
    /// no node panics.
    pub restarts: Totals,
}

impl Findings {
    /// Violations so far of checks (a), (b), (c) and (e), in that order.
    pub fn counts(&self) -> [usize; 5] {
        [
            &self.holds,
            &self.leases,
            &self.fences,
            &self.elections,
            &self.restarts,
        ]
        .map(|t| t.violations.len())
    }

    /// Takes every check's taints out, for the ledger.
    pub fn take_taint(&mut self) -> Vec<Taint> {
        let mut all = Vec::new();
        for t in [
            &mut self.holds,
            &mut self.leases,
            &mut self.fences,
            &mut self.elections,
        ] {
            all.extend(t.take_taint());
        }
        all
    }

    /// One verdict per check, in the order of the summary; `terms` is
    /// check (d)'s, made from the watcher's log.
    pub fn verdicts(&self, terms: Verdict) -> Vec<Verdict> {
        vec![
            self.holds.verdict("acknowledged holds survive"),
            self.leases.verdict("acknowledged leases survive"),
            self.fences.verdict("fences never go back"),
            self.elections.verdict("acknowledged leaders survive"),
            terms,
            self.restarts.verdict("nodes restart and serve"),
        ]
    }
}
