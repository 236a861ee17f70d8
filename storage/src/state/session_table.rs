//! The exactly-once reply table: per client, the replies to its recent
//! requests, each with the [fingerprint](crate::Request::fingerprint) of
//! the command it answered. A retry (same client, same sequence number,
//! same command) gets the original answer instead of a second apply; the
//! same request id with another command is refused.
//!
//! A client is a [`SessionKey`]: the account the request is charged to
//! (identity, or source address without authentication) and the client id
//! it sent. Two accounts using one client id have two sessions, so no
//! account can read, advance or forget another's.
//!
//! Bounded three times: at most [`MAX_REPLIES_PER_CLIENT`] replies per
//! client (the lowest sequence numbers go first), at most
//! [`Quotas::clients`] clients per account, and at most `capacity` clients
//! in all ([`MAX_CLIENT_SESSIONS`]). A client that granted a live lease is
//! *pinned*: it is never forgotten, so its retries replay however many
//! other clients come and go. To make room for a new client, the least
//! recently seen unpinned client *of the same account* is forgotten when
//! the account is at its quota, else the least recently seen unpinned
//! client of all; both are found through indexes ordered by last slot
//! rather than a scan. When every candidate is pinned, the new client is
//! refused. Only a live lease pins, and `capacity` is above the most
//! leases that can live, so outside tests a full table always has a
//! client to forget, and only an account at its quota is refused.
//!
//! Some requests are never refused for want of room: a call without a
//! request id (its id is the server's, made up for the one call) and a
//! recovery (a revoke, a force-release), which must reach a table that
//! floods filled. They take a place as any new client does when there is
//! one; when there is none, they are applied without a session, and their
//! reply is not remembered. A recovery from a client the table does not
//! know is applied even when it says it had replies: a retry of it may
//! then apply twice, which for a revoke ends what is left and for a
//! force-release frees the lock from whoever holds it then, as an
//! operator's override does.
//!
//! A request from an unknown client whose `acked_below` is above 1 says it
//! had replies before (the first request of a client id is numbered 1):
//! its session was forgotten, so it is refused as expired rather than
//! applied again.
//!
//! Every refusal leaves the table as it was.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{ClientSession, SessionKey, StoredReply};
use crate::account::Account;
use crate::command::{ClientSeq, CommandError, Response};
use crate::limits::{Quota, Quotas, MAX_CLIENT_SESSIONS, MAX_REPLIES_PER_CLIENT};

/// What to do with a request, given what its client already got.
#[derive(Debug)]
pub(super) enum Admission {
    /// Already applied: answer this stored reply again.
    Replay(Response),
    /// Refused; nothing changed.
    Refuse(CommandError),
    /// New: apply it and [`SessionTable::record`] the reply.
    Apply,
    /// New, and no place is left for its client, but it may not be
    /// refused for that: apply it without remembering the reply.
    ApplyUnrecorded,
}

/// The sessions of one account.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct AccountSessions {
    /// How many it has.
    count: usize,
    /// (last_index, client) of those not pinned: the first is forgotten
    /// first when the account is at its quota.
    evictable: BTreeSet<(u64, Uuid)>,
}

/// Client sessions with their eviction indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SessionTable {
    /// Every remembered client.
    sessions: BTreeMap<SessionKey, ClientSession>,
    /// (last_index, client) for every session that is not pinned: the first
    /// is forgotten first.
    evictable: BTreeSet<(u64, SessionKey)>,
    /// The sessions of each account that has any.
    accounts: BTreeMap<Account, AccountSessions>,
    /// How many live leases each client granted; clients with none are
    /// absent. Derived from the lease table, never stored.
    pins: BTreeMap<SessionKey, u32>,
    /// Most sessions kept.
    capacity: usize,
}

impl Default for SessionTable {
    fn default() -> Self {
        Self {
            sessions: BTreeMap::new(),
            evictable: BTreeSet::new(),
            accounts: BTreeMap::new(),
            pins: BTreeMap::new(),
            capacity: MAX_CLIENT_SESSIONS,
        }
    }
}

