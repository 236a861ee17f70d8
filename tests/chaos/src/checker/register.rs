//! The fenced register's end state: every accepted write raised the value
//! by exactly one (no lost update), tokens the register accepted never went
//! down, and the final value equals the writes clients saw acknowledged
//! (plus at most the writes whose answer was lost).

use std::collections::BTreeMap;

use super::Verdict;
use crate::history::{History, Op, Operation, Outcome};
use crate::register::Cells;

/// Checks every register against the history.
pub fn check(history: &History, cells: &Cells) -> Verdict {
    let mut acked: BTreeMap<&str, u64> = BTreeMap::new();
    let mut unknown: BTreeMap<&str, u64> = BTreeMap::new();
    let mut writes: BTreeMap<&str, Vec<&Operation>> = BTreeMap::new();
    for o in &history.ops {
        if let Op::RegWrite { name, .. } = &o.op {
            writes.entry(name).or_default().push(o);
            match &o.outcome {
                Some(Outcome::Ok(_)) => *acked.entry(name).or_default() += 1,
                Some(Outcome::Fail(_)) => {}
                _ => *unknown.entry(name).or_default() += 1,
            }
        }
    }
    let total: u64 = acked.values().sum();
    let refused: u64 = cells.values().map(|c| c.refused).sum();
    let mut v = Verdict::new(
        "fenced register",
        format!(
            "{} registers, {total} acknowledged increments, {refused} stale ops refused",
            cells.len()
        ),
    );
    for (name, cell) in cells {
        let ops = writes.get(name.as_str()).cloned().unwrap_or_default();
        let sample = |ops: &[&Operation]| {
            ops.iter()
                .rev()
                .take(6)
                .rev()
                .map(|o| (*o).clone())
                .collect()
        };
        let mut max = 0;
        for &(fence, before, after) in &cell.writes {
            if after != before + 1 {
                v.violate(
                    format!(
                        "{name}: write with token {fence} set {after} over {before} (lost update)"
                    ),
                    sample(&ops),
                );
                break;
            }
            if fence < max {
                v.violate(
                    format!("{name}: accepted token {fence} after token {max}"),
                    sample(&ops),
                );
                break;
            }
            max = fence;
        }
        let a = acked.get(name.as_str()).copied().unwrap_or(0);
        let u = unknown.get(name.as_str()).copied().unwrap_or(0);
        if cell.value < a || cell.value > a + u {
            v.violate(
                format!(
                    "{name}: register ends at {} but {a} increments were acknowledged ({u} unknown)",
                    cell.value
                ),
                sample(&ops),
            );
        }
    }
    v
}
