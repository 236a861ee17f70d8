//! The timeline picture: time runs left to right.
//!
//! - Top band: one row per fault kind, a bar while the fault lasted
//!   (kill = red, pause-node = orange, hung-first = brown, pause-client =
//!   magenta, partitions = blue shades, client-cut = cyan, full-restart =
//!   black).
//! - Below, one band per lock name in name order (`e`, `rw`, `sem`, `x0`,
//!   `x1`), one row per client inside it: a bar from each grant's answer
//!   to its release (or the lease's death), colored by client; a shared
//!   hold is drawn half height.
//! - A thin red line across everything marks each violation's first op.
//!
//! It is drawn with plotters' bitmap backend and no text, so no font
//! library is needed; `summary.txt` carries the legend.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use plotters::prelude::*;

use crate::checker::Verdict;
use crate::history::{History, Mode, Op, Value};
use crate::nemesis::{Fault, FaultKind};
use crate::Error;

const WIDTH: u32 = 1800;
const ROW: i32 = 10;
const GAP: i32 = 8;

/// Draws the timeline to `path` (PNG).
pub fn draw(
    path: &Path,
    history: &History,
    faults: &[Fault],
    verdicts: &[Verdict],
    t0: u64,
) -> Result<(), Error> {
    let end = history
        .ops
        .iter()
        .filter_map(|o| o.complete)
        .chain(faults.iter().map(|f| f.end))
        .max()
        .unwrap_or(t0 + 1);
    let names: BTreeSet<&str> = history
        .ops
        .iter()
        .filter(|o| matches!(o.op, Op::Acquire { .. } | Op::Campaign { .. }))
        .filter_map(|o| o.op.name())
        .collect();
    let clients: BTreeSet<u32> = history.ops.iter().map(|o| o.id.client).collect();
    let kinds = FAULT_ROWS.len() as i32;
    let lane = clients.len() as i32 * ROW + GAP;
    let height = (GAP + kinds * ROW + GAP + names.len() as i32 * lane + GAP).max(50);
    let root = BitMapBackend::new(path, (WIDTH, height as u32)).into_drawing_area();
    let plot = |e: &dyn std::fmt::Display| Error::Plot(e.to_string());
    root.fill(&WHITE).map_err(|e| plot(&e))?;
    let x = |t: u64| -> i32 {
        let span = (end - t0).max(1) as f64;
        (t.saturating_sub(t0) as f64 / span * f64::from(WIDTH - 20)) as i32 + 10
    };
    let bar = |x0: i32, y: i32, x1: i32, h: i32, color: RGBColor| {
        Rectangle::new([(x0, y), (x1.max(x0 + 1), y + h)], color.filled())
    };
    // Faults.
    for f in faults {
        let row = FAULT_ROWS
            .iter()
            .position(|(k, _)| *k == f.kind)
            .unwrap_or(0) as i32;
        let color = FAULT_ROWS[row as usize].1;
        let y = GAP + row * ROW;
        root.draw(&bar(x(f.start), y + 1, x(f.end), ROW - 2, color))
            .map_err(|e| plot(&e))?;
    }
    // Holds.
    let top = GAP + kinds * ROW + GAP;
    let client_row: BTreeMap<u32, i32> = clients
        .iter()
        .enumerate()
        .map(|(i, c)| (*c, i as i32))
        .collect();
    for (li, name) in names.iter().enumerate() {
        let y0 = top + li as i32 * lane;
        root.draw(&Rectangle::new(
            [(0, y0 - 2), (WIDTH as i32, y0 - 1)],
            RGBColor(200, 200, 200).filled(),
        ))
        .map_err(|e| plot(&e))?;
        for (start, stop, client, shared) in holds(history, name, end) {
            let y = y0 + client_row.get(&client).copied().unwrap_or(0) * ROW;
            let h = if shared { ROW / 2 } else { ROW - 2 };
            root.draw(&bar(x(start), y + 1, x(stop), h, palette(client)))
                .map_err(|e| plot(&e))?;
        }
    }
    // Violations.
    for v in verdicts {
        for violation in &v.violations {
            if let Some(t) = violation.ops.iter().map(|o| o.invoke).min() {
                root.draw(&bar(x(t), 0, x(t) + 2, height, RGBColor(230, 0, 0)))
                    .map_err(|e| plot(&e))?;
            }
        }
    }
    root.present().map_err(|e| plot(&e))
}

/// Fault rows, top to bottom, with their colors.
const FAULT_ROWS: [(FaultKind, RGBColor); 11] = [
    (FaultKind::KillLeader, RGBColor(200, 0, 0)),
    (FaultKind::KillNode, RGBColor(255, 90, 90)),
    (FaultKind::PauseNode, RGBColor(255, 150, 0)),
    (FaultKind::HungFirst, RGBColor(160, 100, 0)),
    (FaultKind::PauseClient, RGBColor(200, 0, 200)),
    (FaultKind::IsolateLeader, RGBColor(0, 0, 180)),
    (FaultKind::Split, RGBColor(60, 90, 255)),
    (FaultKind::Split3, RGBColor(120, 150, 255)),
    (FaultKind::Bridge, RGBColor(0, 120, 200)),
    (FaultKind::ClientCut, RGBColor(0, 200, 200)),
    (FaultKind::FullRestart, RGBColor(0, 0, 0)),
];

fn palette(client: u32) -> RGBColor {
    const COLORS: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    COLORS[client as usize % COLORS.len()]
}

/// (start, end, client, shared) of every grant of `name`.
fn holds(history: &History, name: &str, end: u64) -> Vec<(u64, u64, u32, bool)> {
    let mut give_back: BTreeMap<&str, u64> = BTreeMap::new();
    let mut death: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for o in &history.ops {
        match &o.op {
            Op::Release { name: n, owner } | Op::Resign { name: n, owner } if n == name => {
                give_back
                    .entry(owner)
                    .or_insert(o.complete.unwrap_or(o.invoke));
            }
            _ => {}
        }
        if let (Some(lease), Some(c)) = (o.op.lease(), o.complete) {
            if crate::checker::lock_model::proves_dead(o) {
                death.entry(lease).or_default().push(c);
            }
        }
    }
    let mut out = Vec::new();
    for o in &history.ops {
        let (n, owner, lease, shared) = match &o.op {
            Op::Acquire {
                name,
                owner,
                lease,
                mode,
                ..
            } => (name, owner, *lease, *mode == Mode::Shared),
            Op::Campaign { name, owner, lease } => (name, owner, *lease, false),
            _ => continue,
        };
        if n != name {
            continue;
        }
        let (Some(Value::Granted { count: 1, .. }), Some(start)) = (o.ok(), o.complete) else {
            continue;
        };
        let dies = death
            .get(&lease)
            .and_then(|ts| ts.iter().copied().filter(|t| *t >= start).min())
            .unwrap_or(end);
        let stop = give_back
            .get(owner.as_str())
            .copied()
            .unwrap_or(end)
            .min(dies);
        out.push((start, stop.max(start), o.id.client, shared));
    }
    out
}