impl SessionTable {
    /// The table holding `sessions`, pinned by one live lease per entry of
    /// `granters`, with its eviction indexes rebuilt.
    pub(super) fn from_sessions(
        sessions: Vec<(SessionKey, ClientSession)>,
        granters: impl IntoIterator<Item = SessionKey>,
    ) -> Self {
        let mut table = Self::default();
        for key in granters {
            *table.pins.entry(key).or_default() += 1;
        }
        for (key, session) in sessions {
            let last = session.last_index;
            table.sessions.insert(key.clone(), session);
            if let Some(account) = &key.account {
                table.accounts.entry(account.clone()).or_default().count += 1;
            }
            if !table.pins.contains_key(&key) {
                table.make_evictable(&key, last);
            }
        }
        table
    }

    /// Changes the most sessions kept (tests use a small bound).
    #[cfg(test)]
    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
    }

    /// A client's session.
    pub(super) fn get(&self, key: &SessionKey) -> Option<&ClientSession> {
        self.sessions.get(key)
    }

    /// Every session, by account then client id.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&SessionKey, &ClientSession)> + '_ {
        self.sessions.iter()
    }

    /// How many sessions `account` has.
    pub(super) fn count_of(&self, account: &Account) -> usize {
        self.accounts.get(account).map_or(0, |a| a.count)
    }

    /// Decides whether the request at slot `index` from client `key`
    /// (`origin` its request id), whose command has `fingerprint`, is a
    /// retry, refused, or new. Unless it is refused, notes that the client
    /// was seen and forgets the replies it acknowledged. A request that is
    /// `always_admitted` is not refused for want of a place (see the
    /// module doc).
    pub(super) fn admit(
        &mut self,
        key: &SessionKey,
        origin: &ClientSeq,
        fingerprint: u64,
        index: u64,
        quotas: &Quotas,
        always_admitted: bool,
    ) -> Admission {
        let Some(session) = self.sessions.get(key) else {
            return self.admit_new(key, origin, index, quotas, always_admitted);
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
        self.touch(key, origin, index);
        admission
    }

    /// [`admit`](Self::admit) for a client without a session: decides which
    /// session, if any, to forget to make room before changing anything.
    fn admit_new(
        &mut self,
        key: &SessionKey,
        origin: &ClientSeq,
        index: u64,
        quotas: &Quotas,
        always_admitted: bool,
    ) -> Admission {
        // A recovery from a client whose session is gone (or was never
        // kept) is applied again rather than refused: see the module doc.
        if origin.acked_below > 1 && !always_admitted {
            return Admission::Refuse(CommandError::SessionExpired {
                client: origin.client,
                seq: origin.seq,
                acked_below: origin.acked_below,
            });
        }
        let victim = match self.room_for(key, quotas) {
            Ok(victim) => victim,
            Err(_) if always_admitted => return Admission::ApplyUnrecorded,
            Err(refusal) => return Admission::Refuse(refusal),
        };
        if let Some(victim) = victim {
            self.forget(&victim);
        }
        if let Some(account) = &key.account {
            self.accounts.entry(account.clone()).or_default().count += 1;
        }
        self.touch(key, origin, index);
        Admission::Apply
    }

    /// Where a new client `key` finds its place: `None` when one is free,
    /// else the session to forget for it; the refusal when every candidate
    /// is pinned.
    fn room_for(
        &self,
        key: &SessionKey,
        quotas: &Quotas,
    ) -> Result<Option<SessionKey>, CommandError> {
        let at_quota = key
            .account
            .as_ref()
            .filter(|account| self.count_of(account) >= quotas.clients as usize);
        if let Some(account) = at_quota {
            // At its quota: only one of its own clients may make room.
            let own = self.accounts.get(account).and_then(|a| a.evictable.first());
            return match own {
                Some(&(_, client)) => Ok(Some(SessionKey {
                    account: Some(account.clone()),
                    client,
                })),
                None => Err(CommandError::QuotaExceeded {
                    quota: Quota::Clients,
                    account: account.clone(),
                    count: self.count_of(account) as u64,
                    limit: quotas.clients,
                }),
            };
        }
        if self.sessions.len() < self.capacity {
            return Ok(None);
        }
        match self.evictable.first() {
            Some((_, victim)) => Ok(Some(victim.clone())),
            None => Err(CommandError::TooManyClients(self.capacity)),
        }
    }

    /// Notes that client `key` was seen at slot `index` (creating its
    /// session) and forgets the replies it acknowledged.
    fn touch(&mut self, key: &SessionKey, origin: &ClientSeq, index: u64) {
        let last = self.sessions.get(key).map(|s| s.last_index);
        if !self.pins.contains_key(key) {
            if let Some(last) = last {
                self.make_unevictable(key, last);
            }
            self.make_evictable(key, index);
        }
        let session = self.sessions.entry(key.clone()).or_default();
        session.last_index = index;
        if origin.acked_below > session.forgotten_below {
            session.forgotten_below = origin.acked_below;
            session.replies = session.replies.split_off(&origin.acked_below);
        }
    }

    /// Stores the reply to a request [`admit`](Self::admit) let through.
    pub(super) fn record(
        &mut self,
        key: &SessionKey,
        origin: &ClientSeq,
        fingerprint: u64,
        response: &Response,
    ) {
        let Some(session) = self.sessions.get_mut(key) else {
            // Unreachable: admit() created the session in this same step.
            return;
        };
        let stored = Box::new(StoredReply {
            fingerprint,
            response: response.clone(),
        });
        session.replies.insert(origin.seq, stored);
        while session.replies.len() > MAX_REPLIES_PER_CLIENT {
            if let Some((seq, _)) = session.replies.pop_first() {
                session.forgotten_below = session.forgotten_below.max(seq.saturating_add(1));
            }
        }
    }

    /// Notes that client `key` granted a lease that is now live: its
    /// session is kept until the lease ends.
    pub(super) fn pin(&mut self, key: &SessionKey) {
        let count = self.pins.entry(key.clone()).or_default();
        *count += 1;
        if *count == 1 {
            if let Some(last) = self.sessions.get(key).map(|s| s.last_index) {
                self.make_unevictable(key, last);
            }
        }
    }

    /// Notes that a lease client `key` granted ended.
    pub(super) fn unpin(&mut self, key: &SessionKey) {
        let Some(count) = self.pins.get_mut(key) else {
            // Unreachable: every live lease with a granter pinned it.
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.pins.remove(key);
            if let Some(last) = self.sessions.get(key).map(|s| s.last_index) {
                self.make_evictable(key, last);
            }
        }
    }

    /// Forgets an unpinned client.
    fn forget(&mut self, key: &SessionKey) {
        let Some(session) = self.sessions.remove(key) else {
            return;
        };
        self.make_unevictable(key, session.last_index);
        if let Some(account) = &key.account {
            if let Some(sessions) = self.accounts.get_mut(account) {
                sessions.count = sessions.count.saturating_sub(1);
                if sessions.count == 0 {
                    self.accounts.remove(account);
                }
            }
        }
    }

    /// Lists client `key`, last seen at `last`, as one that may be forgotten.
    fn make_evictable(&mut self, key: &SessionKey, last: u64) {
        self.evictable.insert((last, key.clone()));
        if let Some(account) = &key.account {
            let sessions = self.accounts.entry(account.clone()).or_default();
            sessions.evictable.insert((last, key.client));
        }
    }

    /// Takes client `key`, last seen at `last`, off the lists of those that
    /// may be forgotten.
    fn make_unevictable(&mut self, key: &SessionKey, last: u64) {
        self.evictable.remove(&(last, key.clone()));
        if let Some(account) = &key.account {
            if let Some(sessions) = self.accounts.get_mut(account) {
                sessions.evictable.remove(&(last, key.client));
            }
        }
    }
}
