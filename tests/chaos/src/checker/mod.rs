//! Checks a recorded history. Each check returns a [`Verdict`]: what it
//! looked at, and every violation with the sub-history that shows it.
//!
//! # Layout
//!
//! - [`search`]: the generic Wing–Gong linearizability search;
//! - [`lock_model`]: the lock / semaphore / election model and the
//!   projection of a history onto one name;
//! - [`grants`]: fence order, overlapping holds, grants to dead leases;
//! - [`register`]: the fenced register's end state;
//! - [`election`]: one leader per term, observers' term order.

pub mod election;
pub mod grants;
pub mod lock_model;
pub mod register;
pub mod search;

#[cfg(test)]
mod tests;

use crate::history::{History, Operation};
use crate::register::Cells;
use search::SearchResult;

/// Configurations the linearizability search may memoize per name before
/// it gives up without a verdict: at least this many, and at least
/// [`SEARCH_BUDGET_PER_OP`] per operation on the name.
pub const SEARCH_BUDGET: usize = 2_000_000;

/// A linearizable history of this suite costs the search about 16
/// configurations per operation (the concurrent ops tried at each step; a
/// 30-minute run has ~140 000 operations on one election name). Memory is
/// about 0.8 KB per configuration.
pub const SEARCH_BUDGET_PER_OP: usize = 40;

/// One violation and the operations that show it.
#[derive(Debug, Clone)]
pub struct Violation {
    pub what: String,
    pub ops: Vec<Operation>,
}

/// One checker's result.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub check: &'static str,
    /// What was examined, e.g. "4 names, 5120 ops".
    pub examined: String,
    pub violations: Vec<Violation>,
    /// Set when the check could not reach a verdict.
    pub inconclusive: Option<String>,
}

impl Verdict {
    pub fn new(check: &'static str, examined: String) -> Self {
        Verdict {
            check,
            examined,
            violations: Vec::new(),
            inconclusive: None,
        }
    }

    pub fn violate(&mut self, what: String, ops: Vec<Operation>) {
        self.violations.push(Violation { what, ops });
    }

    /// "ok", "VIOLATED" or "inconclusive".
    pub fn word(&self) -> &'static str {
        if !self.violations.is_empty() {
            "VIOLATED"
        } else if self.inconclusive.is_some() {
            "inconclusive"
        } else {
            "ok"
        }
    }
}

/// Runs every check.
pub fn check_all(history: &History, cells: &Cells) -> Vec<Verdict> {
    vec![
        linearizable(history, SEARCH_BUDGET),
        grants::fence_order(history),
        grants::no_overlap(history),
        grants::no_grant_to_dead_lease(history),
        register::check(history, cells),
        election::one_leader_per_term(history),
        election::observers_see_increasing_terms(history),
    ]
}

/// Every lock name's history is linearizable against the lock model.
pub fn linearizable(history: &History, budget: usize) -> Verdict {
    let names = lock_model::lock_names(history);
    let mut total = 0;
    let mut explored_total = 0;
    let mut v = Verdict::new("linearizable (Wing-Gong)", String::new());
    for name in &names {
        let entries = lock_model::project(history, name);
        total += entries.len();
        let budget = budget.max(SEARCH_BUDGET_PER_OP * entries.len());
        match search::search(lock_model::LockModel::default(), &entries, budget) {
            SearchResult::Linearizable { explored } => explored_total += explored,
            SearchResult::GaveUp { explored } => {
                explored_total += explored;
                v.inconclusive = Some(format!(
                    "{name}: search gave up after {explored} configurations"
                ));
            }
            SearchResult::Illegal(stuck) => {
                explored_total += stuck.explored;
                let op_of = |i: usize| &history.ops[entries[i].source];
                let blocked: Vec<Operation> =
                    stuck.blocked.iter().map(|&i| op_of(i).clone()).collect();
                // Context: the last ops placed, plus earlier placed ops on
                // the same leases or owners as the ones that did not fit.
                let related = |o: &Operation| {
                    blocked.iter().any(|b| {
                        (b.op.lease().is_some() && b.op.lease() == o.op.lease())
                            || (owner(&b.op).is_some() && owner(&b.op) == owner(&o.op))
                    })
                };
                let mut shown: Vec<usize> = stuck
                    .placed
                    .iter()
                    .copied()
                    .filter(|&i| related(op_of(i)))
                    .rev()
                    .take(4)
                    .collect();
                shown.extend(stuck.placed.iter().rev().take(6).copied());
                shown.sort_unstable();
                shown.dedup();
                let mut ops: Vec<Operation> = shown.iter().map(|&i| op_of(i).clone()).collect();
                ops.sort_by_key(|o| o.invoke);
                let what = format!(
                    "{name}: no linearization; after the {} ops placed (related and last ones shown), none of the {} next candidates fits the model (listed last)",
                    stuck.placed.len(),
                    blocked.len()
                );
                ops.extend(blocked);
                v.violate(what, ops);
            }
        }
    }
    v.examined = format!(
        "{} names, {total} ops, {explored_total} configurations",
        names.len()
    );
    v
}

/// The owner an op names, if any.
fn owner(op: &crate::history::Op) -> Option<&str> {
    use crate::history::Op;
    match op {
        Op::Acquire { owner, .. }
        | Op::Release { owner, .. }
        | Op::Campaign { owner, .. }
        | Op::Resign { owner, .. } => Some(owner),
        _ => None,
    }
}
