//! A warning that a retry loop would log every pass: logged the first
//! time, then as one summary line with a count at most every
//! [`SUMMARY_EVERY`], and once more when the failures stop. A leader that
//! lost its quorum retries its lease expiries every 50 ms; without this it
//! printed one line each time (about 300 while an application stopped).

use std::time::Duration;

use tokio::time::Instant;

/// How often a summary of repeated failures is logged.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// What to log for one failure, if anything.
#[derive(Debug, PartialEq, Eq)]
pub enum Report {
    /// The first failure of a run: log it in full.
    First,
    /// `count` failures since the last line: log a summary.
    Summary { count: u64 },
    /// Nothing now.
    Quiet,
}

/// The state of one kind of repeated warning.
#[derive(Debug, Default)]
pub struct RepeatedWarning {
    /// When the last line was logged; `None` while nothing fails.
    logged_at: Option<Instant>,
    /// Failures since then.
    unlogged: u64,
    /// Failures in the current run.
    total: u64,
}

impl RepeatedWarning {
    /// Counts one failure at `now` and says what to log.
    pub fn failed(&mut self, now: Instant) -> Report {
        self.total += 1;
        match self.logged_at {
            None => {
                self.logged_at = Some(now);
                Report::First
            }
            Some(at) if now.saturating_duration_since(at) >= SUMMARY_EVERY => {
                let count = self.unlogged + 1;
                self.logged_at = Some(now);
                self.unlogged = 0;
                Report::Summary { count }
            }
            Some(_) => {
                self.unlogged += 1;
                Report::Quiet
            }
        }
    }

    /// A success: ends the run; answers how many failures it had, if any
    /// was logged (so the caller can say it recovered).
    pub fn succeeded(&mut self) -> Option<u64> {
        let total = std::mem::take(&mut self.total);
        self.logged_at.take().map(|_| total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_the_first_then_a_count_per_period_then_the_recovery() {
        let mut w = RepeatedWarning::default();
        let t0 = Instant::now();
        assert_eq!(w.failed(t0), Report::First);
        // 300 failures 50 ms apart (15 s): two lines in all, not 300.
        let mut lines = 1;
        let mut counted = 1;
        for i in 1..300u32 {
            match w.failed(t0 + Duration::from_millis(50) * i) {
                Report::First => panic!("a second first"),
                Report::Summary { count } => {
                    lines += 1;
                    counted += count;
                }
                Report::Quiet => {}
            }
        }
        assert_eq!(lines, 2);
        assert!(counted <= 300);
        assert_eq!(w.succeeded(), Some(300));
        // A new run starts with a full line again.
        assert_eq!(w.failed(t0 + SUMMARY_EVERY * 3), Report::First);
        assert_eq!(w.succeeded(), Some(1));
        assert_eq!(w.succeeded(), None);
    }
}
