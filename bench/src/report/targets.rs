//! The targets of the performance issue (issue 14: W1 1.3×, W2 3× with p99 ≤ ½, W3 2.5×, W4 2×,
//! W5 TTL + 150 ms, W6 1.5 s, W7 300 MB and 2 s) and of issue 30 (W8: probe
//! p99 ≤ 2× idle, 300 MB, nobody refused), judged on the medians of one run.

use std::time::Duration;

use serde::Serialize;

use super::MetricRow;
use crate::cluster::System;
use crate::plan::{Plan, WorkloadId};
use crate::workload::Run;

/// One target and whether the run met it (`None`: not measured).
#[derive(Debug, Clone, Serialize)]
pub struct TargetResult {
    pub target: String,
    pub observed: String,
    pub met: Option<bool>,
}

fn ratio_at_least(rows: &[MetricRow], key: &str, what: &str, min: f64) -> TargetResult {
    let ratio = rows.iter().find(|r| r.key == key).and_then(|r| r.ratio);
    TargetResult {
        target: format!("{what} ≥ {min}× etcd"),
        observed: ratio.map_or("n/a".into(), |r| format!("{r:.2}×")),
        met: ratio.map(|r| r >= min),
    }
}

fn ratio_at_most(rows: &[MetricRow], key: &str, target: &str, max: f64) -> TargetResult {
    let ratio = rows.iter().find(|r| r.key == key).and_then(|r| r.ratio);
    TargetResult {
        target: target.to_string(),
        observed: ratio.map_or("n/a".into(), |r| format!("{r:.2}× etcd")),
        met: ratio.map(|r| r <= max),
    }
}

fn raftlock_at_most(
    rows: &[MetricRow],
    key: &str,
    target: String,
    max: f64,
    unit: &str,
) -> TargetResult {
    let v = rows.iter().find(|r| r.key == key).and_then(|r| r.raftlock);
    TargetResult {
        target,
        observed: v.map_or("n/a".into(), |v| format!("{v:.1} {unit}")),
        met: v.map(|v| v <= max),
    }
}

/// Judges workload `id`'s targets.
pub fn judge(id: WorkloadId, plan: &Plan, rows: &[MetricRow], runs: &[Run]) -> Vec<TargetResult> {
    match id {
        WorkloadId::W1 => vec![
            ratio_at_least(rows, "pairs_per_s", "pairs/s", 1.3),
            ratio_at_most(rows, "acquire_p50_ms", "acquire p50 ≤ etcd's", 1.0),
        ],
        WorkloadId::W2 => vec![
            ratio_at_least(rows, "pairs_per_s", "pairs/s", 3.0),
            ratio_at_most(rows, "acquire_p99_ms", "acquire p99 ≤ ½ of etcd's", 0.5),
        ],
        WorkloadId::W3 => vec![ratio_at_least(rows, "pairs_per_s", "pairs/s", 2.5)],
        WorkloadId::W4 => vec![ratio_at_least(
            rows,
            "keep_alives_per_s",
            "keep-alives/s",
            2.0,
        )],
        WorkloadId::W5 => plan
            .w5_ttls
            .iter()
            .map(|ttl: &Duration| {
                let limit = ttl.as_millis() as f64 + 150.0;
                raftlock_at_most(
                    rows,
                    &crate::workload::handoff_key(*ttl),
                    format!("next waiter granted ≤ TTL + 150 ms = {limit:.0} ms"),
                    limit,
                    "ms",
                )
            })
            .collect(),
        WorkloadId::W6 => vec![raftlock_at_most(
            rows,
            "next_acquire_ms",
            "next acquire ≤ 1500 ms after the kill".into(),
            1500.0,
            "ms",
        )],
        WorkloadId::W7 => {
            let complete = runs
                .iter()
                .filter(|r| r.system == System::Raftlock)
                .all(|r| r.values.get("expiry_complete") == Some(&1.0));
            let mut expiry = raftlock_at_most(
                rows,
                "expired_after_deadline_s",
                format!("all {} expired ≤ 2 s after their deadline", plan.w7_leases),
                2.0,
                "s",
            );
            let burst = runs
                .iter()
                .filter(|r| r.system == System::Raftlock)
                .all(|r| r.values.get("deadline_spread_s").is_some_and(|s| *s <= 1.0));
            if !complete {
                expiry.met = Some(false);
            } else if !burst {
                expiry.met = None;
                expiry.observed += " (not judged: leases did not all end together)";
            }
            vec![
                raftlock_at_most(
                    rows,
                    "rss_max_mb",
                    "RSS ≤ 300 MB per node".into(),
                    300.0,
                    "MB",
                ),
                expiry,
            ]
        }
        WorkloadId::W8 => connected_targets(plan, rows, runs),
    }
}

/// W8's targets, on raftlock's rounds: the probe's p99 with every client
/// connected at most twice its p99 alone (median of the rounds' ratios,
/// each round's pair measured minutes apart at most), every node at most
/// 300 MB in every round, and no client refused or failing in any round.
fn connected_targets(plan: &Plan, rows: &[MetricRow], runs: &[Run]) -> Vec<TargetResult> {
    let ours: Vec<&Run> = runs
        .iter()
        .filter(|r| r.system == System::Raftlock)
        .collect();
    let value = |r: &Run, key: &str| r.values.get(key).copied();
    let etcd_ratio = rows
        .iter()
        .find(|r| r.key == "probe_p99_vs_idle")
        .and_then(|r| r.etcd);
    let mut probe = raftlock_at_most(
        rows,
        "probe_p99_vs_idle",
        "probe acquire p99 with the clients connected ≤ 2× its p99 alone".into(),
        2.0,
        "×",
    );
    if let Some(e) = etcd_ratio {
        probe.observed += &format!(" (etcd {e:.2}×)");
    }
    let rss = ours
        .iter()
        .filter_map(|r| value(r, "rss_max_mb"))
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let refused: Option<f64> = (!ours.is_empty()).then(|| {
        ours.iter()
            .map(|r| {
                value(r, "failed_clients").unwrap_or(0.0)
                    + value(r, "refused_connections").unwrap_or(0.0)
                    + (plan.w8_clients as f64 - value(r, "clients").unwrap_or(0.0))
            })
            .sum()
    });
    vec![
        probe,
        TargetResult {
            target: "RSS ≤ 300 MB per node (largest node, worst round)".into(),
            observed: rss.map_or("n/a".into(), |v| format!("{v:.1} MB")),
            met: rss.map(|v| v <= 300.0),
        },
        TargetResult {
            target: format!(
                "all {} clients connected, none refused, at the default settings",
                plan.w8_clients
            ),
            observed: refused.map_or("n/a".into(), |v| {
                format!("{v:.0} refused, failing or missing (all rounds)")
            }),
            met: refused.map(|v| v == 0.0),
        },
    ]
}
