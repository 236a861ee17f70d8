//! The markdown table of a run: one row per metric (medians of every
//! round, and raftlock / etcd), then the targets.

use std::fmt::Write;

use super::Report;
use crate::breakdown::STAGES;
use crate::cluster::System;
use crate::stats::median;

/// A number with as many decimals as its size deserves.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or("–".into(), num)
}

/// The results table and the targets, as markdown.
pub fn render(report: &Report) -> String {
    let plan = &report.plan;
    let mut out = String::new();
    let _ = writeln!(out, "Command: `{}`\n", report.environment.command);
    if !report.environment.raftlock_args.is_empty() {
        let _ = writeln!(
            out,
            "**Not the defaults:** raftlock nodes ran with `{}`.\n",
            report.environment.raftlock_args.join(" ")
        );
    }
    let _ = writeln!(
        out,
        "Mode `{:?}`: {} A/B rounds of W1–W4 ({} s measured after {} s warm-up), \
         {} of W5/W6, {} of W7, {} of W8; medians of the rounds. {} CPUs, {}, total {:.0} s.\n",
        plan.mode,
        plan.rounds,
        plan.duration.as_secs_f64(),
        plan.warmup.as_secs_f64(),
        plan.fault_rounds,
        plan.w7_rounds,
        plan.w8_rounds,
        report.environment.cpus,
        report.environment.etcd_version,
        report.total_s
    );
    let _ = writeln!(
        out,
        "| Workload | Metric | etcd | raftlock | raftlock / etcd |"
    );
    let _ = writeln!(out, "| --- | --- | ---: | ---: | ---: |");
    for w in &report.workloads {
        for (i, m) in w.metrics.iter().enumerate() {
            let name = if i == 0 {
                format!("{} {}", w.id, w.title)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} |",
                m.label,
                opt(m.etcd),
                opt(m.raftlock),
                m.ratio.map_or("–".into(), |r| format!("{r:.2}×"))
            );
        }
    }
    let _ = writeln!(out, "\n| Workload | Target | Observed | Met |");
    let _ = writeln!(out, "| --- | --- | --- | --- |");
    for w in &report.workloads {
        for t in &w.targets {
            let met = match t.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "n/a",
            };
            let _ = writeln!(out, "| {} | {} | {} | {met} |", w.id, t.target, t.observed);
        }
    }
    breakdown(report, &mut out);
    out
}

/// The stages of a raftlock write, per workload that has them: the
/// nodes' own means over each round (`/metrics` before and after),
/// medians of the rounds. Stages nest; see [`crate::breakdown`].
fn breakdown(report: &Report, out: &mut String) {
    let columns: Vec<(String, Vec<Option<f64>>)> = report
        .workloads
        .iter()
        .filter_map(|w| {
            let values: Vec<Option<f64>> = STAGES
                .iter()
                .map(|(key, _)| {
                    let rounds: Vec<f64> = w
                        .runs
                        .iter()
                        .filter(|r| r.system == System::Raftlock)
                        .filter_map(|r| r.values.get(*key).copied())
                        .collect();
                    median(rounds)
                })
                .collect();
            values
                .iter()
                .any(Option::is_some)
                .then(|| (w.id.to_string(), values))
        })
        .collect();
    if columns.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\nWhere a raftlock write's time goes (ms; the nodes' own means over each \
         round, warm-up included, from /metrics before and after it; medians of the rounds):\n"
    );
    let ids: Vec<&str> = columns.iter().map(|(id, _)| id.as_str()).collect();
    let _ = writeln!(out, "| Stage | {} |", ids.join(" | "));
    let _ = writeln!(out, "| --- |{}", " ---: |".repeat(ids.len()));
    for (row, (_, label)) in STAGES.iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|(_, v)| opt(v[row])).collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_useful_digits() {
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
    }
}
