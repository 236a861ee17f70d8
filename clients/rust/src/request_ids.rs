//! Request ids for exactly-once retries: one client id per [`Client`]
//! (a UUID), a sequence number per request starting at 1, and the lowest
//! number whose reply is still outstanding so the server can forget older
//! replies.
//!
//! `acked_below` never passes a request whose outcome the client does not
//! know: a call whose future was dropped after sending keeps its number
//! open until its background cleanup (`abandoned`) has learnt the outcome.
//! And until the cluster has answered some request under a client id, the
//! client does not know it was ever heard of: it sends `acked_below` 1
//! (claiming no earlier replies), so a client whose first calls were all
//! dropped is not taken for one whose session the cluster forgot.
//!
//! A retry always re-sends the same id. When the cluster answers that it no
//! longer knows the outcome ([`Error::OutcomeUnknown`]: the reply or this
//! client id was forgotten), the call reports it and is never re-sent under
//! a new id; later calls use a fresh client id, numbered from 1 again.
//!
//! [`Client`]: super::Client

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use tokio::time::Instant;
use uuid::Uuid;

use crate::error::Error;
use crate::pb;

/// Hands out request ids and tracks which are still in flight.
#[derive(Debug)]
pub struct RequestIds {
    ids: Arc<Mutex<Ids>>,
}

#[derive(Debug)]
struct Ids {
    /// The client id new requests are numbered under.
    client: Uuid,
    /// The next sequence number.
    next: u64,
    /// Sequence numbers of `client` whose calls have no answer yet.
    open: BTreeSet<u64>,
    /// The cluster answered a request under `client`, so it knows the
    /// client: only then may `acked_below` claim earlier replies.
    known: bool,
}

impl Ids {
    fn fresh() -> Self {
        Ids {
            client: Uuid::new_v4(),
            next: 1,
            open: BTreeSet::new(),
            known: false,
        }
    }
}

/// An id in flight; dropping it closes the number (for a call never sent,
/// or one whose outcome nobody needs: `abandoned` keeps the number of a
/// dropped acquire open by keeping this guard until the outcome is known).
#[derive(Debug)]
pub struct InFlightId {
    client: Uuid,
    seq: u64,
    ids: Arc<Mutex<Ids>>,
}

impl RequestIds {
    pub fn new() -> Self {
        RequestIds {
            ids: Arc::new(Mutex::new(Ids::fresh())),
        }
    }

    /// A fresh id. Keep the returned guard until the call has an answer,
    /// and pass the answer through [`InFlightId::settle`]; every retry of
    /// the call sends the same [`pb::RequestId`].
    pub fn next(&self) -> (pb::RequestId, InFlightId) {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        let seq = ids.next;
        ids.next += 1;
        ids.open.insert(seq);
        let acked_below = match ids.known {
            true => ids.open.first().copied().unwrap_or(seq),
            false => 1,
        };
        let id = pb::RequestId {
            client_id: ids.client.as_bytes().to_vec(),
            seq,
            acked_below,
            attempt: 0,
        };
        let open = InFlightId {
            client: ids.client,
            seq,
            ids: self.ids.clone(),
        };
        (id, open)
    }
}

impl InFlightId {
    /// Passes the call's answer through. An [`Error::OutcomeUnknown`] is
    /// reported as it is (the call is not re-sent), and retires this
    /// client id: the cluster may have forgotten it, and would refuse
    /// every later request under it.
    pub fn settle<T>(self, answer: Result<T, Error>) -> Result<T, Error> {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        if ids.client == self.client {
            match &answer {
                Err(Error::OutcomeUnknown(_)) => *ids = Ids::fresh(),
                Ok(_) => ids.known = true,
                Err(_) => {}
            }
        }
        answer
    }
}

impl Drop for InFlightId {
    fn drop(&mut self) {
        let mut ids = self.ids.lock().unwrap_or_else(|e| e.into_inner());
        if ids.client == self.client {
            ids.open.remove(&self.seq);
        }
    }
}

