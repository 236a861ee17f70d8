//! Shared leadership checks: one quorum round answers every read-index
//! caller that arrived before it started.
//!
//! openraft's `ReadIndex` policy (a quorum acknowledgement no older than
//! the call) sends a fresh round of AppendEntries to every voter for each
//! `get_read_log_id` call, so a leader serving thousands of keep-alives a
//! second would send thousands of rounds. Here at most one round is in
//! flight; callers that arrive meanwhile wait for it to end and then share
//! the *next* round (a round that started before a caller arrived cannot
//! vouch for it: the caller could have been told about a write committed
//! after that round read the commit index).

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::error::Error;

/// The last round's outcome and which callers it covers.
#[derive(Default)]
struct Round {
    /// Every ticket up to this one was issued before the round started.
    covers: u64,
    /// The read index it confirmed, or why it failed.
    outcome: Option<Result<u64, Error>>,
}

/// Coalesces leadership checks. One per node.
#[derive(Default)]
pub struct ReadIndexRounds {
    /// Tickets handed out so far; a caller's ticket orders it against rounds.
    issued: AtomicU64,
    /// Held while a round runs; holds the last round's outcome.
    last: Mutex<Round>,
    /// Until when (and in which term) a confirmed round vouches that no
    /// other leader can exist; see [`extend_lease`](Self::extend_lease).
    lease: std::sync::Mutex<Option<(u64, Instant)>>,
    /// The lowest read index this leader may answer in a term; see
    /// [`floor`](Self::floor).
    floor: std::sync::Mutex<Option<(u64, u64)>>,
}

impl ReadIndexRounds {
    /// A read index confirmed by a quorum round that started after this call
    /// did. `confirm` runs one such round (`raft.get_read_log_id()`).
    pub async fn read_index<F, Fut>(&self, confirm: F) -> Result<u64, Error>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<u64, Error>>,
    {
        let ticket = self.issued.fetch_add(1, Ordering::SeqCst) + 1;
        let mut last = self.last.lock().await;
        if last.covers >= ticket {
            if let Some(outcome) = &last.outcome {
                return outcome.clone();
            }
        }
        // Everyone who has a ticket by now arrived before this round starts.
        let covers = self.issued.load(Ordering::SeqCst);
        let outcome = confirm().await;
        *last = Round {
            covers,
            outcome: Some(outcome.clone()),
        };
        outcome
    }
}

impl ReadIndexRounds {
    /// Records that leadership in `term` was confirmed by a round that
    /// started after `until - window`: followers that answered it refuse
    /// to vote for anyone else for openraft's leader lease (twice the
    /// election timeout) after they heard it, so callers pass `until` =
    /// the caller's arrival + one election timeout, half of that lease,
    /// leaving the other half for clock-rate differences.
    pub fn extend_lease(&self, term: u64, until: Instant) {
        let mut lease = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        match *lease {
            Some((t, u)) if t == term && u >= until => {}
            _ => *lease = Some((term, until)),
        }
    }

    /// The lowest read index to answer in `term`: this leader's last log
    /// index when it first answers one in that term (`last_log_index` now).
    ///
    /// openraft answers `max(first entry of the term, committed)`. Under
    /// openraft 0.9 a leader that restarted with its vote for itself was
    /// restored as leader in the same term, and then `committed` was only
    /// what its log store remembered, which may lag what was committed, and
    /// acknowledged, before the restart (the chaos suite saw a read after a
    /// full restart miss a grant). raftlock now turns openraft 0.10's leader
    /// restore off, and keeps this floor as a second guard. Every entry committed before is in this leader's log:
    /// entries of its term it proposed itself, earlier ones by Leader
    /// Completeness. So a read waits until that whole log is applied.
    pub fn floor(&self, term: u64, last_log_index: u64) -> u64 {
        let mut floor = self.floor.lock().unwrap_or_else(|e| e.into_inner());
        match *floor {
            Some((t, index)) if t == term => index,
            _ => {
                *floor = Some((term, last_log_index));
                last_log_index
            }
        }
    }

    /// Whether a round confirmed leadership in `term` recently enough that
    /// no other leader can exist at `now`.
    pub fn leased(&self, term: u64, now: Instant) -> bool {
        let lease = self.lease.lock().unwrap_or_else(|e| e.into_inner());
        matches!(*lease, Some((t, until)) if t == term && now < until)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::error::Unavailable;

    #[tokio::test(start_paused = true)]
    async fn callers_waiting_on_a_round_share_the_next_one() {
        let rounds = Arc::new(ReadIndexRounds::default());
        let started = Arc::new(AtomicUsize::new(0));
        let mut calls = Vec::new();
        for _ in 0..10 {
            let rounds = rounds.clone();
            let started = started.clone();
            calls.push(tokio::spawn(async move {
                rounds
                    .read_index(|| async move {
                        let n = started.fetch_add(1, Ordering::SeqCst) as u64;
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        Ok(100 + n)
                    })
                    .await
            }));
        }
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.unwrap().unwrap());
        }
        // The first caller runs round 0 alone; the nine that queued behind
        // it share round 1.
        assert_eq!(started.load(Ordering::SeqCst), 2);
        assert_eq!(answers.iter().filter(|a| **a == 100).count(), 1);
        assert_eq!(answers.iter().filter(|a| **a == 101).count(), 9);
    }

    #[tokio::test(start_paused = true)]
    async fn a_round_that_started_earlier_covers_no_later_caller() {
        let rounds = ReadIndexRounds::default();
        assert_eq!(rounds.read_index(|| async { Ok(5) }).await, Ok(5));
        // A caller arriving after that round ended gets a round of its own.
        assert_eq!(rounds.read_index(|| async { Ok(7) }).await, Ok(7));
        // Failures are shared the same way and not cached for later callers.
        assert_eq!(
            rounds
                .read_index(|| async { Err(Error::Unavailable(Unavailable::NoLeader)) })
                .await,
            Err(Error::Unavailable(Unavailable::NoLeader))
        );
        assert_eq!(rounds.read_index(|| async { Ok(9) }).await, Ok(9));
    }

    #[test]
    fn the_floor_is_the_log_end_when_a_term_first_asks() {
        let rounds = ReadIndexRounds::default();
        assert_eq!(rounds.floor(9, 1793), 1793);
        // Later in the term the log has grown; the floor stays.
        assert_eq!(rounds.floor(9, 1900), 1793);
        assert_eq!(rounds.floor(10, 1950), 1950);
    }

    #[tokio::test(start_paused = true)]
    async fn the_lease_holds_for_its_term_until_it_runs_out() {
        let rounds = ReadIndexRounds::default();
        let t0 = Instant::now();
        assert!(!rounds.leased(3, t0));
        rounds.extend_lease(3, t0 + Duration::from_millis(300));
        assert!(rounds.leased(3, t0 + Duration::from_millis(299)));
        assert!(!rounds.leased(3, t0 + Duration::from_millis(300)));
        // Another term is never covered.
        assert!(!rounds.leased(4, t0));
        // A late, shorter confirmation does not shorten the lease.
        rounds.extend_lease(3, t0 + Duration::from_millis(100));
        assert!(rounds.leased(3, t0 + Duration::from_millis(200)));
        // A new term replaces it.
        rounds.extend_lease(4, t0 + Duration::from_millis(100));
        assert!(!rounds.leased(3, t0));
        assert!(rounds.leased(4, t0));
    }
}
