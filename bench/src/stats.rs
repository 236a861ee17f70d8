//! Latency samples, their percentiles, and medians across rounds.

use std::time::Duration;

use serde::Serialize;

/// Percentiles at which a latency distribution is kept for the chart.
pub const CURVE_QUANTILES: [f64; 12] = [
    0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1.0,
];

/// Latency samples of one run, in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    micros: Vec<u64>,
}

impl Samples {
    pub fn push(&mut self, d: Duration) {
        self.micros.push(d.as_micros() as u64);
    }

    pub fn extend(&mut self, other: Samples) {
        self.micros.extend(other.micros);
    }

    pub fn len(&self) -> usize {
        self.micros.len()
    }

    pub fn is_empty(&self) -> bool {
        self.micros.is_empty()
    }

    /// p50, p99, max and the chart's curve.
    pub fn summary(mut self) -> Latency {
        self.micros.sort_unstable();
        let ms = |q: f64| quantile(&self.micros, q) as f64 / 1000.0;
        Latency {
            p50_ms: ms(0.5),
            p99_ms: ms(0.99),
            max_ms: ms(1.0),
            count: self.micros.len() as u64,
            curve_ms: CURVE_QUANTILES.iter().map(|q| ms(*q)).collect(),
        }
    }
}

/// Nearest-rank quantile of sorted samples; 0 when there are none.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A latency distribution, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub count: u64,
    /// Latency at each of [`CURVE_QUANTILES`].
    pub curve_ms: Vec<f64>,
}

/// The median of some values (the mean of the middle two for an even
/// count); `None` for none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut s = Samples::default();
        for ms in 1..=100 {
            s.push(Duration::from_millis(ms));
        }
        let l = s.summary();
        assert_eq!(l.p50_ms, 50.0);
        assert_eq!(l.p99_ms, 99.0);
        assert_eq!(l.max_ms, 100.0);
        assert_eq!(l.count, 100);
        assert_eq!(Samples::default().summary().p99_ms, 0.0);
    }

    #[test]
    fn medians() {
        assert_eq!(median([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median([]), None);
    }
}
