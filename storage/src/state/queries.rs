//! What the state answers without changing: leases, locks, lock-delays,
//! fences, remembered clients and what an account holds. The serving
//! layer's reads, the snapshot writer and the status page ask these.

use uuid::Uuid;

use super::{AccountUse, ClientSession, Lease, Lock, LockDelay, LockState, SessionKey};
use crate::account::Account;
use crate::command::{Fence, LeaseId};

impl LockState {
    /// A live lease.
    pub fn lease(&self, id: LeaseId) -> Option<&Lease> {
        self.leases.get(id)
    }

    /// Every live lease, by id.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> + '_ {
        self.leases.iter()
    }

    /// (lock name, owner, held = true / waiting = false) attached to a lease.
    pub fn lease_attachments(&self, id: LeaseId) -> Vec<(String, String, bool)> {
        self.leases
            .attachments(id)
            .map(|(name, owner, held)| (name.to_owned(), owner.to_owned(), held))
            .collect()
    }

    /// A lock with a holder or a waiter.
    pub fn lock(&self, name: &str) -> Option<&Lock> {
        self.locks.get(name)
    }

    /// Every lock, by name.
    pub fn locks(&self) -> impl Iterator<Item = &Lock> + '_ {
        self.locks.iter()
    }

    /// Locks whose name starts with `prefix`, in name order, at most `limit`.
    pub fn locks_with_prefix(&self, prefix: &str, limit: usize) -> Vec<&Lock> {
        self.locks.with_prefix(prefix, limit)
    }

    /// Every lock with a lock-delay in force: (name, delay).
    pub fn lock_delays(&self) -> impl Iterator<Item = (&str, &LockDelay)> + '_ {
        self.locks
            .iter()
            .filter_map(|l| l.delay.as_ref().map(|d| (l.name.as_str(), d)))
    }

    /// Whether `fence` is the token of a current holder of `name`.
    pub fn check(&self, name: &str, fence: Fence) -> bool {
        self.locks
            .get(name)
            .is_some_and(|lock| lock.holders.iter().any(|h| h.fence == fence))
    }

    /// The remembered replies to client `id` of `account`.
    pub fn client(&self, account: Option<&Account>, id: &Uuid) -> Option<&ClientSession> {
        self.sessions.get(&SessionKey {
            account: account.cloned(),
            client: *id,
        })
    }

    /// Every remembered client session, by account then client id.
    pub fn clients(&self) -> impl Iterator<Item = (&SessionKey, &ClientSession)> + '_ {
        self.sessions.iter()
    }

    /// What `account` has: its live leases, its waiting requests and its
    /// remembered client ids.
    pub fn account_use(&self, account: &Account) -> AccountUse {
        let (leases, waiters) = self.leases.account_use(account);
        AccountUse {
            leases,
            waiters,
            clients: self.sessions.count_of(account),
            records: self.named.count_of(account),
        }
    }
}
