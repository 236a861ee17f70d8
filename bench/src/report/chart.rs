//! The PNG chart: raftlock / etcd per metric (log scale, with the target
//! where there is one), and the acquire-latency percentiles of W1–W3 and
//! the keep-alive latency of W4 for both systems. Text is drawn with a font
//! that ships inside a crate, so no system font library is needed.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::register_font;

use super::Report;
use crate::cluster::System;
use crate::workload::Better;
use crate::Error;

const FONT: &str = "sans-serif";

fn chart_error(e: impl std::fmt::Display) -> Error {
    Error::Report(format!("cannot draw the chart: {e}"))
}

/// Draws the chart of `report` into `path`.
pub fn draw(report: &Report, path: &Path) -> Result<(), Error> {
    register_font(FONT, FontStyle::Normal, epaint_default_fonts::HACK_REGULAR)
        .map_err(|_| chart_error("the bundled font does not load"))?;
    let root = BitMapBackend::new(path, (1600, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(chart_error)?;
    let (left, right) = root.split_horizontally(820);
    draw_ratios(report, &left)?;
    draw_latencies(report, &right)?;
    root.present().map_err(chart_error)
}

/// The ratios worth a bar: throughput and latency metrics both systems have.
fn ratio_bars(report: &Report) -> Vec<(String, f64, Better)> {
    let mut bars = Vec::new();
    for w in &report.workloads {
        for m in &w.metrics {
            // Errors, maxima and W7's deadline spread (a check on the run,
            // not a result) would only crowd the chart.
            if m.key == "errors" || m.key == "deadline_spread_s" || m.key.ends_with("_max_ms") {
                continue;
            }
            if let Some(r) = m.ratio.filter(|r| r.is_finite() && *r > 0.0) {
                bars.push((format!("{} {}", w.id, short(&m.key)), r, m.better));
            }
        }
    }
    bars
}

fn short(key: &str) -> String {
    key.replace("_per_s", "/s")
        .replace("_ms", "")
        .replace("acquire_", "acq ")
        .replace("keep_alive_", "ka ")
        .replace("handoff_ttl_", "handoff ")
        .replace('_', " ")
}

fn draw_ratios<DB: DrawingBackend>(
    report: &Report,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), Error> {
    let bars = ratio_bars(report);
    if bars.is_empty() {
        // One system alone (`--systems`): there is no ratio to draw.
        area.titled("no raftlock / etcd ratios: one system ran", (FONT, 20))
            .map_err(chart_error)?;
        return Ok(());
    }
    let n = bars.len();
    let (lo, hi) = bars.iter().fold((0.5f64, 2.0f64), |(lo, hi), (_, r, _)| {
        (lo.min(*r * 0.8), hi.max(*r * 1.25))
    });
    // The first bar on top: bar i sits in row n - 1 - i.
    let row = |i: usize| n - 1 - i;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "raftlock / etcd, medians (^ higher is better, v lower)",
            (FONT, 20),
        )
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(230)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n).into_segmented())
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(r) if *r < n => {
                let (label, _, better) = &bars[n - 1 - *r];
                format!(
                    "{label} {}",
                    if *better == Better::Higher { "^" } else { "v" }
                )
            }
            _ => String::new(),
        })
        .x_desc("ratio (log scale); green: raftlock better, red: etcd better")
        .label_style((FONT, 13))
        .draw()
        .map_err(chart_error)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, r, better))| {
            let good = match better {
                Better::Higher => *r >= 1.0,
                Better::Lower => *r <= 1.0,
            };
            let color = if good { GREEN.mix(0.7) } else { RED.mix(0.7) };
            let mut bar = Rectangle::new(
                [
                    (1.0, SegmentValue::Exact(row(i))),
                    (*r, SegmentValue::Exact(row(i) + 1)),
                ],
                color.filled(),
            );
            bar.set_margin(3, 3, 0, 0);
            bar
        }))
        .map_err(chart_error)?;
    chart
        .draw_series(LineSeries::new(
            vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
            BLACK.stroke_width(2),
        ))
        .map_err(chart_error)?;
    Ok(())
}

/// A latency curve: its label, its system, and (nines, ms) points.
type Curve = (String, System, Vec<(f64, f64)>);

fn draw_latencies<DB: DrawingBackend>(
    report: &Report,
    area: &DrawingArea<DB, plotters::coord::Shift>,
) -> Result<(), Error> {
    let series: Vec<Curve> = report
        .workloads
        .iter()
        .flat_map(|w| {
            w.curves_ms.iter().map(move |(system, curve)| {
                let points = w
                    .curve_quantiles
                    .iter()
                    .zip(curve)
                    .map(|(q, ms)| (nines(*q), ms.max(0.01)))
                    .collect();
                (format!("{} {}", w.id, system), *system, points)
            })
        })
        .collect();
    let max_ms = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption("latency percentiles (median of rounds)", (FONT, 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..4.2f64, (0.01..max_ms * 1.5).log_scale())
        .map_err(chart_error)?;
    chart
        .configure_mesh()
        .x_labels(6)
        .x_label_formatter(&|x| format!("p{}", percentile_label(*x)))
        .x_desc("percentile")
        .y_desc("ms (log scale)")
        .label_style((FONT, 13))
        .draw()
        .map_err(chart_error)?;
    let palette = [
        RGBColor(0, 70, 220),
        RGBColor(200, 0, 160),
        RGBColor(0, 150, 0),
        RGBColor(230, 120, 0),
    ];
    for (i, (label, system, points)) in series.into_iter().enumerate() {
        let color = palette[(i / 2) % palette.len()];
        let style = if system == System::Raftlock {
            color.stroke_width(3)
        } else {
            color.mix(0.5).stroke_width(1)
        };
        chart
            .draw_series(LineSeries::new(points, style))
            .map_err(chart_error)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font((FONT, 13))
        .draw()
        .map_err(chart_error)
}

/// Position of quantile `q` on a "number of nines" axis: p90 → 1,
/// p99 → 2, p99.9 → 3, max → 4.2.
fn nines(q: f64) -> f64 {
    if q >= 1.0 {
        4.2
    } else {
        -(1.0 - q).log10()
    }
}

fn percentile_label(x: f64) -> String {
    if x >= 4.1 {
        return "max".into();
    }
    let p = (1.0 - 10f64.powf(-x)) * 100.0;
    let s = format!("{p:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(nines(1.0), 4.2);
        assert_eq!(percentile_label(2.0), "99");
        assert_eq!(percentile_label(0.0), "0");
    }
}
