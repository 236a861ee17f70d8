//! The exactly-once reply table: per client, the replies to its recent
//! requests, each with the [fingerprint](crate::Command::fingerprint) of
//! the command it answered. A retry (same client, same sequence number,
//! same command) gets the original answer instead of a second apply; the
//! same request id with another command is refused.
//!
//! Bounded twice: at most [`MAX_REPLIES_PER_CLIENT`] replies per client (the
//! lowest sequence numbers go first) and at most `capacity` clients
//! ([`MAX_CLIENT_SESSIONS`]). A client that granted a live lease is
//! *pinned*: it is never forgotten, so its retries replay however many other
//! clients come and go. The least recently seen unpinned client is forgotten
//! to make room, found through an index ordered by last slot rather than a
//! scan; when every remembered client is pinned, a new client is refused.
//!
//! A request from an unknown client whose `acked_below` is above 1 says it
//! had replies before (the first request of a client id is numbered 1):
//! its session was forgotten, so it is refused as expired rather than
//! applied again.
//!
//! Every refusal leaves the table as it was.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{ClientSession, StoredReply};
use crate::command::{ClientSeq, CommandError, Response};
use crate::limits::{MAX_CLIENT_SESSIONS, MAX_REPLIES_PER_CLIENT};

/// What to do with a request, given what its client already got.
#[derive(Debug)]
pub(super) enum Admission {
    /// Already applied: answer this stored reply again.
    Replay(Response),
    /// Refused; nothing changed.
    Refuse(CommandError),
    /// New: apply it and [`SessionTable::record`] the reply.
    Apply,
}

/// Client sessions with their eviction index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionTable {
    /// Every remembered client.
    sessions: BTreeMap<Uuid, ClientSession>,
    /// (last_index, client) for every session that is not pinned: the first
    /// is forgotten first.
    evictable: BTreeSet<(u64, Uuid)>,
    /// How many live leases each client granted; clients with none are
    /// absent. Derived from the lease table, never stored.
    pins: BTreeMap<Uuid, u32>,
    /// Most sessions kept.
    capacity: usize,
}

impl Default for SessionTable {
    fn default() -> Self {
        Self {
            sessions: BTreeMap::new(),
            evictable: BTreeSet::new(),
            pins: BTreeMap::new(),
            capacity: MAX_CLIENT_SESSIONS,
        }
    }
}

impl SessionTable {
    /// The table holding `sessions`, pinned by one live lease per entry of
    /// `granters`, with its eviction index rebuilt.
    pub(super) fn from_sessions(
        sessions: Vec<(Uuid, ClientSession)>,
        granters: impl IntoIterator<Item = Uuid>,
    ) -> Self {
        let mut table = Self {
            sessions: sessions.into_iter().collect(),
            ..Self::default()
        };
        for client in granters {
            *table.pins.entry(client).or_default() += 1;
        }
        table.evictable = table
            .sessions
            .iter()
            .filter(|(id, _)| !table.pins.contains_key(id))
            .map(|(id, s)| (s.last_index, *id))
            .collect();
        table
    }

    /// Changes the most sessions kept (tests use a small bound).
    #[cfg(test)]
    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// A client's session.
    pub(super) fn get(&self, id: &Uuid) -> Option<&ClientSession> {
        self.sessions.get(id)
    }

    /// Every session, by client id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Uuid, &ClientSession)> + '_ {
        self.sessions.iter()
    }

    /// Decides whether the request at slot `index` from `origin`, whose
    /// command has `fingerprint`, is a retry, refused, or new. Unless it is
    /// refused, notes that the client was seen and forgets the replies it
    /// acknowledged.
    pub(super) fn admit(&mut self, origin: &ClientSeq, fingerprint: u64, index: u64) -> Admission {
        let Some(session) = self.sessions.get(&origin.client) else {
            return self.admit_new(origin, index);
        };
        let forgotten_below = session.forgotten_below.max(origin.acked_below);
        let admission = match session.replies.get(&origin.seq) {
            _ if origin.seq < forgotten_below => {
                return Admission::Refuse(CommandError::StaleRequest { seq: origin.seq })
            }
            Some(stored) if stored.fingerprint != fingerprint => {
                return Admission::Refuse(CommandError::RequestIdReused {
                    client: origin.client,
                    seq: origin.seq,
                })
            }
            Some(stored) => Admission::Replay(stored.response.clone()),
            None => Admission::Apply,
        };
        self.touch(origin, index);
        admission
    }

    /// [`admit`](Self::admit) for a client without a session.
    fn admit_new(&mut self, origin: &ClientSeq, index: u64) -> Admission {
        if origin.acked_below > 1 {
            return Admission::Refuse(CommandError::SessionExpired {
                client: origin.client,
                seq: origin.seq,
                acked_below: origin.acked_below,
            });
        }
        if self.sessions.len() >= self.capacity && !self.evict_least_recent() {
            return Admission::Refuse(CommandError::TooManyClients(self.capacity));
        }
        self.touch(origin, index);
        Admission::Apply
    }

    /// Notes that `origin`'s client was seen at slot `index` (creating its
    /// session) and forgets the replies it acknowledged.
    fn touch(&mut self, origin: &ClientSeq, index: u64) {
        let id = origin.client;
        let session = self.sessions.entry(id).or_default();
        if !self.pins.contains_key(&id) {
            self.evictable.remove(&(session.last_index, id));
            self.evictable.insert((index, id));
        }
        session.last_index = index;
        if origin.acked_below > session.forgotten_below {
            session.forgotten_below = origin.acked_below;
            session.replies = session.replies.split_off(&origin.acked_below);
        }
    }

    /// Stores the reply to a request [`admit`](Self::admit) let through.
    pub(super) fn record(&mut self, origin: &ClientSeq, fingerprint: u64, response: &Response) {
        let Some(session) = self.sessions.get_mut(&origin.client) else {
            // Unreachable: admit() created the session in this same step.
            return;
        };
        let stored = StoredReply {
            fingerprint,
            response: response.clone(),
        };
        session.replies.insert(origin.seq, stored);
        while session.replies.len() > MAX_REPLIES_PER_CLIENT {
            if let Some((seq, _)) = session.replies.pop_first() {
                session.forgotten_below = session.forgotten_below.max(seq.saturating_add(1));
            }
        }
    }

    /// Notes that `client` granted a lease that is now live: its session is
    /// kept until the lease ends.
    pub(super) fn pin(&mut self, client: Uuid) {
        let count = self.pins.entry(client).or_default();
        *count += 1;
        if *count == 1 {
            if let Some(session) = self.sessions.get(&client) {
                self.evictable.remove(&(session.last_index, client));
            }
        }
    }

    /// Notes that a lease `client` granted ended.
    pub(super) fn unpin(&mut self, client: Uuid) {
        let Some(count) = self.pins.get_mut(&client) else {
            // Unreachable: every live lease with a granter pinned it.
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.pins.remove(&client);
            if let Some(session) = self.sessions.get(&client) {
                self.evictable.insert((session.last_index, client));
            }
        }
    }

    /// Forgets the unpinned client seen least recently; `false` when every
    /// client is pinned.
    fn evict_least_recent(&mut self) -> bool {
        let Some((_, id)) = self.evictable.pop_first() else {
            return false;
        };
        self.sessions.remove(&id);
        true
    }
}
