//! What a node says about the peer messages it refuses: a log line per
//! refusal, limited so that a flood can neither fill the log nor silence
//! it, and a counter per reason (`raftlock_peer_refused_total{reason}`)
//! that counts every refusal, logged or not.
//!
//! Lines are limited twice, per reason (the guard's fixed kinds: `auth`,
//! `cluster`, `speaker`, ...):
//! - one sender refused for one reason is logged at most once per
//!   [`WINDOW`]. The senders remembered for that are forgotten once their
//!   window has passed, so made-up sender ids cannot fill the table: it
//!   holds at most the senders logged in the last window, and those are
//!   bounded by the next rule;
//! - each reason gets at most [`LINES_PER_WINDOW`] lines per window,
//!   whoever sends. A flood of made-up ids writes that many; the refusals
//!   past them are summed up in one line ("N more ...") written with the
//!   first refusal of that reason after the window. A flood of one reason
//!   never takes another reason's lines.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use raftlock_storage::NodeId;

use super::Refusal;
use crate::metrics::PeerRefusals;

/// How long one sender's refusal for one reason keeps it from being logged
/// again, and the span each reason's line budget covers.
pub const WINDOW: Duration = Duration::from_secs(10);

/// Most lines per reason per [`WINDOW`], the summary line aside.
pub const LINES_PER_WINDOW: u32 = 5;

/// The most senders remembered before those whose window has passed are
/// forgotten. Only senders logged in the last window are kept, at most
/// [`LINES_PER_WINDOW`] per reason, so this is never the limit in
/// practice; it bounds the table all the same.
const MAX_REMEMBERED: usize = 1024;

/// One reason's budget in its current window.
#[derive(Debug)]
struct Budget {
    /// When the window began.
    started: Instant,
    /// Lines written in it.
    lines: u32,
    /// Refusals not logged in it.
    unlogged: u64,
}

#[derive(Debug, Default)]
struct Inner {
    budgets: HashMap<&'static str, Budget>,
    /// When each (sender, reason) was last logged.
    logged: HashMap<(NodeId, &'static str), Instant>,
}

/// The rate-limited log and the counter of refused peer messages.
#[derive(Debug)]
pub struct RefusalLog {
    /// This node, named in every line.
    node: NodeId,
    inner: Mutex<Inner>,
    counters: PeerRefusals,
}

impl RefusalLog {
    /// The log of node `node`, counting into `counters`.
    pub fn new(node: NodeId, counters: PeerRefusals) -> Self {
        RefusalLog {
            node,
            inner: Mutex::default(),
            counters,
        }
    }

    /// Counts a refusal of a message from `from` for `reason`, and logs it
    /// unless the limits above hold it back.
    pub fn refused(&self, from: NodeId, reason: &'static str, refusal: &Refusal, now: Instant) {
        self.counters.inc(reason);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let Inner { budgets, logged } = &mut *inner;
        let budget = budgets.entry(reason).or_insert(Budget {
            started: now,
            lines: 0,
            unlogged: 0,
        });
        let window_passed = now.saturating_duration_since(budget.started) >= WINDOW;
        if window_passed {
            if budget.unlogged > 0 {
                tracing::error!(
                    node = self.node,
                    reason,
                    "refused {} more peer messages ({reason}) in the {:?} before, \
                     without a line each (raftlock_peer_refused_total counts them all)",
                    budget.unlogged,
                    now.saturating_duration_since(budget.started),
                );
            }
            *budget = Budget {
                started: now,
                lines: 0,
                unlogged: 0,
            };
        }
        let repeated = logged
            .get(&(from, reason))
            .is_some_and(|t| now.saturating_duration_since(*t) < WINDOW);
        if repeated || budget.lines >= LINES_PER_WINDOW {
            budget.unlogged += 1;
            return;
        }
        budget.lines += 1;
        if logged.len() >= MAX_REMEMBERED {
            logged.retain(|_, t| now.saturating_duration_since(*t) < WINDOW);
        }
        if logged.len() < MAX_REMEMBERED {
            logged.insert((from, reason), now);
        }
        tracing::error!(
            node = self.node,
            peer = from,
            reason,
            "refused a peer message: {refusal}"
        );
    }

    /// How many (sender, reason) pairs are remembered.
    #[cfg(test)]
    fn remembered(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .logged
            .len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex as StdMutex};

    use super::*;

    /// Captures the lines logged while `f` runs on this thread.
    fn lines_of(f: impl FnOnce()) -> Vec<String> {
        #[derive(Clone, Default)]
        struct Sink(Arc<StdMutex<Vec<u8>>>);
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = sink.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn unauthenticated() -> Refusal {
        Refusal::Unauthenticated(super::super::Unauthenticated::TagMismatch)
    }

    /// 1 100 refusals for one reason from distinct made-up senders, then one
    /// for another reason: the flood writes its budget of lines and no
    /// more, the other reason is logged at once, the flood's remainder is
    /// summed up after the window, and the table of senders stays small.
    /// With the earlier map of logged senders (bounded, never emptied),
    /// 1 024 made-up senders filled it and the other reason was never
    /// logged again.
    #[test]
    fn a_flood_of_made_up_senders_cannot_silence_another_reason() {
        let metrics = crate::metrics::NodeMetrics::new();
        let log = RefusalLog::new(1, metrics.peer_refusals());
        let start = Instant::now();
        let lines = lines_of(|| {
            for from in 1_000..2_100 {
                log.refused(from, "auth", &unauthenticated(), start);
            }
            let copy = Refusal::NotMember { from: 7 };
            log.refused(7, "member", &copy, start);
            log.refused(5_000, "auth", &unauthenticated(), start + WINDOW);
        });
        let flood = lines.iter().filter(|l| l.contains("tag does not match"));
        assert_eq!(flood.count(), LINES_PER_WINDOW as usize + 1, "{lines:#?}");
        assert!(
            lines.iter().any(|l| l.contains("node 7 is not a member")),
            "{lines:#?}"
        );
        let summary = lines
            .iter()
            .find(|l| l.contains("more peer messages (auth)"))
            .expect("a summary of the flood");
        assert!(
            summary.contains(&format!("refused {} more", 1_100 - LINES_PER_WINDOW)),
            "{summary}"
        );
        assert!(log.remembered() <= 2 * LINES_PER_WINDOW as usize + 1);
        let text = metrics.encode();
        assert!(text.contains("raftlock_peer_refused_total{reason=\"auth\"} 1101"));
        assert!(text.contains("raftlock_peer_refused_total{reason=\"member\"} 1"));
    }

    /// One sender refused again and again is logged once per window.
    #[test]
    fn a_repeated_refusal_is_logged_once_per_window() {
        let log = RefusalLog::new(1, PeerRefusals::default());
        let start = Instant::now();
        let lines = lines_of(|| {
            for i in 0..100 {
                log.refused(2, "auth", &unauthenticated(), start + WINDOW / 200 * i);
            }
            log.refused(2, "auth", &unauthenticated(), start + WINDOW * 2);
        });
        let logged = lines.iter().filter(|l| l.contains("tag does not match"));
        assert_eq!(logged.count(), 2, "{lines:#?}");
        assert!(
            lines.iter().any(|l| l.contains("refused 99 more")),
            "{lines:#?}"
        );
    }
}
