//! The exactly-once reply table: per client, the replies to its recent
//! requests, so a retry gets the original answer instead of a second apply.
//!
//! Bounded twice: at most [`MAX_REPLIES_PER_CLIENT`] replies per client (the
//! lowest sequence numbers go first) and at most [`MAX_CLIENT_SESSIONS`]
//! clients (the least recently seen goes first, found through an index
//! ordered by last slot rather than a scan).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::ClientSession;
use crate::command::{ClientSeq, Response};
use crate::limits::{MAX_CLIENT_SESSIONS, MAX_REPLIES_PER_CLIENT};

/// What to do with a request, given what its client already got.
#[derive(Debug)]
pub(super) enum Admission {
    /// Already applied: answer this stored reply again.
    Replay(Response),
    /// Too old: its reply was forgotten, so its outcome is unknown.
    Stale,
    /// New: apply it and [`SessionTable::record`] the reply.
    Apply,
}

/// Client sessions with their eviction index.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct SessionTable {
    /// Every remembered client.
    sessions: BTreeMap<Uuid, ClientSession>,
    /// (last_index, client) for every session: the first is evicted first.
    by_last_index: BTreeSet<(u64, Uuid)>,
}

impl SessionTable {
    /// The table holding `sessions`, with its eviction index rebuilt.
    pub(super) fn from_sessions(sessions: Vec<(Uuid, ClientSession)>) -> Self {
        let sessions: BTreeMap<_, _> = sessions.into_iter().collect();
        let by_last_index = sessions.iter().map(|(id, s)| (s.last_index, *id)).collect();
        Self {
            sessions,
            by_last_index,
        }
    }

    /// A client's session.
    pub(super) fn get(&self, id: &Uuid) -> Option<&ClientSession> {
        self.sessions.get(id)
    }

    /// Every session, by client id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&Uuid, &ClientSession)> + '_ {
        self.sessions.iter()
    }

    /// Notes that the request at slot `index` is `origin`'s, forgets
    /// the replies the client has acknowledged, and decides whether the
    /// request is a retry, too old, or new.
    pub(super) fn admit(&mut self, origin: &ClientSeq, index: u64) -> Admission {
        let id = origin.client;
        if !self.sessions.contains_key(&id) && self.sessions.len() >= MAX_CLIENT_SESSIONS {
            self.evict_least_recent();
        }
        let session = self.sessions.entry(id).or_default();
        self.by_last_index.remove(&(session.last_index, id));
        session.last_index = index;
        self.by_last_index.insert((index, id));

        if origin.acked_below > session.forgotten_below {
            session.forgotten_below = origin.acked_below;
            session.replies = session.replies.split_off(&origin.acked_below);
        }
        if let Some(reply) = session.replies.get(&origin.seq) {
            Admission::Replay(reply.clone())
        } else if origin.seq < session.forgotten_below {
            Admission::Stale
        } else {
            Admission::Apply
        }
    }

    /// Stores the reply to a request [`admit`](Self::admit) let through.
    pub(super) fn record(&mut self, origin: &ClientSeq, reply: &Response) {
        let Some(session) = self.sessions.get_mut(&origin.client) else {
            // Unreachable: admit() created the session in this same step.
            return;
        };
        session.replies.insert(origin.seq, reply.clone());
        while session.replies.len() > MAX_REPLIES_PER_CLIENT {
            if let Some((seq, _)) = session.replies.pop_first() {
                session.forgotten_below = session.forgotten_below.max(seq.saturating_add(1));
            }
        }
    }

    /// Forgets the client seen least recently.
    fn evict_least_recent(&mut self) {
        if let Some((_, id)) = self.by_last_index.pop_first() {
            self.sessions.remove(&id);
        }
    }
}