/// The attempts of one waiting call (Acquire, Campaign): each re-send
/// carries the next attempt number, so it takes the wait over from the
/// attempt before (whose node may still cancel on that attempt's behalf),
/// and asks only for the wait left until the caller's deadline.
#[derive(Debug)]
pub struct WaitAttempts {
    deadline: Option<Instant>,
    next: u32,
}

impl WaitAttempts {
    /// Attempts of a call that waits until `deadline` (`None`: forever).
    pub fn new(deadline: Option<Instant>) -> Self {
        Self::starting_at(deadline, 0)
    }

    /// Attempts numbered from `first` (the ones before were sent already).
    pub fn starting_at(deadline: Option<Instant>, first: u32) -> Self {
        WaitAttempts {
            deadline,
            next: first,
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn wait_attempts_count_up_and_ask_for_the_wait_left() {
        let (id, _open) = RequestIds::new().next();
        let mut forever = WaitAttempts::new(None);
        assert_eq!(forever.next(&id), (id.clone(), 0));
        let (second, wait) = forever.next(&id);
        assert_eq!((second.seq, second.attempt, wait), (id.seq, 1, 0));

        let mut bounded = WaitAttempts::new(Some(Instant::now() + Duration::from_secs(60)));
        let (first, wait) = bounded.next(&id);
        assert_eq!(first.attempt, 0);
        assert!(wait > 50_000 && wait <= 60_000, "{wait}");
        let mut spent = WaitAttempts::new(Some(Instant::now()));
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
        assert!(ga.settle(Ok::<_, Error>(())).is_ok());
        let (c, _gc) = ids.next();
        assert_eq!((c.seq, c.acked_below), (3, 2));
        drop(gb);
        let (d, _gd) = ids.next();
        assert_eq!(d.acked_below, 3);
        assert_eq!(a.client_id, d.client_id);
    }

    /// Without the `known` flag, the fourth request would say
    /// `acked_below` 4 to a cluster that never heard of the client, which
    /// refuses it as a forgotten session (`OutcomeUnknown`).
    #[test]
    fn acked_below_stays_1_until_the_cluster_answered() {
        let ids = RequestIds::new();
        for _ in 0..3 {
            let (_, dropped_unsent) = ids.next();
            drop(dropped_unsent);
        }
        let (d, gd) = ids.next();
        assert_eq!((d.seq, d.acked_below), (4, 1));
        // A refusal proves nothing about the client's session.
        assert!(gd
            .settle::<()>(Err(Error::InvalidArgument("x".into())))
            .is_err());
        let (e, ge) = ids.next();
        assert_eq!((e.seq, e.acked_below), (5, 1));
        assert!(ge.settle(Ok::<_, Error>(())).is_ok());
        let (f, _gf) = ids.next();
        assert_eq!((f.seq, f.acked_below), (6, 6));
    }

    #[test]
    fn an_unknown_outcome_retires_the_client_id() {
        let ids = RequestIds::new();
        let (a, ga) = ids.next();
        let (b, gb) = ids.next();
        let (_, gc) = ids.next();
        drop(gc);
        // Any other answer keeps the id.
        assert!(ga.settle(Ok::<_, Error>(())).is_ok());
        let (d, gd) = ids.next();
        assert_eq!((d.client_id.clone(), d.seq), (a.client_id.clone(), 4));
        // The answer comes back as it was: the caller sees it.
        let unknown = Error::OutcomeUnknown("forgotten".into());
        assert_eq!(gb.settle::<()>(Err(unknown.clone())), Err(unknown.clone()));
        let (e, ge) = ids.next();
        assert_ne!(e.client_id, a.client_id, "a new client id");
        assert_eq!((e.seq, e.acked_below), (1, 1), "numbered from 1 again");
        // A second report for the retired id does not retire the new one.
        assert!(gd.settle::<()>(Err(unknown)).is_err());
        let (f, _gf) = ids.next();
        assert_eq!((f.client_id.clone(), f.seq), (e.client_id.clone(), 2));
        assert_eq!(f.acked_below, 1);
        assert!(ge.settle(Ok::<_, Error>(())).is_ok());
        let (g, _gg) = ids.next();
        assert_eq!(g.acked_below, 2);
        assert_ne!(b.client_id, g.client_id);
    }
}
