//! Request ids for exactly-once retries: one client id per [`Client`]
//! (a UUID), a sequence number per request, and the lowest number whose
//! reply is still outstanding so the server can forget older replies.
//!
//! [`Client`]: super::Client

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::pb;

/// Hands out request ids and tracks which are still in flight.
#[derive(Debug)]
pub struct RequestIds {
    client: Uuid,
    state: Arc<Mutex<InFlight>>,
}

#[derive(Debug, Default)]
struct InFlight {
    next: u64,
    open: BTreeSet<u64>,
}

/// An id in flight; dropping it marks its reply as received.
#[derive(Debug)]
pub struct InFlightId {
    seq: u64,
    state: Arc<Mutex<InFlight>>,
}

impl RequestIds {
    pub fn new() -> Self {
        RequestIds {
            client: Uuid::new_v4(),
            state: Arc::new(Mutex::new(InFlight {
                next: 1,
                open: BTreeSet::new(),
            })),
        }
    }

    /// A fresh id. Keep the returned guard until the call has an answer;
    /// every retry of the call sends the same [`pb::RequestId`].
    pub fn next(&self) -> (pb::RequestId, InFlightId) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let seq = s.next;
        s.next += 1;
        s.open.insert(seq);
        let acked_below = s.open.first().copied().unwrap_or(seq);
        let id = pb::RequestId {
            client_id: self.client.as_bytes().to_vec(),
            seq,
            acked_below,
            attempt: 0,
        };
        (
            id,
            InFlightId {
                seq,
                state: self.state.clone(),
            },
        )
    }
}

impl Drop for InFlightId {
    fn drop(&mut self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .open
            .remove(&self.seq);
    }
}

/// The attempts of one waiting call (Acquire, Campaign): each re-send
/// carries the next attempt number, so it takes the wait over from the
/// attempt before (whose node may still cancel on that attempt's behalf),
/// and asks only for the wait left of the caller's timeout.
#[derive(Debug)]
pub struct WaitAttempts {
    deadline: Option<Instant>,
    next: u32,
}

impl WaitAttempts {
    /// Attempts of a call that waits at most `timeout` (`None`: forever).
    pub fn new(timeout: Option<Duration>) -> Self {
        WaitAttempts {
            deadline: timeout.map(|t| Instant::now() + t),
            next: 0,
        }
    }

    /// `id` and the wait in ms (0 = forever, else at least 1) for the next
    /// attempt.
    pub fn next(&mut self, id: &pb::RequestId) -> (pb::RequestId, u64) {
        let id = pb::RequestId {
            attempt: self.next,
            ..id.clone()
        };
        self.next = self.next.saturating_add(1);
        let wait_ms = self.deadline.map_or(0, |d| {
            let left = d.saturating_duration_since(Instant::now()).as_millis();
            u64::try_from(left).unwrap_or(u64::MAX).max(1)
        });
        (id, wait_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_attempts_count_up_and_ask_for_the_wait_left() {
        let (id, _open) = RequestIds::new().next();
        let mut forever = WaitAttempts::new(None);
        assert_eq!(forever.next(&id), (id.clone(), 0));
        let (second, wait) = forever.next(&id);
        assert_eq!((second.seq, second.attempt, wait), (id.seq, 1, 0));

        let mut bounded = WaitAttempts::new(Some(Duration::from_secs(60)));
        let (first, wait) = bounded.next(&id);
        assert_eq!(first.attempt, 0);
        assert!(wait > 50_000 && wait <= 60_000, "{wait}");
        let mut spent = WaitAttempts::new(Some(Duration::ZERO));
        // Never 0, which would mean "forever".
        assert_eq!(spent.next(&id).1, 1);
    }

    #[test]
    fn acked_below_is_the_oldest_open_request() {
        let ids = RequestIds::new();
        let (a, ga) = ids.next();
        let (b, gb) = ids.next();
        assert_eq!((a.seq, a.acked_below), (1, 1));
        assert_eq!((b.seq, b.acked_below), (2, 1));
        drop(ga);
        let (c, _gc) = ids.next();
        assert_eq!((c.seq, c.acked_below), (3, 2));
        drop(gb);
        let (d, _gd) = ids.next();
        assert_eq!(d.acked_below, 3);
        assert_eq!(a.client_id, d.client_id);
    }
}
