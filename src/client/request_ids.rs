//! Request ids for exactly-once retries: one client id per [`Client`]
//! (a UUID), a sequence number per request, and the lowest number whose
//! reply is still outstanding so the server can forget older replies.
//!
//! [`Client`]: super::Client

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

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

#[cfg(test)]
mod tests {
    use super::*;

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
